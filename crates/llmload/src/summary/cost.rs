//! What a case cost, from the price of the server's GPUs (`--gpu-cost-per-hour`, `--gpus`):
//! the GPUs paid over the case's measurement window, per million tokens of its `ok` responses
//! in that window. The window and the tokens are the energy's (and the throughput's): the
//! spans of the closed rounds, or a loop's measurement window.

use super::energy::Window;
use super::CaseSummary;
use crate::stats::interval::Ci;

pub use super::case_cost::{Cost, Price};

/// Seconds in an hour.
const HOUR_S: f64 = 3600.0;

impl Price {
    /// The price of all the GPUs for one second.
    pub fn per_second(self) -> f64 {
        self.per_hour * f64::from(self.gpus) / HOUR_S
    }

    /// The cost of `window`: its tokens are output tokens when the case `generates`, else
    /// input tokens. `throughput`: the interval of the case's throughput, tokens per second,
    /// where it has one.
    pub fn cost(self, window: &Window, generates: bool, throughput: Option<&Ci>) -> Cost {
        let window_s = window.length_s();
        let window_cost = self.per_second() * window_s;
        let per_million = |tokens_per_s: f64| self.per_second() / tokens_per_s * 1e6;
        let interval = throughput.and_then(|ci| {
            let i = ci.interval?;
            (i.low > 0.0 && i.high.is_finite()).then(|| [per_million(i.high), per_million(i.low)])
        });
        Cost {
            gpu_cost_per_hour: self.per_hour,
            gpus: self.gpus,
            window_s,
            window_cost,
            tokens: window.output_tokens,
            tokens_kind: if generates { "output" } else { "input" }.to_owned(),
            tokens_verified: window.tokens_verified,
            per_million_tokens: (window.output_tokens > 0 && window_s > 0.0)
                .then(|| window_cost / window.output_tokens as f64 * 1e6),
            level: interval.and(throughput.map(|ci| ci.basis.level)),
            interval,
        }
    }
}

/// Sets the cost of each case from its window (`windows` in the order of `cases`), where a
/// price was given.
pub fn attach(cases: &mut [CaseSummary], windows: &[Window], price: Option<Price>) {
    let Some(price) = price else {
        return;
    };
    for (case, window) in cases.iter_mut().zip(windows) {
        let throughput = match &case.load {
            Some(load) => load.throughput_ci.as_ref(),
            None => case.throughput_tps.as_ref().and_then(|t| t.ci.as_ref()),
        };
        case.cost = Some(price.cost(window, case.generates(), throughput));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::interval::{Basis, Interval, Method, Unit};

    fn window(spans: Vec<(f64, f64)>, tokens: u64) -> Window {
        Window {
            spans,
            output_tokens: tokens,
            tokens_verified: true,
            responses: 1,
        }
    }

    #[test]
    fn the_cost_is_the_gpus_price_over_the_window_per_million_tokens() {
        // Two GPUs at 2.50 an hour: 5.00 an hour, 1/720 a second. Two rounds of 9 s and 27 s:
        // 36 s, 0.05. 500,000 tokens in them: 0.10 per million.
        let price = Price {
            per_hour: 2.5,
            gpus: 2,
        };
        let cost = price.cost(
            &window(vec![(1.0, 10.0), (12.0, 39.0)], 500_000),
            true,
            None,
        );
        assert!((cost.window_s - 36.0).abs() < 1e-12);
        assert!((cost.window_cost - 0.05).abs() < 1e-12);
        let per_million = cost.per_million_tokens.expect("tokens");
        assert!((per_million - 0.1).abs() < 1e-12, "{per_million}");
        assert_eq!(
            (cost.tokens, cost.tokens_kind.as_str()),
            (500_000, "output")
        );
        assert_eq!((cost.interval, cost.level), (None, None));
    }

    #[test]
    fn the_throughputs_interval_bounds_the_cost_the_other_way_round() {
        // 1 an hour, one GPU: 1/3600 a second. Throughput 100–400 tokens/s: per million tokens
        // 1e6/3600/400 = 0.694… (the high throughput is the low cost) to 2.777….
        let price = Price {
            per_hour: 1.0,
            gpus: 1,
        };
        let ci = Ci {
            basis: Basis {
                level: 0.95,
                method: Method::StudentT,
                unit: Unit::Round,
                units: 5,
            },
            interval: Some(Interval {
                low: 100.0,
                high: 400.0,
            }),
            note: None,
        };
        let cost = price.cost(&window(vec![(0.0, 10.0)], 2_000), false, Some(&ci));
        let [low, high] = cost.interval.expect("an interval");
        assert!((low - 1e6 / 3600.0 / 400.0).abs() < 1e-9, "{low}");
        assert!((high - 1e6 / 3600.0 / 100.0).abs() < 1e-9, "{high}");
        assert_eq!(cost.level, Some(0.95));
        assert_eq!(cost.tokens_kind, "input");
        // 10 s at 1/3600 a second over 2,000 tokens.
        let per_million = cost.per_million_tokens.expect("tokens");
        assert!((per_million - 10.0 / 3600.0 / 2000.0 * 1e6).abs() < 1e-9);
    }

    #[test]
    fn no_tokens_no_figure() {
        let price = Price {
            per_hour: 3.0,
            gpus: 8,
        };
        let cost = price.cost(&window(vec![(0.0, 5.0)], 0), true, None);
        assert_eq!(cost.per_million_tokens, None);
        assert!((cost.window_cost - 3.0 * 8.0 * 5.0 / 3600.0).abs() < 1e-12);
    }
}
