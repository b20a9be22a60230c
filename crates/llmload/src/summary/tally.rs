//! Request outcomes counted one measured record at a time, with the first failure and the first
//! unverified response in words: a case's, and each model's of a mix.

use super::counts::Counts;
use crate::record::{Record, Status};

/// Outcomes so far, and the first failure and unverified response met.
#[derive(Clone, Debug, Default)]
pub(super) struct Tally {
    /// The counts.
    pub counts: Counts,
    /// The first failed or invalid response's kind and message, at most 300 characters.
    pub first_error: Option<String>,
    /// Why the first unverified `ok` response was not verified.
    pub first_unverified: Option<String>,
}

impl Tally {
    /// Counts one measured record.
    pub(super) fn add(&mut self, r: &Record) {
        let c = &mut self.counts;
        match r.status {
            Status::Ok => {
                c.ok += 1;
                c.unverified += u32::from(!r.verified);
                if !r.verified && self.first_unverified.is_none() {
                    let why: String = r.notes.join("; ").chars().take(300).collect();
                    self.first_unverified = Some(why);
                }
            }
            Status::Invalid => c.invalid += 1,
            Status::Error => c.error += 1,
            Status::Cancelled => c.cancelled += 1,
            Status::Abandoned => c.abandoned += 1,
            Status::Short => c.short += 1,
        }
        if let Some(kind) = &r.error_kind {
            *c.by_kind.entry(*kind).or_default() += 1;
            if self.first_error.is_none() {
                let message: String = r.error.as_deref().unwrap_or("").chars().take(300).collect();
                self.first_error = Some(format!("{kind}: {message}"));
            }
        }
    }
}
