//! The soak series as Markdown: a table of windows per case and its drift statement.

use crate::fmt::span;
use crate::summary::soak::SeriesWindow;
use crate::summary::Summary;
use std::fmt::Write;

/// The series of every case that has one, as Markdown: a table per case and its drift statement.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    for case in &summary.cases {
        let Some(s) = &case.series else { continue };
        let _ = writeln!(
            out,
            "\nSoak series, case {}{} (windows of {} from the end of the warmup time; requests \
             by send time, throughput by token receipt):\n",
            case.id,
            if case.complete { "" } else { ", INCOMPLETE" },
            span(s.window_s)
        );
        out.push_str(
            "| Window | From (s) | Requests | Failed (cancelled) | Throughput (tokens/s) | TTFT p50 | TTFT p99 | n | GPU °C mean / max | GPU W mean / max |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        for w in &s.windows {
            let _ = writeln!(out, "| {} |", row(w).join(" | "));
        }
        let _ = writeln!(out, "\n{}", s.drift_statement);
    }
    out
}

fn row(w: &SeriesWindow) -> Vec<String> {
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms"));
    let pair = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{a:.1} / {b:.1}"),
        _ => "–".to_owned(),
    };
    let gpu = w.gpu.as_ref();
    vec![
        format!("{}{}", w.index, if w.full { "" } else { " (short)" }),
        format!("{:.1}", w.span_s[0]),
        w.requests.to_string(),
        format!("{} ({})", w.errors, w.cancelled),
        format!("{:.1}", w.throughput_tps),
        ms(w.ttft_ms.as_ref().map(|d| d.median)),
        ms(w.ttft_ms.as_ref().map(|d| d.p99)),
        w.ttft_ms.as_ref().map_or(0, |d| d.n).to_string(),
        pair(
            gpu.map(|g| g.temperature_c_mean),
            gpu.map(|g| g.temperature_c_max),
        ),
        pair(
            gpu.and_then(|g| g.power_w_mean),
            gpu.and_then(|g| g.power_w_max),
        ),
    ]
}
