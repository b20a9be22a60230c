//! From `--fault` specs to what happens to one request: the injector numbers generation
//! requests as they arrive and draws the seeded rates; the plan resolves defaults against the
//! request's prompt and output lengths.

use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{FaultKind, FaultSpec, Selector};

/// What the HTTP layer does differently for one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FaultPlan {
    /// Answer with this status and a JSON error instead of generating.
    pub status: Option<u16>,
    /// Close the connection after this many tokens.
    pub drop_after: Option<usize>,
    /// Stall after this many tokens for this long.
    pub stall: Option<(usize, Duration)>,
    /// Emit one broken event after this many tokens.
    pub malformed_after: Option<usize>,
    /// Generation stops with an EOS after this many tokens.
    pub eos_after: Option<usize>,
    /// Prompt tokens reported as cached.
    pub fake_cached_tokens: Option<usize>,
    /// Tokens per streamed event (1 without the multi-token fault).
    pub tokens_per_event: usize,
    /// Delay before the response headers.
    pub first_byte_delay: Option<Duration>,
    /// The first tokens that are reasoning.
    pub reasoning_tokens: Option<usize>,
    /// Corrupted output: from this many generation requests in flight (with this one), the
    /// tokens from this index on.
    pub corrupt: Option<(usize, usize)>,
}

impl Default for FaultPlan {
    fn default() -> Self {
        Self {
            status: None,
            drop_after: None,
            stall: None,
            malformed_after: None,
            eos_after: None,
            fake_cached_tokens: None,
            tokens_per_event: 1,
            first_byte_delay: None,
            reasoning_tokens: None,
            corrupt: None,
        }
    }
}

impl FaultPlan {
    /// Applies the selected kinds (the first of each kind wins) to a request of `prompt_tokens`
    /// tokens asking for `output_tokens`.
    pub(crate) fn resolve(
        kinds: &[&FaultKind],
        prompt_tokens: usize,
        output_tokens: usize,
    ) -> Self {
        let half = output_tokens / 2;
        let mut plan = FaultPlan::default();
        for kind in kinds {
            match kind {
                FaultKind::Http429 => plan.status = plan.status.or(Some(429)),
                FaultKind::Http500 => plan.status = plan.status.or(Some(500)),
                FaultKind::Http503 => plan.status = plan.status.or(Some(503)),
                FaultKind::Drop { after_tokens } => {
                    plan.drop_after = plan.drop_after.or(Some(after_tokens.unwrap_or(half)));
                }
                FaultKind::Stall {
                    after_tokens,
                    duration_ms,
                } => {
                    let stall = (
                        after_tokens.unwrap_or(half),
                        Duration::from_millis(*duration_ms),
                    );
                    plan.stall = plan.stall.or(Some(stall));
                }
                FaultKind::Malformed { after_tokens } => {
                    let after = after_tokens.unwrap_or(half);
                    plan.malformed_after = plan.malformed_after.or(Some(after));
                }
                FaultKind::EarlyEos { after_tokens } => {
                    plan.eos_after = plan.eos_after.or(Some(after_tokens.unwrap_or(half)));
                }
                FaultKind::FakeCache { cached_tokens } => {
                    let cached = cached_tokens
                        .unwrap_or(prompt_tokens / 2)
                        .min(prompt_tokens);
                    plan.fake_cached_tokens = plan.fake_cached_tokens.or(Some(cached));
                }
                FaultKind::MultiToken { tokens_per_event } if plan.tokens_per_event == 1 => {
                    plan.tokens_per_event = *tokens_per_event;
                }
                FaultKind::MultiToken { .. } => {}
                FaultKind::SlowFirstByte { delay_ms } => {
                    let delay = Duration::from_millis(*delay_ms);
                    plan.first_byte_delay = plan.first_byte_delay.or(Some(delay));
                }
                FaultKind::Reasoning { tokens } => {
                    let tokens = tokens.unwrap_or(half).min(output_tokens);
                    plan.reasoning_tokens = plan.reasoning_tokens.or(Some(tokens));
                }
                FaultKind::Corrupt {
                    in_flight,
                    after_tokens,
                } => {
                    let corrupt = (*in_flight, after_tokens.unwrap_or(half));
                    plan.corrupt = plan.corrupt.or(Some(corrupt));
                }
            }
        }
        plan
    }
}

/// Numbers generation requests as they arrive and decides which faults hit each one.
#[derive(Debug)]
pub(crate) struct FaultInjector {
    specs: Vec<FaultSpec>,
    state: Mutex<InjectorState>,
}

#[derive(Debug)]
struct InjectorState {
    next_serial: u64,
    rates: Vec<StdRng>,
}

impl FaultInjector {
    /// An injector for these specs; `rate` draws are seeded from `seed` and the spec's position.
    pub(crate) fn new(specs: Vec<FaultSpec>, seed: u64) -> Self {
        let rates = (0..specs.len() as u64)
            .map(|index| StdRng::seed_from_u64(seed ^ (index + 1).wrapping_mul(0x9e37_79b9)))
            .collect();
        Self {
            specs,
            state: Mutex::new(InjectorState {
                next_serial: 0,
                rates,
            }),
        }
    }

    /// The specs, as configured.
    pub(crate) fn specs(&self) -> &[FaultSpec] {
        &self.specs
    }

    /// Serial number of the next generation request and the faults that hit it.
    pub(crate) fn next(&self) -> (u64, Vec<&FaultKind>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let serial = state.next_serial;
        state.next_serial += 1;
        let mut kinds = Vec::new();
        for (spec, rng) in self.specs.iter().zip(state.rates.iter_mut()) {
            // Draw for every rate spec on every request so later decisions do not depend on
            // which earlier ones fired.
            let selected = match &spec.selector {
                Selector::Rate(rate) => rng.random::<f64>() < *rate,
                Selector::Every(every) => (serial + 1) % every == 0,
                Selector::Index(indices) => indices.contains(&serial),
            };
            if selected {
                kinds.push(&spec.kind);
            }
        }
        (serial, kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultSpec;

    #[test]
    fn selectors_pick_the_right_serials() {
        let specs = ["http500:every=3", "drop:index=1;2", "stall:rate=0"]
            .iter()
            .map(|text| FaultSpec::parse(text).expect("valid"))
            .collect();
        let injector = FaultInjector::new(specs, 1);
        let hits: Vec<usize> = (0..6).map(|_| injector.next().1.len()).collect();
        assert_eq!(hits, [0, 1, 2, 0, 0, 1]);
    }

    #[test]
    fn seeded_rates_are_deterministic() {
        let draw = |seed| {
            let spec = FaultSpec::parse("drop:rate=0.5").expect("valid");
            let injector = FaultInjector::new(vec![spec], seed);
            (0..64)
                .map(|_| !injector.next().1.is_empty())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(9), draw(9));
        let hits = draw(9).iter().filter(|hit| **hit).count();
        assert!((16..=48).contains(&hits), "{hits} of 64");
    }

    #[test]
    fn plan_defaults_to_halves() {
        let drop = FaultKind::Drop { after_tokens: None };
        let cache = FaultKind::FakeCache {
            cached_tokens: None,
        };
        let plan = FaultPlan::resolve(&[&drop, &cache], 100, 10);
        assert_eq!(plan.drop_after, Some(5));
        assert_eq!(plan.fake_cached_tokens, Some(50));
        assert_eq!(plan.tokens_per_event, 1);
    }
}
