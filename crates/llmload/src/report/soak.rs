//! A case's soak series as a table: a row per window, in time order (its drift statement comes
//! with the series).

use super::table::{Cell, Mark, Table};
use crate::summary::soak::{Series, SeriesWindow};

/// The table of the series' windows: requests by send time, throughput by token receipt, TTFT,
/// and the GPU's temperature and power over each window.
pub fn windows(series: &Series) -> Table {
    let mut table = Table::new([
        "Window",
        "From (s)",
        "Requests",
        "Failed (cancelled)",
        "Throughput (tokens/s)",
        "TTFT p50",
        "TTFT p99",
        "n",
        "GPU °C mean / max",
        "GPU W mean / max",
    ]);
    for w in &series.windows {
        table.push(row(w));
    }
    table
}

fn row(w: &SeriesWindow) -> [Cell; 10] {
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms"));
    let pair = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{a:.1} / {b:.1}"),
        _ => "–".to_owned(),
    };
    let gpu = w.gpu.as_ref();
    let ttft = w.ttft_ms.as_ref();
    let n = ttft.map(|d| d.n);
    let window = Cell::new(w.index.to_string());
    [
        if w.full {
            window
        } else {
            window.marked(Mark::Short)
        },
        Cell::new(format!("{:.1}", w.span_s[0])),
        Cell::new(w.requests.to_string()),
        Cell::new(format!("{} ({})", w.errors, w.cancelled)),
        Cell::new(format!("{:.1}", w.throughput_tps)),
        Cell::figure(ms(ttft.map(|d| d.median)), n),
        Cell::figure(ms(ttft.map(|d| d.p99)), n),
        Cell::figure(n.unwrap_or(0).to_string(), n),
        Cell::new(pair(
            gpu.map(|g| g.temperature_c_mean),
            gpu.map(|g| g.temperature_c_max),
        )),
        Cell::new(pair(
            gpu.and_then(|g| g.power_w_mean),
            gpu.and_then(|g| g.power_w_max),
        )),
    ]
}

/// The page's section on soak series: a table per case that has one, and its drift statement;
/// none without a series.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let mut section = super::page::Section::new("soak", "Soak series");
    for case in &report.summary.cases {
        let Some(s) = &case.series else { continue };
        section.table(
            format!(
                "Soak series, case {}{} (windows of {} from the end of the warmup time; requests by send \
                 time, throughput by token receipt)",
                case.id,
                if case.complete { "" } else { ", INCOMPLETE" },
                crate::fmt::span(s.window_s)
            ),
            windows(s),
        );
        section.paragraph(&s.drift_statement);
    }
    section.unless_empty()
}
