//! Multi-turn sessions: what a session is (its turns, the length of each new user message, the
//! think time between turns, how the previous answers stand in the history), and the pure
//! arithmetic of a token history: what each turn sends and how much of it a prefix cache may
//! serve.
//!
//! A turn sends the whole history so far, then a new user message. Everything before the new
//! message was sent (or generated) before, so a prefix cache may serve it; nothing after it may
//! come from a cache, and the verification flags a response that says otherwise.

use super::prompt::splitmix64;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the previous answers stand in the history.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum History {
    /// The streamed answer, as the server generated it, is sent back as the assistant message.
    #[default]
    AsGenerated,
    /// A filler of exactly the answer's requested length stands in for the answer (the answer's
    /// text is not kept).
    Placeholder,
}

impl History {
    /// The mode's name, as the flag writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            History::AsGenerated => "as-generated",
            History::Placeholder => "placeholder",
        }
    }
}

/// The time between a turn's answer and the next turn's request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Think {
    /// Always this long.
    Fixed(Duration),
    /// Exponentially distributed with this mean.
    Exponential(Duration),
    /// Uniform between the two.
    Uniform(Duration, Duration),
}

impl Default for Think {
    fn default() -> Think {
        Think::Fixed(Duration::ZERO)
    }
}

impl Think {
    /// The think time before turn `turn` (2 and up) of session `session`: a function of the
    /// seed, the session and the turn alone, so a run with the same seed thinks the same.
    pub fn sample(self, seed: u64, session: u64, turn: u32) -> Duration {
        let draw = || {
            let h = splitmix64(seed ^ splitmix64(session).rotate_left(23) ^ u64::from(turn));
            // 53 random bits → [0, 1).
            (h >> 11) as f64 / (1u64 << 53) as f64
        };
        match self {
            Think::Fixed(d) => d,
            Think::Exponential(mean) => mean.mul_f64(-(1.0 - draw()).ln()),
            Think::Uniform(lo, hi) => lo + hi.saturating_sub(lo).mul_f64(draw()),
        }
    }

    /// The mean think time.
    pub fn mean(self) -> Duration {
        match self {
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(lo, hi) => (lo + hi) / 2,
        }
    }
}

impl std::str::FromStr for Think {
    type Err = String;

    /// `2s` (fixed), `exp:2s` (exponential, mean 2 s), `uniform:1s..3s`.
    fn from_str(text: &str) -> Result<Think, String> {
        let duration =
            |t: &str| crate::num::duration(t).map_err(|e| format!("{t:?} is not a duration: {e}"));
        let text = text.trim();
        if let Some(mean) = text.strip_prefix("exp:") {
            return Ok(Think::Exponential(duration(mean)?));
        }
        if let Some(range) = text.strip_prefix("uniform:") {
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| format!("uniform:{range}: write uniform:LOW..HIGH, e.g. 1s..3s"))?;
            let (lo, hi) = (duration(lo)?, duration(hi)?);
            if hi < lo {
                return Err(format!(
                    "uniform:{range}: the high end is below the low end"
                ));
            }
            return Ok(Think::Uniform(lo, hi));
        }
        duration(text).map(Think::Fixed).map_err(|e| {
            format!("{e} (write a duration such as 2s, exp:MEAN or uniform:LOW..HIGH)")
        })
    }
}

impl std::fmt::Display for Think {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = |d: &Duration| humantime::format_duration(*d).to_string();
        match self {
            Think::Fixed(t) => write!(f, "{}", d(t)),
            Think::Exponential(m) => write!(f, "exp:{}", d(m)),
            Think::Uniform(lo, hi) => write!(f, "uniform:{}..{}", d(lo), d(hi)),
        }
    }
}

impl Serialize for Think {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Think {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Think, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a session is, shared by every session of a case.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// Turns per session (2 and up).
    pub turns: u32,
    /// Tokens of each new user message after the first turn (the first is the case's prompt);
    /// absent: drawn as the case's prompt lengths are.
    pub turn_input: Option<u32>,
    /// Between a turn's answer and the next request.
    #[serde(rename = "think_time")]
    pub think: Think,
    /// How previous answers stand in the history.
    pub history: History,
    /// Closed sessions: the k-th of N places starts its first session k/N of a mean think time
    /// in, instead of all at once (`--stagger`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stagger: bool,
}

/// A session's history in token IDs (the token APIs): each turn sends it whole, then its new
/// user message; the answer is appended after the turn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenHistory {
    tokens: Vec<u32>,
}

impl TokenHistory {
    /// The prompt of a turn whose new user message is `user`, and the tokens of it a cache may
    /// serve (the history before `user`). The message joins the history.
    pub fn turn(&mut self, user: &[u32]) -> (Vec<u32>, u32) {
        let allowed = crate::num::count(self.tokens.len());
        self.tokens.extend_from_slice(user);
        (self.tokens.clone(), allowed)
    }

    /// The turn's answer (as generated, or its placeholder) joins the history.
    pub fn answer(&mut self, answer: &[u32]) {
        self.tokens.extend_from_slice(answer);
    }

    /// Tokens so far.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the history is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Tokens at the start of `a` and `b` that are the same: of a chat prompt and its twin (the same
/// history, another new message), the tokens that do not depend on the new message.
pub fn common_prefix(a: &[u32], b: &[u32]) -> u32 {
    crate::num::count(a.iter().zip(b).take_while(|(x, y)| x == y).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_parse_and_print_back() {
        for text in [
            "2s",
            "exp:2s",
            "uniform:1s..3s",
            "0s",
            "uniform:500ms..500ms",
        ] {
            let think: Think = text.parse().expect(text);
            assert_eq!(think.to_string().parse::<Think>(), Ok(think), "{text}");
        }
        assert_eq!("2s".parse(), Ok(Think::Fixed(Duration::from_secs(2))));
        assert_eq!(
            "uniform:1s..3s".parse::<Think>().map(Think::mean),
            Ok(Duration::from_secs(2))
        );
        for bad in ["", "exp:", "uniform:3s..1s", "uniform:1s", "fast", "-1s"] {
            assert!(bad.parse::<Think>().is_err(), "{bad}");
        }
    }

    #[test]
    fn think_times_are_reproducible_and_within_their_distribution() {
        let fixed = Think::Fixed(Duration::from_millis(1500));
        assert_eq!(fixed.sample(1, 2, 3), Duration::from_millis(1500));
        let uniform = Think::Uniform(Duration::from_secs(1), Duration::from_secs(3));
        let exp = Think::Exponential(Duration::from_secs(2));
        let mut sum = 0.0;
        let n = 20_000u32;
        for session in 0..u64::from(n) {
            let u = uniform.sample(7, session, 2);
            assert!(
                u >= Duration::from_secs(1) && u <= Duration::from_secs(3),
                "{u:?}"
            );
            assert_eq!(u, uniform.sample(7, session, 2), "same seed, same draw");
            sum += exp.sample(7, session, 2).as_secs_f64();
        }
        let mean = sum / f64::from(n);
        // The mean of 20,000 exponential draws is within 5 % of 2 s (its sd is 2/√n ≈ 0.7 %).
        assert!((mean - 2.0).abs() < 0.1, "{mean}");
        // Another turn, another session or another seed: another draw.
        let a = exp.sample(7, 1, 2);
        assert_ne!(a, exp.sample(7, 1, 3));
        assert_ne!(a, exp.sample(7, 2, 2));
        assert_ne!(a, exp.sample(8, 1, 2));
    }

    #[test]
    fn a_token_history_allows_exactly_what_came_before_the_new_message() {
        let mut history = TokenHistory::default();
        let (first, allowed) = history.turn(&[1, 2, 3]);
        assert_eq!((first, allowed), (vec![1, 2, 3], 0));
        history.answer(&[10, 11]);
        let (second, allowed) = history.turn(&[4, 5]);
        assert_eq!(second, vec![1, 2, 3, 10, 11, 4, 5]);
        assert_eq!(allowed, 5);
        history.answer(&[12]);
        let (third, allowed) = history.turn(&[6]);
        assert_eq!(third.len(), 9);
        assert_eq!(allowed, 8);
        assert_eq!(history.len(), 9);
    }

    #[test]
    fn the_common_prefix_stops_at_the_first_difference() {
        assert_eq!(common_prefix(&[1, 2, 3, 4], &[1, 2, 9, 4]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
    }
}
