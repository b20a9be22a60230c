//! The seed-qwen3-8b profile against the seeds' table: runs the seeds' campaign on the pure
//! engine model (virtual clock, no sleeping) and checks the twelve figures within ±15 %.
//! `cargo test -p llmload-sim --test calibration -- --nocapture` prints the table.

use llmload_sim::engine::{SequenceRequest, Simulation};
use llmload_sim::Profile;

/// Output tokens per request in the seeds' campaign.
const OUTPUT_TOKENS: usize = 256;
/// Measured rounds per case.
const ROUNDS: usize = 3;
/// Allowed relative deviation from the seeds' figures.
const TOLERANCE: f64 = 0.15;

/// (input tokens, concurrency, median TTFT s, median complete s, throughput tok/s).
const SEEDS: [(usize, usize, f64, f64, f64); 4] = [
    (2048, 1, 0.19, 1.49, 171.22),
    (2048, 4, 0.70, 3.26, 312.65),
    (8192, 1, 0.85, 2.37, 107.84),
    (8192, 4, 2.49, 6.56, 154.86),
];

struct CaseResult {
    median_ttft_s: f64,
    median_complete_s: f64,
    throughput_tps: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 0 {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// One warmup request on slot 0, then `ROUNDS` rounds of `concurrency` simultaneous requests,
/// each with a distinct prompt, cache_prompt false, ignore_eos.
fn run_case(profile: &Profile, input_tokens: usize, concurrency: usize, seed: u64) -> CaseResult {
    let mut sim = Simulation::new(profile, seed);
    let mut offset = 0u32;
    let mut request = |slot| {
        offset += 100_000;
        SequenceRequest {
            prompt: (offset..offset + input_tokens as u32).collect(),
            max_tokens: OUTPUT_TOKENS,
            eos_after: None,
            cache_prompt: false,
            slot,
        }
    };
    sim.submit(request(Some(0))).expect("warmup fits");
    sim.run_until_idle();
    let (mut ttfts, mut completes, mut throughputs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let ids: Vec<_> = (0..concurrency)
            .map(|_| sim.submit(request(None)).expect("fits"))
            .collect();
        sim.run_until_idle();
        let mut generated = 0;
        let mut span_ms: f64 = 0.0;
        for id in ids {
            let timeline = sim.timeline(id);
            let first_ms = timeline.first_token_ms.expect("generated") - timeline.submitted_ms;
            let done_ms = timeline.finished_ms.expect("finished") - timeline.submitted_ms;
            ttfts.push(first_ms / 1e3);
            completes.push(done_ms / 1e3);
            span_ms = span_ms.max(done_ms);
            generated += timeline.generated;
        }
        throughputs.push(generated as f64 / (span_ms / 1e3));
    }
    CaseResult {
        median_ttft_s: median(&mut ttfts),
        median_complete_s: median(&mut completes),
        throughput_tps: throughputs.iter().sum::<f64>() / throughputs.len() as f64,
    }
}

fn check_profile(seed: u64) -> Vec<String> {
    let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
    let mut failures = Vec::new();
    println!("seed {seed}: input  C   TTFT s (seed)    complete s (seed)   throughput (seed)");
    for (input, concurrency, ttft, complete, throughput) in SEEDS {
        let result = run_case(&profile, input, concurrency, seed);
        println!(
            "        {input:>5}  {concurrency}   {:.3} ({ttft:.2})    {:.3} ({complete:.2})      \
             {:.2} ({throughput:.2})",
            result.median_ttft_s, result.median_complete_s, result.throughput_tps
        );
        let figures = [
            ("median TTFT", result.median_ttft_s, ttft),
            ("median complete", result.median_complete_s, complete),
            ("throughput", result.throughput_tps, throughput),
        ];
        for (name, got, want) in figures {
            let deviation = got / want - 1.0;
            if deviation.abs() > TOLERANCE {
                failures.push(format!(
                    "({input}, {concurrency}) {name}: {got:.3} vs seeds' {want} ({:+.1} %)",
                    deviation * 100.0
                ));
            }
        }
    }
    failures
}

#[test]
fn seed_profile_reproduces_the_seeds_table() {
    for seed in [0, 1, 42] {
        let failures = check_profile(seed);
        assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    }
}
