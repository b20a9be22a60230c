//! The readers of other tools' result files (`llmload reconcile`): `vllm bench serve` JSON,
//! AIPerf's aggregate and per-request JSON Lines, GuideLLM's benchmarks. Whatever the file
//! holds, the reader never panics, refuses in one line that names the file, and never lets an
//! impossible value (negative, non-finite, absurd) through to a figure.

use super::*;
use llmload::reconcile::other;
use llmload::reconcile::shape::OtherRun;

/// A number as another tool's file may hold one: ordinary, zero, negative, huge or tiny.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0.0..10.0f64).prop_map(|x| json!(x)),
        1 => Just(json!(0)),
        1 => (-1e6..0.0f64).prop_map(|x| json!(x)),
        1 => (1e12..1e308f64).prop_map(|x| json!(x)),
        1 => any::<i64>().prop_map(|x| json!(x)),
        1 => Just(json!(null)),
        1 => Just(json!("NaN")),
    ]
}

/// A list of `n` numbers.
fn numbers(n: usize) -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(number(), n)
}

/// A `vllm bench serve --save-result --save-detailed` file with arbitrary values.
fn vllm_file() -> impl Strategy<Value = Value> {
    (1..6usize).prop_flat_map(|n| {
        (
            numbers(n),
            numbers(n),
            numbers(n),
            numbers(n),
            numbers(n),
            number(),
        )
            .prop_map(move |(ttfts, latencies, input, output, itl, mean)| {
                let itls: Vec<Value> = itl.into_iter().map(|x| json!([x])).collect();
                json!({"mean_ttft_ms": mean, "ttfts": ttfts, "latencies": latencies,
                    "input_lens": input, "output_lens": output, "itls": itls,
                    "errors": vec![""; n], "max_concurrency": 2})
            })
    })
}

/// AIPerf's per-request records, one a line, with arbitrary values.
fn aiperf_lines() -> impl Strategy<Value = String> {
    let metric = |unit: &'static str| number().prop_map(move |v| json!({"value": v, "unit": unit}));
    let line = (
        metric("ms"),
        metric("ms"),
        metric("tokens"),
        metric("tokens"),
        metric("s"),
    )
        .prop_map(|(ttft, latency, input, output, itl)| {
            json!({"metadata": {"benchmark_phase": "profiling", "was_cancelled": false},
                "metrics": {"time_to_first_token": ttft, "request_latency": latency,
                "input_sequence_length": input, "output_sequence_length": output,
                "inter_token_latency": itl}})
            .to_string()
        });
    prop::collection::vec(line, 1..6).prop_map(|lines| lines.join("\n") + "\n")
}

/// Pieces of the three tools' files, for arbitrary bytes near what the readers expect.
const WORDS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"ttfts\"",
    b"\"mean_ttft_ms\"",
    b"\"benchmarks\"",
    b"\"metrics\"",
    b"\"value\"",
    b"\"unit\"",
    b"\"ms\"",
    b"\"s\"",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e308",
    b"-1",
    b"null",
    b"\n",
    b"\"time_to_first_token\"",
    b"\"request_latency\"",
    b"\"input_config\"",
];

/// Every value of `run` that could become a figure is one a run can measure.
fn all_plausible(run: &OtherRun) -> Result<(), TestCaseError> {
    let fine = |v: f64| v.is_finite() && (0.0..=1e12).contains(&v);
    for (name, v) in &run.figures {
        prop_assert!(fine(*v), "{} = {}", name, v);
    }
    for r in &run.responses {
        for v in r.prompt_tokens.iter().chain(&r.output_tokens) {
            prop_assert!(fine(*v), "tokens {}", v);
        }
        for values in &r.values {
            for v in &values.values {
                prop_assert!(fine(*v), "{} = {}", values.figure, v);
            }
        }
    }
    Ok(())
}

/// Reads `bytes` as the file `name`: never a panic, an error in one line naming the file, and
/// nothing impossible in what is read.
fn read_as(name: &str, bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("the file is written");
    match other::read(&path) {
        Ok(runs) => {
            for run in &runs {
                all_plausible(run)?;
            }
        }
        Err(message) => {
            prop_assert!(!message.contains('\n'), "{}", message);
            prop_assert!(message.contains(&path.display().to_string()), "{}", message);
        }
    }
    Ok(())
}

proptest! {
    /// A vLLM result with any values: read whole with every value plausible, or refused.
    #[test]
    fn a_vllm_file_of_any_values_never_makes_an_impossible_figure(file in vllm_file()) {
        read_as("vllm.json", file.to_string().as_bytes())?;
    }

    /// AIPerf's records with any values: read with every value plausible, or refused.
    #[test]
    fn aiperf_records_of_any_values_never_make_an_impossible_figure(text in aiperf_lines()) {
        read_as("profile_export.jsonl", text.as_bytes())?;
    }

    /// Any bytes, as each tool's file name: never a panic, errors in one line.
    #[test]
    fn another_tool_s_file_of_any_bytes_never_panics(
        bytes in prop_oneof![bytes_with(WORDS, 48), prop::collection::vec(any::<u8>(), 0..1024)],
        name in prop::sample::select(vec!["vllm.json", "benchmarks.json", "profile_export.jsonl",
            "profile_export_aiperf.json"]),
    ) {
        read_as(name, &bytes)?;
    }
}
