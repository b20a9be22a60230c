//! Server-side metrics: the target's Prometheus `/metrics` (llama-server with `--metrics`, vLLM,
//! `SGLang`, TGI, the simulator) scraped at the telemetry interval, so that the queue and the KV
//! cache can be read beside the client's figures. Written to `server_metrics.jsonl`.

use crate::api::http1::{Method, Origin};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Series kept: running and waiting requests, KV-cache use, prompt and generated token counters.
const KEPT: [&str; 16] = [
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:kv_cache_usage_ratio",
    "llamacpp:kv_cache_tokens",
    "llamacpp:prompt_tokens_total",
    "llamacpp:tokens_predicted_total",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:gpu_cache_usage_perc",
    "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
    "tgi_batch_current_size",
];

/// One scrape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scrape {
    /// Seconds since the attempt started.
    pub t_s: f64,
    /// Kept series, summed over their label sets.
    pub metrics: BTreeMap<String, f64>,
}

/// What the scrapes of an attempt show: gauges by their highest value, counters (`…_total`)
/// by how much they grew during the run (never the total since the server started).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetricsSummary {
    /// Successful scrapes.
    pub scrapes: u32,
    /// Highest value seen of each kept gauge.
    pub peak: BTreeMap<String, f64>,
    /// Growth of each kept counter from the first scrape to the last; left out when it went
    /// down (the server restarted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub delta: BTreeMap<String, f64>,
    /// vLLM with LoRA: the adapters its `vllm:lora_requests_info` said were running while the
    /// run went on (a state of its adapters first seen, or seen again, after the first scrape).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub lora_running: BTreeSet<String>,
}

/// vLLM's `vllm:lora_requests_info`: one series per state of its adapters, (running, waiting)
/// as its labels list them, its value the time that state was last seen.
type LoraStates = BTreeMap<(String, String), f64>;

/// The states of `vllm:lora_requests_info` in a scrape's text; empty without the series.
fn lora_states(text: &str) -> LoraStates {
    let mut states = LoraStates::new();
    for line in text.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("vllm:lora_requests_info{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once('}') else {
            continue;
        };
        let Some(value) = value.split_whitespace().next().and_then(|v| v.parse().ok()) else {
            continue;
        };
        let label = |name: &str| -> String {
            let key = format!("{name}=\"");
            labels
                .split_once(&key)
                .and_then(|(_, after)| after.split_once('"'))
                .map_or_else(String::new, |(v, _)| v.to_owned())
        };
        states.insert(
            (
                label("running_lora_adapters"),
                label("waiting_lora_adapters"),
            ),
            value,
        );
    }
    states
}

/// Whether a series is a counter (it only grows while the server runs).
fn is_counter(name: &str) -> bool {
    name.ends_with("_total")
}

impl ServerMetricsSummary {
    /// Folds one scrape's LoRA states in: those new since the first scrape (`first`, set by it)
    /// or seen again since, add their running adapters.
    fn add_lora(&mut self, states: LoraStates, first: &mut Option<LoraStates>) {
        let Some(first) = first else {
            *first = Some(states);
            return;
        };
        for (state, value) in states {
            if first.get(&state).is_none_or(|&before| value > before) {
                self.lora_running.extend(
                    state
                        .0
                        .split(',')
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(|a| a.chars().take(128).collect::<String>()),
                );
            }
        }
    }

    /// Folds one scrape in; `first` holds each counter's first value.
    fn add(&mut self, metrics: &BTreeMap<String, f64>, first: &mut BTreeMap<String, f64>) {
        self.scrapes += 1;
        for (name, &value) in metrics {
            if is_counter(name) {
                let start = *first.entry(name.clone()).or_insert(value);
                if value >= start {
                    self.delta.insert(name.clone(), value - start);
                } else {
                    self.delta.remove(name);
                }
            } else {
                let peak = self.peak.entry(name.clone()).or_insert(value);
                *peak = peak.max(value);
            }
        }
    }
}

/// Parses Prometheus text exposition, keeping the series in [`KEPT`].
pub fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut metrics = BTreeMap::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        if !KEPT.contains(&name) {
            continue;
        }
        let after_labels = match line[name_end..].find('}') {
            Some(close) if line[name_end..].starts_with('{') => &line[name_end + close + 1..],
            _ => &line[name_end..],
        };
        if let Some(value) = after_labels
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            *metrics.entry(name.to_owned()).or_insert(0.0) += value;
        }
    }
    metrics
}

/// The largest `/metrics` answer read; a larger one counts as a failed scrape.
pub const MAX_SCRAPE_BYTES: usize = 8 << 20;

/// Scrapes `/metrics` of `target` every `interval` until `stop`, appending to `server_metrics.jsonl` in `dir`.
/// Each scrape has at most `timeout` (and the interval, at least a second), and reads at most
/// [`MAX_SCRAPE_BYTES`].
pub async fn scrape(
    target: Arc<Origin>,
    (interval, timeout): (Duration, Duration),
    dir: PathBuf,
    origin: Instant,
    stop: CancellationToken,
) -> ServerMetricsSummary {
    let mut summary = ServerMetricsSummary::default();
    let Ok(file) = std::fs::File::create(dir.join("server_metrics.jsonl")) else {
        return summary;
    };
    let mut file = std::io::BufWriter::new(file);
    let mut first = BTreeMap::new();
    let mut first_lora = None;
    let mut stopping = false;
    let mut next = Instant::now();
    loop {
        let t_s = next.saturating_duration_since(origin).as_secs_f64();
        let limit = timeout.min(interval.max(Duration::from_secs(1)));
        let answer = target
            .fetch(
                Method::Get,
                "/metrics",
                None,
                MAX_SCRAPE_BYTES,
                tokio::time::Instant::now() + limit,
            )
            .await;
        let body = answer
            .ok()
            .filter(|a| (200..300).contains(&a.status))
            .and_then(|a| String::from_utf8(a.body).ok());
        if let Some(body) = &body {
            summary.add_lora(lora_states(body), &mut first_lora);
        }
        if let Some(metrics) = body.map(|b| parse(&b)).filter(|m| !m.is_empty()) {
            summary.add(&metrics, &mut first);
            if let Ok(line) = serde_json::to_string(&Scrape { t_s, metrics }) {
                let line = crate::secrets::scrub(&line);
                let _ = file
                    .write_all(line.as_bytes())
                    .and_then(|()| file.write_all(b"\n"))
                    .and_then(|()| file.flush());
            }
        }
        if stopping {
            return summary;
        }
        next += interval;
        // One last scrape when the run ends, so that the counters' growth covers all of it.
        tokio::select! {
            () = stop.cancelled() => stopping = true,
            () = tokio::time::sleep_until(next) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_queue_and_cache_series_and_sums_labels() {
        let text = "# HELP llamacpp:requests_processing Number of requests processing.\n\
            # TYPE llamacpp:requests_processing gauge\n\
            llamacpp:requests_processing 3\n\
            llamacpp:requests_deferred 2\n\
            llamacpp:n_busy_slots_per_decode 1.5\n\
            vllm:num_requests_waiting{model_name=\"a\"} 4\n\
            vllm:num_requests_waiting{model_name=\"b\",engine=\"0\"} 1 1700000000\n\
            vllm:e2e_request_latency_seconds_bucket{le=\"1.0\"} 9\n";
        let m = parse(text);
        assert_eq!(m.get("llamacpp:requests_processing"), Some(&3.0));
        assert_eq!(m.get("llamacpp:requests_deferred"), Some(&2.0));
        assert_eq!(m.get("vllm:num_requests_waiting"), Some(&5.0));
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn lora_adapters_running_are_the_states_seen_after_the_first_scrape() {
        let scrape = |lines: &[&str]| lora_states(&lines.join("\n"));
        let old = "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"old\",waiting_lora_adapters=\"\"} 100.5";
        let idle = "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} 101";
        let mut summary = ServerMetricsSummary::default();
        let mut first = None;
        summary.add_lora(scrape(&[old, idle]), &mut first);
        assert!(summary.lora_running.is_empty());
        // The old state is unchanged; a new one runs two adapters; the idle state seen again.
        let both = "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"adapter-a,adapter-b\",waiting_lora_adapters=\"adapter-a\"} 102";
        summary.add_lora(scrape(&[old, idle, both]), &mut first);
        assert_eq!(
            summary.lora_running.iter().collect::<Vec<_>>(),
            ["adapter-a", "adapter-b"]
        );
        assert!(lora_states("vllm:num_requests_running 3").is_empty());
    }

    #[test]
    fn counters_give_their_growth_during_the_run_and_gauges_their_peak() {
        let mut summary = ServerMetricsSummary::default();
        let mut first = BTreeMap::new();
        let scrape = |processing: f64, tokens: f64| {
            BTreeMap::from([
                ("vllm:num_requests_running".to_owned(), processing),
                ("vllm:generation_tokens_total".to_owned(), tokens),
            ])
        };
        summary.add(&scrape(1.0, 10_000.0), &mut first);
        summary.add(&scrape(4.0, 10_500.0), &mut first);
        summary.add(&scrape(2.0, 12_000.0), &mut first);
        assert_eq!(summary.scrapes, 3);
        assert_eq!(summary.peak.get("vllm:num_requests_running"), Some(&4.0));
        assert_eq!(
            summary.delta.get("vllm:generation_tokens_total"),
            Some(&2_000.0)
        );
        assert!(!summary.peak.contains_key("vllm:generation_tokens_total"));
        // A counter that goes down (a restart) has no growth to report.
        summary.add(&scrape(1.0, 5.0), &mut first);
        assert!(summary.delta.is_empty());
    }
}
