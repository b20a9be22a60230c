//! The results tables of the reports, complete cases only: the reference table ("Qwen3-8B
//! streaming API results") of the closed-round cases, and the table of continuous and open-loop
//! cases with their figures over the measurement window, which the reference table (per-round
//! throughput at a fixed concurrency) cannot hold.

use super::charts::lengths::Lengths;
use super::table::{Cell, Mark, Table};
use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};
use crate::workload::image::ImageSpec;

/// Column names of the reference table.
pub const REFERENCE_COLUMNS: [&str; 9] = [
    "Input tokens per request",
    "Concurrent requests",
    "TTFT p50 / p99",
    "Median complete response",
    "Output throughput",
    "Total throughput",
    "Requests/s",
    "Responses (n)",
    "Rounds",
];

/// Column names of the table of continuous and open-loop cases.
pub const WINDOW_COLUMNS: [&str; 12] = [
    "Load",
    "Input tokens (mean)",
    "Output tokens (mean)",
    "Achieved concurrency (mean / peak)",
    "TTFT p50 / p99",
    "p99 TTFT from scheduled",
    "Send lag p99",
    "Output throughput",
    "Total throughput",
    "Requests/s",
    "Goodput",
    "Responses (n)",
];

/// The reference table, one row per complete closed-round case: input tokens, concurrency,
/// TTFT (p50 / p99), median complete response, output and total throughput, requests/s,
/// responses, rounds. Window cases (continuous, open loop) have their own table ([`window`]);
/// the per-token figures and each distribution's mean, min and max are in [`details`].
pub fn reference(summary: &Summary) -> Table {
    let mut table = Table::new(REFERENCE_COLUMNS);
    for case in summary
        .cases
        .iter()
        .filter(|c| c.complete && c.is_rounds() && c.generates())
    {
        let throughput = case.throughput_tps.as_ref();
        let rates = Rates::of(case);
        table.push([
            Cell::new(with_images(case, thousands(case.input_tokens))),
            Cell::new(case.concurrency.to_string()),
            p50_p99(case.ttft_ms.as_ref()),
            statistic(case.e2e_ms.as_ref(), |d| d.median, "median"),
            Cell::figure(
                throughput.map_or("–".into(), |t| {
                    let pm = plus_minus(t.mean, t.ci.as_ref().and_then(|c| c.interval));
                    let pm = pm.map_or_else(String::new, |pm| format!(" {pm}"));
                    format!("{:.2} tokens/s{pm}", t.mean)
                }),
                throughput.map(|t| t.n),
            ),
            Cell::new(rate(rates.total_tps, "tokens/s")),
            Cell::new(rate(rates.requests_per_s, "req/s")),
            responses(case),
            Cell::new(case.rounds.len().to_string()),
        ]);
    }
    table
}

/// A case's rates beside its output throughput: completed requests per second, and input and
/// output tokens together per second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// Ok responses per second: over the rounds, Σ ok ÷ Σ their spans (first send → last
    /// completion); over a window, its completed requests per second.
    pub requests_per_s: Option<f64>,
    /// Input and output tokens per second: over the rounds, the mean over rounds of (Σ output
    /// tokens + ok responses × the case's mean input tokens) ÷ the round's span; over a window,
    /// its output throughput plus its completed requests per second × the mean input tokens.
    pub total_tps: Option<f64>,
}

impl Rates {
    /// The rates of `case`; `None` each where it has no round with a span and no window.
    pub fn of(case: &CaseSummary) -> Rates {
        let input = f64::from(case.input_tokens);
        if let Some(load) = &case.load {
            return Rates {
                requests_per_s: Some(load.completed_rps),
                total_tps: Some(load.throughput_tps + load.completed_rps * input),
            };
        }
        let rounds: Vec<_> = case.rounds.iter().filter(|r| r.duration_s > 0.0).collect();
        if rounds.is_empty() {
            return Rates::default();
        }
        let ok: f64 = rounds.iter().map(|r| f64::from(r.responses_ok)).sum();
        let span: f64 = rounds.iter().map(|r| r.duration_s).sum();
        let total: f64 = rounds
            .iter()
            .map(|r| (r.output_tokens as f64 + f64::from(r.responses_ok) * input) / r.duration_s)
            .sum();
        Rates {
            requests_per_s: Some(ok / span),
            total_tps: Some(total / rounds.len() as f64),
        }
    }
}

/// "12.34 req/s", or "–" without a rate.
fn rate(value: Option<f64>, unit: &str) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.2} {unit}"))
}

/// `table` (the reference table, a row per case of [`reference`]) with each row's input cell
/// naming the prompt lengths its case sent, where the records say.
pub fn named(mut table: Table, summary: &Summary, lengths: &Lengths) -> Table {
    let cases = summary
        .cases
        .iter()
        .filter(|c| c.complete && c.is_rounds() && c.generates());
    for (row, case) in table.rows.iter_mut().zip(cases) {
        row.cells[0].text = with_images(case, lengths.input(&[case]));
    }
    table
}

/// The distributions behind the tables, a row per figure of each complete case: n, mean, min,
/// p50, p99 and max (TTFT, complete response, ITL, TPOT); a p99 over too few samples is marked.
pub fn details(summary: &Summary) -> Table {
    let mut table = Table::new(["Case", "Figure", "n", "Mean", "Min", "p50", "p99", "Max"]);
    for case in summary.cases.iter().filter(|c| c.complete && c.generates()) {
        let figures = [
            ("TTFT", case.ttft_ms.as_ref()),
            ("Complete response", case.e2e_ms.as_ref()),
            ("ITL", case.itl_ms.as_ref()),
            ("TPOT", case.tpot_ms.as_ref()),
        ];
        for (name, d) in figures {
            let Some(d) = d else { continue };
            let time = |v: f64| Cell::new(seconds(Some(v)));
            let p99 = time(d.p99);
            let p99 = if crate::stats::is_descriptive(d.n, 0.99) {
                p99.marked(Mark::Descriptive)
            } else {
                p99
            };
            table.push([
                Cell::new(case.id.clone()),
                Cell::new(name),
                Cell::count(thousands(crate::num::count(d.n)), crate::num::count(d.n)),
                time(d.mean),
                time(d.min),
                time(d.median),
                p99,
                time(d.max),
            ]);
        }
    }
    table
}

/// The table of complete continuous and open-loop cases: figures over the measurement window.
pub fn window(summary: &Summary) -> Table {
    let mut table = Table::new(WINDOW_COLUMNS);
    for case in summary.cases.iter().filter(|c| c.complete && c.generates()) {
        let Some(load) = case.load.as_ref() else {
            continue;
        };
        let rates = Rates::of(case);
        table.push([
            Cell::new(super::text::window_load(load)),
            Cell::new(with_images(case, thousands(case.input_tokens))),
            Cell::new(case.output_tokens.to_string()),
            Cell::new(format!(
                "{:.2} / {}",
                load.achieved_concurrency_mean, load.achieved_concurrency_peak
            )),
            p50_p99(case.ttft_ms.as_ref()),
            statistic(load.ttft_from_scheduled_ms.as_ref(), |d| d.p99, "p99"),
            statistic(load.send_lag_ms.as_ref(), |d| d.p99, "p99"),
            Cell::new({
                let pm = plus_minus(
                    load.throughput_tps,
                    load.throughput_ci.as_ref().and_then(|c| c.interval),
                );
                let pm = pm.map_or_else(String::new, |pm| format!(" {pm}"));
                format!("{:.2} tokens/s{pm}", load.throughput_tps)
            }),
            Cell::new(rate(rates.total_tps, "tokens/s")),
            Cell::new(rate(rates.requests_per_s, "req/s")),
            Cell::new(
                load.goodput_rps
                    .map_or("–".into(), |g| format!("{g:.2} req/s")),
            ),
            responses(case),
        ]);
    }
    table
}

/// An input cell's text, with the case's images after it: "512 + 2 images of 224×224".
pub(crate) fn with_images(case: &CaseSummary, input: String) -> String {
    match case.images {
        Some(images) => format!("{input} + {}", ImageSpec::from(images).words()),
        None => input,
    }
}

/// A statistic of a distribution of milliseconds, as a time, over the distribution's n, with
/// its interval's relative half-width where it has one ("196 ms ±6%").
pub fn statistic(d: Option<&Distribution>, of: fn(&Distribution) -> f64, name: &str) -> Cell {
    let text = seconds(d.map(of));
    let pm = d.and_then(|d| plus_minus(of(d), d.ci.as_ref()?.of(name)));
    Cell::figure(
        pm.map_or_else(|| text.clone(), |pm| format!("{text} {pm}")),
        d.map(|d| d.n),
    )
}

/// The larger side of `interval` around `point` as a share of it: "±6%", "±2.5%"; `None`
/// without an interval (or a point of 0).
pub fn plus_minus(point: f64, interval: Option<crate::stats::Interval>) -> Option<String> {
    let i = interval?;
    if point == 0.0 || !point.is_finite() {
        return None;
    }
    let share = (point - i.low).max(i.high - point).max(0.0) / point.abs() * 100.0;
    Some(if share >= 10.0 {
        format!("±{share:.0}%")
    } else {
        format!("±{share:.1}%")
    })
}

/// The median and p99 of a distribution of milliseconds in one cell ("5.0 / 9.8 ms"), over the
/// distribution's n, marked when the p99 has too few samples beyond it; "–" without one.
pub fn p50_p99(d: Option<&Distribution>) -> Cell {
    let Some(d) = d else {
        return Cell::new("–");
    };
    let (p50, p99) = (seconds(Some(d.median)), seconds(Some(d.p99)));
    // One unit for both where they share it.
    let text = match (p50.strip_suffix(" ms"), p99.strip_suffix(" ms")) {
        (Some(a), Some(b)) => format!("{a} / {b} ms"),
        _ => match (p50.strip_suffix(" s"), p99.strip_suffix(" s")) {
            (Some(a), Some(b)) => format!("{a} / {b} s"),
            _ => format!("{p50} / {p99}"),
        },
    };
    let ci = d.ci.as_ref();
    let text = match ci.and_then(|ci| plus_minus(d.median, ci.median)) {
        Some(p50) => {
            let p99 = ci
                .and_then(|ci| plus_minus(d.p99, ci.p99))
                .unwrap_or_else(|| "–".into());
            format!("{text} ({p50} / {p99})")
        }
        None => text,
    };
    let cell = Cell::figure(text, Some(d.n));
    if crate::stats::is_descriptive(d.n, 0.99) {
        cell.marked(Mark::Descriptive)
    } else {
        cell
    }
}

/// The responses a row rests on: the `ok` ones, marked with how many of those are unverified.
pub(crate) fn responses(case: &CaseSummary) -> Cell {
    let cell = Cell::count(case.counts.ok.to_string(), case.counts.ok);
    match case.counts.unverified {
        0 => cell,
        u => cell.marked(Mark::Unverified(u)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_row_holds_the_figures_of_its_case_with_their_sample_sizes() {
        let summary = fixture::report().summary;
        let table = reference(&summary);
        let complete: Vec<&CaseSummary> = summary
            .cases
            .iter()
            .filter(|c| c.complete && c.is_rounds())
            .collect();
        assert_eq!(table.rows.len(), complete.len());
        for (row, case) in table.rows.iter().zip(complete) {
            assert_eq!(row.cells.len(), table.columns.len());
            let ttft = case.ttft_ms.as_ref().expect("a complete case has TTFT");
            assert_eq!(row.cells[2].text, p50_p99(Some(ttft)).text);
            assert!(row.cells[2]
                .text
                .starts_with(&format!("{:.1} / ", ttft.median)));
            assert_eq!(row.cells[2].n, Some(ttft.n as u64));
            assert_eq!(
                row.cells[3].text,
                seconds(Some(case.e2e_ms.as_ref().expect("e2e").median))
            );
            assert_eq!(row.cells[7].n, Some(u64::from(case.counts.ok)));
            // Requests/s: the ok responses over the rounds' spans.
            let span: f64 = case.rounds.iter().map(|r| r.duration_s).sum();
            let ok: u32 = case.rounds.iter().map(|r| r.responses_ok).sum();
            assert_eq!(
                row.cells[6].text,
                format!("{:.2} req/s", f64::from(ok) / span)
            );
        }
    }

    #[test]
    fn total_throughput_counts_the_input_tokens_of_each_round() {
        let case = &fixture::report().summary.cases[0];
        let rates = Rates::of(case);
        let input = f64::from(case.input_tokens);
        let per_round: Vec<f64> = case
            .rounds
            .iter()
            .map(|r| (r.output_tokens as f64 + f64::from(r.responses_ok) * input) / r.duration_s)
            .collect();
        let mean = per_round.iter().sum::<f64>() / per_round.len() as f64;
        assert!((rates.total_tps.expect("rounds") - mean).abs() < 1e-9);
        let output = case.throughput_tps.as_ref().expect("throughput").mean;
        assert!(
            mean > output,
            "the input tokens add to the output's {output}"
        );
        let mut none = case.clone();
        none.rounds.clear();
        assert_eq!(Rates::of(&none), Rates::default());
    }

    #[test]
    fn the_distributions_give_n_mean_min_p50_p99_and_max_of_each_figure() {
        let summary = fixture::report().summary;
        let case = &summary.cases[0];
        let itl = case.itl_ms.as_ref().expect("the fixture has ITL");
        let table = details(&summary);
        let row = table
            .rows
            .iter()
            .find(|r| r.cells[0].text == case.id && r.cells[1].text == "ITL")
            .expect("the case's ITL row");
        let texts: Vec<String> = row.cells.iter().map(|c| c.text.clone()).collect();
        let time = |v: f64| seconds(Some(v));
        assert_eq!(
            texts[2..],
            [
                itl.n.to_string(),
                time(itl.mean),
                time(itl.min),
                time(itl.median),
                time(itl.p99),
                time(itl.max)
            ]
        );
        assert_eq!(row.cells[2].n, Some(itl.n as u64));
        assert_eq!(row.cells[6].marks, vec![Mark::Descriptive], "n = {}", itl.n);

        let mut many = itl.clone();
        many.n = 500;
        assert!(
            p50_p99(Some(&many)).marks.is_empty(),
            "5 samples beyond p99"
        );
        many.median = 150.0;
        many.p99 = 2500.0;
        assert_eq!(p50_p99(Some(&many)).text, "0.15 / 2.50 s");
        many.median = 50.0;
        assert_eq!(p50_p99(Some(&many)).text, "50.0 ms / 2.50 s");
        assert_eq!(p50_p99(None).to_string(), "–");

        let mut without = summary.clone();
        without.cases[0].itl_ms = None;
        let rows = details(&without).rows;
        assert!(!rows
            .iter()
            .any(|r| r.cells[0].text == case.id && r.cells[1].text == "ITL"));
    }

    #[test]
    fn a_rate_is_written_rounded_not_as_a_raw_float() {
        use crate::summary::window::{window_figures, LoadShape};
        let mut summary = fixture::report().summary;
        let mut load = window_figures(&[], (0.0, 1.0), &crate::workload::shape::Slo::default());
        load.shape = LoadShape::Trace;
        load.nominal_rate_rps = Some(5.993_690_851_735_016);
        summary.cases[0].load = Some(Box::new(load.clone()));
        load.shape = LoadShape::Poisson;
        load.nominal_rate_rps = Some(0.15 * 3.0);
        summary.cases[1].load = Some(Box::new(load));
        let table = window(&summary);
        assert_eq!(table.rows[0].cells[0].text, "trace at 5.994 req/s");
        assert_eq!(table.rows[1].cells[0].text, "poisson at 0.45 req/s");
    }

    #[test]
    fn unverified_responses_are_a_mark_of_the_responses_cell() {
        let mut case = fixture::report().summary.cases[0].clone();
        case.counts.unverified = 2;
        let cell = responses(&case);
        assert_eq!(cell.marks, vec![Mark::Unverified(2)]);
        assert_eq!(
            cell.to_string(),
            format!("{} (2 unverified)", case.counts.ok)
        );
    }
}
