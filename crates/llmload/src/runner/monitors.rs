//! What watches a run beside the runner: GPU telemetry, the server's `/metrics`, and the stop
//! signal the face hands in.

use crate::attempt::Attempt;
use crate::config::Config;
use crate::guard::{Guard, Rule, StopSignal, StopVerdict};
use crate::target::Target;
use crate::telemetry::server_metrics;
use crate::telemetry::{Sampler, TelemetrySummary};
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What watches the run beside the runner: GPU telemetry, the server's `/metrics`, and Ctrl-C.
pub struct Monitors {
    stop: CancellationToken,
    telemetry: tokio::task::JoinHandle<TelemetrySummary>,
    scraper: tokio::task::JoinHandle<server_metrics::ServerMetricsSummary>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Monitors {
    /// Starts the telemetry sampler (its readings go to the guard), the `/metrics` scraper, and
    /// the watcher that trips the guard on `interrupted`.
    pub fn start(
        config: &Config,
        sampler: Sampler,
        target: &Target,
        attempt: &Attempt,
        guard: &Arc<Guard>,
        interrupted: StopSignal,
        origin: Instant,
    ) -> Monitors {
        let stop = CancellationToken::new();
        Monitors {
            telemetry: {
                let guard = guard.clone();
                tokio::spawn(sampler.run(
                    attempt.dir.clone(),
                    origin,
                    move |r| guard.observe_reading(r),
                    stop.clone(),
                ))
            },
            // One replica's counters are not the load's: with several, none is read.
            scraper: if target.replicas.is_empty() {
                tokio::spawn(server_metrics::scrape(
                    std::sync::Arc::new(target.endpoint.setup.sibling()),
                    (config.telemetry_interval, config.setup_timeout),
                    attempt.dir.clone(),
                    origin,
                    stop.clone(),
                ))
            } else {
                tokio::spawn(async { server_metrics::ServerMetricsSummary::default() })
            },
            watcher: tokio::spawn(trip_on_interrupt(interrupted, guard.clone())),
            stop,
        }
    }

    /// Stops them; the telemetry summary, with the server metrics' when there were any (their
    /// file is removed when the server had none).
    pub async fn finish(self, dir: &std::path::Path) -> Option<TelemetrySummary> {
        self.stop.cancel();
        self.watcher.abort();
        let server_metrics = self.scraper.await.ok().filter(|m| m.scrapes > 0);
        if server_metrics.is_none() {
            let _ = std::fs::remove_file(dir.join("server_metrics.jsonl"));
        }
        self.telemetry.await.ok().map(|mut t| {
            t.server_metrics = server_metrics;
            t
        })
    }
}

async fn trip_on_interrupt(interrupted: StopSignal, guard: Arc<Guard>) {
    let signal = interrupted.raised().await;
    guard.trip(StopVerdict {
        rule: Rule::Interrupted,
        reason: signal.to_owned(),
        sample: guard.latest(),
        at: "signal".into(),
    });
}
