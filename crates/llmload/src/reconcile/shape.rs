//! Another tool's saved result in one shape whatever the tool: its own figures by the names
//! reconciling gives them, its per-request values under its own definitions, and what it says
//! of the workload; and the tools whose definitions llmload computes.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A tool whose definitions llmload can compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// `vllm bench serve`.
    #[default]
    Vllm,
    /// NVIDIA's `AIPerf`.
    Aiperf,
    /// `GuideLLM`: its per-token figures weighted by tokens.
    Guidellm,
    /// `genai-bench` (the `SGLang` project's): its figures per request, weighted alike.
    GenaiBench,
}

impl Dialect {
    /// The tool's name.
    pub fn tool(self) -> &'static str {
        match self {
            Dialect::Vllm => "vllm bench serve",
            Dialect::Aiperf => "AIPerf",
            Dialect::Guidellm => "GuideLLM",
            Dialect::GenaiBench => "genai-bench",
        }
    }
}

/// One response's values of a figure (ms), and the weight of each: 1 where the tool weights
/// every request alike, its tokens where it weights by tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    /// The figure, by the tool's name for it.
    pub figure: &'static str,
    /// Its values in this response (several for a per-gap figure).
    pub values: Vec<f64>,
    /// How many samples each value counts as.
    pub weight: f64,
}

/// One run of the other tool (a GuideLLM file may hold several).
#[derive(Clone, Debug, Default)]
pub struct OtherRun {
    /// Whose definitions its figures follow.
    pub dialect: Dialect,
    /// The tool and what of its output was read, e.g. `AIPerf (profile_export_aiperf.json and
    /// profile_export.jsonl)`.
    pub tool: String,
    /// Its concurrency, where it ran a fixed one.
    pub concurrency: Option<u64>,
    /// Requests that succeeded, as it counts them.
    pub completed: Option<u64>,
    /// Its successful requests' values, where the file holds them per request.
    pub responses: Vec<OtherResponse>,
    /// Its own figures, by reconciling's row names (`ttft_mean_ms`, …), in ms.
    pub figures: BTreeMap<String, f64>,
    /// Its output throughput, tokens/s.
    pub output_throughput: Option<f64>,
    /// What the reader noticed that bears on the comparison.
    pub notes: Vec<String>,
    /// The warm-up requests it sent before measuring, where its file says (0: none).
    pub warmup_requests: Option<u64>,
}

/// One successful request of the other run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OtherResponse {
    /// Its prompt tokens, as the other tool counted them.
    pub prompt_tokens: Option<f64>,
    /// Its output tokens.
    pub output_tokens: Option<f64>,
    /// Its figures' values under the tool's definitions, ms.
    pub values: Vec<Values>,
}

impl OtherRun {
    /// Whether the file held per-request values.
    pub fn is_detailed(&self) -> bool {
        !self.responses.is_empty()
    }

    /// The prompt and output lengths of its requests, where it gave them.
    pub fn lengths(&self) -> (Vec<f64>, Vec<f64>) {
        (
            self.responses
                .iter()
                .filter_map(|r| r.prompt_tokens)
                .collect(),
            self.responses
                .iter()
                .filter_map(|r| r.output_tokens)
                .collect(),
        )
    }
}

impl OtherRun {
    /// Refuses a run whose values no tool measures (negative, non-finite or absurd times and
    /// counts: a file edited or damaged), naming the first such value.
    pub fn check(&self) -> Result<(), String> {
        use crate::num::{plausible, MAX_COUNT, MAX_MS};
        for (name, value) in &self.figures {
            plausible(&format!("its {name}"), *value, MAX_MS)?;
        }
        if let Some(rate) = self.output_throughput {
            plausible("its output throughput", rate, MAX_COUNT)?;
        }
        for (i, r) in self.responses.iter().enumerate() {
            let n = i + 1;
            for (what, count) in [("prompt", r.prompt_tokens), ("output", r.output_tokens)] {
                if let Some(count) = count {
                    plausible(&format!("request {n}'s {what} tokens"), count, MAX_COUNT)?;
                }
            }
            for values in &r.values {
                let what = format!("request {n}'s {}", values.figure);
                plausible(&format!("{what} weight"), values.weight, MAX_COUNT)?;
                for v in &values.values {
                    plausible(&what, *v, MAX_MS)?;
                }
            }
        }
        Ok(())
    }
}

/// The file at `path`, refused past [`crate::files::MAX_INPUT_BYTES`] (read through the one
/// bounded reader, so a pipe, a device or a FIFO with no writer is refused too).
pub fn bytes(path: &Path) -> Result<Vec<u8>, String> {
    crate::files::read_bytes(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `text` with Python's `NaN`, `Infinity` and `-Infinity` (which its `json` module writes for
/// an empty run's statistics, and JSON does not allow) outside strings turned into `null`.
pub fn without_python_floats(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        let rest = &text[i..];
        if let Some(word) = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.extend_from_slice(b"null");
            i += word.len();
            continue;
        }
        in_string = c == b'"';
        out.push(c);
        i += 1;
    }
    out
}

/// The number at `pointer` in `v` (a JSON pointer), where it is a finite number.
pub fn number(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
}

/// A figure in `unit` as ms: `ns`, `us`, `ms`, `s` or `sec` (no unit: ms).
pub fn to_ms(value: f64, unit: Option<&str>) -> Option<f64> {
    let scale = match unit.unwrap_or("ms") {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" | "sec" | "seconds" => 1e3,
        _ => return None,
    };
    Some(value * scale)
}

/// One value of one figure, weighted alike with every other request's.
pub fn single(figure: &'static str, value: Option<f64>) -> Option<Values> {
    weighted(figure, value, 1.0)
}

/// One value of one figure that counts as `weight` samples; none without a value or a weight.
pub fn weighted(figure: &'static str, value: Option<f64>, weight: f64) -> Option<Values> {
    value.filter(|_| weight > 0.0).map(|v| Values {
        figure,
        values: vec![v],
        weight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_become_ms_and_python_s_nan_null() {
        assert_eq!(to_ms(2.0, Some("sec")), Some(2000.0));
        assert_eq!(to_ms(2e6, Some("ns")), Some(2.0));
        assert_eq!(to_ms(2.0, None), Some(2.0));
        assert_eq!(to_ms(2.0, Some("tokens")), None);
        let text = without_python_floats(br#"{"a":NaN,"b":-Infinity,"c":"NaN \"Infinity\""}"#);
        assert_eq!(
            String::from_utf8(text).expect("utf-8"),
            r#"{"a":null,"b":null,"c":"NaN \"Infinity\""}"#
        );
    }
}
