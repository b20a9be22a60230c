//! The between-run term of a plan's answer: an attempt's own interval cannot see how much the
//! figure moves from one run to the next. Where that is known, from the attempt's repeats
//! (`--repeat`) or from earlier attempts of the same case (`plan --history`), the interval of
//! the supporting case's TTFT percentile becomes that of a re-measurement: the attempts'
//! figures (on their logarithms) give a prediction interval for one more, `mean ± t(k − 1) · sd
//! · √(1 + 1/k)`, and the answer's interval is the union of that and its own. Where it is not
//! known, the answer says that its interval is of one attempt only.

use super::support::{Kind, Support};
use super::{Measured, Question};
use crate::summary::CaseSummary;

/// The TTFT percentile the question asks of `case` (from the scheduled time in an open loop).
fn percentile(question: &Question, case: &CaseSummary) -> Option<f64> {
    let scheduled = case
        .load
        .as_ref()
        .and_then(|l| l.ttft_from_scheduled_ms.as_ref());
    let d = scheduled.or(case.ttft_ms.as_ref())?;
    Some(question.percentile.of(d).0)
}

/// The runs of `case` whose TTFT percentile says how it moves between runs, and where they came
/// from: its attempt's repeats, else the same case (lengths, load shape, load) in earlier
/// attempts with this attempt's own figure.
fn runs(question: &Question, m: &Measured, kind: Kind, case: &CaseSummary) -> (Vec<f64>, String) {
    if let Some(series) = &m.summary.repeats {
        let values = series.values(&case.id, |c| percentile(question, c));
        if values.len() >= 2 {
            let text = format!("{} repeats of this attempt", values.len());
            return (values, text);
        }
    }
    let load = kind.load_of(case);
    let mut values: Vec<f64> = m
        .history
        .iter()
        .flat_map(|s| &s.cases)
        .filter(|c| {
            c.complete
                && c.input_tokens == case.input_tokens
                && c.output_tokens == case.output_tokens
                && Kind::of(c) == kind
                && crate::num::same_load(kind.load_of(c), load)
        })
        .filter_map(|c| percentile(question, c))
        .collect();
    let earlier = values.len();
    values.extend(percentile(question, case));
    (values, format!("this attempt and {earlier} earlier"))
}

/// Widens `support`'s TTFT interval by the spread between runs where it is known, and says
/// which it is in `between_runs`.
pub(super) fn apply(
    question: &Question,
    m: &Measured,
    kind: Kind,
    case: &CaseSummary,
    support: &mut Support,
) {
    let (values, from) = runs(question, m, kind, case);
    let Some((low, high, spread)) = prediction(&values) else {
        support.between_runs = "its interval is of one attempt only: how much the figure moves \
                                between runs is not known (measure with --repeat, or give \
                                earlier attempts with --history)"
            .into();
        return;
    };
    support.ttft_low_ms = Some(support.ttft_low_ms.map_or(low, |l| l.min(low)));
    support.ttft_high_ms = Some(support.ttft_high_ms.map_or(high, |h| h.max(high)));
    support.between_runs = format!(
        "its interval holds a re-measurement: the spread between runs over {from} (sd \
         ±{spread:.1} %) is in it"
    );
}

/// The prediction interval of one more run from `values` (k ≥ 2, all above 0), ms, and the
/// runs' spread as a percent; `None` where it cannot be had.
pub(super) fn prediction(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.len() < 2 || values.iter().any(|v| *v <= 0.0 || !v.is_finite()) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let k = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / k;
    let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let t = crate::stats::interval::t_quantile(crate::stats::interval::level(), k - 1.0)?;
    let half = t * sd * (1.0 + 1.0 / k).sqrt();
    Some((
        (mean - half).exp(),
        (mean + half).exp(),
        sd.exp_m1() * 100.0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_measurement_s_interval_follows_the_runs_spread() {
        // Runs at 1.35, 1.6, 2.97 s: wide, and holding the slow one.
        let (low, high, spread) = prediction(&[1350.0, 1600.0, 2970.0]).expect("three runs");
        assert!(low < 1350.0 && high > 2970.0, "{low} {high}");
        assert!(spread > 30.0, "{spread}");
        // Identical runs: a point.
        let (low, high, spread) = prediction(&[100.0, 100.0]).expect("two runs");
        assert!((low - 100.0).abs() < 1e-9 && (high - 100.0).abs() < 1e-9);
        assert_eq!(spread, 0.0);
        assert_eq!(prediction(&[100.0]), None);
        assert_eq!(prediction(&[100.0, 0.0]), None);
    }
}
