//! `--slo` rules: a percentile bound (`ttft_p99<2s`), an attainment bound (`ttft<2s@95%`) or an
//! error bound (`errors<1%`), and what one response counts towards each.
//!
//! A percentile bound is an attainment bound: `X_pq < b` holds exactly when at least a share `q`
//! of the values are within `b`. So every latency rule is judged the same way, as the share of
//! values within the bound against the share wanted.

use crate::config::ConfigError;
use crate::record::{Phase, Record, Status};
use std::fmt;

/// What a latency rule bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Time to first token (from scheduled, in an open loop).
    Ttft,
    /// Time per output token after the first.
    Tpot,
    /// Complete-response time (from scheduled, in an open loop).
    E2e,
    /// Each gap between streamed tokens.
    Itl,
}

impl Metric {
    fn parse(text: &str) -> Option<Metric> {
        match text {
            "ttft" => Some(Metric::Ttft),
            "tpot" => Some(Metric::Tpot),
            "e2e" => Some(Metric::E2e),
            "itl" => Some(Metric::Itl),
            _ => None,
        }
    }

    /// Its short name, as in the rules.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Tpot => "TPOT",
            Metric::E2e => "E2E",
            Metric::Itl => "ITL",
        }
    }
}

/// One objective.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// At least `share` of the values of `metric` within `bound_ms`; `percentile` when it was
    /// written as a percentile bound (`ttft_p90<…`).
    Latency {
        /// What is bounded.
        metric: Metric,
        /// The bound, ms.
        bound_ms: f64,
        /// The share wanted within it (0–1).
        share: f64,
        /// Written as a percentile.
        percentile: bool,
    },
    /// At most `share` of the responses failed.
    Errors {
        /// The largest share of failed responses allowed (0–1).
        share: f64,
    },
}

/// A rule as given.
fn bad(text: &str, why: &str) -> ConfigError {
    ConfigError(format!(
        "--slo {text:?}: {why} (e.g. ttft_p99<2s, tpot_p50<50ms, ttft<2s@95%, errors<1%)"
    ))
}

/// A share written `95%`, or `0.95`.
fn parse_share(text: &str, whole: &str) -> Result<f64, ConfigError> {
    let (number, scale) = match text.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text, 1.0),
    };
    let share = number
        .trim()
        .parse::<f64>()
        .map_err(|_| bad(whole, "the share is not a number"))?
        / scale;
    if share.is_finite() && share > 0.0 && share < 1.0 {
        Ok(share)
    } else {
        Err(bad(whole, "the share must be above 0 and below 100%"))
    }
}

impl std::str::FromStr for Rule {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Rule, ConfigError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let compact = compact.to_ascii_lowercase();
        let Some((left, right)) = compact.split_once('<') else {
            return Err(bad(text, "a rule is NAME<BOUND"));
        };
        let right = right.strip_prefix('=').unwrap_or(right);
        if left == "errors" {
            return Ok(Rule::Errors {
                share: parse_share(right, text)?,
            });
        }
        let (metric, percentile) = match left.split_once("_p") {
            Some((metric, q)) => {
                let q: f64 = q
                    .parse()
                    .map_err(|_| bad(text, "the percentile is not a number"))?;
                if !(q > 0.0 && q < 100.0) {
                    return Err(bad(text, "the percentile must be above 0 and below 100"));
                }
                (metric, Some(q / 100.0))
            }
            None => (left, None),
        };
        let metric = Metric::parse(metric)
            .ok_or_else(|| bad(text, "the metric is one of ttft, tpot, e2e, itl, errors"))?;
        let (bound, share) = match (percentile, right.split_once('@')) {
            (Some(q), None) => (right, q),
            (None, Some((bound, share))) => (bound, parse_share(share, text)?),
            (Some(_), Some(_)) => return Err(bad(text, "a percentile bound takes no @SHARE")),
            (None, None) => {
                return Err(bad(text, "name a percentile (ttft_p99) or a share (@95%)"))
            }
        };
        let bound_ms = crate::num::duration(bound)
            .map_err(|e| bad(text, &format!("the bound: {e}")))?
            .as_secs_f64()
            * 1e3;
        if bound_ms <= 0.0 {
            return Err(bad(text, "the bound must be more than zero"));
        }
        Ok(Rule::Latency {
            metric,
            bound_ms,
            share,
            percentile: percentile.is_some(),
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::Errors { share } => write!(f, "errors < {}%", crate::fmt::number(share * 100.0)),
            Rule::Latency {
                metric,
                bound_ms,
                share,
                percentile: true,
            } => write!(
                f,
                "{} p{} < {}",
                metric.name(),
                crate::fmt::number(share * 100.0),
                bound_text(bound_ms)
            ),
            Rule::Latency {
                metric,
                bound_ms,
                share,
                percentile: false,
            } => write!(
                f,
                "{} < {} for {}% of requests",
                metric.name(),
                bound_text(bound_ms),
                crate::fmt::number(share * 100.0)
            ),
        }
    }
}

/// A bound in words: `500 ms`, `2 s`.
pub fn bound_text(ms: f64) -> String {
    if ms >= 1e3 {
        format!("{} s", crate::fmt::number(ms / 1e3))
    } else {
        format!("{} ms", crate::fmt::number(ms))
    }
}

/// What one response counts towards a rule: values within the bound, and values judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Values within the bound (responses that did not fail, for `errors`).
    pub met: u64,
    /// Values judged.
    pub judged: u64,
}

impl Tally {
    /// Adds another tally.
    pub fn add(&mut self, other: Tally) {
        self.met += other.met;
        self.judged += other.judged;
    }

    /// The share within the bound; `None` with nothing judged.
    pub fn share(self) -> Option<f64> {
        (self.judged > 0).then(|| self.met as f64 / self.judged as f64)
    }
}

/// Whether a record is one the rules judge: measured, and neither stopped by the run nor
/// abandoned on purpose.
pub fn judged(record: &Record) -> bool {
    record.phase == Phase::Measured
        && !matches!(record.status, Status::Cancelled | Status::Abandoned)
}

/// The send lag of an open loop's request, ms (0 in a closed loop).
fn lag_ms(record: &Record) -> f64 {
    record
        .scheduled_s
        .map_or(0.0, |scheduled| (record.sent_s - scheduled).max(0.0) * 1e3)
}

impl Rule {
    /// What `record` counts towards this rule. A response that failed misses every latency
    /// bound (it had no answer in time).
    pub fn tally(&self, record: &Record) -> Tally {
        let failed = !matches!(record.status, Status::Ok | Status::Short);
        let Rule::Latency {
            metric, bound_ms, ..
        } = *self
        else {
            return Tally {
                met: u64::from(!failed),
                judged: 1,
            };
        };
        let one = |value: Option<f64>| Tally {
            met: u64::from(!failed && value.is_some_and(|v| v <= bound_ms)),
            judged: 1,
        };
        match metric {
            Metric::Ttft => one(record.ttft_ms.map(|t| t + lag_ms(record))),
            Metric::E2e => one(record.e2e_ms.map(|t| t + lag_ms(record))),
            Metric::Tpot if !failed && record.generated_tokens() < 2 => Tally::default(),
            Metric::Tpot => one(record.tpot_ms()),
            Metric::Itl if failed => Tally { met: 0, judged: 1 },
            Metric::Itl => record.itl_ms().fold(Tally::default(), |mut t, gap| {
                t.add(Tally {
                    met: u64::from(gap <= bound_ms),
                    judged: 1,
                });
                t
            }),
        }
    }

    /// The fewest values a block needs for its share to say something about this rule: five
    /// beyond the share wanted (a block's p99 rests on 500 values), as for a percentile that is
    /// more than a description.
    pub fn block_values(&self) -> u64 {
        match *self {
            Rule::Latency { share, .. } => {
                crate::num::to_u64((crate::stats::MIN_TAIL_SAMPLES / (1.0 - share) - 1e-9).ceil())
            }
            Rule::Errors { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_as_written() {
        let rule: Rule = "ttft_p99<2s".parse().expect("a percentile bound");
        assert_eq!(
            rule,
            Rule::Latency {
                metric: Metric::Ttft,
                bound_ms: 2000.0,
                share: 0.99,
                percentile: true
            }
        );
        let rule: Rule = "tpot<50ms@95%".parse().expect("an attainment bound");
        assert_eq!(
            rule,
            Rule::Latency {
                metric: Metric::Tpot,
                bound_ms: 50.0,
                share: 0.95,
                percentile: false
            }
        );
        assert_eq!(
            "errors<1%".parse::<Rule>().expect("an error bound"),
            Rule::Errors { share: 0.01 }
        );
        assert_eq!(rule.to_string(), "TPOT < 50 ms for 95% of requests");
    }

    #[test]
    fn bad_rules_are_refused_with_an_example() {
        for text in [
            "ttft",
            "ttft_p100<2s",
            "ttft_p99<2s@95%",
            "ttft<2s",
            "latency_p99<2s",
            "errors<150%",
            "ttft_p99<0s",
        ] {
            let error = text.parse::<Rule>().expect_err(text).to_string();
            assert!(error.contains("e.g. ttft_p99<2s"), "{text}: {error}");
        }
    }

    #[test]
    fn a_block_of_a_percentile_holds_five_values_beyond_it() {
        let p90: Rule = "ttft_p90<1s".parse().expect("rule");
        assert_eq!(p90.block_values(), 50);
        let p99: Rule = "e2e_p99<1s".parse().expect("rule");
        assert_eq!(p99.block_values(), 500);
    }
}
