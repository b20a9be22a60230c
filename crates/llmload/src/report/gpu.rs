//! (e) GPU telemetry over time, from `telemetry.jsonl`: temperature (top) and power draw
//! (bottom) of each GPU against seconds since the attempt started, the guard's stop temperature
//! as a dashed line, and the moment the run stopped as a red vertical line with the rule that
//! fired. Long runs are thinned to at most [`MAX_POINTS`] per GPU, each point the highest
//! reading of its stretch, so that no peak disappears.

use crate::record::Seconds;
use crate::report::plot::{
    axes, count, empty, legend, svg, text, text_width, tick, upper, Area, ChartError, Figure,
    COLORS, TITLE as HEADING, WIDTH,
};
use crate::report::Report;
use crate::summary::OutcomeStatus;
use crate::telemetry::Reading;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// Most points drawn per GPU and quantity.
pub const MAX_POINTS: usize = 1500;

const STOP: RGBColor = RGBColor(214, 39, 40);

/// When the run stopped and by which rule, if it was stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    /// Seconds since the attempt started.
    pub t_s: Seconds,
    /// The rule that fired, e.g. `temperature`.
    pub rule: String,
}

/// The stop of `report`'s outcome: at the triggering reading when there is one, else at the
/// last request activity.
pub fn stop(report: &Report) -> Option<Stop> {
    let o = &report.summary.outcome;
    if o.status != OutcomeStatus::Stopped {
        return None;
    }
    let rule = o
        .reason
        .as_deref()
        .and_then(|r| match r.strip_prefix("stopped by the ") {
            Some(rule) => rule.split(" rule").next(),
            // A stop signal, said plainly ("stopped by SIGINT (Ctrl-C)").
            None => r.starts_with("stopped by SIG").then_some("interrupted"),
        })
        .unwrap_or("guard")
        .to_owned();
    let at_sample = o
        .stop_sample
        .as_ref()
        .and_then(|s| s["t_s"].as_f64())
        .filter(|_| matches!(rule.as_str(), "temperature" | "margin"));
    Some(Stop {
        t_s: at_sample.or(report.last_activity_s)?,
        rule,
    })
}

/// `(t, value)` of each GPU, thinned to at most `MAX_POINTS` by keeping each stretch's highest.
fn by_gpu(
    readings: &[Reading],
    value: fn(&Reading) -> Option<f64>,
) -> BTreeMap<u32, Vec<(f64, f64)>> {
    let mut out: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for r in readings {
        if let Some(v) = value(r) {
            out.entry(r.gpu).or_default().push((r.t_s, v));
        }
    }
    for points in out.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let stretch = points.len().div_ceil(MAX_POINTS);
        if stretch > 1 {
            *points = points
                .chunks(stretch)
                .filter_map(|c| c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)))
                .collect();
        }
    }
    out
}

/// The telemetry chart of `report`; none without readings ([`absent`] says why instead).
pub fn telemetry(report: &Report) -> Option<Figure> {
    let readings = &report.telemetry;
    if readings.is_empty() {
        return None;
    }
    let stop = stop(report);
    let temperature = by_gpu(readings, |r| Some(r.temperature_c));
    let power = by_gpu(readings, |r| r.power_w);
    let svg = svg((WIDTH, 620), |root| {
        let end = readings
            .iter()
            .map(|r| r.t_s)
            .chain(stop.as_ref().map(|s| s.t_s))
            .fold(0.0, f64::max);
        let panels = root.split_evenly((2, 1));
        let threshold = report.limits.stop_temp_c;
        let panel = Panel {
            end,
            stop: stop.as_ref(),
            threshold,
        };
        panel.draw(&panels[0], "Temperature (°C)", &temperature)?;
        if power.is_empty() {
            return empty(&panels[1], "power draw not reported");
        }
        Panel {
            threshold: None,
            ..panel
        }
        .draw(&panels[1], "Power draw (W)", &power)
    });
    let threshold_text = report.limits.stop_temp_c.map_or(String::new(), |t| {
        format!(
            " The dashed line is the harness's stop temperature ({} °C), a threshold of this \
                 tool, not a hardware protection.",
            tick(&t)
        )
    });
    Some(Figure {
        title: TITLE.into(),
        svg,
        caption: format!(
            "Temperature (top) and power draw (bottom) of each GPU against seconds since the \
             attempt started: {} of {}.{threshold_text}{}",
            count(readings.len(), ("reading", "readings")),
            count(temperature.len(), ("GPU", "GPUs")),
            stop_sentence(stop.as_ref()),
        ),
    })
}

/// The heading of the telemetry chart.
pub const TITLE: &str = "GPU telemetry over time";

/// Where there are no GPU readings, the one line said instead of the chart: that there was no
/// telemetry, and why where the summary says.
pub fn absent(report: &Report) -> Option<String> {
    if !report.telemetry.is_empty() {
        return None;
    }
    let why = match report.summary.telemetry.as_ref().map(|t| t.source.as_str()) {
        None => String::new(),
        Some("off") => ": telemetry was off (--telemetry off)".into(),
        Some("none available") => {
            ": no GPU source answered (neither NVML nor nvidia-smi was available)".into()
        }
        Some(source) => format!(": the source {source} gave no readings"),
    };
    let stopped = stop(report).map_or(String::new(), |s| {
        format!(
            " The run was stopped by the {} rule at {} s.",
            s.rule,
            tick(&s.t_s)
        )
    });
    Some(format!("No GPU telemetry{why}.{stopped}"))
}

/// Whether and where the run was stopped, as the chart's caption says it.
fn stop_sentence(stop: Option<&Stop>) -> String {
    match stop {
        Some(s) => format!(
            " The red line marks where the run stopped ({} rule) at {} s.",
            s.rule,
            tick(&s.t_s)
        ),
        None => " The run was not stopped.".into(),
    }
}

/// What every panel of the chart shares.
#[derive(Clone, Copy)]
struct Panel<'a> {
    end: Seconds,
    stop: Option<&'a Stop>,
    threshold: Option<f64>,
}

impl Panel<'_> {
    fn draw(
        &self,
        area: &Area,
        title: &str,
        lines: &BTreeMap<u32, Vec<(f64, f64)>>,
    ) -> Result<(), ChartError> {
        let values = lines.values().flatten().map(|p| p.1);
        let max = values
            .clone()
            .chain(self.threshold)
            .fold(f64::NEG_INFINITY, f64::max);
        let min = values.chain(self.threshold).fold(f64::INFINITY, f64::min);
        let (low, high) = (
            (min - 0.1 * (max - min).max(5.0)).floor().max(0.0),
            upper(max).max(max + 2.0),
        );
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", HEADING))
            .margin(10)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..upper(self.end), low..high)?;
        axes(&mut chart)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc("seconds since the attempt started")
            .y_desc(title)
            .draw()?;
        for (i, (gpu, points)) in lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(format!("GPU {gpu}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        if let Some(t) = self.threshold {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, t), (upper(self.end), t)],
                    6,
                    4,
                    STOP.mix(0.6).stroke_width(1),
                ))?
                .label(format!("stop threshold {} °C", tick(&t)))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], STOP.mix(0.6)));
        }
        if let Some(stop) = self.stop {
            stop_line(&mut chart, stop, low, high)?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}

/// The red vertical line at the stop, labelled with its rule.
fn stop_line(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    stop: &Stop,
    low: f64,
    high: f64,
) -> Result<(), ChartError> {
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(stop.t_s, low), (stop.t_s, high)],
        STOP.stroke_width(2),
    )))?;
    let label = format!("guard stop: {} rule, {} s", stop.rule, tick(&stop.t_s));
    let style = text(&STOP);
    let width = text_width(&label);
    chart.draw_series(std::iter::once(
        EmptyElement::at((stop.t_s, high)) + Text::new(label, (-width - 6, 4), style),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_guard_stop_is_at_its_sample_and_named_by_its_rule() {
        let report = fixture::sweep_report();
        let stop = stop(&report).expect("stopped");
        assert_eq!(
            stop,
            Stop {
                t_s: 1.5,
                rule: "temperature".into()
            }
        );
        assert_eq!(
            super::stop(&fixture::report()),
            None,
            "the fixture was not stopped"
        );
        let figure = telemetry(&report).expect("readings");
        let svg = figure.svg.expect("drawn");
        assert!(
            svg.contains("guard stop: temperature rule, 1.5 s"),
            "the stop is labelled"
        );
        assert!(svg.contains("GPU 0") && svg.contains("GPU 1"));
        assert!(svg.contains("stop threshold 90 °C"));
        assert!(
            figure.caption.contains("14 readings of 2 GPUs"),
            "{}",
            figure.caption
        );
        assert!(
            figure.caption.contains("(temperature rule) at 1.5 s"),
            "{}",
            figure.caption
        );
    }

    #[test]
    fn no_readings_give_one_line_that_says_why_instead_of_a_chart() {
        let mut report = fixture::report();
        assert!(telemetry(&report).is_none());
        report.summary.telemetry = Some(crate::telemetry::TelemetrySummary {
            source: "none available".into(),
            ..Default::default()
        });
        assert_eq!(
            absent(&report).as_deref(),
            Some(
                "No GPU telemetry: no GPU source answered (neither NVML nor nvidia-smi was \
                 available)."
            )
        );
        report.summary.telemetry = None;
        assert_eq!(absent(&report).as_deref(), Some("No GPU telemetry."));
        assert_eq!(absent(&fixture::sweep_report()), None, "it has readings");
    }

    #[test]
    fn long_runs_are_thinned_keeping_every_peak() {
        let readings: Vec<Reading> = (0..4000u32)
            .map(|i| Reading {
                t_s: f64::from(i),
                gpu: 0,
                temperature_c: if i == 2999 { 95.0 } else { 60.0 },
                ..fixture::reading()
            })
            .collect();
        let lines = by_gpu(&readings, |r| Some(r.temperature_c));
        assert!(lines[&0].len() <= MAX_POINTS);
        assert!(lines[&0].iter().any(|p| p.1 == 95.0), "the peak survives");
    }
}
