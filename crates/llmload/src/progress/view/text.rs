//! What the live view says, as text: its title, its progress line, the recent figures it plots,
//! the guard's and the client self-check's lines. Drawing them is the view's ([`super`]).

use super::super::recent::{Recent, SLICE};
use super::super::Snapshot;
use crate::guard::Guard;
use crate::summary::client_check::{ClientCheck, ClientVerdict};
use std::fmt::Write as _;
use std::time::Duration;

pub(super) fn title(s: &Snapshot) -> String {
    if s.case_id.is_empty() {
        return "llmload · setting up".into();
    }
    let mut parts = vec![format!("case {}/{} {}", s.case.0, s.case.1, s.case_id)];
    let elapsed = s.started.map_or(Duration::ZERO, |t| t.elapsed());
    if let Some((k, n, id)) = s.stage_at(elapsed) {
        parts[0] = format!("case {}/{} · stage {k}/{n} {id}", s.case.0, s.case.1);
    }
    if let Some((k, n)) = s.repeat {
        parts.insert(0, format!("repeat {k}/{n}"));
    }
    match s.round {
        Some((0, rounds)) => parts.push(format!("warmup, then {rounds} rounds")),
        Some((round, rounds)) => parts.push(format!("round {round}/{rounds}")),
        None => {}
    }
    format!("llmload · {}", parts.join(" · "))
}

pub(super) fn progress(s: &Snapshot) -> String {
    let elapsed = s.started.map_or(Duration::ZERO, |t| t.elapsed());
    let total = s.total.map_or(String::new(), |t| format!(" of {t}"));
    let mut failed = String::new();
    if s.failed > 0 {
        failed = format!(", {} failed", s.failed);
    }
    if s.cancelled > 0 {
        let _ = write!(failed, ", {} cancelled", s.cancelled);
    }
    if let Some(short) = s.shortfall.finish().filter(|_| s.shortfall.short()) {
        let _ = write!(failed, ", {} short", short.responses);
    }
    if s.abandoned > 0 {
        let _ = write!(failed, ", {} abandoned", s.abandoned);
    }
    let flight = s
        .flight_words()
        .map_or_else(String::new, |w| format!(" · {w}"));
    format!(
        "{} · {}{total} requests ended{failed}{flight}",
        super::super::line::elapsed_and_eta(s, elapsed),
        s.done
    )
}

pub(super) fn figures(recent: &Recent, now_s: f64) -> Vec<(String, Vec<u64>)> {
    let ms = |v: Option<f64>| crate::fmt::seconds(v);
    let window = format!("last {:.0} s", super::super::recent::WINDOW as f64 * SLICE);
    let ttft = recent.ttft(now_s);
    let itl = recent.itl(now_s);
    let (rate, tokens) = recent.throughput(now_s);
    let responses = recent
        .responses_per_s(now_s)
        .map_or("–".into(), |r| format!("{r:.2}"));
    vec![
        (
            if recent.pooling {
                format!("latency p50 {:>9}  p99 {:>9}", ms(ttft.p50), ms(ttft.p99))
            } else {
                format!("TTFT  p50 {:>9}  p99 {:>9}", ms(ttft.p50), ms(ttft.p99))
            },
            ttft.per_slice,
        ),
        (
            format!("ITL   p50 {:>9}  p99 {:>9}", ms(itl.p50), ms(itl.p99)),
            itl.per_slice,
        ),
        (
            format!(
                "throughput {} tokens/s · {responses} responses/s ({window})",
                rate.map_or("–".into(), |r| format!("{r:.1}"))
            ),
            tokens,
        ),
    ]
}

pub(super) fn guard_lines(guard: &Guard) -> Vec<String> {
    let limits = guard.limits();
    let mut lines: Vec<String> = guard
        .readings()
        .iter()
        .map(|r| {
            let stop = limits
                .stop_temp_c
                .map_or(String::new(), |t| format!(" (stop at {t:.0})"));
            let mut line = format!("GPU {} {:.0} °C{stop}", r.gpu, r.temperature_c);
            if let Some(m) = r.margin_c {
                let stop = limits
                    .stop_margin_c
                    .map_or(String::new(), |t| format!(" (stop at {t:.0})"));
                let _ = write!(line, " · margin {m:.0} °C{stop}");
            }
            match (r.power_w, r.power_limit_w) {
                (Some(p), Some(l)) => {
                    let _ = write!(line, " · {p:.0}/{l:.0} W");
                }
                (Some(p), None) => {
                    let _ = write!(line, " · {p:.0} W");
                }
                _ => {}
            }
            let throttled: Vec<&str> = [
                (r.sw_thermal_slowdown, "thermal (sw)"),
                (r.hw_thermal_slowdown, "thermal (hw)"),
                (r.sw_power_cap, "power cap"),
            ]
            .into_iter()
            .filter_map(|(on, name)| (on == Some(true)).then_some(name))
            .collect();
            if !throttled.is_empty() {
                let _ = write!(line, " · throttled: {}", throttled.join(", "));
            }
            line
        })
        .collect();
    if lines.is_empty() {
        lines.push("no GPU reading".into());
    }
    lines.push(match guard.verdict() {
        Some(v) if v.rule == crate::guard::Rule::Interrupted => format!("stopped by {}", v.reason),
        Some(v) => format!("stopped by the {} rule", v.rule),
        None => "guard: watching".into(),
    });
    lines
}

pub(super) fn check_lines(check: Option<&ClientCheck>) -> Vec<String> {
    let Some(check) = check else {
        return vec!["no sample yet".into()];
    };
    let cpu = check
        .cpu_share_max
        .map_or(String::new(), |c| format!(", CPU up to {:.0} %", c * 100.0));
    let head = match check.verdict {
        ClientVerdict::Ok => "ok so far",
        ClientVerdict::ClientMayHaveDistorted => "WARNING: the client may distort",
        ClientVerdict::TooShort => "too short to judge yet",
    };
    let mut lines = vec![format!("{head} ({} samples{cpu})", check.samples)];
    lines.extend(check.reasons.iter().take(2).cloned());
    lines
}
