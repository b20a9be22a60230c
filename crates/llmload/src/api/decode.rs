//! Allocation-free field decoders for streamed events: we need to know whether a text is
//! empty and how long an array is, never their contents.

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// Whether a JSON string was non-empty (null reads as absent through `Option`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct NonEmpty(pub bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!v.is_empty()))
            }
            fn visit_unit<E>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// A field that is there (and not null), read without looking at its value: a number in it
/// that no `f64` holds does not fail the event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer)?;
        Ok(Present)
    }
}

/// The length of a JSON array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Count(pub u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        deserializer.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Probe {
        text: Option<NonEmpty>,
        ids: Option<Count>,
    }

    #[derive(Deserialize)]
    struct Carrier {
        timings: Option<Present>,
    }

    #[test]
    fn a_present_field_is_not_read() {
        let read = |data: &str| serde_json::from_str::<Carrier>(data).map(|c| c.timings);
        assert_eq!(
            read(r#"{"timings":{"prompt_ms":1e400}}"#).ok(),
            Some(Some(Present))
        );
        assert_eq!(read(r#"{"timings":null}"#).ok(), Some(None));
        assert_eq!(read("{}").ok(), Some(None));
    }

    #[test]
    fn reads_emptiness_and_lengths_without_contents() {
        let p: Probe = serde_json::from_str(r#"{"text":"a\"b","ids":[1,2,3]}"#).expect("valid");
        assert_eq!((p.text, p.ids), (Some(NonEmpty(true)), Some(Count(3))));
        let p: Probe = serde_json::from_str(r#"{"text":"","ids":[]}"#).expect("valid");
        assert_eq!((p.text, p.ids), (Some(NonEmpty(false)), Some(Count(0))));
        let p: Probe = serde_json::from_str(r#"{"text":null}"#).expect("valid");
        assert_eq!((p.text, p.ids), (None, None));
    }
}
