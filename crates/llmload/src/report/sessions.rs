//! Multi-turn sessions: per case, the sessions that completed and those that did not (by id),
//! the session figures, and a table by turn index (TTFT, prompt tokens, the history a cache may
//! serve and the share of the prompt it served) for `report.md`; TTFT and the cache's share by
//! turn as a chart for `report.html`.

use super::plot::{
    axes, legend, svg, tick, upper, whole, Area, ChartError, Figure, TimeAxis, COLORS, TITLE,
};
use super::table::{Cell, Table};
use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::sessions::{SessionSummary, TurnSummary};
use crate::summary::{CaseSummary, Summary};
use plotters::prelude::*;
use std::fmt::Write;

/// A median and a p90 (`–` when absent).
fn quantiles(d: Option<&Distribution>, show: fn(Option<f64>) -> String) -> (String, String) {
    (show(d.map(|d| d.median)), show(d.map(|d| d.p90)))
}

/// A token count as the table writes it.
fn tokens(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.0}"))
}

/// Seconds as the table writes them.
fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.2} s"))
}

/// The table of a case's sessions by turn index: the ok responses, TTFT, prompt tokens, the
/// history a cache may serve and the share of the prompt it served.
pub fn turns(s: &SessionSummary) -> Table {
    let mut table = Table::new([
        "Turn",
        "Responses (n)",
        "TTFT p50",
        "TTFT p90",
        "Prompt tokens p50",
        "History p50",
        "Cached / prompt",
        "Cache reports (n)",
    ]);
    for t in &s.by_turn {
        let ttft = t.ttft_ms.as_ref();
        let (ttft50, ttft90) = quantiles(ttft, seconds);
        let n = ttft.map(|d| d.n);
        table.push([
            Cell::new(t.turn.to_string()),
            Cell::count(thousands(t.n), t.n),
            Cell::figure(ttft50, n),
            Cell::figure(ttft90, n),
            median_tokens(t.prompt_tokens.as_ref()),
            median_tokens(t.history_tokens.as_ref()),
            Cell::figure(
                t.hit_rate
                    .map_or_else(|| "–".into(), |h| format!("{:.1}%", h * 100.0)),
                Some(t.cache_n as usize),
            ),
            Cell::count(thousands(t.cache_n), t.cache_n),
        ]);
    }
    table
}

/// The median of a distribution of token counts, over its n.
fn median_tokens(d: Option<&Distribution>) -> Cell {
    Cell::figure(tokens(d.map(|d| d.median)), d.map(|d| d.n))
}

/// The case's sessions in one paragraph.
pub fn overview(s: &SessionSummary) -> String {
    let mut text = format!(
        "{} sessions of {} turns started, {} complete, {} incomplete",
        thousands(s.started),
        s.turns,
        thousands(s.completed),
        thousands(s.incomplete)
    );
    if !s.incomplete_sessions.is_empty() {
        let ids: Vec<String> = s.incomplete_sessions.iter().map(u64::to_string).collect();
        let more = if (s.incomplete as usize) > ids.len() {
            ", …"
        } else {
            ""
        };
        let _ = write!(text, " (sessions {}{more})", ids.join(", "));
    }
    let (d50, d90) = quantiles(s.duration_s.as_ref(), secs);
    let (a50, a90) = quantiles(s.active_s.as_ref(), secs);
    let (p50, _) = quantiles(s.prompt_tokens.as_ref(), tokens);
    let (o50, _) = quantiles(s.output_tokens.as_ref(), tokens);
    let _ = write!(
        text,
        ". Complete sessions: duration p50 {d50}, p90 {d90} (first send → last answer, think \
         times included); active p50 {a50}, p90 {a90} (Σ of the turns' complete-response \
         times); Σ prompt tokens p50 {p50}; Σ output tokens p50 {o50}."
    );
    text
}

/// The title of the chart by turn.
pub const CHART_TITLE: &str = "Time to first token and prefix-cache hits by turn";

/// The cases that ran sessions, with them.
fn cases(summary: &Summary) -> Vec<(&CaseSummary, &SessionSummary)> {
    summary
        .cases
        .iter()
        .filter_map(|c| c.sessions.as_deref().map(|s| (c, s)))
        .collect()
}

/// The page's chart of sessions, by turn; none when no case ran any.
pub fn chart(summary: &Summary) -> Option<Figure> {
    let cases = cases(summary);
    (!cases.is_empty()).then(|| by_turn(&cases))
}

/// TTFT (median, a band up to the p90) and the cache's share of the prompt, by turn index, one
/// line per case.
fn by_turn(cases: &[(&CaseSummary, &SessionSummary)]) -> Figure {
    let svg = svg((960, 400), |root| {
        let panels = root.split_evenly((1, 2));
        ttft_panel(&panels[0], cases)?;
        hit_panel(&panels[1], cases)
    });
    let n: Vec<String> = cases
        .iter()
        .map(|(c, s)| {
            let per_turn: Vec<String> = s.by_turn.iter().map(|t| t.n.to_string()).collect();
            format!("{}: {}", c.id, per_turn.join(", "))
        })
        .collect();
    Figure {
        title: CHART_TITLE.into(),
        svg,
        caption: format!(
            "Left: median TTFT of each turn index over its ok responses, the band up to the p90, marked ×. \
             Right: Σ cached ÷ Σ prompt tokens of each turn, from the server's counters. \
             Responses per turn: {}.",
            n.join("; ")
        ),
    }
}

type TurnChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A panel with turns 1 to the most any case had along x.
fn turn_chart<'a, 'b>(
    area: &'a Area<'b>,
    cases: &[(&CaseSummary, &SessionSummary)],
    title: &str,
    y_max: f64,
    y_desc: &str,
) -> Result<TurnChart<'a, 'b>, ChartError> {
    let turns = cases.iter().map(|(_, s)| s.turns).max().unwrap_or(1);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", TITLE))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.5..f64::from(turns) + 0.5, 0.0..y_max)?;
    axes(&mut chart)
        .x_label_formatter(&whole)
        .y_label_formatter(&tick)
        .x_desc("turn")
        .y_desc(y_desc)
        .draw()?;
    Ok(chart)
}

fn ttft_panel(area: &Area, cases: &[(&CaseSummary, &SessionSummary)]) -> Result<(), ChartError> {
    let p90 = |t: &TurnSummary| t.ttft_ms.as_ref().map(|d| d.p90);
    let max_ms = cases
        .iter()
        .flat_map(|(_, s)| s.by_turn.iter().filter_map(p90))
        .fold(0.0, f64::max);
    let axis = TimeAxis::for_max_ms(max_ms);
    let mut chart = turn_chart(
        area,
        cases,
        "Time to first token",
        upper(max_ms / axis.divisor),
        &format!("TTFT ({})", axis.unit),
    )?;
    for (i, (case, s)) in cases.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64, f64)> = s
            .by_turn
            .iter()
            .filter_map(|t| {
                let d = t.ttft_ms.as_ref()?;
                Some((
                    f64::from(t.turn),
                    d.median / axis.divisor,
                    d.p90 / axis.divisor,
                ))
            })
            .collect();
        super::charts::median_and_band(&mut chart, &case.id, color, &points)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

fn hit_panel(area: &Area, cases: &[(&CaseSummary, &SessionSummary)]) -> Result<(), ChartError> {
    let mut chart = turn_chart(
        area,
        cases,
        "Prefix-cache hits",
        100.0,
        "cached / prompt (%)",
    )?;
    for (i, (_, s)) in cases.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = s
            .by_turn
            .iter()
            .filter_map(|t| Some((f64::from(t.turn), t.hit_rate? * 100.0)))
            .collect();
        chart.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}
