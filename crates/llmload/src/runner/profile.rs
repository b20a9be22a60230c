//! `--profile-server N`: the server's profiler around one round: the first measured round of
//! the first case of N or more streams. While the round runs, the server's `/metrics` is read
//! every 50 ms; once it says N requests are running (the batch is full), the profiler is asked
//! to start; when the round ends, to stop. Where the server has no gauge of running requests,
//! the profiler starts as soon as the round's requests are sent.

use super::Runner;
use crate::api::Body;
use crate::record::{RequestMeta, ServerCall, ServerProfile};
use crate::summary::window::CaseRun;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A round's requests, each with its slot, and its canary built already.
type Round = (Vec<(RequestMeta, Option<u32>)>, Option<(RequestMeta, Body)>);

/// How often `/metrics` is read while waiting for the batch to fill.
const POLL: Duration = Duration::from_millis(50);

/// What the watch saw when it asked the profiler to start.
struct Started {
    gauge: Option<&'static str>,
    running: Option<f64>,
    at: Instant,
    call: ServerCall,
}

impl Runner<'_> {
    /// Whether round `round` of a case of `concurrency` streams is the one to profile.
    pub(super) fn profiles(&self, concurrency: u32, round: u32) -> Option<u32> {
        let at = self.settings.profile_server?;
        (!self.profiled && round == 1 && concurrency >= at).then_some(at)
    }

    /// Runs a round's `requests` (and its canary) with the server's profiler around it, waiting
    /// for `at` running requests; what happened goes into `run`.
    pub(super) async fn profiled_round(
        &mut self,
        (requests, canary): Round,
        run: &mut CaseRun,
        (at, round): (u32, u32),
    ) -> crate::error::Result<()> {
        self.profiled = true;
        let target = self.target;
        let stop = CancellationToken::new();
        let watch = async {
            loop {
                let reading = tokio::select! {
                    r = target.running() => r,
                    () = stop.cancelled() => return None,
                };
                let (gauge, running) = match reading {
                    Some((gauge, running)) if running >= f64::from(at) => {
                        (Some(gauge), Some(running))
                    }
                    // No gauge: the round's requests are all sent by the first reading.
                    None => (None, None),
                    Some(_) => {
                        tokio::select! {
                            () = tokio::time::sleep(POLL) => continue,
                            () = stop.cancelled() => return None,
                        }
                    }
                };
                let at = Instant::now();
                let call = target.profiler(true).await;
                return Some(Started {
                    gauge,
                    running,
                    at,
                    call,
                });
            }
        };
        let launch = async {
            let launched = self.launch(requests, canary, run).await;
            stop.cancel();
            launched
        };
        let (launched, started) = tokio::join!(launch, watch);
        launched?;
        let mut profile = ServerProfile {
            round,
            at,
            gauge: None,
            running: None,
            started_s: None,
            start: None,
            stopped_s: None,
            stop: None,
            location: target.profile_location(),
        };
        if let Some(started) = started {
            profile.gauge = started.gauge.map(str::to_owned);
            profile.running = started.running;
            profile.started_s = Some(self.since(started.at));
            if started.call.done {
                profile.stopped_s = Some(self.since(Instant::now()));
                profile.stop = Some(target.profiler(false).await);
            }
            profile.start = Some(started.call);
        }
        let said = match (&profile.start, &profile.stop) {
            (None, _) => Some(format!(
                "--profile-server {at}: the server never said {at} requests were running \
                 during round {round}; no profile"
            )),
            (
                Some(ServerCall {
                    refused: Some(why), ..
                }),
                _,
            )
            | (
                _,
                Some(ServerCall {
                    refused: Some(why), ..
                }),
            ) => Some(format!(
                "--profile-server: the server refused ({why}); the run goes on"
            )),
            _ => None,
        };
        if let Some(said) = said {
            self.progress.println(&said);
        }
        run.profile = Some(profile);
        Ok(())
    }
}
