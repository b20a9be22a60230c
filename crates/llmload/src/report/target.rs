//! The first two sections of the page: what was measured (the target, its API and model, the
//! attempt, how tokens were counted, and a banner when the target was the built-in simulator)
//! and how the attempt ended (the outcome, the reading that stopped it, the client check, GPU
//! telemetry and the server's `/metrics` in a line each).

use super::page::{Block, Section};
use super::text::{counting_lines, outcome_counts, telemetry_line};
use super::Report;
use crate::fmt::number;

/// The target, the attempt and how tokens were counted.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let summary = &report.summary;
    let mut section = Section::new("target", "Target");
    let model = summary.model.as_deref().unwrap_or("(not named)");
    let target = if summary.replicas.is_empty() {
        summary.target_url.clone()
    } else {
        format!(
            "{} replicas ({}; set up from the first)",
            summary.replicas.len(),
            summary.replicas.join(", ")
        )
    };
    section.paragraph(format!(
        "Target: {target}, API {}, model {model}",
        summary.api
    ));
    let started = report
        .started_at
        .as_ref()
        .map_or(String::new(), |t| format!(", started {t}"));
    section.paragraph(format!("Attempt: {}{started}", summary.attempt_id));
    if summary.simulated {
        section.push(Block::Banner {
            id: "simulated",
            text: "SIMULATED target: every figure of this report comes from llmload's built-in \
                   engine simulator, not from a real inference server."
                .into(),
        });
    }
    for line in counting_lines(summary).lines() {
        section.note(line);
    }
    Some(section)
}

/// The outcome and the lines on what watched the run.
pub fn outcome(report: &Report) -> Option<Section<'_>> {
    let summary = &report.summary;
    let o = &summary.outcome;
    let mut section = Section::new("outcome", "Outcome");
    section.paragraph(format!(
        "{:?}: {}{}",
        o.status,
        outcome_counts(summary),
        o.reason
            .as_ref()
            .map_or(String::new(), |r| format!(" — {r}")),
    ));
    if let Some(sample) = &o.stop_sample {
        section.note(format!(
            "The reading that stopped the run: {}",
            describe_sample(sample)
        ));
    }
    if let Some(check) = &summary.client_check {
        section.note(check.line());
    }
    if let Some(t) = &summary.telemetry {
        section.note(telemetry_line(t));
        if let Some(m) = &t.server_metrics {
            section.note(server_metrics_line(m));
        }
    }
    Some(section)
}

/// What the server's `/metrics` showed: the scrapes, the gauges' peaks, the counters' growth,
/// and the LoRA adapters it reported running.
fn server_metrics_line(m: &crate::telemetry::server_metrics::ServerMetricsSummary) -> String {
    let peaks: Vec<String> = m
        .peak
        .iter()
        .map(|(k, v)| format!("{k} {}", number(*v)))
        .collect();
    let grown: Vec<String> = m
        .delta
        .iter()
        .map(|(k, v)| format!("{k} +{}", number(*v)))
        .collect();
    let lora = if m.lora_running.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = m.lora_running.iter().map(String::as_str).collect();
        format!(
            "; LoRA adapters it reported running (vllm:lora_requests_info): {}",
            names.join(", ")
        )
    };
    format!(
        "Server /metrics: {} scrapes; peaks: {}; counters grew during the run: {}{lora}.",
        m.scrapes,
        peaks.join(", "),
        if grown.is_empty() {
            "–".to_owned()
        } else {
            grown.join(", ")
        }
    )
}

/// A stop's GPU reading in words: which GPU and when, then each figure it holds.
fn describe_sample(sample: &serde_json::Value) -> String {
    let number = |key: &str| sample.get(key).and_then(serde_json::Value::as_f64);
    let mut parts = Vec::new();
    if let Some(t) = number("temperature_c") {
        parts.push(format!("{t:.0} °C"));
    }
    parts.push(match number("margin_c") {
        Some(m) => format!("T.Limit margin {m:.0} °C"),
        None => "T.Limit margin not reported".into(),
    });
    match (number("power_w"), number("power_limit_w")) {
        (Some(p), Some(l)) => parts.push(format!("{p:.0} W of a {l:.0} W limit")),
        (Some(p), None) => parts.push(format!("{p:.0} W")),
        _ => {}
    }
    for (key, name) in [
        ("sw_thermal_slowdown", "SW thermal slowdown"),
        ("hw_thermal_slowdown", "HW thermal slowdown"),
        ("sw_power_cap", "SW power cap"),
    ] {
        if let Some(active) = sample.get(key).and_then(serde_json::Value::as_bool) {
            parts.push(format!(
                "{name} {}",
                if active { "active" } else { "inactive" }
            ));
        }
    }
    let gpu = sample.get("gpu").and_then(serde_json::Value::as_u64);
    let at = number("t_s");
    let head = match (gpu, at) {
        (Some(g), Some(t)) => format!("GPU {g} at {t:.1} s: "),
        (Some(g), None) => format!("GPU {g}: "),
        _ => String::new(),
    };
    format!("{head}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reading_is_told_in_words() {
        let sample = serde_json::json!({"t_s": 8.5, "gpu": 1, "temperature_c": 90.0,
            "power_w": 292.5, "power_limit_w": 400.0, "hw_thermal_slowdown": false});
        assert_eq!(
            describe_sample(&sample),
            "GPU 1 at 8.5 s: 90 °C, T.Limit margin not reported, 292 W of a 400 W limit, \
             HW thermal slowdown inactive"
        );
    }
}
