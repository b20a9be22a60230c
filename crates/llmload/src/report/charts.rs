//! The report's charts over cases, drawn by plotters into SVG strings that `report.html` inlines:
//! latency against concurrency, throughput against concurrency, and the latency–throughput
//! curve. Only complete cases are plotted, as in the seeds' table; each chart comes with a
//! caption that says what was plotted and from how many samples.

use crate::report::markdown::thousands;
use crate::report::plot::{
    empty, legend, svg, tick, upper, whole, Area, ChartError, Figure, TimeAxis, COLORS,
};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Complete cases of one input and output length, by concurrency.
struct Series<'a> {
    label: String,
    color: RGBColor,
    cases: Vec<&'a CaseSummary>,
}

fn series(summary: &Summary) -> Vec<Series<'_>> {
    let mut keys: Vec<(u32, u32)> = summary
        .cases
        .iter()
        .filter(|c| c.complete)
        .map(|c| (c.input_tokens, c.output_tokens))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let several_outputs = keys.iter().any(|k| k.1 != keys[0].1);
    keys.iter()
        .enumerate()
        .map(|(i, &(input, output))| {
            let mut cases: Vec<&CaseSummary> = summary
                .cases
                .iter()
                .filter(|c| c.complete && (c.input_tokens, c.output_tokens) == (input, output))
                .collect();
            cases.sort_by_key(|c| c.concurrency);
            let label = if several_outputs {
                format!("{} in / {} out", thousands(input), thousands(output))
            } else {
                format!("{} input tokens", thousands(input))
            };
            Series {
                label,
                color: COLORS[i % COLORS.len()],
                cases,
            }
        })
        .collect()
}

/// "n = 3" or "n = 2–8" over the values `ns`.
fn sizes(ns: impl Iterator<Item = usize>) -> String {
    let ns: Vec<usize> = ns.collect();
    match (ns.iter().min(), ns.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("n = {lo}"),
        (Some(lo), Some(hi)) => format!("n = {lo}–{hi}"),
        _ => "no samples".into(),
    }
}

fn left_out(summary: &Summary) -> String {
    match summary.cases.iter().filter(|c| !c.complete).count() {
        0 => String::new(),
        k => format!(" {k} incomplete case(s) left out."),
    }
}

/// Concurrency axis: from 0 to a little past the largest concurrency.
fn concurrency_range(lines: &[Series]) -> std::ops::Range<f64> {
    let max = lines
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| f64::from(c.concurrency))
        .fold(1.0, f64::max);
    0.0..max * 1.1 + 0.5
}

type Metric = fn(&CaseSummary) -> Option<&Distribution>;

/// (a) Median TTFT and median complete-response time against concurrency, with p95 bands.
pub fn latency(summary: &Summary) -> Figure {
    let lines = series(summary);
    let svg = svg((960, 420), |root| {
        if lines.is_empty() {
            return empty(root, "no complete case to plot");
        }
        let panels = root.split_evenly((1, 2));
        latency_panel(&panels[0], &lines, "Time to first token", |c| {
            c.ttft_ms.as_ref()
        })?;
        latency_panel(&panels[1], &lines, "Complete response", |c| {
            c.e2e_ms.as_ref()
        })
    });
    let cases: Vec<&CaseSummary> = lines.iter().flat_map(|s| s.cases.clone()).collect();
    let descriptive = cases
        .iter()
        .filter_map(|c| c.ttft_ms.as_ref())
        .filter(|d| d.descriptive.iter().any(|p| p == "p95"))
        .count();
    Figure {
        title: "Latency against concurrency".into(),
        svg,
        caption: format!(
            "Median TTFT (left) and median complete-response time (right) of each complete case \
             against its concurrent requests, one line per input length; the shaded band reaches \
             up to the p95, marked ×. {} responses per point ({} cases). The p95 is descriptive \
             (fewer than 5 samples beyond it) at {descriptive} of {} points.{}",
            sizes(cases.iter().filter_map(|c| c.ttft_ms.as_ref()).map(|d| d.n)),
            cases.len(),
            cases.len(),
            left_out(summary),
        ),
    }
}

fn latency_panel(
    area: &Area,
    lines: &[Series],
    title: &str,
    metric: Metric,
) -> Result<(), ChartError> {
    let max_ms = lines
        .iter()
        .flat_map(|s| &s.cases)
        .filter_map(|c| metric(c))
        .map(|d| d.p95)
        .fold(0.0, f64::max);
    let axis = TimeAxis::for_max_ms(max_ms);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(concurrency_range(lines), 0.0..upper(max_ms / axis.divisor))?;
    chart
        .configure_mesh()
        .x_label_formatter(&whole)
        .y_label_formatter(&tick)
        .x_desc("concurrent requests")
        .y_desc(format!("{title} ({})", axis.unit))
        .draw()?;
    for line in lines {
        let points: Vec<(f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                metric(c).map(|d| {
                    let x = f64::from(c.concurrency);
                    (x, d.median / axis.divisor, d.p95 / axis.divisor)
                })
            })
            .collect();
        median_and_p95(&mut chart, line, &points)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// One line of a latency panel: the median, a band up to the p95, and × at the p95.
fn median_and_p95(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    line: &Series,
    points: &[(f64, f64, f64)],
) -> Result<(), ChartError> {
    let color = line.color;
    let band: Vec<(f64, f64)> = points
        .iter()
        .map(|&(x, m, _)| (x, m))
        .chain(points.iter().rev().map(|&(x, _, p)| (x, p)))
        .collect();
    chart.draw_series(std::iter::once(Polygon::new(
        band,
        color.mix(0.15).filled(),
    )))?;
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|&(x, m, _)| (x, m)),
            color.stroke_width(2),
        ))?
        .label(line.label.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    chart.draw_series(
        points
            .iter()
            .map(|&(x, m, _)| Circle::new((x, m), 3, color.filled())),
    )?;
    chart.draw_series(
        points
            .iter()
            .map(|&(x, _, p)| Cross::new((x, p), 4, color.stroke_width(2))),
    )?;
    Ok(())
}

/// (b) Aggregate output throughput against concurrency, with the rounds' min–max.
pub fn throughput(summary: &Summary) -> Figure {
    let lines = series(summary);
    let svg = svg((720, 420), |root| {
        if lines.is_empty() {
            return empty(root, "no complete case to plot");
        }
        throughput_chart(root, &lines)
    });
    let rounds = lines
        .iter()
        .flat_map(|s| &s.cases)
        .filter_map(|c| c.throughput_tps.as_ref().map(|t| t.n));
    Figure {
        title: "Aggregate throughput against concurrency".into(),
        svg,
        caption: format!(
            "Aggregate output throughput of each complete case (mean over its rounds of Σ output \
             tokens ÷ (last completion − first send)) against its concurrent requests, one line \
             per input length; the whiskers span the slowest and fastest round. {} rounds per \
             point.{}",
            sizes(rounds),
            left_out(summary),
        ),
    }
}

fn throughput_chart(root: &Area, lines: &[Series]) -> Result<(), ChartError> {
    let max = lines
        .iter()
        .flat_map(|s| &s.cases)
        .filter_map(|c| c.throughput_tps.as_ref())
        .map(|t| t.max)
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(concurrency_range(lines), 0.0..upper(max))?;
    chart
        .configure_mesh()
        .x_label_formatter(&whole)
        .y_label_formatter(&tick)
        .x_desc("concurrent requests")
        .y_desc("output tokens/s")
        .draw()?;
    for line in lines {
        let color = line.color;
        let points: Vec<(f64, f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                let t = c.throughput_tps.as_ref()?;
                Some((f64::from(c.concurrency), t.mean, t.min, t.max))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(x, m, _, _)| (x, m)),
                color.stroke_width(2),
            ))?
            .label(line.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(
            points
                .iter()
                .map(|&(x, m, _, _)| Circle::new((x, m), 3, color.filled())),
        )?;
        chart.draw_series(points.iter().map(|&(x, _, lo, hi)| {
            PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(1))
        }))?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

/// (c) Latency against throughput: p50 and p99 TTFT of each complete case against its
/// aggregate throughput, one curve per input length, each point labelled with its concurrency.
pub fn latency_throughput(summary: &Summary) -> Figure {
    let lines = series(summary);
    let svg = svg((720, 460), |root| {
        if lines.is_empty() {
            return empty(root, "no complete case to plot");
        }
        latency_throughput_chart(root, &lines)
    });
    let cases: Vec<&CaseSummary> = lines.iter().flat_map(|s| s.cases.clone()).collect();
    let descriptive = cases
        .iter()
        .filter_map(|c| c.ttft_ms.as_ref())
        .filter(|d| d.descriptive.iter().any(|p| p == "p99"))
        .count();
    Figure {
        title: "Latency against throughput".into(),
        svg,
        caption: format!(
            "Median (p50, solid, ●) and p99 (faint, ×) TTFT of each complete case against its \
             aggregate output throughput, one curve per input length; labels give the concurrent \
             requests. {} responses and {} rounds per point ({} cases). The p99 is descriptive \
             (fewer than 5 samples beyond it) at {descriptive} of {} points.{}",
            sizes(cases.iter().filter_map(|c| c.ttft_ms.as_ref()).map(|d| d.n)),
            sizes(
                cases
                    .iter()
                    .filter_map(|c| c.throughput_tps.as_ref())
                    .map(|t| t.n)
            ),
            cases.len(),
            cases.len(),
            left_out(summary),
        ),
    }
}

fn latency_throughput_chart(root: &Area, lines: &[Series]) -> Result<(), ChartError> {
    let points = |line: &Series| -> Vec<(u32, f64, f64, f64)> {
        line.cases
            .iter()
            .filter_map(|c| {
                let t = c.throughput_tps.as_ref()?;
                let d = c.ttft_ms.as_ref()?;
                Some((c.concurrency, t.mean, d.median, d.p99))
            })
            .collect()
    };
    let all: Vec<(u32, f64, f64, f64)> = lines.iter().flat_map(points).collect();
    let max_x = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let axis = TimeAxis::for_max_ms(all.iter().map(|p| p.3).fold(0.0, f64::max));
    let max_y = all.iter().map(|p| p.3 / axis.divisor).fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..upper(max_x), 0.0..upper(max_y))?;
    chart
        .configure_mesh()
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .x_desc("aggregate output throughput (tokens/s)")
        .y_desc(format!("TTFT ({})", axis.unit))
        .draw()?;
    for line in lines {
        let color = line.color;
        let pts = points(line);
        let p50: Vec<(f64, f64)> = pts.iter().map(|p| (p.1, p.2 / axis.divisor)).collect();
        let p99: Vec<(f64, f64)> = pts.iter().map(|p| (p.1, p.3 / axis.divisor)).collect();
        chart
            .draw_series(LineSeries::new(p50.clone(), color.stroke_width(2)))?
            .label(format!("{} p50", line.label))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(p50.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        chart
            .draw_series(LineSeries::new(
                p99.clone(),
                color.mix(0.45).stroke_width(1),
            ))?
            .label(format!("{} p99", line.label))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.mix(0.45)));
        chart.draw_series(
            p99.iter()
                .map(|&p| Cross::new(p, 4, color.mix(0.6).stroke_width(1))),
        )?;
        let label_style = TextStyle::from(("sans-serif", 12).into_font()).color(&BLACK);
        chart.draw_series(pts.iter().zip(&p50).map(|(p, &at)| {
            EmptyElement::at(at) + Text::new(format!("c{}", p.0), (5, -14), label_style.clone())
        }))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    #[test]
    fn only_complete_cases_are_plotted_per_input_length() {
        let summary = fixture::report().summary;
        let lines = series(&summary);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].label, "64 input tokens");
        assert_eq!(lines[0].cases.len(), 2);
        assert_eq!(lines[1].cases.len(), 1, "in256-c2 is incomplete");
    }

    #[test]
    fn every_chart_is_one_svg_and_names_its_samples() {
        let summary = fixture::report().summary;
        for figure in [
            latency(&summary),
            throughput(&summary),
            latency_throughput(&summary),
        ] {
            let svg = figure.svg.expect("drawn");
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            assert_eq!(svg.matches("<svg").count(), 1);
            assert!(!svg.contains("http"));
            assert!(figure.caption.contains("n = "), "{}", figure.caption);
            assert!(figure.caption.contains("1 incomplete case"));
        }
    }

    #[test]
    fn sample_sizes_read_as_a_range() {
        assert_eq!(sizes([3, 3].into_iter()), "n = 3");
        assert_eq!(sizes([2, 8, 4].into_iter()), "n = 2–8");
        assert_eq!(sizes(std::iter::empty()), "no samples");
    }
}
