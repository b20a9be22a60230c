//! A sweep's curve and findings as Markdown.

use crate::summary::saturation::{Analysis, Finding};
use crate::summary::sweep::Axis;
use std::fmt::Write as _;

/// The sweep as text: one row per load, then each finding with its method.
pub fn render(analysis: &Analysis, axis: Axis) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms"));
    let mut out = format!(
        "| {axis} | throughput | TTFT p50 | TTFT p99 | TPOT p99 | in flight (mean / peak) | errors |\n\
         |---|---|---|---|---|---|---|\n"
    );
    for p in &analysis.points {
        let in_flight = match (p.achieved_concurrency_mean, p.achieved_concurrency_peak) {
            (Some(mean), Some(peak)) => format!("{mean:.2} / {peak}"),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {:.1} tokens/s | {} | {} | {} | {in_flight} | {:.1}% |",
            p.load,
            p.throughput_tps,
            ms(p.ttft_p50_ms),
            ms(p.ttft_p99_ms),
            ms(p.tpot_p99_ms),
            p.error_share * 100.0
        );
    }
    let line = |name: &str, f: &Finding| match f.value {
        Some(v) => format!("{name}: {v} ({})\n", f.method),
        None => format!("{name}: none ({})\n", f.method),
    };
    out += "\n";
    out += &line("Saturation (C_sat)", &analysis.saturation);
    out += &line("Latency knee", &analysis.knee);
    out += &line("Recommended cap", &analysis.recommended_cap);
    out += &line("Largest load meeting the SLO", &analysis.slo_max_load);
    out
}
