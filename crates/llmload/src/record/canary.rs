//! `--canaries N`: a canary request's place in the run and what it generated. A canary is one of
//! N fixed prompts, decoded greedily; each is sent alone before the load for its reference
//! output, then in canary rounds under each case's load. The output under load is compared with
//! the reference:
//! where it first differs is the canary's divergence. Canaries are records of their own phase,
//! in no figure of the load.

use serde::{Deserialize, Serialize};

/// One canary request: which prompt, whether it was the reference, and its output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Canary {
    /// The canary prompt (from 0).
    pub prompt: u32,
    /// Sent alone before the load: the output every later canary of this prompt is compared
    /// with.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference: bool,
    /// The other requests sent with it (the case's concurrency less one); 0 for a reference.
    #[serde(default)]
    pub beside: u32,
    /// The generated text (within the client's bound on a stream's text: 64 bytes a token
    /// asked for and its slack).
    #[serde(default)]
    pub text: String,
    /// The text's length in bytes after each token event: where each event's text ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ends: Vec<u32>,
    /// The comparison with the reference, when both ended complete (none for a reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<Compared>,
}

/// A canary's output against its reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compared {
    /// The first token event whose text differs from the reference's (from 0), or `None` where
    /// the outputs are the same.
    pub diverged_at: Option<u32>,
    /// The token events compared: the shorter output's.
    pub events: u32,
}

/// Compares a canary's output with its reference's: the first token event at which the text
/// differs (an event whose text ends after the first differing byte), or `None` when the texts
/// are equal. Texts of different lengths differ where the shorter one ends.
pub fn compare(reference: &Canary, canary: &Canary) -> Compared {
    let (a, b) = (reference.text.as_bytes(), canary.text.as_bytes());
    let events = crate::num::count(reference.ends.len().min(canary.ends.len()));
    let first = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())));
    // The event of the canary's own text that holds the byte; past its end, the event it
    // lacks.
    let diverged_at = first
        .map(|byte| crate::num::count(canary.ends.partition_point(|&end| end as usize <= byte)));
    Compared {
        diverged_at,
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canary(words: &[&str]) -> Canary {
        let mut text = String::new();
        let mut ends = Vec::new();
        for w in words {
            text.push_str(w);
            ends.push(u32::try_from(text.len()).expect("short"));
        }
        Canary {
            text,
            ends,
            ..Canary::default()
        }
    }

    #[test]
    fn the_same_text_does_not_diverge() {
        let a = canary(&["The", " cat", " sat"]);
        assert_eq!(
            compare(&a, &a.clone()),
            Compared {
                diverged_at: None,
                events: 3
            }
        );
        // Split differently into events, the same text is the same output.
        let b = canary(&["The cat", " sat"]);
        assert_eq!(compare(&a, &b).diverged_at, None);
    }

    #[test]
    fn the_first_differing_event_is_named() {
        let a = canary(&["The", " cat", " sat", " down"]);
        assert_eq!(
            compare(&a, &canary(&["The", " cat", " ran", " off"])).diverged_at,
            Some(2)
        );
        assert_eq!(
            compare(&a, &canary(&["A", " cat", " sat", " down"])).diverged_at,
            Some(0)
        );
        // One byte into an event: that event.
        assert_eq!(
            compare(&a, &canary(&["The", " cut", " sat", " down"])).diverged_at,
            Some(1)
        );
        // Shorter: it diverges where it ended (the event it lacks).
        assert_eq!(compare(&a, &canary(&["The", " cat"])).diverged_at, Some(2));
        assert_eq!(compare(&a, &canary(&["The", " cat"])).events, 2);
    }
}
