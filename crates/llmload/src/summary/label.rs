//! The unit a measured response's samples belong to, for the intervals.

use crate::record::Record;
use crate::stats::interval::Unit;
use crate::stats::Label;

/// What a measured response's samples belong to, for the intervals: its session, else its
/// round, else the second of the attempt it was scheduled (or sent) in; `response` numbers it
/// within the case.
pub fn label(r: &Record, response: u32) -> Label {
    let (unit, outer) = match (r.session, r.round) {
        (Some(session), _) => (Unit::Session, u32::try_from(session).unwrap_or(u32::MAX)),
        // Rounds of different repeats of a series are different units.
        (None, Some(round)) => (
            Unit::Round,
            (r.repeat.unwrap_or(0) << 16) | (round & 0xFFFF),
        ),
        (None, None) => (
            Unit::Block,
            crate::num::to_u32(r.scheduled_s.unwrap_or(r.sent_s).floor()),
        ),
    };
    Label {
        unit,
        outer,
        response,
    }
}
