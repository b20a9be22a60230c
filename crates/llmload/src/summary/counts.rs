//! A case's request outcomes, counted by status and kind.

use crate::record::ErrorKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if hands the field by reference"
)]
pub(super) fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Counts of request outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Complete and verified against the request (or unverifiable, see `unverified`).
    pub ok: u32,
    /// Complete but contradicting the request.
    pub invalid: u32,
    /// Failed.
    pub error: u32,
    /// Stopped in flight.
    pub cancelled: u32,
    /// Abandoned by the client as planned (`--cancel-after`): neither responses nor failures.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned: u32,
    /// Best-effort responses far short of the output asked for (a quarter of it or less) and of
    /// their peers ([`super::short`]): cut streams, in no figure.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub short: u32,
    /// `ok` responses whose server did not report every counter.
    pub unverified: u32,
    /// Failures and invalid responses by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<ErrorKind, u32>,
}

impl Counts {
    /// Measured requests, however they ended.
    pub fn measured(&self) -> u32 {
        self.ok + self.invalid + self.error + self.cancelled + self.abandoned + self.short
    }

    /// Whether there was at least one `ok` response and every measured one ended `ok` (or was
    /// abandoned as planned).
    pub fn all_ok(&self) -> bool {
        self.ok > 0 && self.ok + self.abandoned == self.measured()
    }
}
