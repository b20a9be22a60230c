//! The server's own pace beside a check: how the server's time per prompt token (prefill) or
//! per generated token (decode) moved from BASE to NEW ([`crate::summary::pace`]), held against
//! the client's change. Where the server's pace moved as much as the client's figure, the
//! machine moved, or the build did; where it held, the client's change lies beyond the server:
//! in the path (a proxy, a gateway, the network) or the client.

use super::change;
use super::{Change, Figure, Latency, Metric};
use crate::stats::{Distribution, Interval};
use crate::summary::CaseSummary;
use serde::Serialize;

/// Which of the server's paces a metric follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Time per prompt token: TTFT and the phases before it.
    Prefill,
    /// Time per generated token after the first: TPOT, ITL, the complete response, throughput.
    Decode,
}

impl Stage {
    /// The stage in words, as the sentence names it.
    pub fn words(self) -> &'static str {
        match self {
            Stage::Prefill => "prefill time per prompt token",
            Stage::Decode => "decode time per token",
        }
    }
}

/// How the server's own pace moved from BASE to NEW.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PaceShift {
    /// Which pace.
    pub stage: Stage,
    /// BASE's median, ms per token, and its n (responses).
    pub base_ms: f64,
    /// BASE's responses.
    pub base_n: usize,
    /// NEW's median, ms per token.
    pub new_ms: f64,
    /// NEW's responses.
    pub new_n: usize,
    /// (NEW − BASE) / BASE, percent.
    pub change_percent: f64,
    /// Its interval, percent; absent where a side has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The shift held against the client's change, in one sentence.
    pub sentence: String,
}

/// The pace a metric follows; `None` for the error rate (no pace to hold it against).
pub fn stage(metric: Metric) -> Option<Stage> {
    match metric {
        Metric::Latency(
            Latency::Ttft | Latency::Connect | Latency::Head | Latency::FirstEvent,
            _,
        ) => Some(Stage::Prefill),
        Metric::Latency(..) | Metric::Throughput | Metric::Goodput => Some(Stage::Decode),
        Metric::ErrorRate => None,
    }
}

/// The distribution of the server's pace at `stage` in `case`.
fn pace(case: &CaseSummary, stage: Stage) -> Option<&Distribution> {
    let pace = case.server.as_ref()?.pace.as_ref()?;
    match stage {
        Stage::Prefill => pace.prefill_ms_per_token.as_ref(),
        Stage::Decode => pace.decode_ms_per_token.as_ref(),
    }
}

/// The shift of the server's pace behind `metric` from `base` to `new`, held against the
/// client's change `client_percent` (percent of BASE; `decided`: whether the verdict found a
/// change); `None` where either side's records carry no server timings for it.
pub fn shift(
    metric: Metric,
    base: &CaseSummary,
    new: &CaseSummary,
    client_percent: f64,
    decided: bool,
) -> Option<PaceShift> {
    let stage = stage(metric)?;
    let (b, n) = (pace(base, stage)?, pace(new, stage)?);
    let figure =
        |d: &Distribution| Figure::new(d.median, d.n, "responses").with(d.ci.as_ref(), "median");
    let level = crate::stats::interval::level();
    let change_percent = (n.median - b.median) / b.median * 100.0;
    if !change_percent.is_finite() {
        return None;
    }
    let interval = change::interval(Change::Percent(0.0), &figure(b), &figure(n), level)
        .map(|i| i.holding(change_percent));
    let mut shift = PaceShift {
        stage,
        base_ms: b.median,
        base_n: b.n,
        new_ms: n.median,
        new_n: n.n,
        change_percent,
        interval,
        sentence: String::new(),
    };
    shift.sentence = sentence(&shift, metric, client_percent, decided);
    Some(shift)
}

/// The shift in words against the client's change. A throughput moves against time: its
/// client change is turned into time (a throughput 20 % lower is 25 % more time per token).
fn sentence(s: &PaceShift, metric: Metric, client_percent: f64, decided: bool) -> String {
    let client = match metric {
        Metric::Throughput | Metric::Goodput if client_percent > -100.0 => {
            (100.0 / (1.0 + client_percent / 100.0)) - 100.0
        }
        _ => client_percent,
    };
    let what = s.stage.words();
    let moved = s.interval.is_some_and(|i| i.low > 0.0 || i.high < 0.0);
    let shown = match s.interval {
        Some(i) => format!("{:+.1} % [{:+.1}, {:+.1}]", s.change_percent, i.low, i.high),
        None => format!("{:+.1} %, no interval", s.change_percent),
    };
    let (slower, by) = if s.change_percent >= 0.0 {
        ("NEW", s.change_percent)
    } else {
        ("BASE", (s.base_ms / s.new_ms - 1.0) * 100.0)
    };
    let same_way = client.is_finite() && client * s.change_percent > 0.0;
    if moved && same_way && s.change_percent.abs() * 2.0 >= client.abs() {
        return format!(
            "the server's own {what} was {by:.0} % slower in {slower} ({shown}): the machine \
             moved, or the build did"
        );
    }
    if moved {
        return format!(
            "the server's own {what} moved {shown}, less than the client's {client:+.1} %: the \
             rest is beyond the server (the path or the client)"
        );
    }
    if s.interval.is_none() {
        return format!("the server's own {what} moved {shown}: too few responses to tell");
    }
    if decided {
        format!(
            "the server's own {what} held ({shown}): the change is beyond the server (a proxy, \
             a gateway, the network or the client)"
        )
    } else {
        format!("the server's own {what} held ({shown})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shift(base: f64, new: f64, interval: Option<Interval>) -> PaceShift {
        PaceShift {
            stage: Stage::Decode,
            base_ms: base,
            base_n: 20,
            new_ms: new,
            new_n: 20,
            change_percent: (new - base) / base * 100.0,
            interval,
            sentence: String::new(),
        }
    }

    #[test]
    fn a_pace_that_moved_as_much_as_the_client_names_the_machine() {
        // The server 33 % slower in BASE (40 → 30 ms per token), the client 20 % faster.
        let s = shift(
            40.0,
            30.0,
            Some(Interval {
                low: -30.0,
                high: -20.0,
            }),
        );
        let metric = Metric::Latency(Latency::Tpot, super::super::Percentile::P50);
        let text = sentence(&s, metric, -20.0, true);
        assert_eq!(
            text,
            "the server's own decode time per token was 33 % slower in BASE (-25.0 % [-30.0, \
             -20.0]): the machine moved, or the build did"
        );
        // A throughput 20 % lower is 25 % more time: the same way as a slower pace.
        let slower = shift(
            30.0,
            40.0,
            Some(Interval {
                low: 20.0,
                high: 45.0,
            }),
        );
        assert!(sentence(&slower, Metric::Throughput, -20.0, true).contains("slower in NEW"));
        // Moved, but far less than the client's change: the rest is the path's.
        let little = shift(
            30.0,
            31.5,
            Some(Interval {
                low: 1.0,
                high: 9.0,
            }),
        );
        assert!(sentence(&little, metric, 60.0, true).contains("beyond the server (the path"));
        // Held: with a decided change the change is the path's; without, only that it held.
        let held = shift(
            30.0,
            30.3,
            Some(Interval {
                low: -4.0,
                high: 6.0,
            }),
        );
        assert!(sentence(&held, metric, 60.0, true).contains("a proxy, a gateway"));
        assert!(sentence(&held, metric, 1.0, false).ends_with("held (+1.0 % [-4.0, +6.0])"));
    }

    #[test]
    fn each_metric_follows_its_stage() {
        use super::super::Percentile::P50;
        assert_eq!(
            stage(Metric::Latency(Latency::Ttft, P50)),
            Some(Stage::Prefill)
        );
        assert_eq!(
            stage(Metric::Latency(Latency::Itl, P50)),
            Some(Stage::Decode)
        );
        assert_eq!(stage(Metric::Throughput), Some(Stage::Decode));
        assert_eq!(stage(Metric::ErrorRate), None);
    }
}
