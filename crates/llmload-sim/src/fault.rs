//! Fault injection: the `--fault` grammar and the per-request plan the HTTP layer follows.
//!
//! Grammar: `KIND[:key=value[,key=value…]]`. A selector picks the generation requests a fault
//! hits: `rate=R` (probability per request, seeded), `every=N` (requests N, 2N, … as received),
//! `index=I[;J…]` (0-based serial numbers as received); the default is `rate=1`. Kinds and their
//! keys: `http429`, `http500`, `http503`; `drop[:after=K]`; `stall[:after=K,ms=M]`;
//! `malformed[:after=K]`; `early-eos[:after=K]`; `fake-cache[:tokens=T]`; `multi-token[:k=K]`;
//! `slow-first-byte[:ms=M]`. `after` defaults to half the requested output, `tokens` to half the
//! prompt, stall `ms` to 3,600,000. Fault durations are wall-clock: the time scale does not apply.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::SimError;

/// Default stall: an hour, longer than any client timeout.
const DEFAULT_STALL_MS: u64 = 3_600_000;
/// Default `k` of `multi-token`.
const DEFAULT_TOKENS_PER_EVENT: usize = 4;

/// Which generation requests a fault applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// Each request independently with this probability (seeded).
    Rate(f64),
    /// Every Nth request: serial numbers N−1, 2N−1, …
    Every(u64),
    /// These 0-based serial numbers.
    Index(Vec<u64>),
}

/// What a fault does to a request it selects.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Answer 429 with a JSON error before streaming.
    Http429,
    /// Answer 500 with a JSON error before streaming.
    Http500,
    /// Answer 503 with a JSON error before streaming.
    Http503,
    /// Close the connection after this many token events (default: half the output).
    Drop {
        /// Tokens sent before the connection closes.
        after_tokens: Option<usize>,
    },
    /// Stop sending after this many tokens for a while, then carry on.
    Stall {
        /// Tokens sent before the stall.
        after_tokens: Option<usize>,
        /// Length of the stall in wall-clock milliseconds.
        duration_ms: u64,
    },
    /// Emit one event whose data is not valid JSON after this many tokens.
    Malformed {
        /// Tokens sent before the broken event.
        after_tokens: Option<usize>,
    },
    /// Stop with an EOS after this many tokens even when the request ignores EOS.
    EarlyEos {
        /// Tokens generated before the EOS.
        after_tokens: Option<usize>,
    },
    /// Report this many prompt tokens as cached without changing the timing.
    FakeCache {
        /// Tokens reported as cached (default: half the prompt).
        cached_tokens: Option<usize>,
    },
    /// Pack several tokens into each streamed event.
    MultiToken {
        /// Tokens per event.
        tokens_per_event: usize,
    },
    /// Delay the response headers.
    SlowFirstByte {
        /// Delay in wall-clock milliseconds.
        delay_ms: u64,
    },
}

/// One `--fault` specification: a kind and the requests it selects.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// What happens.
    pub kind: FaultKind,
    /// To which requests.
    pub selector: Selector,
}

impl FaultSpec {
    /// Parses `KIND[:key=value[,key=value…]]`.
    pub fn parse(spec: &str) -> Result<FaultSpec, SimError> {
        let invalid = |reason: String| SimError::InvalidFault {
            spec: spec.to_owned(),
            reason,
        };
        let (name, params) = spec.trim().split_once(':').unwrap_or((spec.trim(), ""));
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for pair in params.split(',').filter(|pair| !pair.trim().is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("`{pair}` is not key=value")))?;
            let key = key.trim();
            if pairs.iter().any(|(seen, _)| *seen == key) {
                return Err(invalid(format!("key `{key}` given twice")));
            }
            pairs.push((key, value.trim()));
        }
        let selector = parse_selector(&mut pairs).map_err(invalid)?;
        let kind = parse_kind(name, &mut pairs).map_err(invalid)?;
        if let Some((key, _)) = pairs.first() {
            return Err(invalid(format!("unknown key `{key}` for `{name}`")));
        }
        Ok(FaultSpec { kind, selector })
    }
}

fn take<'a>(pairs: &mut Vec<(&str, &'a str)>, key: &str) -> Option<&'a str> {
    let position = pairs.iter().position(|(seen, _)| *seen == key)?;
    Some(pairs.remove(position).1)
}

fn number<T: FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("`{key}={value}` is not a non-negative integer"))
}

fn parse_selector(pairs: &mut Vec<(&str, &str)>) -> Result<Selector, String> {
    let rate = take(pairs, "rate");
    let every = take(pairs, "every");
    let index = take(pairs, "index");
    match (rate, every, index) {
        (None, None, None) => Ok(Selector::Rate(1.0)),
        (Some(rate), None, None) => match rate.parse::<f64>() {
            Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(Selector::Rate(rate)),
            _ => Err(format!("`rate={rate}` is not a probability in [0, 1]")),
        },
        (None, Some(every), None) => match number::<u64>("every", every)? {
            0 => Err("`every=0` selects nothing; use every=1 for all".to_owned()),
            every => Ok(Selector::Every(every)),
        },
        (None, None, Some(index)) => index
            .split(';')
            .map(|one| number::<u64>("index", one.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Selector::Index),
        _ => Err("give at most one of rate, every, index".to_owned()),
    }
}

fn parse_kind(name: &str, pairs: &mut Vec<(&str, &str)>) -> Result<FaultKind, String> {
    let mut count = |key: &str| {
        take(pairs, key)
            .map(|v| number::<usize>(key, v))
            .transpose()
    };
    let kind = match name {
        "http429" => FaultKind::Http429,
        "http500" => FaultKind::Http500,
        "http503" => FaultKind::Http503,
        "drop" => FaultKind::Drop {
            after_tokens: count("after")?,
        },
        "stall" => FaultKind::Stall {
            after_tokens: count("after")?,
            duration_ms: count("ms")?.map_or(DEFAULT_STALL_MS, |ms| ms as u64),
        },
        "malformed" => FaultKind::Malformed {
            after_tokens: count("after")?,
        },
        "early-eos" => FaultKind::EarlyEos {
            after_tokens: count("after")?,
        },
        "fake-cache" => FaultKind::FakeCache {
            cached_tokens: count("tokens")?,
        },
        "multi-token" => match count("k")?.unwrap_or(DEFAULT_TOKENS_PER_EVENT) {
            0 => return Err("`k=0`: an event carries at least one token".to_owned()),
            k => FaultKind::MultiToken {
                tokens_per_event: k,
            },
        },
        "slow-first-byte" => FaultKind::SlowFirstByte {
            delay_ms: count("ms")?.map_or(1000, |ms| ms as u64),
        },
        _ => {
            return Err(format!(
                "unknown kind `{name}` (kinds: http429, http500, http503, drop, stall, \
                 malformed, early-eos, fake-cache, multi-token, slow-first-byte)"
            ))
        }
    };
    Ok(kind)
}

impl FromStr for FaultSpec {
    type Err = SimError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        Self::parse(spec)
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params: Vec<String> = Vec::new();
        let name = match &self.kind {
            FaultKind::Http429 => "http429",
            FaultKind::Http500 => "http500",
            FaultKind::Http503 => "http503",
            FaultKind::Drop { after_tokens } => {
                params.extend(after_tokens.map(|k| format!("after={k}")));
                "drop"
            }
            FaultKind::Stall {
                after_tokens,
                duration_ms,
            } => {
                params.extend(after_tokens.map(|k| format!("after={k}")));
                params.push(format!("ms={duration_ms}"));
                "stall"
            }
            FaultKind::Malformed { after_tokens } => {
                params.extend(after_tokens.map(|k| format!("after={k}")));
                "malformed"
            }
            FaultKind::EarlyEos { after_tokens } => {
                params.extend(after_tokens.map(|k| format!("after={k}")));
                "early-eos"
            }
            FaultKind::FakeCache { cached_tokens } => {
                params.extend(cached_tokens.map(|t| format!("tokens={t}")));
                "fake-cache"
            }
            FaultKind::MultiToken { tokens_per_event } => {
                params.push(format!("k={tokens_per_event}"));
                "multi-token"
            }
            FaultKind::SlowFirstByte { delay_ms } => {
                params.push(format!("ms={delay_ms}"));
                "slow-first-byte"
            }
        };
        match &self.selector {
            Selector::Rate(rate) if *rate == 1.0 => {}
            Selector::Rate(rate) => params.push(format!("rate={rate}")),
            Selector::Every(every) => params.push(format!("every={every}")),
            Selector::Index(indices) => {
                let list: Vec<String> = indices.iter().map(u64::to_string).collect();
                params.push(format!("index={}", list.join(";")));
            }
        }
        if params.is_empty() {
            f.write_str(name)
        } else {
            write!(f, "{name}:{}", params.join(","))
        }
    }
}

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
        }
    }
}

impl FaultPlan {
    /// Applies the selected kinds (the first of each kind wins) to a request of `prompt_tokens`
    /// tokens asking for `output_tokens`.
    pub fn resolve(kinds: &[&FaultKind], prompt_tokens: usize, output_tokens: usize) -> Self {
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
    pub fn new(specs: Vec<FaultSpec>, seed: u64) -> Self {
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
    pub fn specs(&self) -> &[FaultSpec] {
        &self.specs
    }

    /// Serial number of the next generation request and the faults that hit it.
    pub fn next(&self) -> (u64, Vec<&FaultKind>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
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

    #[test]
    fn parses_kinds_keys_and_selectors() {
        let spec = FaultSpec::parse("drop:after=3,every=2").expect("valid");
        assert_eq!(
            spec.kind,
            FaultKind::Drop {
                after_tokens: Some(3)
            }
        );
        assert_eq!(spec.selector, Selector::Every(2));
        let spec: FaultSpec = "http503".parse().expect("valid");
        assert_eq!(spec.selector, Selector::Rate(1.0));
        let spec = FaultSpec::parse("stall:index=0;4,ms=50").expect("valid");
        assert_eq!(spec.selector, Selector::Index(vec![0, 4]));
        assert_eq!(
            spec.kind,
            FaultKind::Stall {
                after_tokens: None,
                duration_ms: 50
            }
        );
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "http429",
            "drop:after=3,every=2",
            "stall:after=1,ms=20,index=0;4",
            "multi-token:k=3,rate=0.5",
            "fake-cache:tokens=8",
            "slow-first-byte:ms=100",
            "early-eos:after=0",
            "malformed",
        ] {
            let spec = FaultSpec::parse(text).expect("valid");
            let shown = spec.to_string();
            assert_eq!(
                FaultSpec::parse(&shown).expect("round trip"),
                spec,
                "{shown}"
            );
        }
    }

    #[test]
    fn rejects_unknown_kinds_keys_and_values() {
        for (text, needle) in [
            ("explode", "unknown kind `explode`"),
            ("drop:after=3,colour=red", "unknown key `colour`"),
            ("http429:after=3", "unknown key `after`"),
            ("drop:rate=2", "probability"),
            ("drop:rate=0.5,every=2", "at most one"),
            ("drop:after=x", "non-negative integer"),
            ("drop:after", "key=value"),
            ("multi-token:k=0", "k=0"),
            ("drop:after=1,after=2", "twice"),
        ] {
            let error = FaultSpec::parse(text).expect_err(text).to_string();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(!error.contains('\n'));
        }
    }

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
