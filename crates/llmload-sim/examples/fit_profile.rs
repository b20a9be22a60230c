//! Refits a profile's six cost parameters to the seeds' table, the way `seed-qwen3-8b` was fitted:
//! Nelder–Mead on the sum of squared relative errors of the twelve figures (median TTFT, median
//! complete-response time, mean round throughput for four cases), each figure computed by running
//! the seeds' campaign on the engine model with jitter off.
//! `cargo run --release -p llmload-sim --example fit_profile [-- PROFILE|FILE]`.
#![expect(
    clippy::print_stdout,
    reason = "an example: it prints the fitted parameters"
)]

use llmload_sim::engine::{run_closed_rounds, ClosedRounds};
use llmload_sim::Profile;

/// (input tokens, concurrency, median TTFT s, median complete s, throughput tok/s).
const SEEDS: [(usize, usize, f64, f64, f64); 4] = [
    (2048, 1, 0.19, 1.49, 171.22),
    (2048, 4, 0.70, 3.26, 312.65),
    (8192, 1, 0.85, 2.37, 107.84),
    (8192, 4, 2.49, 6.56, 154.86),
];

const NAMES: [&str; 6] = [
    "step_overhead_ms",
    "prefill_ms_per_token",
    "prefill_attention_ms_per_token_ctx",
    "decode_base_ms",
    "decode_per_seq_ms",
    "decode_per_ctx_token_ms",
];

fn parameters(profile: &Profile) -> [f64; 6] {
    [
        profile.step_overhead_ms,
        profile.prefill_ms_per_token,
        profile.prefill_attention_ms_per_token_ctx,
        profile.decode_base_ms,
        profile.decode_per_seq_ms,
        profile.decode_per_ctx_token_ms,
    ]
}

fn with_parameters(profile: &Profile, values: &[f64; 6]) -> Profile {
    let mut fitted = profile.clone();
    fitted.step_overhead_ms = values[0];
    fitted.prefill_ms_per_token = values[1];
    fitted.prefill_attention_ms_per_token_ctx = values[2];
    fitted.decode_base_ms = values[3];
    fitted.decode_per_seq_ms = values[4];
    fitted.decode_per_ctx_token_ms = values[5];
    fitted
}

/// Relative errors of the twelve figures.
fn errors(profile: &Profile) -> Vec<f64> {
    let mut errors = Vec::new();
    for (input_tokens, concurrency, ttft, complete, throughput) in SEEDS {
        let case = ClosedRounds {
            input_tokens,
            concurrency,
            output_tokens: 256,
            rounds: 3,
        };
        let figures = run_closed_rounds(profile, 0, case);
        errors.push(figures.median_ttft_s / ttft - 1.0);
        errors.push(figures.median_complete_s / complete - 1.0);
        errors.push(figures.throughput_tps / throughput - 1.0);
    }
    errors
}

fn objective(profile: &Profile, scaled: &[f64; 6], scale: &[f64; 6]) -> f64 {
    if scaled.iter().any(|value| *value < 0.0) {
        return f64::INFINITY;
    }
    let values: [f64; 6] = std::array::from_fn(|i| scaled[i] * scale[i]);
    errors(&with_parameters(profile, &values))
        .iter()
        .map(|error| error * error)
        .sum()
}

/// Nelder–Mead in coordinates scaled so that every parameter starts at 1.
fn nelder_mead(f: impl Fn(&[f64; 6]) -> f64, iterations: usize) -> [f64; 6] {
    let mut simplex: Vec<([f64; 6], f64)> = (0..=6)
        .map(|vertex| {
            let point: [f64; 6] = std::array::from_fn(|i| if i + 1 == vertex { 1.2 } else { 1.0 });
            (point, f(&point))
        })
        .collect();
    let toward = |a: &[f64; 6], b: &[f64; 6], t: f64| -> [f64; 6] {
        std::array::from_fn(|i| a[i] + t * (b[i] - a[i]))
    };
    for _ in 0..iterations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let centroid: [f64; 6] =
            std::array::from_fn(|i| simplex[..6].iter().map(|(p, _)| p[i]).sum::<f64>() / 6.0);
        let worst = simplex[6];
        let reflected = toward(&centroid, &worst.0, -1.0);
        let reflected_value = f(&reflected);
        if reflected_value < simplex[0].1 {
            let expanded = toward(&centroid, &worst.0, -2.0);
            let expanded_value = f(&expanded);
            simplex[6] = if expanded_value < reflected_value {
                (expanded, expanded_value)
            } else {
                (reflected, reflected_value)
            };
        } else if reflected_value < simplex[5].1 {
            simplex[6] = (reflected, reflected_value);
        } else {
            let contracted = toward(&centroid, &worst.0, 0.5);
            let contracted_value = f(&contracted);
            if contracted_value < worst.1 {
                simplex[6] = (contracted, contracted_value);
            } else {
                let best = simplex[0].0;
                for vertex in simplex.iter_mut().skip(1) {
                    vertex.0 = toward(&best, &vertex.0, 0.5);
                    vertex.1 = f(&vertex.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex[0].0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "seed-qwen3-8b".to_owned());
    let mut profile = Profile::resolve(&name)?;
    profile.jitter = 0.0;
    let scale = parameters(&profile).map(|value| if value > 0.0 { value } else { 1e-3 });
    let best = nelder_mead(|scaled| objective(&profile, scaled, &scale), 600);
    let fitted = with_parameters(&profile, &std::array::from_fn(|i| best[i] * scale[i]));
    for (name, value) in NAMES.iter().zip(parameters(&fitted)) {
        println!("{name} = {value:.4e}");
    }
    let worst = errors(&fitted).iter().fold(0.0_f64, |m, e| m.max(e.abs()));
    let start = errors(&profile).iter().fold(0.0_f64, |m, e| m.max(e.abs()));
    println!(
        "largest relative error: {:.2} % (profile as given: {:.2} %)",
        worst * 100.0,
        start * 100.0
    );
    Ok(())
}
