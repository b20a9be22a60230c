//! The seed-qwen3-8b profile against the seeds' table: runs the seeds' campaign on the pure
//! engine model (virtual clock, no sleeping) and checks the twelve figures within ±15 %.
//! `cargo test -p llmload-sim --test calibration -- --nocapture` prints the table.

use llmload_sim::engine::{run_closed_rounds, ClosedRounds};
use llmload_sim::Profile;

/// Allowed relative deviation from the seeds' figures.
const TOLERANCE: f64 = 0.15;

/// (input tokens, concurrency, median TTFT s, median complete s, throughput tok/s).
const SEEDS: [(usize, usize, f64, f64, f64); 4] = [
    (2048, 1, 0.19, 1.49, 171.22),
    (2048, 4, 0.70, 3.26, 312.65),
    (8192, 1, 0.85, 2.37, 107.84),
    (8192, 4, 2.49, 6.56, 154.86),
];

#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
#[expect(
    clippy::print_stdout,
    reason = "prints the table against the seeds' (`--nocapture`)"
)]
fn deviations(seed: u64) -> Vec<String> {
    let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
    let mut failures = Vec::new();
    println!("seed {seed}: input  C   TTFT s (seeds)   complete s (seeds)  throughput (seeds)");
    for (input_tokens, concurrency, ttft, complete, throughput) in SEEDS {
        let case = ClosedRounds {
            input_tokens,
            concurrency,
            output_tokens: 256,
            rounds: 3,
        };
        let figures = run_closed_rounds(&profile, seed, case);
        assert_eq!(figures.ttft_s.len(), 3 * concurrency);
        println!(
            "        {input_tokens:>5}  {concurrency}   {:.3} ({ttft:.2})     {:.3} ({complete:.2})\
             \t   {:.2} ({throughput:.2})",
            figures.median_ttft_s, figures.median_complete_s, figures.throughput_tps
        );
        let checks = [
            ("median TTFT", figures.median_ttft_s, ttft),
            ("median complete", figures.median_complete_s, complete),
            ("throughput", figures.throughput_tps, throughput),
        ];
        for (name, got, want) in checks {
            let deviation = got / want - 1.0;
            if deviation.abs() > TOLERANCE {
                failures.push(format!(
                    "({input_tokens}, {concurrency}) {name}: {got:.3} vs the seeds' {want} \
                     ({:+.1} %)",
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
        let failures = deviations(seed);
        assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    }
}
