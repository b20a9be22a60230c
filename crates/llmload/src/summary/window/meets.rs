//! Whether a response meets the goodput objectives, where the case's path streams and where
//! it buffers.

use crate::record::Record;
use crate::workload::shape::Slo;

/// A figure two ways, until the case says whether its path buffers
/// ([`crate::summary::bursts::MIN_PATH_SHARE`]): as it is where the path streams, and with the buffered
/// responses' per-token figures left out where it buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meets<T> {
    /// Where the path streams.
    pub streams: T,
    /// Where it buffers.
    pub buffers: T,
}

impl<T> Meets<T> {
    /// The figure for a path that `streams` or not.
    pub fn pick(self, streams: bool) -> T {
        if streams {
            self.streams
        } else {
            self.buffers
        }
    }
}

/// Whether a response meets every objective; TTFT and E2E count from `scheduled` where there is
/// one, so that waiting in the client counts against the server's budget as the user feels it.
/// A response delivered in bursts ([`crate::summary::bursts`]) through a path that buffers has no TPOT
/// to meet an objective with, and no TTFT where its first burst held most of it: there it is
/// not shown to meet those (`buffers`); where the path streams its figures are its own.
pub fn meets(r: &Record, slo: &Slo) -> Meets<bool> {
    let buffered = (slo.ttft.is_some() || slo.tpot.is_some())
        .then(|| crate::summary::bursts::buffered(r))
        .flatten();
    judged(r, slo, buffered.as_ref())
}

/// [`meets`], for a response whose delivery in bursts (`buffered`) is known.
pub(super) fn judged(
    r: &Record,
    slo: &Slo,
    buffered: Option<&crate::summary::bursts::Delivery>,
) -> Meets<bool> {
    let start = r.scheduled_s.unwrap_or(r.sent_s);
    let within = |value_ms: Option<f64>, limit: Option<std::time::Duration>| {
        limit.is_none_or(|l| value_ms.is_some_and(|v| v <= l.as_secs_f64() * 1e3))
    };
    let ttft_kept = buffered.is_none_or(crate::summary::bursts::Delivery::keeps_ttft);
    let ttft = r.first_token_s.map(|t| (t - start) * 1e3);
    let e2e = within(r.done_s.map(|t| (t - start) * 1e3), slo.e2e);
    let streams = within(ttft, slo.ttft) && within(r.tpot_ms(), slo.tpot) && e2e;
    let buffers = within(ttft.filter(|_| ttft_kept), slo.ttft)
        && within(r.tpot_ms().filter(|_| buffered.is_none()), slo.tpot)
        && e2e;
    Meets { streams, buffers }
}
