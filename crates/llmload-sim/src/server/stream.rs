//! The streaming body: turns a request's engine progress into SSE bytes, one event per token (or
//! per `k` tokens under the multi-token fault), and plays the stream faults (drop, stall,
//! malformed). It wakes on the request's `watch` channel; when it falls behind it writes every
//! pending event into one frame, so a slow client costs no engine time. Under a fixed or zero-cost
//! [`Schedule`] the tokens come from the request's own clock instead of the engine, one event per
//! frame.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::watch;
use tokio::time::Instant;

use super::events::{EventContext, MALFORMED_EVENT};
use super::reply::Body;
use super::request::Api;
use crate::driver::Progress;
use crate::engine::{Finish, StopReason};
use crate::fault::FaultPlan;
use crate::Schedule;

/// Where a request's tokens come from.
pub(crate) enum Source {
    /// The engine task's progress reports.
    Engine(watch::Receiver<Progress>),
    /// The request's own timeline (a fixed or zero-cost schedule).
    Clock(Clock),
}

/// A request's timeline under a fixed or zero-cost schedule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    /// When the request's last byte reached the machine (the kernel's receive stamp), else when
    /// its body was read.
    pub arrival: Instant,
    /// The schedule (never `Engine`).
    pub schedule: Schedule,
    /// Tokens it generates.
    pub tokens: usize,
    /// Why it stops after them.
    pub stop: StopReason,
    /// Slot reported in events.
    pub slot: usize,
    /// Tokens per event (the multi-token fault), at least 1.
    pub per_event: usize,
    /// Modelled per wall-clock time: the reported timings are divided by it again.
    pub time_scale: f64,
}

impl Clock {
    fn due(&self, index: usize) -> Instant {
        self.arrival + self.schedule.token_offset(index).unwrap_or_default()
    }

    /// Progress at this moment, given `sent` tokens are out. Zero-cost releases one event's
    /// tokens per call, so that every event is a write of its own.
    pub(super) fn progress(&self, sent: usize) -> Progress {
        let due = match self.schedule {
            Schedule::ZeroCost { .. } | Schedule::Engine => sent + self.per_event,
            Schedule::Fixed { ttft, itl } => {
                let elapsed = Instant::now().saturating_duration_since(self.arrival);
                match elapsed.checked_sub(ttft) {
                    None => 0,
                    Some(_) if itl.is_zero() => self.tokens,
                    Some(after) => 1 + (after.as_nanos() / itl.as_nanos()) as usize,
                }
            }
        };
        let generated = due.min(self.tokens);
        let finish = (generated == self.tokens).then(|| {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 * self.time_scale;
            let first = self.due(0) - self.arrival;
            let last = self.due(self.tokens.saturating_sub(1)) - self.arrival;
            Finish {
                stop: self.stop,
                prompt_ms: ms(first),
                predicted_ms: ms(last.saturating_sub(first)),
            }
        });
        Progress {
            slot: Some(self.slot),
            cached_tokens: 0,
            generated,
            finish,
        }
    }

    /// Waits until the next event's tokens are due, `sent` being out.
    async fn next(&self, sent: usize) {
        match self.schedule {
            Schedule::ZeroCost { .. } | Schedule::Engine => tokio::task::yield_now().await,
            Schedule::Fixed { .. } => {
                let last = (sent + self.per_event).min(self.tokens).saturating_sub(1);
                crate::timer::sleep_until(self.due(last)).await;
            }
        }
    }

    /// `zero-cost:write=each`: hand the connection back between events (one `Pending`), so that
    /// it writes each event on its own instead of queueing it behind the last.
    async fn between_events(&self) {
        if self.schedule == (Schedule::ZeroCost { write_each: true }) {
            tokio::task::yield_now().await;
        }
    }
}

impl Source {
    fn current(&mut self, sent: usize) -> Progress {
        match self {
            Source::Engine(progress) => *progress.borrow_and_update(),
            Source::Clock(clock) => clock.progress(sent),
        }
    }

    /// Waits for more progress; an error when the engine stopped.
    async fn changed(&mut self, sent: usize) -> Result<(), watch::error::RecvError> {
        match self {
            Source::Engine(progress) => progress.changed().await,
            Source::Clock(clock) => {
                clock.next(sent).await;
                Ok(())
            }
        }
    }
}

/// The stream faults of one request.
#[derive(Debug, Clone, Copy)]
struct StreamFaults {
    drop_after: Option<usize>,
    stall: Option<(usize, Duration)>,
    malformed_after: Option<usize>,
    tokens_per_event: usize,
}

/// What writing the available tokens came to.
enum Fill {
    /// Nothing more until the engine makes progress.
    Wait,
    /// The drop fault fires here.
    Drop,
    /// The stall fault fires here.
    Stall(Duration),
    /// Every token is out and generation has ended.
    Finished,
}

/// State of one streaming response.
pub(crate) struct TokenStream {
    context: EventContext,
    source: Source,
    faults: StreamFaults,
    sent: usize,
    finish_sent: bool,
    role_pending: bool,
    pending: Option<Fill>,
    done: bool,
}

impl TokenStream {
    /// A stream for one request.
    pub(super) fn new(context: EventContext, source: Source, plan: &FaultPlan) -> Self {
        Self {
            role_pending: context.api == Api::Chat,
            context,
            source,
            faults: StreamFaults {
                drop_after: plan.drop_after,
                stall: plan.stall,
                malformed_after: plan.malformed_after,
                tokens_per_event: plan.tokens_per_event.max(1),
            },
            sent: 0,
            finish_sent: false,
            pending: None,
            done: false,
        }
    }

    /// The response body.
    pub(super) fn into_body(self) -> Body {
        let frames = stream::unfold(self, |mut state| async move {
            let frame = state.next_frame().await?;
            Some((frame.map(Frame::data), state))
        });
        StreamBody::new(frames).boxed()
    }

    /// The next chunk of bytes, an error that closes the connection, or the end.
    async fn next_frame(&mut self) -> Option<io::Result<Bytes>> {
        if self.done {
            return None;
        }
        if let (Source::Clock(clock), true) = (&self.source, self.sent > 0) {
            clock.between_events().await;
        }
        loop {
            match self.pending.take() {
                Some(Fill::Drop) => {
                    // Return Pending once so hyper flushes the events already written;
                    // an error straight after a frame would discard them unsent.
                    tokio::task::yield_now().await;
                    self.done = true;
                    return Some(Err(dropped()));
                }
                Some(Fill::Stall(duration)) => tokio::time::sleep(duration).await,
                _ => {}
            }
            let progress = self.source.current(self.sent);
            let mut out = String::new();
            if std::mem::take(&mut self.role_pending) {
                self.context.role_event(&mut out);
            }
            match self.fill(&mut out, &progress) {
                Fill::Wait => {}
                Fill::Finished => {
                    self.context
                        .final_events(&mut out, &progress, self.finish_sent);
                    self.done = true;
                }
                // Send what is written first; the fault fires on the next call.
                fault => self.pending = Some(fault),
            }
            if !out.is_empty() {
                return Some(Ok(Bytes::from(out)));
            }
            if self.pending.is_some() {
                continue;
            }
            if self.source.changed(self.sent).await.is_err() {
                self.done = true;
                return Some(Err(io::Error::other("the engine stopped")));
            }
        }
    }

    /// Writes the events for every token available, up to the next fault.
    fn fill(&mut self, out: &mut String, progress: &Progress) -> Fill {
        loop {
            if self.faults.drop_after == Some(self.sent) {
                self.faults.drop_after = None;
                return Fill::Drop;
            }
            if let Some((after, duration)) = self.faults.stall {
                if after == self.sent {
                    self.faults.stall = None;
                    return Fill::Stall(duration);
                }
            }
            if self.faults.malformed_after == Some(self.sent) {
                self.faults.malformed_after = None;
                out.push_str(MALFORMED_EVENT);
            }
            let available = progress.generated - self.sent;
            if available == 0 {
                return if progress.finish.is_some() {
                    Fill::Finished
                } else {
                    Fill::Wait
                };
            }
            let next_fault = [
                self.faults.drop_after,
                self.faults.stall.map(|(after, _)| after),
                self.faults.malformed_after,
            ]
            .into_iter()
            .flatten()
            .filter(|after| *after > self.sent)
            .min()
            .map_or(usize::MAX, |after| after - self.sent);
            let count = self.faults.tokens_per_event.min(next_fault);
            if available < count && progress.finish.is_none() {
                return Fill::Wait;
            }
            let count = count.min(available);
            let last = self.sent + count == progress.generated;
            let stop = progress.finish.filter(|_| last).map(|finish| finish.stop);
            let slot = progress.slot.unwrap_or(0);
            self.context.token_event(out, self.sent, count, slot, stop);
            self.finish_sent |= stop.is_some() && self.context.api == Api::Completions;
            self.sent += count;
        }
    }
}

fn dropped() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection dropped by the drop fault",
    )
}
