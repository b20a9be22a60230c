//! The report's charts over cases, drawn by plotters into SVG strings that `report.html` inlines:
//! latency against load, throughput against load, and the latency–throughput curve, with a
//! sweep's `C_sat` and recommended cap marked. The load is the concurrency, or the arrival rate
//! of open-loop cases. Only complete cases are plotted, as in the reference table; each chart comes
//! with a caption that says what was plotted and from how many samples.

use crate::report::marks::{self, Marks};
use crate::report::plot::{
    axes, count, empty, legend, svg, text, tick, upper, Area, ChartError, Figure, TimeAxis, TITLE,
    WIDTH,
};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};
use captions::{left_out, POINT};
use lengths::Lengths;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
pub use series::load_name;
use series::{load_axis, load_label, load_of, load_range, load_word, series, Series};
use std::fmt::Write;

type Metric = fn(&CaseSummary) -> Option<&Distribution>;

/// (a) Median TTFT and median complete-response time against concurrency, with p95 bands.
pub fn latency(summary: &Summary, lengths: &Lengths) -> Figure {
    let lines = series(summary, lengths);
    let svg = svg((WIDTH, 440), |root| {
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
        title: format!("Latency against {}", load_word(&lines)),
        svg,
        caption: format!(
            "Median TTFT (left) and median complete-response time (right) of each complete case \
             against its load, one line per input length; the shaded band reaches \
             up to the p95, marked ×; a capped bar is the median's {} confidence interval, where \
             it has one. Per point: {}. The p95 is descriptive \
             (fewer than 5 samples beyond it) at {descriptive} of {}.{}",
            captions::level(),
            captions::responses(&cases),
            count(cases.len(), POINT),
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
        .caption(title, ("sans-serif", TITLE))
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d(load_range(lines), 0.0..upper(max_ms / axis.divisor))?;
    axes(&mut chart)
        .x_label_formatter(&load_label(lines))
        .y_label_formatter(&tick)
        .x_desc(load_axis(lines))
        .y_desc(format!("{title} ({})", axis.unit))
        .draw()?;
    for line in lines {
        let points: Vec<(f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                metric(c).map(|d| {
                    let x = load_of(c);
                    (x, d.median / axis.divisor, d.p95 / axis.divisor)
                })
            })
            .collect();
        median_and_band(&mut chart, &line.label, line.color, &points)?;
        let bars: Vec<(f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                let i = metric(c)?.ci.as_ref()?.median?;
                Some((load_of(c), i.low / axis.divisor, i.high / axis.divisor))
            })
            .collect();
        error_bars(&mut chart, line.color, &bars)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// Confidence intervals as vertical bars with end caps, at each (x, low, high).
pub(crate) fn error_bars(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    color: RGBColor,
    bars: &[(f64, f64, f64)],
) -> Result<(), ChartError> {
    let style = color.stroke_width(2);
    chart.draw_series(
        bars.iter()
            .map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], style)),
    )?;
    for &(x, lo, hi) in bars {
        for y in [lo, hi] {
            chart.draw_series(std::iter::once(
                EmptyElement::at((x, y)) + PathElement::new(vec![(-5, 0), (5, 0)], style),
            ))?;
        }
    }
    Ok(())
}

/// One line of a latency panel: at each (x, median, upper), the median, a band up to the upper
/// percentile, and × at it.
pub(crate) fn median_and_band(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    label: &str,
    color: RGBColor,
    points: &[(f64, f64, f64)],
) -> Result<(), ChartError> {
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
        .label(label)
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
pub fn throughput(summary: &Summary, lengths: &Lengths) -> Figure {
    let lines = series(summary, lengths);
    let marks = Marks::of(summary);
    let svg = svg((WIDTH, 460), |root| {
        if lines.is_empty() {
            return empty(root, "no complete case to plot");
        }
        throughput_chart(root, &lines, marks.as_ref())
    });
    let cases: Vec<&CaseSummary> = lines.iter().flat_map(|s| s.cases.clone()).collect();
    Figure {
        title: format!("Aggregate throughput against {}", load_word(&lines)),
        svg,
        caption: format!(
            "Aggregate output throughput of each complete case ({}) against its load, one line \
             per input length; {}a capped bar is the {} confidence interval of the {}, where \
             there is one. Per point: {}.{}{}",
            captions::throughput_method(&cases),
            if cases.iter().any(|c| c.is_rounds()) {
                "a thin bar spans the rounds' range and "
            } else {
                ""
            },
            captions::level(),
            if cases.iter().all(|c| c.is_rounds()) {
                "mean over the rounds"
            } else if cases.iter().any(|c| c.is_rounds()) {
                "figure (over the rounds, or the window's blocks of time)"
            } else {
                "figure over the window's blocks of time"
            },
            captions::throughput_samples(&cases),
            marks.map_or(String::new(), |m| m.caption()),
            left_out(summary),
        ),
    }
}

fn throughput_chart(
    root: &Area,
    lines: &[Series],
    marks: Option<&Marks>,
) -> Result<(), ChartError> {
    let max = lines
        .iter()
        .flat_map(|s| &s.cases)
        .filter_map(|c| c.throughput_tps.as_ref())
        .map(|t| t.max)
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(80)
        .build_cartesian_2d(load_range(lines), 0.0..upper(max))?;
    axes(&mut chart)
        .x_label_formatter(&load_label(lines))
        .y_label_formatter(&tick)
        .x_desc(load_axis(lines))
        .y_desc("output tokens/s")
        .draw()?;
    // Marks first, so that the measured curve is drawn over them.
    if let Some(m) = marks {
        let top = upper(max);
        if let Some(c) = m.saturation {
            let label = format!("C_sat = {}", m.load(c));
            marks::vertical(&mut chart, c, top, &label, marks::SATURATION)?;
        }
        if let Some(cap) = m.cap {
            let label = format!("cap = {}", m.load(cap));
            marks::vertical(&mut chart, cap, top * 0.93, &label, marks::CAP)?;
        }
    }
    for line in lines {
        let color = line.color;
        let points: Vec<(f64, f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                let t = c.throughput_tps.as_ref()?;
                Some((load_of(c), t.mean, t.min, t.max))
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
        let bars: Vec<(f64, f64, f64)> = line
            .cases
            .iter()
            .filter_map(|c| {
                let i = c.throughput_tps.as_ref()?.ci.as_ref()?.interval?;
                Some((load_of(c), i.low, i.high))
            })
            .collect();
        error_bars(&mut chart, color, &bars)?;
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

/// (c) Latency against throughput: p50 and p99 TTFT of each complete case against its
/// aggregate throughput, one curve per input length, each point labelled with its concurrency.
pub fn latency_throughput(summary: &Summary, lengths: &Lengths) -> Figure {
    let lines = series(summary, lengths);
    let marks = Marks::of(summary);
    let svg = svg((WIDTH, 500), |root| {
        if lines.is_empty() {
            return empty(root, "no complete case to plot");
        }
        latency_throughput_chart(root, &lines, marks.as_ref())
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
             aggregate output throughput, one curve per input length; labels give the load \
             (c4: 4 concurrent requests; 2/s: 2 arrivals per second). Per point, TTFT: {}; throughput: {}. \
             The p99 is descriptive (fewer than 5 samples beyond it) at {descriptive} of {}.{}{}",
            captions::responses(&cases),
            captions::throughput_samples(&cases),
            count(cases.len(), POINT),
            marks.map_or(String::new(), |m| curve_caption(&m, &cases)),
            left_out(summary),
        ),
    }
}

/// The caption's sentence about the marks on the latency–throughput curve, where a load is
/// marked at its measured point (a cap that was not measured has none).
fn curve_caption(m: &Marks, cases: &[&CaseSummary]) -> String {
    let measured = |load: f64| {
        cases
            .iter()
            .any(|c| crate::num::same_load(load_of(c), load))
    };
    let mut text = m
        .caption()
        .replace("Dashed lines:", "Dashed lines at the throughput of")
        .replace("Dashed line:", "Dashed line at the throughput of");
    if let Some(cap) = m.cap.filter(|&cap| !measured(cap)) {
        let _ = write!(
            text,
            " The recommended cap ({}) was not measured, so it has no point on this curve.",
            m.load(cap)
        );
    }
    text
}

/// (load, throughput, TTFT p50, TTFT p99) of a line's cases.
type CurvePoint = (f64, f64, f64, f64);

fn latency_throughput_chart(
    root: &Area,
    lines: &[Series],
    marks: Option<&Marks>,
) -> Result<(), ChartError> {
    let points = |line: &Series| -> Vec<CurvePoint> {
        line.cases
            .iter()
            .filter_map(|c| {
                let t = c.throughput_tps.as_ref()?;
                let d = c.ttft_ms.as_ref()?;
                Some((load_of(c), t.mean, d.median, d.p99))
            })
            .collect()
    };
    let all: Vec<CurvePoint> = lines.iter().flat_map(points).collect();
    let max_x = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let axis = TimeAxis::for_max_ms(all.iter().map(|p| p.3).fold(0.0, f64::max));
    let max_y = all.iter().map(|p| p.3 / axis.divisor).fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..upper(max_x), 0.0..upper(max_y))?;
    axes(&mut chart)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .x_desc("aggregate output throughput (tokens/s)")
        .y_desc(format!("TTFT ({})", axis.unit))
        .draw()?;
    // Marks first, so that the measured curve is drawn over them.
    if let Some(m) = marks {
        let top = upper(max_y);
        let at = |load: f64| {
            all.iter()
                .find(|p| crate::num::same_load(p.0, load))
                .map(|p| p.1)
        };
        if let Some((c, x)) = m.saturation.and_then(|c| Some((c, at(c)?))) {
            let label = format!("C_sat = {}", m.load(c));
            marks::vertical(&mut chart, x, top, &label, marks::SATURATION)?;
        }
        if let Some((cap, x)) = m.cap.and_then(|cap| Some((cap, at(cap)?))) {
            let label = format!("cap = {}", m.load(cap));
            marks::vertical(&mut chart, x, top * 0.93, &label, marks::CAP)?;
        }
    }
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
        let label_style = text(&BLACK);
        chart.draw_series(pts.iter().zip(&p50).map(|(p, &at)| {
            let label = if line.rate {
                format!("{}/s", tick(&p.0))
            } else {
                format!("c{}", p.0)
            };
            EmptyElement::at(at) + Text::new(label, (6, -20), label_style.clone())
        }))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

mod captions;
pub mod lengths;
mod series;
#[cfg(test)]
mod tests;
