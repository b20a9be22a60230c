//! The seeds' measurement campaign on the virtual clock: one warmup request on slot 0, then
//! rounds of C simultaneous requests, each round starting when the last one ended. Gives what a
//! perfect client would measure against the simulator, so the profile can be calibrated against
//! a published table and the harness checked against ground truth.

use super::{SequenceRequest, Simulation};
use crate::Profile;

/// One case of a closed-rounds campaign.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedRounds {
    /// Prompt tokens per request (distinct prompts, `cache_prompt` false).
    pub input_tokens: usize,
    /// Requests launched together in each round.
    pub concurrency: usize,
    /// Output tokens per request (EOS ignored).
    pub output_tokens: usize,
    /// Measured rounds after the warmup.
    pub rounds: usize,
}

/// What a client measures over one case, with the seeds' definitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseFigures {
    /// Median of every response's time to first token, in seconds.
    pub median_ttft_s: f64,
    /// Median of every response's complete-response time, in seconds.
    pub median_complete_s: f64,
    /// Mean over rounds of Σ output tokens / (last completion − first send), tokens/s.
    pub throughput_tps: f64,
    /// Each response's time to first token, in seconds, in round order.
    pub ttft_s: Vec<f64>,
    /// Each response's complete-response time, in seconds, in round order.
    pub complete_s: Vec<f64>,
}

/// Median of `values` (mean of the middle two for an even count); 0 when empty.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 0 => f64::midpoint(sorted[middle - 1], sorted[middle]),
        _ => sorted[middle],
    }
}

/// Runs one case on a fresh engine of `profile` seeded with `seed`.
///
/// # Panics
/// When a request of the case does not fit a slot of the profile.
#[expect(
    clippy::expect_used,
    reason = "a case that does not fit the profile is the caller's mistake, documented under Panics"
)]
pub fn run_closed_rounds(profile: &Profile, seed: u64, case: ClosedRounds) -> CaseFigures {
    let mut sim = Simulation::new(profile, seed);
    let mut next_offset = 0u32;
    let input_tokens = u32::try_from(case.input_tokens).unwrap_or(u32::MAX);
    let mut request = |slot| {
        next_offset += 1_000_000;
        SequenceRequest {
            prompt: (next_offset..next_offset + input_tokens).collect(),
            max_tokens: case.output_tokens,
            eos_after: None,
            cache_prompt: false,
            slot,
            adapter: None,
        }
    };
    sim.submit(&request(Some(0)))
        .expect("the case must fit the profile's slots");
    sim.run_until_idle();
    let (mut ttft_s, mut complete_s, mut throughputs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..case.rounds {
        let ids: Vec<_> = (0..case.concurrency)
            .map(|_| sim.submit(&request(None)).expect("fits like the warmup"))
            .collect();
        sim.run_until_idle();
        let (mut generated, mut span_ms) = (0, 0.0_f64);
        for id in ids {
            let timeline = sim.timeline(id);
            let first_ms = timeline.first_token_ms.unwrap_or(f64::NAN) - timeline.submitted_ms;
            let done_ms = timeline.finished_ms.unwrap_or(f64::NAN) - timeline.submitted_ms;
            ttft_s.push(first_ms / 1e3);
            complete_s.push(done_ms / 1e3);
            span_ms = span_ms.max(done_ms);
            generated += timeline.generated;
        }
        throughputs.push(generated as f64 / (span_ms / 1e3));
    }
    CaseFigures {
        median_ttft_s: median(&ttft_s),
        median_complete_s: median(&complete_s),
        throughput_tps: throughputs.iter().sum::<f64>() / throughputs.len().max(1) as f64,
        ttft_s,
        complete_s,
    }
}
