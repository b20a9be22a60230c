//! The requests in flight, counted as they begin and end on the transport (two atomic counters,
//! nothing per token), and an open loop's arrivals that wait: due by the schedule, not yet sent
//! (behind the in-flight cap, or behind the pacer). The live view, the progress line, the
//! heartbeat and `/metrics` all read one [`Flight`].

use crate::api::client::{Pending, Transport};
use crate::api::Body;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Requests begun and ended on the transport, and the open loop's schedule while it launches.
#[derive(Debug, Default)]
pub struct Flight {
    began: AtomicU64,
    ended: AtomicU64,
    /// Exchanges begun before the load running now (a case, or a staged load) started.
    load_base: AtomicU64,
    schedule: Mutex<Option<Schedule>>,
}

/// An open loop's arrivals, for the backlog: those due whose request has not begun.
#[derive(Debug)]
struct Schedule {
    start: std::time::Instant,
    /// Offsets of this process's arrivals from `start`, in order.
    offsets: Arc<[Duration]>,
    /// Exchanges begun before the loop started.
    base: u64,
}

/// The counts of the load running now, as the live views show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests sent since the load started (its warmup included).
    pub launched: u64,
    /// Requests sent and not ended.
    pub in_flight: u64,
    /// An open loop's arrivals that are due and not sent yet (0 for any other load).
    pub waiting: u64,
}

impl Flight {
    /// Nothing begun.
    pub fn new() -> Arc<Flight> {
        Arc::new(Flight::default())
    }

    /// A load starts: its launches count from here.
    pub fn new_load(&self) {
        let began = self.began.load(Ordering::Acquire);
        self.load_base.store(began, Ordering::Release);
    }

    /// An open loop starts at `start`, its arrivals at `offsets` from it.
    pub fn open_loop(&self, start: std::time::Instant, offsets: Arc<[Duration]>) {
        *lock(&self.schedule) = Some(Schedule {
            start,
            offsets,
            base: self.began.load(Ordering::Acquire),
        });
    }

    /// The open loop launches no more.
    pub fn open_loop_over(&self) {
        *lock(&self.schedule) = None;
    }

    /// Requests begun and not ended.
    pub fn in_flight(&self) -> u64 {
        let ended = self.ended.load(Ordering::Acquire);
        self.began.load(Ordering::Acquire).saturating_sub(ended)
    }

    /// An open loop's arrivals that are due and whose request has not begun (0 without one).
    pub fn backlog(&self) -> u64 {
        let schedule = lock(&self.schedule);
        let Some(s) = schedule.as_ref() else {
            return 0;
        };
        let now = s.start.elapsed();
        let due = s.offsets.partition_point(|o| *o <= now) as u64;
        let sent = self.began.load(Ordering::Acquire).saturating_sub(s.base);
        due.saturating_sub(sent)
    }

    /// The load's counts now.
    pub fn counts(&self) -> Counts {
        let began = self.began.load(Ordering::Acquire);
        Counts {
            launched: began.saturating_sub(self.load_base.load(Ordering::Acquire)),
            in_flight: self.in_flight(),
            waiting: self.backlog(),
        }
    }

    /// `transport` with its exchanges counted in flight here.
    pub fn counted(self: &Arc<Self>, transport: Arc<dyn Transport>) -> Arc<dyn Transport> {
        Arc::new(Counted {
            inner: transport,
            flight: self.clone(),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A transport whose exchanges are counted while they last (a dropped one too).
struct Counted {
    inner: Arc<dyn Transport>,
    flight: Arc<Flight>,
}

/// Ends an exchange's count however the exchange ends.
struct InFlight(Arc<Flight>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::AcqRel);
    }
}

impl Transport for Counted {
    fn exchange<'a>(&'a self, body: Body, cancel: &'a CancellationToken) -> Pending<'a> {
        Box::pin(async move {
            self.flight.began.fetch_add(1, Ordering::AcqRel);
            let _in_flight = InFlight(self.flight.clone());
            self.inner.exchange(body, cancel).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::client::Exchange;

    /// A transport whose exchanges end only when cancelled.
    struct Never;

    impl Transport for Never {
        fn exchange<'a>(&'a self, _: Body, cancel: &'a CancellationToken) -> Pending<'a> {
            Box::pin(async move {
                cancel.cancelled().await;
                Exchange::new()
            })
        }
    }

    #[test]
    fn the_backlog_is_the_arrivals_due_whose_request_has_not_begun() {
        let flight = Flight::new();
        // One exchange (a warmup) before the loop: not part of its count.
        flight.began.fetch_add(1, Ordering::AcqRel);
        let start = std::time::Instant::now()
            .checked_sub(Duration::from_secs(10))
            .expect("a machine up for 10 s");
        let offsets: Vec<Duration> = [0, 1, 2, 3, 20].map(Duration::from_secs).to_vec();
        flight.open_loop(start, offsets.into());
        assert_eq!(flight.backlog(), 4, "4 due, none begun");
        flight.began.fetch_add(3, Ordering::AcqRel);
        assert_eq!(flight.backlog(), 1);
        flight.began.fetch_add(2, Ordering::AcqRel);
        assert_eq!(flight.backlog(), 0, "never below 0");
        flight.open_loop_over();
        assert_eq!(flight.backlog(), 0);
    }

    #[tokio::test]
    async fn an_exchange_is_in_flight_until_it_ends_or_is_dropped_and_counts_as_launched() {
        let flight = Flight::new();
        let transport = flight.counted(Arc::new(Never));
        let cancel = CancellationToken::new();
        let body = Body::from_json(&serde_json::json!({}));
        let before = {
            let (t, b, c) = (transport.clone(), body.clone(), cancel.clone());
            tokio::spawn(async move { t.exchange(b, &c).await })
        };
        while flight.in_flight() < 1 {
            tokio::task::yield_now().await;
        }
        // A new load: the exchange begun before it is in flight, not launched by it.
        flight.new_load();
        let ended = {
            let (t, b, c) = (transport.clone(), body.clone(), cancel.clone());
            tokio::spawn(async move { t.exchange(b, &c).await })
        };
        let dropped = {
            let (t, b, c) = (transport.clone(), body.clone(), CancellationToken::new());
            tokio::spawn(async move { t.exchange(b, &c).await })
        };
        while flight.in_flight() < 3 {
            tokio::task::yield_now().await;
        }
        let counts = flight.counts();
        assert_eq!(
            (counts.launched, counts.in_flight, counts.waiting),
            (2, 3, 0)
        );
        cancel.cancel();
        let _ = ended.await;
        let _ = before.await;
        assert_eq!(flight.in_flight(), 1);
        dropped.abort();
        let _ = dropped.await;
        assert_eq!(flight.in_flight(), 0);
        assert_eq!(flight.counts().launched, 2);
    }
}
