//! The step cost model: how long one engine step takes, in modelled milliseconds, from what the
//! batch holds. Pure arithmetic, kept apart so tests and the calibration can reason about it.

use crate::Profile;

/// The profile's cost parameters (all in modelled milliseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Fixed cost of every step.
    pub step_overhead_ms: f64,
    /// Linear prefill cost per prompt token.
    pub prefill_ms_per_token: f64,
    /// Attention prefill cost per prompt token per context position.
    pub prefill_attention_ms_per_token_ctx: f64,
    /// Cost of a step that decodes at least one sequence.
    pub decode_base_ms: f64,
    /// Decode cost per decoding sequence.
    pub decode_per_seq_ms: f64,
    /// Decode cost per context token of the decoding sequences.
    pub decode_per_ctx_token_ms: f64,
    /// Decode cost per decoding sequence that runs with an adapter.
    pub adapter_decode_per_seq_ms: f64,
}

impl CostModel {
    /// The cost parameters of a profile.
    pub fn from_profile(profile: &Profile) -> Self {
        Self {
            step_overhead_ms: profile.step_overhead_ms,
            prefill_ms_per_token: profile.prefill_ms_per_token,
            prefill_attention_ms_per_token_ctx: profile.prefill_attention_ms_per_token_ctx,
            decode_base_ms: profile.decode_base_ms,
            decode_per_seq_ms: profile.decode_per_seq_ms,
            decode_per_ctx_token_ms: profile.decode_per_ctx_token_ms,
            adapter_decode_per_seq_ms: profile.adapter_decode_per_seq_ms,
        }
    }

    /// Prefill of `tokens` prompt tokens at positions `start_position..start_position + tokens`:
    /// a linear term plus an attention term over Σ positions = tokens × mean position.
    pub fn prefill_ms(&self, tokens: usize, start_position: usize) -> f64 {
        let tokens_f = tokens as f64;
        let mean_position = start_position as f64 + (tokens_f - 1.0).max(0.0) / 2.0;
        self.prefill_ms_per_token * tokens_f
            + self.prefill_attention_ms_per_token_ctx * tokens_f * mean_position
    }

    /// What `sequences` decoding sequences that run with an adapter add to a step.
    pub fn adapter_ms(&self, sequences: usize) -> f64 {
        self.adapter_decode_per_seq_ms * sequences as f64
    }

    /// Decode of one token for each of `sequences` sequences holding `context_tokens` in all.
    pub fn decode_ms(&self, sequences: usize, context_tokens: usize) -> f64 {
        if sequences == 0 {
            return 0.0;
        }
        self.decode_base_ms
            + self.decode_per_seq_ms * sequences as f64
            + self.decode_per_ctx_token_ms * context_tokens as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefill_sums_positions() {
        let model = CostModel {
            step_overhead_ms: 0.0,
            prefill_ms_per_token: 1.0,
            prefill_attention_ms_per_token_ctx: 0.5,
            decode_base_ms: 0.0,
            decode_per_seq_ms: 0.0,
            decode_per_ctx_token_ms: 0.0,
            adapter_decode_per_seq_ms: 0.25,
        };
        assert!((model.adapter_ms(2) - 0.5).abs() < 1e-12);
        // Positions 10, 11, 12: linear 3 + attention 0.5 × 33.
        assert!((model.prefill_ms(3, 10) - (3.0 + 16.5)).abs() < 1e-12);
        // No tokens and no sequences cost exactly nothing, not nearly nothing.
        assert!(model.prefill_ms(0, 10) == 0.0);
        assert!(model.decode_ms(0, 100) == 0.0);
    }
}
