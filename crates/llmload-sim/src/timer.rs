//! A timer finer than tokio's: tokio rounds every sleep up to its next millisecond tick, which
//! would put up to a millisecond of the server's own lateness into every token of a fixed
//! schedule. One thread sleeps to the earliest deadline on the operating system's high-resolution
//! timer and wakes the tasks whose deadlines have passed (tens of microseconds late, not a tick).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::Instant;

/// Deadlines waiting, earliest first, with the wakers of their tasks.
struct Queue {
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    wakers: std::collections::HashMap<u64, Waker>,
    next_id: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    thread: Thread,
}

#[expect(
    clippy::expect_used,
    reason = "without its timer thread the simulator cannot keep any schedule; a process that \
              cannot start one thread has no way to go on"
)]
fn timer() -> &'static Arc<Timer> {
    static TIMER: OnceLock<Arc<Timer>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<Arc<Timer>>();
        let handle = std::thread::Builder::new()
            .name("sim-timer".into())
            .spawn(move || {
                if let Ok(timer) = receiver.recv() {
                    run(&timer);
                }
            })
            .expect("the simulator can start its timer thread");
        let timer = Arc::new(Timer {
            queue: Mutex::new(Queue {
                deadlines: BinaryHeap::new(),
                wakers: std::collections::HashMap::new(),
                next_id: 0,
            }),
            thread: handle.thread().clone(),
        });
        let _ = sender.send(Arc::clone(&timer));
        timer
    })
}

fn run(timer: &Timer) {
    loop {
        let next = {
            let Ok(mut queue) = timer.queue.lock() else {
                return;
            };
            let now = Instant::now();
            while let Some(&Reverse((at, id))) = queue.deadlines.peek() {
                if at > now {
                    break;
                }
                queue.deadlines.pop();
                if let Some(waker) = queue.wakers.remove(&id) {
                    waker.wake();
                }
            }
            queue.deadlines.peek().map(|Reverse((at, _))| *at)
        };
        match next {
            Some(at) => std::thread::park_timeout(at.saturating_duration_since(Instant::now())),
            None => std::thread::park(),
        }
    }
}

/// Sleeps until `deadline` (tokio's clock), woken by the fine timer.
pub(crate) fn sleep_until(deadline: tokio::time::Instant) -> Sleep {
    Sleep {
        deadline: deadline.into_std(),
        id: None,
    }
}

/// The future of [`sleep_until`].
pub(crate) struct Sleep {
    deadline: Instant,
    id: Option<u64>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        let timer = timer();
        let Ok(mut queue) = timer.queue.lock() else {
            return Poll::Ready(());
        };
        match self.id {
            Some(id) if queue.wakers.contains_key(&id) => {
                queue.wakers.insert(id, cx.waker().clone());
            }
            _ => {
                let id = queue.next_id;
                queue.next_id += 1;
                let earliest = queue
                    .deadlines
                    .peek()
                    .is_none_or(|Reverse((at, _))| self.deadline < *at);
                queue.deadlines.push(Reverse((self.deadline, id)));
                queue.wakers.insert(id, cx.waker().clone());
                self.id = Some(id);
                if earliest {
                    timer.thread.unpark();
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(id), Ok(mut queue)) = (self.id, timer().queue.lock()) {
            queue.wakers.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn wakes_close_to_the_deadline_in_order() {
        let start = tokio::time::Instant::now();
        let mut late = Vec::new();
        for k in 1..=20u64 {
            let deadline = start + Duration::from_micros(1500 * k);
            sleep_until(deadline).await;
            late.push(tokio::time::Instant::now() - deadline);
        }
        late.sort_unstable();
        // tokio's own timer would be up to a millisecond late; allow a loaded test machine.
        assert!(late[10] < Duration::from_micros(900), "{late:?}");
    }

    #[test]
    fn a_dropped_sleep_leaves_no_waker() {
        let far = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut sleep = Box::pin(sleep_until(far));
        let mut context = Context::from_waker(Waker::noop());
        assert!(sleep.as_mut().poll(&mut context).is_pending());
        let id = sleep.id.expect("registered");
        assert!(timer()
            .queue
            .lock()
            .expect("sound")
            .wakers
            .contains_key(&id));
        drop(sleep);
        assert!(!timer()
            .queue
            .lock()
            .expect("sound")
            .wakers
            .contains_key(&id));
    }
}
