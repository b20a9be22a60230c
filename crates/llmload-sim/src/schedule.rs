//! Token schedules that bypass the engine model, for measuring clients rather than servers.
//!
//! The engine model makes every token's time depend on the batch; a client benchmark needs the
//! opposite: a server whose timing is known exactly, or one that costs nothing. `zero-cost`
//! makes each request's tokens at once, one SSE event per token, and writes them as fast as the
//! connection takes them (events queued behind a slow reader leave together, as from any server
//! that writes faster than its client reads); `zero-cost:write=each` hands every event to the
//! socket on its own write, the harshest case for a client (one receive per event);
//! `fixed:ttft_ms=T,itl_ms=G` sends the first token T ms after the request arrived and each next
//! one G ms after the one before, on an absolute clock, with no jitter and no batching, however
//! many requests run at once. The time scale does not apply to either.
//!
//! Grammar: `engine` (the default: the profile's engine model), `zero-cost[:write=each]`, or
//! `fixed[:ttft_ms=T][,itl_ms=G]` (defaults 100 and 20).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::SimError;

/// Default time to first token of `fixed`, in milliseconds.
const DEFAULT_TTFT_MS: f64 = 100.0;
/// Default gap between tokens of `fixed`, in milliseconds.
const DEFAULT_ITL_MS: f64 = 20.0;

/// When a request's tokens are sent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Schedule {
    /// The profile's engine model: slots, batching, prefill and decode cost.
    #[default]
    Engine,
    /// Every token at once, one SSE event per token: the fastest the server can stream.
    ZeroCost {
        /// Each event goes out on a write of its own instead of queueing behind the last.
        write_each: bool,
    },
    /// A fixed timeline per request, from the moment its last byte arrived (the kernel's receive
    /// stamp; the moment its body was read where the kernel gives none).
    Fixed {
        /// From the request to its first token.
        ttft: Duration,
        /// Between consecutive tokens.
        itl: Duration,
    },
}

impl Schedule {
    /// When token `index` (0-based) is due, as an offset from the request's arrival; `None` for
    /// the engine model.
    pub fn token_offset(&self, index: usize) -> Option<Duration> {
        match *self {
            Schedule::Engine => None,
            Schedule::ZeroCost { .. } => Some(Duration::ZERO),
            Schedule::Fixed { ttft, itl } => {
                let gaps = u32::try_from(index).unwrap_or(u32::MAX);
                Some(ttft + itl.saturating_mul(gaps))
            }
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Engine => f.write_str("engine"),
            Schedule::ZeroCost { write_each: false } => f.write_str("zero-cost"),
            Schedule::ZeroCost { write_each: true } => f.write_str("zero-cost:write=each"),
            Schedule::Fixed { ttft, itl } => write!(
                f,
                "fixed:ttft_ms={},itl_ms={}",
                ttft.as_secs_f64() * 1e3,
                itl.as_secs_f64() * 1e3
            ),
        }
    }
}

impl FromStr for Schedule {
    type Err = SimError;

    fn from_str(spec: &str) -> Result<Self, SimError> {
        let invalid =
            |reason: String| SimError::InvalidOption(format!("--schedule `{spec}`: {reason}"));
        let (kind, keys) = spec.split_once(':').unwrap_or((spec, ""));
        match (kind, keys) {
            ("engine", "") => return Ok(Schedule::Engine),
            ("zero-cost", "") => return Ok(Schedule::ZeroCost { write_each: false }),
            ("zero-cost", "write=each") => return Ok(Schedule::ZeroCost { write_each: true }),
            ("fixed", _) => {}
            ("engine", _) => return Err(invalid("engine takes no keys".to_owned())),
            ("zero-cost", _) => return Err(invalid("zero-cost takes only write=each".to_owned())),
            _ => {
                return Err(invalid(
                    "expected engine, zero-cost[:write=each] or fixed[:ttft_ms=T,itl_ms=G]"
                        .to_owned(),
                ))
            }
        }
        let (mut ttft_ms, mut itl_ms) = (DEFAULT_TTFT_MS, DEFAULT_ITL_MS);
        for pair in keys.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("`{pair}` is not key=value")))?;
            let ms: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0 && *v < 1e9)
                .ok_or_else(|| invalid(format!("{key} = {value} is not milliseconds ≥ 0")))?;
            match key {
                "ttft_ms" => ttft_ms = ms,
                "itl_ms" => itl_ms = ms,
                _ => return Err(invalid(format!("unknown key `{key}` (ttft_ms, itl_ms)"))),
            }
        }
        Ok(Schedule::Fixed {
            ttft: Duration::from_secs_f64(ttft_ms / 1e3),
            itl: Duration::from_secs_f64(itl_ms / 1e3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind_and_rejects_the_rest() {
        assert_eq!("engine".parse::<Schedule>().ok(), Some(Schedule::Engine));
        let zero = |write_each| Some(Schedule::ZeroCost { write_each });
        assert_eq!("zero-cost".parse::<Schedule>().ok(), zero(false));
        assert_eq!("zero-cost:write=each".parse::<Schedule>().ok(), zero(true));
        let fixed = Schedule::Fixed {
            ttft: Duration::from_millis(100),
            itl: Duration::from_millis(20),
        };
        assert_eq!("fixed".parse::<Schedule>().ok(), Some(fixed));
        assert_eq!(
            "fixed:ttft_ms=50,itl_ms=2.5".parse::<Schedule>().ok(),
            Some(Schedule::Fixed {
                ttft: Duration::from_millis(50),
                itl: Duration::from_micros(2500),
            })
        );
        for bad in [
            "fast",
            "fixed:ttft=1",
            "fixed:ttft_ms=-1",
            "zero-cost:x=1",
            "fixed:itl_ms",
        ] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad}");
        }
        let round_trip = fixed.to_string().parse::<Schedule>().ok();
        assert_eq!(round_trip, Some(fixed));
    }

    #[test]
    fn fixed_tokens_fall_on_the_grid() {
        let fixed = Schedule::Fixed {
            ttft: Duration::from_millis(100),
            itl: Duration::from_millis(20),
        };
        assert_eq!(fixed.token_offset(0), Some(Duration::from_millis(100)));
        assert_eq!(fixed.token_offset(3), Some(Duration::from_millis(160)));
        let zero = Schedule::ZeroCost { write_each: true };
        assert_eq!(zero.token_offset(9), Some(Duration::ZERO));
        assert_eq!(zero.to_string().parse::<Schedule>().ok(), Some(zero));
        assert_eq!(Schedule::Engine.token_offset(0), None);
    }
}
