//! The open-loop pacer: a dedicated OS thread that launches each prepared request at its
//! scheduled instant.
//!
//! tokio's timer wakes on millisecond ticks, and a worker thread busy with streams may poll a
//! sleeping task late; either would shift sends by a millisecond or more. The pacer thread
//! instead sleeps with the operating system's high-resolution timer to [`SPIN`] before each
//! arrival, then spins on the clock to the instant, and hands the request to the runtime there.
//! What it cannot hide it records: a launch that waits for a free place under the in-flight cap,
//! or for the runtime to poll it, is sent late, and `sent − scheduled` (the send lag) says by how
//! much.
//!
//! A test's runner paces on tokio's timer instead ([`PacerClock::Runtime`]): under a paused
//! clock every launch is then at its exact instant, or exactly as late as the cap held it.
//!
//! The runner prepares requests ahead (their prompts built while earlier ones wait) and submits
//! them in order; the pacer ends when the runner closes the queue or the run is cancelled.
//! Submitted jobs that were never launched are dropped, so that whoever waits on their results
//! sees the channel close.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The pacer sleeps to this much before an arrival, then spins on the clock until it: more than
/// the operating system's timer slack (50 µs by default on Linux) and a wake-up's latency.
pub const SPIN: Duration = Duration::from_micros(200);

/// The longest single sleep, so that a stop is seen within it.
const NAP: Duration = Duration::from_millis(5);

/// Prepared requests the pacer may hold ahead of their arrivals.
pub const AHEAD: usize = 64;

/// A launch: called on the pacer thread at its instant, once the in-flight cap has room.
pub type Job = Box<dyn FnOnce() + Send>;

/// Places in flight under an optional cap: taken by the pacer before a launch, given back by the
/// request when it ends.
#[derive(Debug, Default)]
pub struct Gate {
    cap: Option<usize>,
    in_flight: Mutex<usize>,
    freed: Condvar,
    /// The same news for a pacer on the runtime.
    freed_task: tokio::sync::Notify,
}

impl Gate {
    /// A gate allowing `cap` requests in flight (no limit when `None`).
    pub fn new(cap: Option<usize>) -> Arc<Gate> {
        Arc::new(Gate {
            cap,
            ..Gate::default()
        })
    }

    /// Waits for a place, taking it; false when `cancel` fired first.
    fn take(&self, cancel: &CancellationToken) -> bool {
        let mut n = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while self.cap.is_some_and(|cap| *n >= cap) {
            if cancel.is_cancelled() {
                return false;
            }
            n = self
                .freed
                .wait_timeout(n, NAP)
                .map_or_else(|e| e.into_inner().0, |(n, _)| n);
        }
        *n += 1;
        true
    }

    /// As [`Gate::take`], waiting on the runtime.
    async fn take_on_runtime(&self, cancel: &CancellationToken) -> bool {
        loop {
            // Registered before the count is read, so that a release in between is not missed.
            let freed = self.freed_task.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut n = self
                    .in_flight
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if self.cap.is_none_or(|cap| *n < cap) {
                    *n += 1;
                    return true;
                }
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return false,
                () = freed => {}
            }
        }
    }

    /// Gives a place back (a request ended).
    pub fn release(&self) {
        let mut n = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_sub(1);
        self.freed.notify_one();
        self.freed_task.notify_one();
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        *self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Which clock an open loop's launches keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacerClock {
    /// The pacer thread, on the operating system's high-resolution clock: every real run.
    #[default]
    Thread,
    /// A task on tokio's timer, which a test's paused clock drives: launches exactly on that
    /// clock, and no more precise than the timer on a real one.
    Runtime,
}

/// The runner's side of a running pacer.
pub struct Pacer {
    queue: Option<mpsc::Sender<(Instant, Job)>>,
    launcher: Option<Launcher>,
}

/// Where a pacer runs.
enum Launcher {
    Thread(JoinHandle<(u64, Priority)>),
    Task(tokio::task::JoinHandle<u64>),
}

impl Pacer {
    /// Starts the pacer thread; jobs launch under `gate` until `cancel` fires.
    pub fn start(gate: Arc<Gate>, cancel: CancellationToken) -> std::io::Result<Pacer> {
        let (queue, jobs) = mpsc::channel(AHEAD);
        let thread = std::thread::Builder::new()
            .name("llmload-pacer".into())
            .spawn(move || pace(jobs, &gate, &cancel))?;
        Ok(Pacer {
            queue: Some(queue),
            launcher: Some(Launcher::Thread(thread)),
        })
    }

    /// Starts a pacer on `clock`: the thread, or a task on the runtime (which must be current).
    pub fn on(
        clock: PacerClock,
        gate: Arc<Gate>,
        cancel: CancellationToken,
    ) -> std::io::Result<Pacer> {
        if clock == PacerClock::Thread {
            return Pacer::start(gate, cancel);
        }
        let (queue, jobs) = mpsc::channel(AHEAD);
        let task = tokio::spawn(async move { pace_on_runtime(jobs, &gate, &cancel).await });
        Ok(Pacer {
            queue: Some(queue),
            launcher: Some(Launcher::Task(task)),
        })
    }

    /// Queues `job` to launch at `at`; waits while the pacer holds [`AHEAD`] jobs. False when the
    /// pacer has stopped (the run was cancelled).
    pub async fn submit(&self, at: Instant, job: Job) -> bool {
        match &self.queue {
            Some(queue) => queue.send((at, job)).await.is_ok(),
            None => false,
        }
    }

    /// A place in the queue for one job (see [`Pacer::submit`]); `None` when the pacer has
    /// stopped. Cancel-safe, for use in `select!`.
    pub async fn reserve(&self) -> Option<mpsc::Permit<'_, (Instant, Job)>> {
        self.queue.as_ref()?.reserve().await.ok()
    }

    /// No more jobs: the pacer ends after launching those queued (or at a stop).
    pub fn close(&mut self) {
        self.queue = None;
    }

    /// Closes the queue and waits for the thread; returns how many jobs it launched and the
    /// priority it ran at (`None` if the thread panicked). A pacer on the runtime has no
    /// priority of its own: `Normal`.
    pub async fn finish(mut self) -> Option<(u64, Priority)> {
        self.close();
        match self.launcher.take()? {
            Launcher::Thread(thread) => tokio::task::spawn_blocking(move || thread.join().ok())
                .await
                .ok()
                .flatten(),
            Launcher::Task(task) => task.await.ok().map(|n| (n, Priority::Normal)),
        }
    }
}

/// The scheduling priority the pacer thread got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// Real-time (`SCHED_FIFO`, lowest real-time level): it wakes ahead of every ordinary thread.
    RealTime,
    /// The highest ordinary priority (nice −20).
    Raised,
    /// Neither was permitted (both need privileges): an ordinary thread.
    Normal,
}

impl Priority {
    /// The name written to summaries.
    pub fn name(self) -> &'static str {
        match self {
            Priority::RealTime => "real-time",
            Priority::Raised => "raised",
            Priority::Normal => "normal",
        }
    }

    /// Asks for real-time scheduling for the calling thread, else the highest ordinary priority.
    /// On a busy machine an ordinary thread may wake milliseconds late; a real-time one does not
    /// wait for other threads. Its spin is bounded ([`SPIN`] per arrival), so it cannot starve
    /// the machine.
    fn raise() -> Priority {
        use thread_priority::{
            set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
            RealtimeThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
        };
        let id = thread_native_id();
        let fifo = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
        if set_thread_priority_and_policy(id, ThreadPriority::Min, fifo).is_ok() {
            return Priority::RealTime;
        }
        let normal = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other);
        match set_thread_priority_and_policy(id, ThreadPriority::Max, normal) {
            Ok(()) => Priority::Raised,
            Err(_) => Priority::Normal,
        }
    }
}

/// The pacer thread: each job at its instant, in order.
fn pace(
    mut jobs: mpsc::Receiver<(Instant, Job)>,
    gate: &Gate,
    cancel: &CancellationToken,
) -> (u64, Priority) {
    let priority = Priority::raise();
    let mut launched = 0;
    while let Some((at, job)) = jobs.blocking_recv() {
        if !wait_until(at, cancel) || !gate.take(cancel) {
            break;
        }
        job();
        launched += 1;
    }
    (launched, priority)
}

/// The pacer on the runtime: each job at its instant on tokio's clock, in order.
async fn pace_on_runtime(
    mut jobs: mpsc::Receiver<(Instant, Job)>,
    gate: &Gate,
    cancel: &CancellationToken,
) -> u64 {
    let mut launched = 0;
    while let Some((at, job)) = jobs.recv().await {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
        }
        if !gate.take_on_runtime(cancel).await {
            break;
        }
        job();
        launched += 1;
    }
    launched
}

/// Sleeps, then spins, until `at`; false when `cancel` fired first.
fn wait_until(at: Instant, cancel: &CancellationToken) -> bool {
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let left = at.saturating_duration_since(Instant::now());
        if left <= SPIN {
            break;
        }
        std::thread::sleep(left.saturating_sub(SPIN).min(NAP));
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn jobs_launch_in_order_at_or_after_their_instants() {
        let gate = Gate::new(None);
        let cancel = CancellationToken::new();
        let pacer = Pacer::start(gate, cancel).expect("pacer thread");
        let start = Instant::now() + Duration::from_millis(5);
        let (tx, mut rx) = mpsc::unbounded_channel();
        for i in 0..20_u32 {
            let at = start + Duration::from_millis(u64::from(i) * 2);
            let tx = tx.clone();
            let job: Job = Box::new(move || {
                let _ = tx.send((i, at, Instant::now()));
            });
            assert!(pacer.submit(at, job).await);
        }
        drop(tx);
        assert_eq!(pacer.finish().await.map(|f| f.0), Some(20));
        let mut seen = Vec::new();
        while let Some((i, at, fired)) = rx.recv().await {
            assert!(fired >= at, "job {i} fired before its instant");
            seen.push(i);
        }
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn the_cap_holds_launches_until_a_place_is_given_back() {
        let gate = Gate::new(Some(2));
        let cancel = CancellationToken::new();
        let pacer = Pacer::start(gate.clone(), cancel).expect("pacer thread");
        let launched = Arc::new(AtomicUsize::new(0));
        let now = Instant::now();
        for _ in 0..3 {
            let launched = launched.clone();
            let job: Job = Box::new(move || {
                launched.fetch_add(1, Ordering::SeqCst);
            });
            assert!(pacer.submit(now, job).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            launched.load(Ordering::SeqCst),
            2,
            "the third waits for a place"
        );
        assert_eq!(gate.in_flight(), 2);
        gate.release();
        assert_eq!(pacer.finish().await.map(|f| f.0), Some(3));
        assert_eq!(launched.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_stop_ends_the_pacer_and_drops_what_was_not_launched() {
        let gate = Gate::new(None);
        let cancel = CancellationToken::new();
        let pacer = Pacer::start(gate, cancel.clone()).expect("pacer thread");
        let (tx, mut rx) = mpsc::unbounded_channel::<()>();
        let far = Instant::now() + Duration::from_secs(3600);
        let tx2 = tx.clone();
        let job: Job = Box::new(move || {
            let _ = tx2.send(());
        });
        assert!(pacer.submit(far, job).await);
        drop(tx);
        cancel.cancel();
        assert_eq!(pacer.finish().await.map(|f| f.0), Some(0));
        assert!(rx.recv().await.is_none(), "the unlaunched job was dropped");
    }
}
