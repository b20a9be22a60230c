//! Every metric family of the board, written at a scrape: names follow Prometheus' conventions
//! (`llmload_` first, base units in the name, `_total` on counters). docs/outputs.md lists them.

use super::histogram::Histogram;
use super::text::{number_into, Format, Kind, Labels, Writer};
use super::{lock, phase_name, status_name, Board, CaseCounts};
use crate::guard::Rule;
use crate::record::Phase;
use crate::summary::client_check::ClientVerdict;
use crate::telemetry::Reading;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A family: its name, its unit where the name ends with one, and its help.
struct Family(&'static str, Option<&'static str>, &'static str);

/// A case's counter by phase, or one of its histograms.
type Tokens = fn(&CaseCounts) -> [u64; 2];
type Timed = fn(&CaseCounts) -> &Histogram;
/// A figure of a GPU reading, where it has it.
type Figure<T> = fn(&Reading) -> Option<T>;

const S: Option<&str> = Some("seconds");
const C: Option<&str> = Some("celsius");
const W: Option<&str> = Some("watts");

const TOKENS: [(Family, Tokens); 2] = [
    (Family("llmload_prompt_tokens", None, "Prompt tokens sent (input_tokens of the ended requests), by case and phase."), |c| c.prompt_tokens),
    (Family("llmload_output_tokens", None, "Output tokens received (the server's count, else the stream's, of the ended requests), by case and phase."), |c| c.output_tokens),
];

const TIMES: [(Family, Timed); 4] = [
    (Family("llmload_time_to_first_token_seconds", S, "Time to first token of the measured ok responses, from their send."), |c| &c.ttft),
    (Family("llmload_inter_token_latency_seconds", S, "Gaps between the tokens of the measured ok responses (an event of k tokens: k gaps of a k-th of it)."), |c| &c.itl),
    (Family("llmload_complete_response_seconds", S, "Complete-response time of the measured ok responses, from their send."), |c| &c.complete),
    (Family("llmload_send_lag_seconds", S, "Open loops: sent minus scheduled, of every measured request."), |c| &c.send_lag),
];

const READINGS: [(Family, Figure<f64>); 4] = [
    (
        Family(
            "llmload_gpu_temperature_celsius",
            C,
            "The latest GPU temperature the guard read.",
        ),
        |r| Some(r.temperature_c),
    ),
    (
        Family(
            "llmload_gpu_temperature_margin_celsius",
            C,
            "The latest T.Limit margin the guard read (where the GPU reports one).",
        ),
        |r| r.margin_c,
    ),
    (
        Family(
            "llmload_gpu_power_watts",
            W,
            "The latest GPU power draw the guard read.",
        ),
        |r| r.power_w,
    ),
    (
        Family("llmload_gpu_power_limit_watts", W, "The GPU's power limit."),
        |r| r.power_limit_w,
    ),
];

const THROTTLES: [(&str, Figure<bool>); 3] = [
    ("sw_thermal_slowdown", |r| r.sw_thermal_slowdown),
    ("hw_thermal_slowdown", |r| r.hw_thermal_slowdown),
    ("sw_power_cap", |r| r.sw_power_cap),
];

/// The exposition of `board`.
pub(super) fn render(board: &Board, format: Format) -> String {
    let mut w = Writer::new(format);
    info(board, &mut w);
    case(board, &mut w);
    let cases = lock(&board.cases).clone();
    requests(&cases, &mut w);
    latencies(&cases, &mut w);
    let flight = "Requests begun (connecting or sent) and not ended, warmups included.";
    gauge(
        &mut w,
        &Family("llmload_requests_in_flight", None, flight),
        board.in_flight() as f64,
    );
    let backlog = "Open loops: arrivals whose scheduled time has come and whose request has not begun (0 otherwise).";
    gauge(
        &mut w,
        &Family("llmload_requests_backlog", None, backlog),
        board.backlog() as f64,
    );
    guard(board, &mut w);
    check(board, &mut w);
    w.finish()
}

fn gauge(w: &mut Writer, f: &Family, value: f64) {
    w.family(f.0, Kind::Gauge, f.1, f.2);
    w.sample(f.0, &[], value);
}

fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

/// What the run is: its names, when it began serving, whether it has ended.
fn info(board: &Board, w: &mut Writer) {
    // Named once the run has connected and made its attempt (setup comes first).
    if let Some(info) = board.info.get() {
        let help =
            "The run: llmload's version, the attempt, the shard, the API and the model (always 1).";
        w.family("llmload_info", Kind::Gauge, None, help);
        let labels = [
            ("version", env!("CARGO_PKG_VERSION")),
            ("attempt_id", &info.attempt_id),
            ("shard", &info.shard),
            ("api", &info.api),
            ("model", &info.model),
        ];
        w.sample("llmload_info", &labels, 1.0);
    }
    let start = "When the process began serving these metrics, seconds since the Unix epoch.";
    gauge(
        w,
        &Family("llmload_start_time_seconds", S, start),
        board.start_unix_s,
    );
    let finished = "1 once the run has ended and every record is counted, else 0.";
    let done = board.finished.load(Ordering::Acquire);
    gauge(
        w,
        &Family("llmload_run_finished", None, finished),
        flag(done),
    );
}

/// The load running: its case and stage, its number, elapsed time, ETA and requests.
fn case(board: &Board, w: &mut Writer) {
    let Some(s) = board.snapshot.get().map(|rx| rx.borrow().clone()) else {
        return;
    };
    if s.case_id.is_empty() {
        return;
    }
    let elapsed = s.started.map_or(Duration::ZERO, |t| t.elapsed());
    let (id, stage) = match s.stage_at(elapsed) {
        Some((k, n, id)) => (id.to_owned(), format!("{k}/{n}")),
        None => (s.case_id.clone(), String::new()),
    };
    let repeat = s.repeat.map_or(String::new(), |(k, n)| format!("{k}/{n}"));
    let help =
        "The case running (always 1): its id, its stage of a staged load, its repeat of a series.";
    w.family("llmload_case_info", Kind::Gauge, None, help);
    let labels = [
        ("case", id.as_str()),
        ("stage", &stage),
        ("repeat", &repeat),
    ];
    w.sample("llmload_case_info", &labels, 1.0);
    let number = "The load running: its number, from 1 (a staged load is one).";
    gauge(
        w,
        &Family("llmload_case_number", None, number),
        s.case.0 as f64,
    );
    let planned = "The loads planned (a sweep adds as it goes).";
    gauge(
        w,
        &Family("llmload_cases_planned", None, planned),
        s.case.1 as f64,
    );
    let since = "Time since the load running began.";
    gauge(
        w,
        &Family("llmload_case_elapsed_seconds", S, since),
        elapsed.as_secs_f64(),
    );
    if let Some(eta) = s.eta(elapsed) {
        let help = "Time left in the load running: what its duration leaves, else its requests left at the pace so far; absent when neither is known.";
        gauge(
            w,
            &Family("llmload_case_eta_seconds", S, help),
            eta.as_secs_f64(),
        );
    }
    let done = "Measured requests ended in the load running.";
    gauge(
        w,
        &Family("llmload_case_requests_done", None, done),
        s.done as f64,
    );
    if let Some(total) = s.total {
        let help = "Measured requests the load running plans; absent when a duration bounds it.";
        gauge(
            w,
            &Family("llmload_case_requests_planned", None, help),
            total as f64,
        );
    }
}

/// The counters of ended requests and their tokens, by case.
fn requests(cases: &BTreeMap<String, CaseCounts>, w: &mut Writer) {
    let help = "Requests ended and written to requests.jsonl, by case, phase and status.";
    w.family("llmload_requests", Kind::Counter, None, help);
    for (case, c) in cases {
        for ((phase, status), n) in &c.requests {
            let (phase, status) = (phase_name(*phase), status_name(*status));
            let labels = [
                ("case", case.as_str()),
                ("phase", phase),
                ("status", status),
            ];
            w.sample("llmload_requests_total", &labels, *n as f64);
        }
    }
    let help = "Requests that did not end ok, by case, phase and error kind (error_kind in requests.jsonl).";
    w.family("llmload_request_errors", Kind::Counter, None, help);
    for (case, c) in cases {
        for ((phase, kind), n) in &c.errors {
            let labels = [
                ("case", case.as_str()),
                ("phase", phase_name(*phase)),
                ("kind", kind.as_str()),
            ];
            w.sample("llmload_request_errors_total", &labels, *n as f64);
        }
    }
    for (f, of) in TOKENS {
        w.family(f.0, Kind::Counter, f.1, f.2);
        let sample = format!("{}_total", f.0);
        for (case, c) in cases {
            for (i, phase) in [Phase::Warmup, Phase::Measured].into_iter().enumerate() {
                let labels = [("case", case.as_str()), ("phase", phase_name(phase))];
                w.sample(&sample, &labels, of(c)[i] as f64);
            }
        }
    }
}

/// The latency histograms of the measured requests, by case.
fn latencies(cases: &BTreeMap<String, CaseCounts>, w: &mut Writer) {
    for (f, of) in TIMES {
        w.family(f.0, Kind::Histogram, f.1, f.2);
        for (case, c) in cases {
            histogram(w, f.0, &[("case", case)], of(c));
        }
    }
}

fn histogram(w: &mut Writer, name: &str, labels: Labels<'_>, h: &Histogram) {
    let bucket = format!("{name}_bucket");
    let mut le = String::new();
    for (bound, n) in h.cumulative() {
        le.clear();
        number_into(bound, &mut le);
        let mut all: Vec<(&str, &str)> = labels.to_vec();
        all.push(("le", &le));
        w.sample(&bucket, &all, n as f64);
    }
    w.sample(&format!("{name}_sum"), labels, h.sum());
    w.sample(&format!("{name}_count"), labels, h.count() as f64);
}

/// The guard: its latest GPU readings, its thresholds, and whether it stopped the run.
fn guard(board: &Board, w: &mut Writer) {
    let Some(guard) = board.guard.get() else {
        return;
    };
    let readings = guard.readings();
    let gpus: Vec<String> = readings.iter().map(|r| r.gpu.to_string()).collect();
    for (f, of) in READINGS {
        if readings.iter().any(|r| of(r).is_some()) {
            w.family(f.0, Kind::Gauge, f.1, f.2);
            for (r, gpu) in readings.iter().zip(&gpus) {
                if let Some(v) = of(r) {
                    w.sample(f.0, &[("gpu", gpu)], v);
                }
            }
        }
    }
    if readings
        .iter()
        .any(|r| THROTTLES.iter().any(|(_, of)| of(r).is_some()))
    {
        let help = "1 where the latest reading has the GPU throttled for this reason, else 0.";
        w.family("llmload_gpu_throttled", Kind::Gauge, None, help);
        for (r, gpu) in readings.iter().zip(&gpus) {
            for (reason, of) in THROTTLES {
                if let Some(on) = of(r) {
                    let labels = [("gpu", gpu.as_str()), ("reason", reason)];
                    w.sample("llmload_gpu_throttled", &labels, flag(on));
                }
            }
        }
    }
    let limits = guard.limits();
    if let Some(t) = limits.stop_temp_c {
        let help = "--stop-temp: the guard stops the run when a GPU reaches this.";
        gauge(
            w,
            &Family("llmload_guard_stop_temperature_celsius", C, help),
            t,
        );
    }
    if let Some(m) = limits.stop_margin_c {
        let help = "--stop-margin: the guard stops the run when a T.Limit margin falls to this.";
        gauge(w, &Family("llmload_guard_stop_margin_celsius", C, help), m);
    }
    let fired = guard.verdict().map(|v| v.rule);
    let help = "1 for the rule that stopped the run, 0 for the others (all 0 while it goes on).";
    w.family("llmload_guard_stopped", Kind::Gauge, None, help);
    for rule in Rule::ALL {
        let labels = [("rule", rule.as_str())];
        w.sample("llmload_guard_stopped", &labels, flag(fired == Some(rule)));
    }
}

/// The client's self-check so far: its verdict and its largest CPU share.
fn check(board: &Board, w: &mut Writer) {
    let Some(check) = lock(&board.check).clone() else {
        return;
    };
    let help = "The client's self-check over the run so far: 1 for its verdict, 0 for the others.";
    w.family("llmload_client_check", Kind::Gauge, None, help);
    for (verdict, name) in [
        (ClientVerdict::Ok, "ok"),
        (
            ClientVerdict::ClientMayHaveDistorted,
            "client_may_have_distorted",
        ),
        (ClientVerdict::TooShort, "too_short"),
    ] {
        let labels = [("verdict", name)];
        w.sample(
            "llmload_client_check",
            &labels,
            flag(check.verdict == verdict),
        );
    }
    let samples = "The self-check's samples so far (one every 500 ms).";
    let n = f64::from(check.samples);
    gauge(w, &Family("llmload_client_check_samples", None, samples), n);
    if let Some(share) = check.cpu_share_max {
        let help = "The largest share of its cores llmload used in one sample so far (0-1).";
        let ratio = Some("ratio");
        gauge(
            w,
            &Family("llmload_client_cpu_share_max_ratio", ratio, help),
            share,
        );
    }
}
