//! Where the time goes, per case: the distributions of each phase of the `ok` responses (a new
//! connection's setup, apart; then the marks from `sent`) and how many went on a new connection
//! or a kept-alive one. TTFT keeps its own definition (sent → first token) beside these.

use crate::record::{Record, Status};
use crate::stats::{Distribution, Label, Samples};
use serde::{Deserialize, Serialize};

/// The phases of a case's `ok` responses that carry them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// `ok` responses whose record carries its phases.
    pub responses: u32,
    /// Of those, the ones sent on a connection opened for them.
    pub new_connections: u32,
    /// Of those, the ones sent on a kept-alive connection.
    pub reused_connections: u32,
    /// New connections: connecting (name lookup and TCP handshake), ms, before `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<Distribution>,
    /// New `https://` connections: the TLS handshake, ms, before `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<Distribution>,
    /// The request written, ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_ms: Option<Distribution>,
    /// The response head received, ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_ms: Option<Distribution>,
    /// The first event (any event), ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event_ms: Option<Distribution>,
    /// The last token-carrying event, ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token_ms: Option<Distribution>,
}

impl PhaseSummary {
    /// The responses on a kept-alive connection over those that carried phases (0–1).
    pub fn reused_share(&self) -> Option<f64> {
        (self.responses > 0).then(|| f64::from(self.reused_connections) / f64::from(self.responses))
    }
}

/// A case's phases so far, one measured record at a time.
#[derive(Clone, Debug, Default)]
pub struct PhaseFigures {
    responses: u32,
    new: u32,
    reused: u32,
    connect: Samples,
    tls: Samples,
    write: Samples,
    head: Samples,
    first_event: Samples,
    last_token: Samples,
}

impl PhaseFigures {
    /// Adds one measured record: only an `ok` one that carries its phases counts; `label`:
    /// what its samples belong to, for the intervals.
    pub fn add(&mut self, r: &Record, label: Label) {
        let Some(p) = r.phases.filter(|_| r.status == Status::Ok) else {
            return;
        };
        self.responses += 1;
        if p.reused {
            self.reused += 1;
        } else {
            self.new += 1;
        }
        Samples::push_each(
            [
                (&mut self.connect, p.connect_ms),
                (&mut self.tls, p.tls_ms),
                (&mut self.write, p.write_ms),
                (&mut self.head, p.head_ms),
                (&mut self.first_event, p.first_event_ms),
                (&mut self.last_token, r.event_ms.last().copied()),
            ],
            label,
        );
    }

    /// The case's phases; `None` when no `ok` response carried any (records written before
    /// phases were kept).
    pub fn finish(self) -> Option<PhaseSummary> {
        (self.responses > 0).then(|| PhaseSummary {
            responses: self.responses,
            new_connections: self.new,
            reused_connections: self.reused,
            connect_ms: self.connect.distribution(),
            tls_ms: self.tls.distribution(),
            write_ms: self.write.distribution(),
            head_ms: self.head.distribution(),
            first_event_ms: self.first_event.distribution(),
            last_token_ms: self.last_token.distribution(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, Phases};

    const LABEL: Label = Label::ROUND_ONE;

    fn with_phases(reused: bool, tls: bool) -> Record {
        let mut r = ok_record(0.0, None, vec![10.0, 12.0, 14.0]);
        r.phases = Some(Phases {
            connect_ms: (!reused).then_some(0.5),
            tls_ms: (!reused && tls).then_some(2.0),
            write_ms: Some(0.1),
            head_ms: Some(6.0),
            first_event_ms: Some(8.0),
            reused,
        });
        r
    }

    #[test]
    fn connections_are_counted_new_or_reused_and_setup_only_from_new_ones() {
        let mut figures = PhaseFigures::default();
        figures.add(&with_phases(false, true), LABEL);
        figures.add(&with_phases(false, false), LABEL);
        for _ in 0..3 {
            figures.add(&with_phases(true, false), LABEL);
        }
        let s = figures.finish().expect("phases");
        assert_eq!(
            (s.responses, s.new_connections, s.reused_connections),
            (5, 2, 3)
        );
        assert_eq!(s.connect_ms.map(|d| d.n), Some(2));
        assert_eq!(s.tls_ms.map(|d| d.n), Some(1));
        assert_eq!(s.head_ms.map(|d| d.n), Some(5));
        let last = s.last_token_ms.expect("last token");
        assert_eq!((last.n, last.median), (5, 14.0));
    }

    #[test]
    fn only_ok_records_with_phases_count() {
        let mut figures = PhaseFigures::default();
        figures.add(&ok_record(0.0, None, vec![10.0]), LABEL);
        let mut failed = with_phases(false, false);
        failed.status = Status::Error;
        figures.add(&failed, LABEL);
        assert_eq!(figures.finish(), None);
    }
}
