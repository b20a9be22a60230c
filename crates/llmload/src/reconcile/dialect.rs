//! An attempt's figures as another tool defines them (`llmload report DIR --dialect NAME`): the
//! same measured `ok` responses, each figure computed by that tool's definition (see *Other
//! tools' definitions* in docs/measurement.md), per case.

pub use super::shape::{Dialect, Values};
use super::vllm;
use crate::record::{Phase, Record, Status};
use crate::stats::Distribution;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One case's figures in a dialect.
#[derive(Clone, Debug, Serialize)]
pub struct DialectCase {
    /// Case id.
    pub id: String,
    /// Measured `ok` responses.
    pub responses: usize,
    /// By the tool's name for it: the distribution of its values (ms).
    pub figures: BTreeMap<String, Distribution>,
    /// The tool's output throughput: output tokens ÷ (last token − first send), tokens/s.
    pub output_throughput_tps: Option<f64>,
}

/// The figures of `dialect`, by the tool's names, in the order its tables give them.
pub fn figures(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Vllm => &["ttft", "tpot", "itl", "e2el"],
        Dialect::Aiperf => &[
            "time_to_first_token",
            "time_to_second_token",
            "inter_token_latency",
            "inter_chunk_latency",
            "request_latency",
        ],
        Dialect::Guidellm => &[
            "time_to_first_token",
            "inter_token_latency",
            "time_per_output_token",
            "request_latency",
        ],
        Dialect::GenaiBench => &[
            "ttft",
            "tpot",
            "e2e_latency",
            "output_inference_speed",
            "input_throughput",
        ],
    }
}

/// The values of `r`, a measured ok response, under `dialect`'s definitions (ms from its send);
/// none where it carried no token.
pub fn of_response(dialect: Dialect, r: &Record) -> Vec<Values> {
    let one = super::shape::weighted;
    if dialect == Dialect::Vllm {
        let Some(v) = vllm::as_vllm(r) else {
            return Vec::new();
        };
        return [
            one("ttft", Some(v.ttft_ms), 1.0),
            one("tpot", v.tpot_ms, 1.0),
            Some(Values {
                figure: "itl",
                values: v.itls_ms,
                weight: 1.0,
            }),
            one("e2el", Some(v.latency_ms), 1.0),
        ]
        .into_iter()
        .flatten()
        .collect();
    }
    // AIPerf's, GuideLLM's and genai-bench's responses are those with content: the token events.
    let (Some(&first), Some(&last)) = (r.event_ms.first(), r.event_ms.last()) else {
        return Vec::new();
    };
    let ttft = r.ttft_ms.unwrap_or(first);
    let n = r.generated_tokens();
    // (last token − first token) ÷ (tokens − 1): AIPerf's ITL, GuideLLM's ITL.
    let per_gap = (n > 1 && r.event_ms.len() > 1).then(|| (last - ttft) / f64::from(n - 1));
    match dialect {
        Dialect::Aiperf => [
            one("time_to_first_token", Some(ttft), 1.0),
            one(
                "time_to_second_token",
                r.event_ms.get(1).map(|s| s - first),
                1.0,
            ),
            one("inter_token_latency", per_gap, 1.0),
            Some(Values {
                figure: "inter_chunk_latency",
                values: r.event_ms.windows(2).map(|w| w[1] - w[0]).collect(),
                weight: 1.0,
            }),
            one("request_latency", Some(last), 1.0),
        ]
        .into_iter()
        .flatten()
        .collect(),
        // genai-bench: its first token is the first chunk with content, its end the usage
        // chunk or the stream's end, as llmload's; TPOT (e2e − TTFT) ÷ (tokens − 1); the speed
        // 1 ÷ TPOT and the input throughput prompt tokens ÷ TTFT, tokens/s, per request.
        Dialect::GenaiBench => {
            let e2e = r.e2e_ms.unwrap_or(last);
            let tpot = (n > 1).then(|| (e2e - ttft) / f64::from(n - 1));
            let prompt = f64::from(r.prompt_tokens.unwrap_or(r.input_tokens));
            [
                one("ttft", Some(ttft), 1.0),
                one("tpot", tpot, 1.0),
                one("e2e_latency", Some(e2e), 1.0),
                one(
                    "output_inference_speed",
                    tpot.filter(|t| *t > 0.0).map(|t| 1e3 / t),
                    1.0,
                ),
                one(
                    "input_throughput",
                    (ttft > 0.0).then(|| prompt * 1e3 / ttft),
                    1.0,
                ),
            ]
            .into_iter()
            .flatten()
            .collect()
        }
        // GuideLLM counts its per-token figures once per token: ITL once per token after the
        // first, TPOT ((last token − send) ÷ tokens) once per token.
        _ => [
            one("time_to_first_token", Some(ttft), 1.0),
            one(
                "inter_token_latency",
                per_gap,
                f64::from(n.saturating_sub(1)),
            ),
            one(
                "time_per_output_token",
                (n > 0).then(|| last / f64::from(n)),
                f64::from(n),
            ),
            one("request_latency", r.e2e_ms, 1.0),
        ]
        .into_iter()
        .flatten()
        .collect(),
    }
}

/// The values of each figure of `dialect` over the records `rs` (ms), by the tool's name, each
/// with its weight.
fn values(dialect: Dialect, rs: &[&Record]) -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let per_response: Vec<Vec<Values>> = rs.iter().map(|r| of_response(dialect, r)).collect();
    figures(dialect)
        .iter()
        .map(|&name| {
            let pairs = per_response
                .iter()
                .flatten()
                .filter(|v| v.figure == name)
                .flat_map(|v| v.values.iter().map(|&x| (x, v.weight)))
                .collect();
            (name, pairs)
        })
        .collect()
}

/// A distribution of `pairs` (value, weight): each value counts as `weight` samples of it;
/// `n` is the number of values. `None` without any.
fn weighted(pairs: &mut [(f64, f64)]) -> Option<Distribution> {
    if pairs.iter().all(|p| (p.1 - 1.0).abs() < f64::EPSILON) {
        let mut values: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        return Distribution::from_samples(&mut values);
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    if pairs.is_empty() || total <= 0.0 {
        return None;
    }
    let mean = pairs.iter().map(|p| p.0 * p.1).sum::<f64>() / total;
    let var = pairs
        .iter()
        .map(|p| p.1 * (p.0 - mean).powi(2))
        .sum::<f64>()
        / total;
    let quantile = |q: f64| crate::stats::weighted_quantile(pairs, total, q);
    let n = pairs.len();
    let mut d = Distribution::from_samples(&mut [mean])?;
    d.n = n;
    d.sd = var.sqrt();
    d.median = quantile(0.5);
    d.p90 = quantile(0.9);
    d.p95 = quantile(0.95);
    d.p99 = quantile(0.99);
    d.min = pairs[0].0;
    d.max = pairs[n - 1].0;
    d.descriptive = [("p90", 0.9), ("p95", 0.95), ("p99", 0.99)]
        .into_iter()
        .filter(|&(_, q)| crate::stats::is_descriptive(n, q))
        .map(|(name, _)| name.to_owned())
        .collect();
    Some(d)
}

/// The figures of every case of `records` (in the order `ids` gives) in `dialect`.
pub fn cases(dialect: Dialect, ids: &[String], records: &[Record]) -> Vec<DialectCase> {
    ids.iter()
        .map(|id| {
            let rs: Vec<&Record> = records
                .iter()
                .filter(|r| &r.case == id && r.phase == Phase::Measured && r.status == Status::Ok)
                .collect();
            let figures = values(dialect, &rs)
                .into_iter()
                .filter_map(|(name, mut v)| weighted(&mut v).map(|d| (name.to_owned(), d)))
                .collect();
            DialectCase {
                id: id.clone(),
                responses: rs.len(),
                figures,
                output_throughput_tps: span_throughput(&rs),
            }
        })
        .collect()
}

/// Output tokens of `rs` ÷ (their last token − their first send), tokens/s.
pub fn span_throughput(rs: &[&Record]) -> Option<f64> {
    let start = rs.iter().map(|r| r.sent_s).fold(f64::INFINITY, f64::min);
    let end = rs
        .iter()
        .filter_map(|r| Some(r.sent_s + r.event_ms.last()? / 1e3))
        .fold(f64::NEG_INFINITY, f64::max);
    let tokens: f64 = rs.iter().map(|r| f64::from(r.generated_tokens())).sum();
    (end > start).then(|| tokens / (end - start))
}

/// The unit of a dialect's figure: a rate is tokens/s, the rest ms.
pub fn unit(figure: &str) -> &'static str {
    if figure.ends_with("_speed") || figure.ends_with("_throughput") {
        "tokens/s"
    } else {
        "ms"
    }
}

/// The cases' figures in `dialect` as Markdown.
pub fn render(dialect: Dialect, cases: &[DialectCase]) -> String {
    let mut out = format!(
        "# Figures as {} defines them\n\nFrom the measured ok responses' records; each \
         definition and where it comes from is in docs/measurement.md (*Other tools' \
         definitions*). A p99 of fewer than 500 values is marked descriptive.\n\n",
        dialect.tool()
    );
    let mut table =
        crate::report::table::Table::new(["Case", "Figure", "n", "Mean", "Median", "p99"]);
    for case in cases {
        for (name, d) in &case.figures {
            let p99 = if d.descriptive.iter().any(|p| p == "p99") {
                format!("{:.3} (descriptive)", d.p99)
            } else {
                format!("{:.3}", d.p99)
            };
            table.push([
                case.id.clone(),
                format!("{name} ({})", unit(name)),
                d.n.to_string(),
                format!("{:.3}", d.mean),
                format!("{:.3}", d.median),
                p99,
            ]);
        }
        if let Some(t) = case.output_throughput_tps {
            table.push([
                case.id.clone(),
                "output throughput (tokens/s)".to_owned(),
                case.responses.to_string(),
                format!("{t:.2}"),
                "–".to_owned(),
                "–".to_owned(),
            ]);
        }
    }
    out.push_str(&table.markdown());
    let _ = writeln!(
        out,
        "\nOutput throughput: the output tokens of the case's measured ok responses ÷ (their last \
         token − their first send), as {} divides a whole benchmark's tokens by its duration.",
        dialect.tool()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, Phases};

    fn chat(sent: f64) -> Record {
        let mut r = ok_record(sent, None, vec![10.0, 12.0, 20.0]);
        r.event_tokens = vec![1, 1, 2];
        r.output_tokens = Some(4);
        r.phases = Some(Phases {
            first_event_ms: Some(8.0),
            ..Phases::default()
        });
        r
    }

    #[test]
    fn each_dialect_computes_its_own_figures_from_the_same_records() {
        let records: Vec<Record> = (0..4).map(|i| chat(f64::from(i))).collect();
        let ids = vec!["c".to_owned()];
        let v = &cases(Dialect::Vllm, &ids, &records)[0];
        assert_eq!(v.responses, 4);
        // The role chunk is vLLM's first token; one gap per chunk, the role chunk's included.
        assert_eq!(v.figures["ttft"].median, 8.0);
        assert_eq!(v.figures["itl"].n, 12);
        assert_eq!(v.figures["tpot"].median, 4.0);
        assert_eq!(v.figures["e2el"].median, 20.0);
        let a = &cases(Dialect::Aiperf, &ids, &records)[0];
        // AIPerf's responses have content: the first is the first token.
        assert_eq!(a.figures["time_to_first_token"].median, 10.0);
        assert_eq!(a.figures["time_to_second_token"].median, 2.0);
        assert!((a.figures["inter_token_latency"].median - 10.0 / 3.0).abs() < 1e-12);
        assert_eq!(a.figures["inter_chunk_latency"].n, 8);
        assert_eq!(a.figures["request_latency"].median, 20.0);
        // 16 tokens from the first send (0 s) to the last token (3.020 s).
        let t = a.output_throughput_tps.expect("a span");
        assert!((t - 16.0 / 3.020).abs() < 1e-9, "{t}");
        let text = render(Dialect::Aiperf, &cases(Dialect::Aiperf, &ids, &records));
        assert!(
            text.contains("| c | time_to_second_token (ms) | 4 | 2.000 | 2.000 |"),
            "{text}"
        );
        assert!(text.contains("(descriptive)"), "{text}");
    }

    #[test]
    fn guidellm_counts_a_response_s_per_token_figures_once_per_token() {
        // A long response of 9 tokens 1 ms apart, a short one of 2 tokens 10 ms apart.
        let mut long = ok_record(0.0, None, (0..9).map(|t| 10.0 + f64::from(t)).collect());
        long.output_tokens = Some(9);
        let mut short = ok_record(1.0, None, vec![10.0, 20.0]);
        short.output_tokens = Some(2);
        let records = [long, short];
        let g = &cases(Dialect::Guidellm, &["c".to_owned()], &records)[0];
        let itl = &g.figures["inter_token_latency"];
        // 8 token gaps of 1 ms and one of 10 ms: weighted by tokens, the median is 1 ms and the
        // mean (8 + 10) / 9, where vLLM's request-weighted TPOT gives (1 + 10) / 2.
        assert_eq!(itl.n, 2);
        assert_eq!(itl.median, 1.0);
        assert!((itl.mean - 18.0 / 9.0).abs() < 1e-12, "{}", itl.mean);
        let v = &cases(Dialect::Vllm, &["c".to_owned()], &records)[0];
        assert!((v.figures["tpot"].mean - 5.5).abs() < 1e-12);
        // TPOT, the first token included: 18 / 9 and 20 / 2 ms, weighted by 9 and 2 tokens.
        let tpot = &g.figures["time_per_output_token"];
        assert!((tpot.mean - (2.0 * 9.0 + 10.0 * 2.0) / 11.0).abs() < 1e-12);
        assert_eq!(tpot.max, 10.0);
    }

    #[test]
    fn genai_bench_s_figures_are_per_request_and_its_rates_tokens_per_second() {
        let records: Vec<Record> = (0..3).map(|i| chat(f64::from(i))).collect();
        let g = &cases(Dialect::GenaiBench, &["c".to_owned()], &records)[0];
        // The first token at 10 ms (the role chunk skipped), the end at the final event.
        assert_eq!(g.figures["ttft"].median, 10.0);
        let e2e = records[0].e2e_ms.expect("an end");
        assert_eq!(g.figures["e2e_latency"].median, e2e);
        let tpot = (e2e - 10.0) / 3.0;
        assert!((g.figures["tpot"].median - tpot).abs() < 1e-12);
        assert!((g.figures["output_inference_speed"].median - 1e3 / tpot).abs() < 1e-9);
        let text = render(Dialect::GenaiBench, std::slice::from_ref(g));
        assert!(text.contains("output_inference_speed (tokens/s)"), "{text}");
        assert!(text.contains("| ttft (ms) |"), "{text}");
    }

    #[test]
    fn a_case_without_ok_responses_has_no_figures() {
        let mut r = chat(0.0);
        r.status = Status::Error;
        let out = cases(Dialect::Vllm, &["c".to_owned()], &[r]);
        assert_eq!(out[0].responses, 0);
        assert!(out[0].figures.is_empty());
        assert!(out[0].output_throughput_tps.is_none());
    }
}
