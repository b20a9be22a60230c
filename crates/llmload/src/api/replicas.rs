//! Several servers behind one load (`--url A --url B …`): each request goes to one replica, by
//! round-robin, to the one with the fewest requests in flight, or, for a session's requests, to
//! the replica its session id picks (session-sticky), and its exchange says which.

use super::client::{Endpoint, Pending, Transport};
use super::Body;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

/// How requests are spread over the replicas (`--balance`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// Each request to the next replica in turn.
    #[default]
    RoundRobin,
    /// Each request to the replica with the fewest requests in flight (the first of a tie, in
    /// turn).
    LeastInFlight,
    /// A session's requests to one replica, picked from its session id; requests outside
    /// sessions in turn.
    SessionSticky,
}

impl Balance {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "round-robin",
            Balance::LeastInFlight => "least-in-flight",
            Balance::SessionSticky => "session-sticky",
        }
    }
}

/// The replica a session sticks to: its id spread over `n` (a session's id is a counter, so
/// that consecutive sessions go to consecutive replicas).
pub fn sticky(session: u64, n: usize) -> usize {
    usize::try_from(session % n.max(1) as u64).unwrap_or(0)
}

/// The replicas, each an endpoint of its own (connections, keep-alive), and the balance.
pub struct Replicas {
    endpoints: Vec<Endpoint>,
    balance: Balance,
    /// The next replica in turn.
    turn: AtomicUsize,
    /// Requests in flight at each replica.
    in_flight: Vec<AtomicU32>,
}

impl Replicas {
    /// `endpoints` in the order given (at least one).
    pub fn new(endpoints: Vec<Endpoint>, balance: Balance) -> Replicas {
        let in_flight = endpoints.iter().map(|_| AtomicU32::new(0)).collect();
        Replicas {
            endpoints,
            balance,
            turn: AtomicUsize::new(0),
            in_flight,
        }
    }

    /// The replica `body` goes to.
    pub fn pick(&self, body: &Body) -> usize {
        let n = self.endpoints.len();
        let next = || self.turn.fetch_add(1, Ordering::Relaxed) % n.max(1);
        match (self.balance, body.session) {
            (Balance::SessionSticky, Some(session)) => sticky(session, n),
            (Balance::LeastInFlight, _) => {
                let start = next();
                (0..n)
                    .map(|k| (start + k) % n)
                    .min_by_key(|&i| self.in_flight[i].load(Ordering::Relaxed))
                    .unwrap_or(0)
            }
            _ => next(),
        }
    }
}

/// A request counted in flight at its replica from its pick until it ends or is dropped.
struct InFlight<'a>(&'a AtomicU32);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Transport for Replicas {
    fn exchange<'a>(&'a self, body: Body, cancel: &'a CancellationToken) -> Pending<'a> {
        let index = self.pick(&body);
        // Counted at once, so that the picks made before this request starts see it.
        self.in_flight[index].fetch_add(1, Ordering::Relaxed);
        let counted = InFlight(&self.in_flight[index]);
        Box::pin(async move {
            let _counted = counted;
            let mut exchange = self.endpoints[index].stream(body, cancel).await;
            exchange.replica = u16::try_from(index).ok();
            exchange
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(n: u16) -> Vec<Endpoint> {
        (0..n)
            .map(|i| {
                Endpoint::build(
                    &format!("http://127.0.0.1:{}", 9000 + i),
                    crate::api::Api::Completions,
                    (
                        std::time::Duration::from_secs(1),
                        std::time::Duration::from_secs(1),
                    ),
                    None,
                    &[],
                    &crate::api::tls::TlsOptions::default(),
                )
                .expect("an endpoint")
            })
            .collect()
    }

    fn body(session: Option<u64>) -> Body {
        Body {
            session,
            ..Body::from_json(&serde_json::json!({"max_tokens": 4}))
        }
    }

    #[test]
    fn round_robin_takes_each_replica_in_turn() {
        let r = Replicas::new(endpoints(3), Balance::RoundRobin);
        let picked: Vec<usize> = (0..7).map(|_| r.pick(&body(Some(5)))).collect();
        assert_eq!(picked, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn a_session_sticks_to_one_replica_and_others_go_in_turn() {
        let r = Replicas::new(endpoints(2), Balance::SessionSticky);
        for session in 0..6 {
            let first = r.pick(&body(Some(session)));
            assert_eq!(first, usize::try_from(session % 2).expect("small"));
            for _ in 0..5 {
                assert_eq!(r.pick(&body(Some(session))), first);
            }
        }
        let picked: Vec<usize> = (0..4).map(|_| r.pick(&body(None))).collect();
        assert_eq!(picked, [0, 1, 0, 1]);
    }

    #[test]
    fn least_in_flight_takes_the_idlest_replica() {
        let r = Replicas::new(endpoints(3), Balance::LeastInFlight);
        r.in_flight[0].store(2, Ordering::Relaxed);
        r.in_flight[1].store(1, Ordering::Relaxed);
        r.in_flight[2].store(3, Ordering::Relaxed);
        for _ in 0..4 {
            assert_eq!(r.pick(&body(None)), 1);
        }
        r.in_flight[0].store(1, Ordering::Relaxed);
        // A tie goes to the first in turn from the rotating start.
        let picked: Vec<usize> = (0..4).map(|_| r.pick(&body(None))).collect();
        assert!(picked.iter().all(|&i| i == 0 || i == 1), "{picked:?}");
        assert!(picked.contains(&0) && picked.contains(&1), "{picked:?}");
    }

    #[test]
    fn a_request_is_in_flight_from_its_pick_to_its_drop() {
        let r = Replicas::new(endpoints(2), Balance::LeastInFlight);
        let cancel = CancellationToken::new();
        let first = r.exchange(body(None), &cancel);
        let (a, b) = (
            r.in_flight[0].load(Ordering::Relaxed),
            r.in_flight[1].load(Ordering::Relaxed),
        );
        assert_eq!(a + b, 1, "counted before it is polled");
        // The next goes to the other replica, although the first has not started.
        let second = r.exchange(body(None), &cancel);
        assert_eq!(r.in_flight[0].load(Ordering::Relaxed), 1);
        assert_eq!(r.in_flight[1].load(Ordering::Relaxed), 1);
        drop((first, second));
        assert_eq!(r.in_flight[0].load(Ordering::Relaxed), 0);
        assert_eq!(r.in_flight[1].load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_session_key_is_its_id() {
        assert_eq!(crate::api::session_key(12), "session-12");
        assert_eq!(sticky(7, 3), 1);
        assert_eq!(sticky(7, 0), 0);
    }
}
