//! Fault injection: the `--fault` grammar and its parsed form.
//!
//! Grammar: `KIND[:key=value[,key=value…]]`. A selector picks the generation requests a fault
//! hits: `rate=R` (probability per request, seeded), `every=N` (requests N, 2N, … as received),
//! `index=I[;J…]` (0-based serial numbers as received); at most one selector, default `rate=1`.
//! Kinds and their keys:
//!
//! | kind | keys (defaults) | effect |
//! |---|---|---|
//! | `http429`, `http500`, `http503` | | that status and a JSON error, before any generation |
//! | `drop` | `after` (half the output) | close the connection after K token events |
//! | `stall` | `after` (half), `ms` (3,600,000) | stop sending after K tokens for M ms |
//! | `malformed` | `after` (half) | one event whose data is not JSON, after K tokens |
//! | `early-eos` | `after` (half) | stop with EOS after K tokens despite `ignore_eos` |
//! | `fake-cache` | `tokens` (half the prompt) | report T cached prompt tokens; timing unchanged |
//! | `multi-token` | `k` (4) | K tokens per event |
//! | `slow-first-byte` | `ms` (1,000) | delay the response headers by M ms |
//! | `corrupt` | `inflight` (2), `after` (half) | the first token from K on generated while N or more generation requests are in flight (itself counted) comes out wrong, and every token after it: output right alone and wrong under load |
//! | `reasoning` | `tokens` (half the output) | the first T tokens are reasoning (chat: `delta.reasoning_content`), unless the request's `chat_template_kwargs.enable_thinking` is `false` |
//!
//! Fault durations are wall-clock: the time scale does not apply to them. Several specs combine;
//! of two specs of the same kind hitting one request, the first listed wins.

use std::fmt;
use std::str::FromStr;

use crate::SimError;

mod plan;

pub(crate) use plan::{FaultInjector, FaultPlan};

/// Default stall: an hour, longer than any client timeout.
const DEFAULT_STALL_MS: u64 = 3_600_000;
/// Default `k` of `multi-token`.
const DEFAULT_TOKENS_PER_EVENT: usize = 4;
/// Default delay of `slow-first-byte`, in milliseconds.
const DEFAULT_FIRST_BYTE_DELAY_MS: u64 = 1000;

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
    /// From `after_tokens` on, the first token generated while `in_flight` or more generation
    /// requests are in flight (itself counted) comes out wrong, and every token after it: the
    /// output is right alone and wrong under load, as a kernel bug that shows only in batches.
    Corrupt {
        /// Generation requests in flight (with this one) from which the output is corrupted.
        in_flight: usize,
        /// Tokens generated right before the first wrong one (default: half the output).
        after_tokens: Option<usize>,
    },
    /// Think before answering: the first tokens are reasoning, as a reasoning model's are.
    Reasoning {
        /// Reasoning tokens (default: half the output).
        tokens: Option<usize>,
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
        "reasoning" => FaultKind::Reasoning {
            tokens: count("tokens")?,
        },
        "corrupt" => match count("inflight")?.unwrap_or(2) {
            0 => return Err("`inflight=0`: a request is in flight with itself at least".to_owned()),
            in_flight => FaultKind::Corrupt {
                in_flight,
                after_tokens: count("after")?,
            },
        },
        "slow-first-byte" => FaultKind::SlowFirstByte {
            delay_ms: count("ms")?.map_or(DEFAULT_FIRST_BYTE_DELAY_MS, |ms| ms as u64),
        },
        _ => {
            return Err(format!(
                "unknown kind `{name}` (kinds: http429, http500, http503, drop, stall, \
                 malformed, early-eos, fake-cache, multi-token, slow-first-byte, reasoning, corrupt)"
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
            FaultKind::Reasoning { tokens } => {
                params.extend(tokens.map(|t| format!("tokens={t}")));
                "reasoning"
            }
            FaultKind::Corrupt {
                in_flight,
                after_tokens,
            } => {
                params.push(format!("inflight={in_flight}"));
                params.extend(after_tokens.map(|k| format!("after={k}")));
                "corrupt"
            }
        };
        match &self.selector {
            // Exactly 1 is the default and goes unsaid; any other rate is written out.
            #[expect(clippy::float_cmp, reason = "only the exact default may be left out")]
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
            "corrupt:inflight=3,after=5",
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
}
