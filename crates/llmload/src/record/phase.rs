//! A request's phase, and the arm of an `llmload ab` comparison it was sent in.

use serde::{Deserialize, Serialize};

/// Whether a request was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Unmeasured request before a case's rounds.
    Warmup,
    /// Part of a measured round.
    Measured,
    /// `--canaries`: a canary request, sent alone before the load (its reference) or beside it;
    /// in no figure.
    Canary,
}

/// `llmload ab`: the arm of the comparison a request was sent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Arm {
    /// The base (the first URL).
    A,
    /// The candidate (the second URL).
    B,
}

impl Arm {
    /// The other arm.
    #[must_use]
    pub fn other(self) -> Arm {
        match self {
            Arm::A => Arm::B,
            Arm::B => Arm::A,
        }
    }

    /// The arm's letter.
    pub fn letter(self) -> &'static str {
        match self {
            Arm::A => "A",
            Arm::B => "B",
        }
    }
}
