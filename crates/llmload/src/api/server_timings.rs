//! The server's own timings of a response, read from the event that carries them: llama-server's
//! `timings` object (the final event of `/completion`, the usage chunk of its `OpenAI` streams),
//! and vLLM's `metrics` object on the final usage chunk (`--enable-per-request-metrics`).
//!
//! A server's numbers are data, never trusted: each is read whatever its JSON type, and one that
//! is not a duration or a count a request can have (negative, not a number, past a day, a count
//! that is not a whole number) is left out, with a note that says which and why. The event
//! itself never fails on them: they are read apart from the fields that verify a response, and
//! only where the event carries them.

use crate::record::{Drafts, ServerTimings, TimingSource};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// What one event said of the server's own timings: the timings (absent when no figure was
/// left), and why any value was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reported {
    /// The figures, when the server gave at least one that holds.
    pub timings: Option<ServerTimings>,
    /// Why values were left out, one note each.
    pub notes: Vec<String>,
}

/// The longest duration a server's field may give, ms: a day (no request lasts longer).
const LONGEST_MS: f64 = 86_400_000.0;

/// The most tokens a server's count may give.
const MOST_TOKENS: f64 = 1e9;

/// A JSON value read as a number whatever its type: a number, or something else.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Number {
    /// A JSON number.
    Value(f64),
    /// A string, a boolean, an array or an object.
    Other,
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
                Ok(Number::Value(v))
            }
            #[expect(
                clippy::cast_precision_loss,
                reason = "a count past 2^53 is out of bounds anyway"
            )]
            fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
                Ok(Number::Value(v as f64))
            }
            #[expect(
                clippy::cast_precision_loss,
                reason = "a count past 2^53 is out of bounds anyway"
            )]
            fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
                Ok(Number::Value(v as f64))
            }
            fn visit_str<E>(self, _: &str) -> Result<Number, E> {
                Ok(Number::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Number, E> {
                Ok(Number::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Number::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Number::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A duration, ms.
    Duration,
    /// A count of tokens.
    Count,
}

/// The fields of one server's object, each as (name, kind, value).
type Fields<'a, const N: usize> = [(&'a str, Kind, Option<Number>); N];

/// Reads the `fields` of `source`'s object `what`: the values that hold go into the timings'
/// `raw`, and why each other one was left out into the notes. Returns the timings (no figure
/// set yet), the value of each field in order (`None`: absent or left out), and the notes.
fn checked<const N: usize>(
    source: TimingSource,
    what: &str,
    fields: Fields<'_, N>,
) -> (ServerTimings, [Option<f64>; N], Vec<String>) {
    let mut timings = ServerTimings::new(source);
    let mut notes = Vec::new();
    let values = fields.map(|(name, kind, value)| {
        let why = match value? {
            Number::Other => "is not a number".to_owned(),
            Number::Value(v) => match kind {
                Kind::Duration if v.is_finite() && (0.0..=LONGEST_MS).contains(&v) => {
                    timings.raw.insert(name.to_owned(), v);
                    return Some(v);
                }
                Kind::Count if v.fract() == 0.0 && (0.0..=MOST_TOKENS).contains(&v) => {
                    timings.raw.insert(name.to_owned(), v);
                    return Some(v);
                }
                Kind::Duration => format!("is {}, not a duration a request can have", shown(v)),
                Kind::Count => format!("is {}, not a count of tokens", shown(v)),
            },
        };
        notes.push(format!("the server's {what}: {name} {why}; left out"));
        None
    });
    (timings, values, notes)
}

/// A number as a note shows it: short even when it is huge.
fn shown(v: f64) -> String {
    if v.abs() < 1e12 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// The timings, when a figure is left; with `notes`.
fn reported(timings: ServerTimings, notes: Vec<String>) -> Reported {
    Reported {
        timings: timings.has_figures().then_some(timings),
        notes,
    }
}

/// The note for a carrier that is not an object of values.
fn unreadable(what: &str) -> Reported {
    Reported {
        timings: None,
        notes: vec![format!(
            "the server's {what} could not be read (not an object of numbers); left out"
        )],
    }
}

/// llama-server's `timings` object, as far as llmload reads it.
#[derive(Deserialize)]
struct LlamaTimings {
    prompt_n: Option<Number>,
    prompt_ms: Option<Number>,
    predicted_n: Option<Number>,
    predicted_ms: Option<Number>,
    cache_n: Option<Number>,
    draft_n: Option<Number>,
    draft_n_accepted: Option<Number>,
}

/// llama-server's timings of the event `data` (its `timings` object): the prompt's processing
/// (`prompt_ms`, from the slot's start on the prompt to its first token) is both the prefill and
/// the server's TTFT (it reports no queue), and `predicted_ms` (first token to last) the decode.
pub fn llama(data: &[u8]) -> Reported {
    #[derive(Deserialize)]
    struct Carrier {
        timings: Option<LlamaTimings>,
    }
    let Ok(Carrier { timings: Some(t) }) = serde_json::from_slice::<Carrier>(data) else {
        return unreadable("timings");
    };
    let (mut timings, [prompt_ms, _, predicted_ms, _, _, drafted, accepted], mut notes) = checked(
        TimingSource::LlamaServer,
        "timings",
        [
            ("prompt_ms", Kind::Duration, t.prompt_ms),
            ("prompt_n", Kind::Count, t.prompt_n),
            ("predicted_ms", Kind::Duration, t.predicted_ms),
            ("predicted_n", Kind::Count, t.predicted_n),
            ("cache_n", Kind::Count, t.cache_n),
            ("draft_n", Kind::Count, t.draft_n),
            ("draft_n_accepted", Kind::Count, t.draft_n_accepted),
        ],
    );
    timings.prefill_ms = prompt_ms;
    timings.ttft_ms = prompt_ms;
    timings.decode_ms = predicted_ms;
    timings.drafts = drafts(drafted, accepted, &mut notes);
    reported(timings, notes)
}

/// A response's speculative decoding from the server's counts (both read and whole): none where
/// either is absent, and none, with a note, where more were accepted than drafted.
fn drafts(drafted: Option<f64>, accepted: Option<f64>, notes: &mut Vec<String>) -> Option<Drafts> {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "whole counts from 0 to 1e9, checked"
    )]
    let (drafted, accepted) = (drafted? as u64, accepted? as u64);
    if accepted > drafted {
        notes.push(format!(
            "the server's timings: draft_n_accepted {accepted} exceeds draft_n {drafted}; the \
             drafts are left out"
        ));
        return None;
    }
    Some(Drafts { drafted, accepted })
}

/// vLLM's per-request metrics, as far as llmload reads them.
#[derive(Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the field names of vLLM's `metrics` object"
)]
struct VllmMetrics {
    queue_time_ms: Option<Number>,
    time_to_first_token_ms: Option<Number>,
    generation_time_ms: Option<Number>,
    mean_itl_ms: Option<Number>,
}

/// vLLM's timings of the chunk `data` (its `metrics` object): `queue_time_ms` (queued to
/// scheduled) is the queue, `time_to_first_token_ms` (scheduled to first token) the prefill,
/// their sum the server's TTFT, and `generation_time_ms` (first token to last) the decode.
pub fn vllm(data: &[u8]) -> Reported {
    #[derive(Deserialize)]
    struct Carrier {
        metrics: Option<VllmMetrics>,
    }
    let Ok(Carrier { metrics: Some(m) }) = serde_json::from_slice::<Carrier>(data) else {
        return unreadable("metrics");
    };
    let (mut timings, [queue, prefill, decode, _], notes) = checked(
        TimingSource::Vllm,
        "metrics",
        [
            ("queue_time_ms", Kind::Duration, m.queue_time_ms),
            (
                "time_to_first_token_ms",
                Kind::Duration,
                m.time_to_first_token_ms,
            ),
            ("generation_time_ms", Kind::Duration, m.generation_time_ms),
            ("mean_itl_ms", Kind::Duration, m.mean_itl_ms),
        ],
    );
    timings.queue_ms = queue;
    timings.prefill_ms = prefill;
    timings.ttft_ms = queue.zip(prefill).map(|(q, p)| q + p);
    timings.decode_ms = decode;
    reported(timings, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_timings_give_prefill_ttft_and_decode() {
        let data = br#"{"choices":[],"usage":{"completion_tokens":4},"timings":{"cache_n":0,
            "prompt_n":25,"prompt_ms":513.7,"prompt_per_token_ms":20.5,"predicted_n":4,
            "predicted_ms":212.5,"predicted_per_second":14.1}}"#;
        let r = llama(data);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let t = r.timings.expect("timings");
        assert_eq!(t.source, TimingSource::LlamaServer);
        assert_eq!(
            (t.queue_ms, t.ttft_ms, t.prefill_ms, t.decode_ms),
            (None, Some(513.7), Some(513.7), Some(212.5))
        );
        let names: Vec<&str> = t.raw.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "cache_n",
                "predicted_ms",
                "predicted_n",
                "prompt_ms",
                "prompt_n"
            ]
        );
    }

    #[test]
    fn llama_server_drafts_are_read_and_more_accepted_than_drafted_is_left_out() {
        let speculating = br#"{"timings":{"prompt_n":6,"prompt_ms":401.7,"predicted_n":12,
            "predicted_ms":1137.1,"draft_n":9,"draft_n_accepted":7}}"#;
        let r = llama(speculating);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let t = r.timings.expect("timings");
        assert_eq!(
            t.drafts,
            Some(Drafts {
                drafted: 9,
                accepted: 7
            })
        );
        assert_eq!(t.raw.get("draft_n_accepted"), Some(&7.0));
        // Without drafting, none is claimed.
        let plain = br#"{"timings":{"prompt_n":6,"prompt_ms":401.7}}"#;
        assert_eq!(llama(plain).timings.expect("timings").drafts, None);
        let absurd = br#"{"timings":{"prompt_ms":40,"draft_n":3,"draft_n_accepted":5}}"#;
        let r = llama(absurd);
        assert_eq!(r.timings.expect("timings").drafts, None);
        assert_eq!(
            r.notes,
            [
                "the server's timings: draft_n_accepted 5 exceeds draft_n 3; the drafts are left \
              out"
            ]
        );
        let half = br#"{"timings":{"prompt_ms":40,"draft_n":3,"draft_n_accepted":-1}}"#;
        assert_eq!(llama(half).timings.expect("timings").drafts, None);
    }

    #[test]
    fn vllm_metrics_give_queue_prefill_their_sum_and_decode() {
        let data = br#"{"id":"cmpl-a","choices":[],"usage":{"prompt_tokens":8},
            "metrics":{"time_to_first_token_ms":30.0,"generation_time_ms":150.0,
            "queue_time_ms":2.5,"mean_itl_ms":10.0,"tokens_per_second":80.0}}"#;
        let r = vllm(data);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let t = r.timings.expect("timings");
        assert_eq!(t.source, TimingSource::Vllm);
        assert_eq!(
            (t.queue_ms, t.ttft_ms, t.prefill_ms, t.decode_ms),
            (Some(2.5), Some(32.5), Some(30.0), Some(150.0))
        );
        assert_eq!(t.raw.len(), 4);
        // Without its queue, the server's TTFT is not known.
        let t = vllm(br#"{"metrics":{"time_to_first_token_ms":30.0}}"#)
            .timings
            .expect("timings");
        assert_eq!((t.prefill_ms, t.ttft_ms), (Some(30.0), None));
    }

    #[test]
    fn absurd_values_are_left_out_with_a_note_each() {
        let data = br#"{"timings":{"prompt_ms":-5,"prompt_n":2.5,"predicted_ms":"fast",
            "predicted_n":[1],"cache_n":1e300}}"#;
        let r = llama(data);
        assert_eq!(r.timings, None, "no figure holds");
        assert_eq!(r.notes.len(), 5, "{:?}", r.notes);
        assert!(r.notes[0].contains("prompt_ms is -5"), "{}", r.notes[0]);
        assert!(r.notes[2].contains("predicted_ms is not a number"));
        assert!(r.notes[4].contains("1e300"), "{}", r.notes[4]);
        assert!(r.notes.iter().all(|n| n.len() < 120), "{:?}", r.notes);
        let r = vllm(br#"{"metrics":{"queue_time_ms":1e12,"time_to_first_token_ms":4}}"#);
        let t = r.timings.expect("the prefill holds");
        assert_eq!(
            (t.queue_ms, t.prefill_ms, t.ttft_ms),
            (None, Some(4.0), None)
        );
        assert_eq!(r.notes.len(), 1);
    }

    #[test]
    fn a_carrier_that_is_not_an_object_of_numbers_is_one_note() {
        for data in [
            &br#"{"timings":"soon"}"#[..],
            br#"{"timings":{"prompt_ms":1e400}}"#,
            b"not json",
        ] {
            let r = llama(data);
            assert_eq!((r.timings, r.notes.len()), (None, 1));
        }
        let r = vllm(br#"{"metrics":[1,2]}"#);
        assert_eq!((r.timings, r.notes.len()), (None, 1));
        // An empty object is no timings, and nothing wrong.
        assert_eq!(vllm(br#"{"metrics":{}}"#), Reported::default());
    }
}
