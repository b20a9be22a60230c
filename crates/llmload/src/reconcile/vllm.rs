//! `vllm bench serve --save-result` files, and vLLM's definitions applied to llmload's records.
//!
//! vLLM's client (`vllm/benchmarks/lib/endpoint_request_func.py` and `calculate_metrics` in
//! `vllm/benchmarks/serve.py`) stamps each server-sent event with `time.perf_counter()` when its
//! Python loop has parsed it, and counts only events whose `choices` is not empty:
//!
//! - TTFT: the first such event, whatever it holds (a chat stream's first chunk carries the role
//!   and no token; an empty text counts);
//! - latency (E2EL): the last such event (the final usage chunk, whose `choices` is empty, and
//!   `[DONE]` are not counted);
//! - ITL: one value per event after the first, the gap to the event before (a chunk of several
//!   tokens is one gap);
//! - TPOT, per request: (latency − TTFT) ÷ (output tokens − 1), over the requests with more than
//!   one output token, each request weighted alike; the output tokens are the usage's
//!   `completion_tokens`;
//! - output throughput: the output tokens of every successful request ÷ the benchmark's duration;
//! - mean, median and percentiles by numpy (linear interpolation between order statistics).

use super::shape::{single, Dialect, OtherResponse, OtherRun, Values};
use crate::record::Record;
use serde::Deserialize;
use std::path::Path;

/// What a `vllm bench serve --save-result` file holds that reconciling uses; the per-request
/// lists only with `--save-detailed`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct VllmResult {
    /// `--backend`, e.g. `vllm`, `openai`, `openai-chat`.
    pub backend: Option<String>,
    /// `--max-concurrency`.
    pub max_concurrency: Option<u64>,
    /// Requests that succeeded.
    pub completed: Option<u64>,
    /// Requests that failed.
    pub failed: Option<u64>,
    /// The benchmark's length, seconds.
    pub duration: Option<f64>,
    /// Output tokens per second over `duration`.
    pub output_throughput: Option<f64>,
    /// Mean TTFT, ms.
    pub mean_ttft_ms: Option<f64>,
    /// Median TTFT, ms.
    pub median_ttft_ms: Option<f64>,
    /// 99th percentile TTFT, ms.
    pub p99_ttft_ms: Option<f64>,
    /// Mean TPOT, ms.
    pub mean_tpot_ms: Option<f64>,
    /// Median TPOT, ms.
    pub median_tpot_ms: Option<f64>,
    /// Mean ITL, ms.
    pub mean_itl_ms: Option<f64>,
    /// Median ITL, ms.
    pub median_itl_ms: Option<f64>,
    /// Mean E2EL, ms.
    pub mean_e2el_ms: Option<f64>,
    /// Median E2EL, ms.
    pub median_e2el_ms: Option<f64>,
    /// Per request: prompt tokens (the server's usage where it said, else the dataset's).
    pub input_lens: Vec<f64>,
    /// Per request: output tokens (0 for a failed one).
    pub output_lens: Vec<f64>,
    /// Per request: TTFT, seconds (0 for a failed one).
    pub ttfts: Vec<f64>,
    /// Per request: its ITLs, seconds.
    pub itls: Vec<Vec<f64>>,
    /// Per request: latency, seconds.
    pub latencies: Vec<f64>,
    /// Per request: the error, empty for a success.
    pub errors: Vec<String>,
}

impl VllmResult {
    /// Reads `path` (tests; reconcile reads through [`super::other::read`]).
    #[cfg(test)]
    pub fn read(path: &Path) -> Result<VllmResult, String> {
        let text = super::shape::without_python_floats(&super::shape::bytes(path)?);
        let value = serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        VllmResult::from_value(path, value)
    }

    /// The result in `value`, read from `path`, refused when it is not a `vllm bench serve`
    /// result or its lists disagree.
    pub fn from_value(path: &Path, value: serde_json::Value) -> Result<VllmResult, String> {
        let result: VllmResult = serde_json::from_value(value).map_err(|e| {
            format!(
                "{} is not a JSON result of `vllm bench serve`: {e}",
                path.display()
            )
        })?;
        if result.mean_ttft_ms.is_none() && result.ttfts.is_empty() {
            return Err(format!(
                "{} holds no TTFT (neither mean_ttft_ms nor ttfts): not a `vllm bench serve \
                 --save-result` file",
                path.display()
            ));
        }
        let n = result.ttfts.len();
        let lists = [
            result.input_lens.len(),
            result.output_lens.len(),
            result.latencies.len(),
            result.itls.len(),
        ];
        if n > 0 && lists.iter().any(|&l| l != n && l != 0) {
            return Err(format!(
                "{}: its per-request lists differ in length (ttfts {n}, input_lens {}, \
                 output_lens {}, latencies {}, itls {})",
                path.display(),
                lists[0],
                lists[1],
                lists[2],
                lists[3]
            ));
        }
        Ok(result)
    }

    /// Whether it holds the per-request lists (`--save-detailed`).
    pub fn is_detailed(&self) -> bool {
        !self.ttfts.is_empty() && !self.latencies.is_empty()
    }

    /// The indices of the successful requests.
    pub fn succeeded(&self) -> Vec<usize> {
        (0..self.ttfts.len())
            .filter(|&i| self.errors.get(i).is_none_or(String::is_empty))
            .collect()
    }

    /// The result in reconciling's shape: its figures by row name, each successful request's
    /// values under vLLM's definitions (ms).
    pub fn into_other(self) -> OtherRun {
        let mut figures = std::collections::BTreeMap::new();
        for (name, value) in [
            ("ttft_mean_ms", self.mean_ttft_ms),
            ("ttft_median_ms", self.median_ttft_ms),
            ("ttft_p99_ms", self.p99_ttft_ms),
            ("tpot_mean_ms", self.mean_tpot_ms),
            ("tpot_median_ms", self.median_tpot_ms),
            ("itl_mean_ms", self.mean_itl_ms),
            ("itl_median_ms", self.median_itl_ms),
            ("e2el_mean_ms", self.mean_e2el_ms),
            ("e2el_median_ms", self.median_e2el_ms),
        ] {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                figures.insert(name.to_owned(), v);
            }
        }
        let responses = if self.is_detailed() {
            self.succeeded()
                .into_iter()
                .map(|i| {
                    let ms = |list: &[f64]| list.get(i).map(|s| s * 1e3);
                    let (ttft, latency) = (ms(&self.ttfts), ms(&self.latencies));
                    let n = self.output_lens.get(i).copied();
                    let tpot = match (ttft, latency, n) {
                        (Some(t), Some(l), Some(n)) if n > 1.0 => Some((l - t) / (n - 1.0)),
                        _ => None,
                    };
                    let itls = self
                        .itls
                        .get(i)
                        .map(|g| g.iter().map(|s| s * 1e3).collect())
                        .unwrap_or_default();
                    OtherResponse {
                        prompt_tokens: self.input_lens.get(i).copied(),
                        output_tokens: n,
                        values: [
                            single("ttft", ttft),
                            single("tpot", tpot),
                            Some(Values {
                                figure: "itl",
                                values: itls,
                                weight: 1.0,
                            }),
                            single("e2el", latency),
                        ]
                        .into_iter()
                        .flatten()
                        .collect(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut notes = Vec::new();
        if !self.is_detailed() {
            notes.push(
                "the file holds no per-request lists (`vllm bench serve --save-detailed`): its \
                 lengths cannot be checked against what llmload sent, and its figures have no \
                 interval"
                    .to_owned(),
            );
        }
        OtherRun {
            dialect: Dialect::Vllm,
            tool: format!(
                "vllm bench serve ({})",
                self.backend.as_deref().unwrap_or("backend not given")
            ),
            concurrency: self.max_concurrency,
            completed: self
                .completed
                .or_else(|| self.is_detailed().then(|| self.succeeded().len() as u64)),
            responses,
            figures,
            output_throughput: self.output_throughput,
            notes,
            warmup_requests: None,
        }
    }
}

/// How far a record's token times may be from the instants they were stamped, ms (they are
/// written to the microsecond).
pub const ROUNDING_MS: f64 = 0.001;

/// One request as vLLM's client would have measured it, from llmload's record (ms from its
/// send).
#[derive(Clone, Debug, PartialEq)]
pub struct AsVllm {
    /// The first event with choices: the first event of the body, where the record kept it,
    /// else the first token event.
    pub ttft_ms: f64,
    /// The last token event.
    pub latency_ms: f64,
    /// One gap per event after the first.
    pub itls_ms: Vec<f64>,
    /// (latency − TTFT) ÷ (output tokens − 1), with more than one output token.
    pub tpot_ms: Option<f64>,
    /// The server's output tokens (the stream's count where it gave none).
    pub output_tokens: u32,
}

/// `r` as vLLM's client would have measured it; `None` without a token event.
pub fn as_vllm(r: &Record) -> Option<AsVllm> {
    let first_token = *r.event_ms.first()?;
    let last = *r.event_ms.last()?;
    // The body's first event: in a chat stream the role-only chunk, which vLLM takes as the
    // first token. An event before it without choices (none of the APIs sends one) would be
    // taken for it too.
    // Token times are written to the microsecond, the first event's unrounded: one that is
    // not a microsecond before the first token is that token's event.
    let first_event = r
        .phases
        .and_then(|p| p.first_event_ms)
        .filter(|&t| t < first_token - ROUNDING_MS)
        .unwrap_or(r.ttft_ms.unwrap_or(first_token));
    let mut times = Vec::with_capacity(r.event_ms.len() + 1);
    if first_event < first_token - ROUNDING_MS {
        times.push(first_event);
    }
    times.extend_from_slice(&r.event_ms);
    let itls_ms = times.windows(2).map(|w| w[1] - w[0]).collect();
    let n = r.generated_tokens();
    Some(AsVllm {
        ttft_ms: first_event,
        latency_ms: last,
        itls_ms,
        tpot_ms: (n > 1).then(|| (last - first_event) / f64::from(n - 1)),
        output_tokens: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Phases;

    #[test]
    fn a_chat_stream_s_role_chunk_is_vllm_s_first_token_and_its_gap_an_itl() {
        let mut r = crate::record::ok_record(0.0, None, vec![10.0, 12.0, 16.0]);
        r.output_tokens = Some(3);
        r.phases = Some(Phases {
            first_event_ms: Some(8.0),
            ..Phases::default()
        });
        let v = as_vllm(&r).expect("tokens");
        assert_eq!(v.ttft_ms, 8.0);
        assert_eq!(v.latency_ms, 16.0);
        assert_eq!(v.itls_ms, vec![2.0, 2.0, 4.0]);
        assert_eq!(v.tpot_ms, Some(4.0));
        // A completions stream's first event is its first token.
        r.phases = Some(Phases {
            first_event_ms: Some(10.0),
            ..Phases::default()
        });
        let v = as_vllm(&r).expect("tokens");
        assert_eq!((v.ttft_ms, v.itls_ms.len()), (10.0, 2));
        assert_eq!(v.tpot_ms, Some(3.0));
    }

    #[test]
    fn a_chunk_of_several_tokens_is_one_gap_and_tpot_counts_the_server_s_tokens() {
        let mut r = crate::record::ok_record(0.0, None, vec![10.0, 20.0]);
        r.event_tokens = vec![1, 4];
        r.output_tokens = Some(5);
        let v = as_vllm(&r).expect("tokens");
        assert_eq!(v.itls_ms, vec![10.0]);
        assert_eq!(v.tpot_ms, Some(2.5));
        r.output_tokens = Some(1);
        r.event_ms = vec![10.0];
        r.event_tokens.clear();
        assert_eq!(as_vllm(&r).expect("a token").tpot_ms, None);
        r.event_ms.clear();
        assert!(as_vllm(&r).is_none());
    }

    #[test]
    fn a_result_file_is_read_and_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.json");
        std::fs::write(
            &path,
            r#"{"backend":"openai","max_concurrency":2,"completed":2,"mean_ttft_ms":5.0,
               "ttfts":[0.004,0.006],"latencies":[0.02,0.03],"itls":[[0.001],[0.002]],
               "input_lens":[32,32],"output_lens":[8,8],"errors":["",""],"extra":1}"#,
        )
        .expect("write");
        let r = VllmResult::read(&path).expect("a result");
        assert!(r.is_detailed());
        assert_eq!(r.succeeded(), vec![0, 1]);
        std::fs::write(&path, r#"{"ttfts":[0.1,0.2],"latencies":[0.3]}"#).expect("write");
        let e = VllmResult::read(&path).expect_err("lists differ");
        assert!(e.contains("differ in length"), "{e}");
        std::fs::write(&path, r#"{"latencies":[0.2]}"#).expect("write");
        let e = VllmResult::read(&path).expect_err("no TTFT");
        assert!(e.contains("not a `vllm bench serve"), "{e}");
        // Python's json module writes NaN for an empty statistic; a string may hold the word.
        std::fs::write(
            &path,
            r#"{"mean_ttft_ms":NaN,"median_ttft_ms":-Infinity,"ttfts":[0.1],"latencies":[0.2],
               "backend":"NaN \"Infinity\""}"#,
        )
        .expect("write");
        let r = VllmResult::read(&path).expect("NaN is no figure");
        assert_eq!((r.mean_ttft_ms, r.median_ttft_ms), (None, None));
        assert_eq!(r.backend.as_deref(), Some("NaN \"Infinity\""));
        std::fs::write(&path, "not json").expect("write");

        assert!(VllmResult::read(&path).is_err());
        assert!(VllmResult::read(&dir.path().join("none.json")).is_err());
    }
}
