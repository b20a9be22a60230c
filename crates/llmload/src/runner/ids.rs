//! Request ids: each generation request carries an `X-Request-Id` unique within its attempt, and
//! with `--traceparent` a W3C `traceparent`, so that it can be found in the server's logs and
//! traces, and its record joined with what the server says of it.
//!
//! The id is the attempt's id and the request's number in this process (`ID-N`; a shard's
//! `ID-sI-N`, so that the shards of one attempt never collide). The trace id is derived from the
//! attempt id alone, so every request of an attempt, on every shard, is one trace; each request
//! is a span of its own.

use crate::api::RequestId;
use crate::workload::prompt::splitmix64;
use crate::workload::shard::fnv1a;
use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out the ids of one attempt's requests (of one shard's, when sharded).
#[derive(Debug)]
pub struct RequestIds {
    /// What every id opens with: the attempt id, and a shard's index.
    prefix: String,
    /// The hash of the attempt id the trace and span ids come from.
    hash: u64,
    /// A shard's index (0 otherwise), keeping span ids apart between shards.
    shard: u32,
    /// `--traceparent`: the trace id (32 hex digits) every request's `traceparent` carries.
    trace_id: Option<String>,
    /// The next request's number.
    next: AtomicU64,
}

impl RequestIds {
    /// The ids of attempt `attempt_id`, as shard `shard` (its index, when the attempt is
    /// sharded); with `traceparent`, a W3C `traceparent` on each request too.
    pub fn new(attempt_id: &str, shard: Option<u32>, traceparent: bool) -> RequestIds {
        let hash = fnv1a(attempt_id.as_bytes());
        let trace_id = traceparent.then(|| {
            let (high, low) = (splitmix64(hash), splitmix64(hash ^ 0x7472_6163_6569_6400));
            // An id of all zeros is invalid (W3C Trace Context, 3.2.2.3).
            let low = if high == 0 && low == 0 { 1 } else { low };
            format!("{high:016x}{low:016x}")
        });
        let prefix = match shard {
            Some(index) => format!("{attempt_id}-s{index}"),
            None => attempt_id.to_owned(),
        };
        RequestIds {
            prefix,
            hash,
            shard: shard.unwrap_or(0),
            trace_id,
            next: AtomicU64::new(0),
        }
    }

    /// The next request's ids.
    pub fn next(&self) -> RequestId {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let traceparent = self.trace_id.as_ref().map(|trace| {
            // A bijection of (shard, n): distinct spans for distinct requests; never all zeros.
            let span = splitmix64(self.hash ^ (u64::from(self.shard) << 40) ^ n).max(1);
            format!("00-{trace}-{span:016x}-01")
        });
        RequestId {
            id: format!("{}-{n}", self.prefix),
            traceparent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_within_an_attempt_and_across_its_shards() {
        let whole = RequestIds::new("20260101T000000Z-ab12", None, false);
        let first = whole.next();
        assert_eq!(first.id, "20260101T000000Z-ab12-0");
        assert_eq!(first.traceparent, None);
        let shards = [
            RequestIds::new("bench", Some(0), true),
            RequestIds::new("bench", Some(1), true),
        ];
        let mut ids = HashSet::new();
        let mut spans = HashSet::new();
        for _ in 0..500 {
            for shard in &shards {
                let next = shard.next();
                let traceparent = next.traceparent.expect("asked for");
                spans.insert(traceparent[36..52].to_owned());
                ids.insert(next.id);
            }
        }
        assert_eq!((ids.len(), spans.len()), (1000, 1000));
        assert!(ids.contains("bench-s0-0") && ids.contains("bench-s1-499"));
    }

    #[test]
    fn a_traceparent_is_version_00_of_one_trace_per_attempt() {
        let ids = RequestIds::new("bench", Some(0), true);
        let (a, b) = (ids.next(), ids.next());
        let a = a.traceparent.expect("asked for");
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(parts.len(), 4, "{a}");
        assert_eq!((parts[0], parts[3]), ("00", "01"));
        assert_eq!((parts[1].len(), parts[2].len()), (32, 16));
        assert!(a
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        // The same trace for every request of the attempt, on every shard; another attempt's
        // is another.
        let b = b.traceparent.expect("asked for");
        let other_shard = RequestIds::new("bench", Some(1), true).next().traceparent;
        let other_attempt = RequestIds::new("bench2", Some(0), true).next().traceparent;
        assert_eq!(&b[3..35], parts[1]);
        assert_eq!(&other_shard.expect("asked for")[3..35], parts[1]);
        assert_ne!(&other_attempt.expect("asked for")[3..35], parts[1]);
    }
}
