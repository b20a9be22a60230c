//! Workload: request lengths (input or output tokens) as fixed values or distributions, sampled
//! per request from the attempt's seeded generator so that a seed reproduces the same mix.
//!
//! Spec strings: `256`, `choice:32,256,1024`, `choice:32@0.5,256@0.3,1024@0.2`, `uniform:MIN,MAX`,
//! `normal:MEAN,SD[,MIN,MAX]`, `lognormal:MEDIAN,SIGMA[,MIN,MAX]`. Normal and lognormal draws are
//! clipped to `[MIN, MAX]` (default `[1, 4 × centre]`).

use rand::Rng;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A bad length spec, in words.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct LengthError(String);

/// How many tokens one request asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Length {
    /// Always this many tokens.
    Fixed(u32),
    /// One of these values, with these weights (normalised to sum 1).
    Choice(Vec<(u32, f64)>),
    /// Uniform over `[min, max]`, both included.
    Uniform {
        /// Smallest value.
        min: u32,
        /// Largest value.
        max: u32,
    },
    /// Normal, clipped to `[min, max]`.
    Normal {
        /// Mean, tokens.
        mean: f64,
        /// Standard deviation, tokens.
        sd: f64,
        /// Lower clip.
        min: u32,
        /// Upper clip.
        max: u32,
    },
    /// Lognormal (`exp(N(ln median, sigma))`), clipped to `[min, max]`.
    LogNormal {
        /// Median, tokens.
        median: f64,
        /// Standard deviation of the log.
        sigma: f64,
        /// Lower clip.
        min: u32,
        /// Upper clip.
        max: u32,
    },
}

impl Length {
    /// Draws one length.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u32 {
        match self {
            Length::Fixed(n) => *n,
            Length::Choice(items) => {
                let mut u: f64 = rng.random();
                for &(value, weight) in items {
                    if u < weight {
                        return value;
                    }
                    u -= weight;
                }
                items.last().map_or(1, |&(v, _)| v)
            }
            Length::Uniform { min, max } => rng.random_range(*min..=*max),
            Length::Normal { mean, sd, min, max } => {
                clip(mean + sd * standard_normal(rng), *min, *max)
            }
            Length::LogNormal {
                median,
                sigma,
                min,
                max,
            } => clip(median * (sigma * standard_normal(rng)).exp(), *min, *max),
        }
    }

    /// The largest length this can produce (to size prompts and check server contexts).
    pub fn max_tokens(&self) -> u32 {
        match self {
            Length::Fixed(n) => *n,
            Length::Choice(items) => items.iter().map(|&(v, _)| v).max().unwrap_or(1),
            Length::Uniform { max, .. }
            | Length::Normal { max, .. }
            | Length::LogNormal { max, .. } => *max,
        }
    }

    /// The smallest length this can produce.
    pub fn min_tokens(&self) -> u32 {
        match self {
            Length::Fixed(n) => *n,
            Length::Choice(items) => items.iter().map(|&(v, _)| v).min().unwrap_or(1),
            Length::Uniform { min, .. }
            | Length::Normal { min, .. }
            | Length::LogNormal { min, .. } => *min,
        }
    }

    /// A representative length for tables: the value, the weighted mean, or the centre (a
    /// fixed 0 stays 0: the lengths a dataset sets).
    pub fn nominal_tokens(&self) -> u32 {
        let centre = match self {
            Length::Fixed(n) => return *n,
            Length::Choice(items) => items.iter().map(|&(v, w)| f64::from(v) * w).sum(),
            Length::Uniform { min, max } => f64::midpoint(f64::from(*min), f64::from(*max)),
            Length::Normal { mean, .. } => *mean,
            Length::LogNormal { median, .. } => *median,
        };
        crate::num::to_u32(centre.round().max(1.0))
    }

    /// Whether every request gets the same length.
    pub fn is_fixed(&self) -> bool {
        matches!(self, Length::Fixed(_))
    }
}

/// A standard normal draw (Box–Muller), so that no distribution crate is needed.
pub fn standard_normal<R: Rng>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn clip(x: f64, min: u32, max: u32) -> u32 {
    crate::num::to_u32(x.round().clamp(f64::from(min), f64::from(max)))
}

impl fmt::Display for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Length::Fixed(n) => write!(f, "{n}"),
            Length::Choice(items) => {
                let even = items.windows(2).all(|w| (w[0].1 - w[1].1).abs() < 1e-12);
                let parts: Vec<String> = items
                    .iter()
                    .map(|(v, w)| {
                        if even {
                            v.to_string()
                        } else {
                            format!("{v}@{w}")
                        }
                    })
                    .collect();
                write!(f, "choice:{}", parts.join(","))
            }
            Length::Uniform { min, max } => write!(f, "uniform:{min},{max}"),
            Length::Normal { mean, sd, min, max } => write!(f, "normal:{mean},{sd},{min},{max}"),
            Length::LogNormal {
                median,
                sigma,
                min,
                max,
            } => write!(f, "lognormal:{median},{sigma},{min},{max}"),
        }
    }
}

impl Serialize for Length {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Length::Fixed(n) => s.serialize_u32(*n),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl FromStr for Length {
    type Err = LengthError;

    fn from_str(text: &str) -> Result<Length, LengthError> {
        let text = text.trim();
        let fail = |why: &str| LengthError(format!("invalid value {text:?}: {why}"));
        let Some((kind, rest)) = text.split_once(':') else {
            return match text.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Length::Fixed(n)),
                _ => Err(fail("expected a token count above 0 or KIND:PARAMS")),
            };
        };
        let numbers = |rest: &str| -> Result<Vec<f64>, LengthError> {
            rest.split(',')
                .map(|p| {
                    p.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x >= 0.0)
                })
                .collect::<Option<Vec<f64>>>()
                .ok_or_else(|| fail("parameters must be numbers ≥ 0"))
        };
        let length = match kind {
            "choice" => choice(rest).map_err(|why| fail(&why))?,
            "uniform" => match numbers(rest)?[..] {
                [min, max] if min >= 1.0 && max >= min => Length::Uniform {
                    min: crate::num::to_u32(min),
                    max: crate::num::to_u32(max),
                },
                _ => return Err(fail("uniform:MIN,MAX with 1 ≤ MIN ≤ MAX")),
            },
            "normal" | "lognormal" => centred(kind, &numbers(rest)?).map_err(|why| fail(&why))?,
            _ => return Err(fail("kinds are choice, uniform, normal and lognormal")),
        };
        Ok(length)
    }
}

/// `normal` or `lognormal` from CENTRE,SPREAD[,MIN,MAX].
fn centred(kind: &str, p: &[f64]) -> Result<Length, String> {
    let (centre, spread) = match p {
        [c, s] | [c, s, _, _] if *c >= 1.0 => (*c, *s),
        _ => return Err("KIND:CENTRE,SPREAD[,MIN,MAX] with CENTRE ≥ 1".into()),
    };
    let (min, max) = match p {
        [_, _, min, max] => (crate::num::to_u32(min.max(1.0)), crate::num::to_u32(*max)),
        _ => (1, crate::num::to_u32(4.0 * centre)),
    };
    if max < min {
        return Err("MAX must be at least MIN".into());
    }
    Ok(if kind == "normal" {
        Length::Normal {
            mean: centre,
            sd: spread,
            min,
            max,
        }
    } else {
        Length::LogNormal {
            median: centre,
            sigma: spread,
            min,
            max,
        }
    })
}

fn choice(rest: &str) -> Result<Length, String> {
    let mut items = Vec::new();
    for part in rest.split(',') {
        let (value, weight) = match part.split_once('@') {
            Some((v, w)) => (
                v,
                w.trim()
                    .parse::<f64>()
                    .map_err(|_| "bad weight".to_owned())?,
            ),
            None => (part, 1.0),
        };
        let value: u32 = value
            .trim()
            .parse()
            .ok()
            .filter(|&v| v > 0)
            .ok_or("choice values are token counts above 0")?;
        if !(weight.is_finite() && weight > 0.0) {
            return Err("weights must be above 0".into());
        }
        items.push((value, weight));
    }
    let total: f64 = items.iter().map(|(_, w)| w).sum();
    if items.is_empty() || total <= 0.0 {
        return Err("choice needs at least one value".into());
    }
    Ok(Length::Choice(
        items.into_iter().map(|(v, w)| (v, w / total)).collect(),
    ))
}

/// Parses one `--input-tokens`/`--output-tokens` value: a distribution spec (one case) or a
/// comma-separated list of fixed lengths (one case each).
pub fn parse_list(text: &str) -> Result<Vec<Length>, LengthError> {
    if text.contains(':') {
        return Ok(vec![text.parse()?]);
    }
    text.split(',').map(str::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn draws(spec: &str, n: usize) -> Vec<u32> {
        let length: Length = spec.parse().expect("valid spec");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        (0..n).map(|_| length.sample(&mut rng)).collect()
    }

    fn mean(values: &[u32]) -> f64 {
        values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64
    }

    #[test]
    fn lists_are_fixed_values_and_specs_are_one_length() {
        assert_eq!(
            parse_list("128,512").expect("list"),
            [Length::Fixed(128), Length::Fixed(512)]
        );
        assert_eq!(parse_list("choice:32,256").expect("spec").len(), 1);
        for bad in [
            "0",
            "x",
            "choice:",
            "uniform:5,2",
            "normal:0,1",
            "zipf:3",
            "choice:3@-1",
        ] {
            assert!(parse_list(bad).is_err(), "{bad} must be rejected");
        }
    }

    #[test]
    fn weighted_choice_follows_its_weights() {
        let values = draws("choice:32@0.5,256@0.3,1024@0.2", 20_000);
        for (value, weight) in [(32, 0.5), (256, 0.3), (1024, 0.2)] {
            let share = values.iter().filter(|&&v| v == value).count() as f64 / 20_000.0;
            assert!(
                (share - weight).abs() < 0.015,
                "{value}: {share} vs {weight}"
            );
        }
        assert_eq!(
            values
                .iter()
                .filter(|v| ![32, 256, 1024].contains(*v))
                .count(),
            0
        );
        let even = draws("choice:32,256,1024", 30_000);
        let share = even.iter().filter(|&&v| v == 256).count() as f64 / 30_000.0;
        assert!((share - 1.0 / 3.0).abs() < 0.015, "{share}");
    }

    #[test]
    fn uniform_stays_in_bounds_with_its_mean() {
        let values = draws("uniform:100,300", 20_000);
        assert!(values.iter().all(|&v| (100..=300).contains(&v)));
        assert!((mean(&values) - 200.0).abs() < 2.0, "{}", mean(&values));
        assert!(values.contains(&100) && values.contains(&300));
    }

    #[test]
    fn normal_and_lognormal_are_clipped_with_their_centres() {
        let normal = draws("normal:500,100,300,700", 20_000);
        assert!(normal.iter().all(|&v| (300..=700).contains(&v)));
        assert!((mean(&normal) - 500.0).abs() < 3.0, "{}", mean(&normal));
        let log = draws("lognormal:200,0.5,50,2000", 20_000);
        assert!(log.iter().all(|&v| (50..=2000).contains(&v)));
        let mut sorted = log.clone();
        sorted.sort_unstable();
        let median = f64::from(sorted[sorted.len() / 2]);
        assert!((median - 200.0).abs() < 6.0, "median {median}");
        // Mean of a lognormal is median × exp(σ²/2) ≈ 226.6 here.
        assert!((mean(&log) - 226.6).abs() < 5.0, "{}", mean(&log));
    }

    #[test]
    fn specs_round_trip_through_display() {
        for spec in [
            "256",
            "choice:32,256,1024",
            "uniform:1,9",
            "normal:500,100,300,700",
        ] {
            let length: Length = spec.parse().expect("valid");
            assert_eq!(length.to_string(), spec);
        }
    }
}
