//! (d) The per-request timeline of one case, from `requests.jsonl`: a Gantt bar per measured
//! request, from sent to first token (waiting and prefill, which a client cannot tell apart) and
//! from first token to the final event (decode). It shows what a median hides: requests of one
//! round queueing behind each other's prefill.

use crate::fmt::thousands;
use crate::record::{Record, Status};
use crate::report::charts::lengths::Lengths;
use crate::report::plot::{
    axes, count, empty, svg, text, text_width, tick, Area, ChartError, Figure, COLORS, WIDTH,
};
use crate::report::{Report, TIMELINE_MAX};
use crate::summary::CaseSummary;
use plotters::prelude::*;

const PREFILL: RGBColor = COLORS[1];
const DECODE: RGBColor = COLORS[0];
const FAILED: RGBColor = COLORS[3];

/// The case the timeline shows: the complete case with the most concurrent requests (the
/// largest input breaks ties), or, when none is complete, the case with the most records.
pub fn pick_case(report: &Report) -> Option<&CaseSummary> {
    let cases = &report.summary.cases;
    cases
        .iter()
        .filter(|c| c.complete)
        .max_by_key(|c| (c.concurrency, c.input_tokens))
        .or_else(|| cases.iter().max_by_key(|c| c.counts.measured()))
}

/// One bar of the chart, in seconds since the attempt started.
struct Bar {
    /// A series' repeat (0 without one): its rounds are apart from the other repeats'.
    repeat: u32,
    round: u32,
    index: u32,
    sent: f64,
    first_token: Option<f64>,
    end: f64,
    ok: bool,
}

impl Bar {
    fn of(r: &Record) -> Bar {
        Bar {
            repeat: r.repeat.unwrap_or(0),
            round: r.round.unwrap_or(0),
            index: r.index,
            sent: r.sent_s,
            first_token: r.first_token_s,
            // A request that never got a token is drawn until the client stopped waiting.
            end: r.last_seen(),
            ok: r.status == Status::Ok,
        }
    }

    fn first_token_or_end(&self) -> f64 {
        self.first_token.unwrap_or(self.end)
    }
}

/// The timeline of [`pick_case`].
pub fn timeline(report: &Report, lengths: &Lengths) -> Figure {
    let case = pick_case(report);
    let mut bars: Vec<Bar> = case
        .map(|c| {
            let measured = report.measured(&c.id).into_iter();
            measured.take(TIMELINE_MAX).map(Bar::of).collect()
        })
        .unwrap_or_default();
    // Within a round, the order of first tokens shows who waited behind whose prefill.
    bars.sort_by(|a, b| {
        (a.repeat, a.round)
            .cmp(&(b.repeat, b.round))
            .then(a.first_token_or_end().total_cmp(&b.first_token_or_end()))
            .then(a.index.cmp(&b.index))
    });
    let height =
        legend_height() + (150 + 16 * crate::num::count(bars.len()).min(100)).clamp(260, 900);
    let svg = svg((WIDTH, height), |root| {
        if bars.is_empty() {
            return empty(root, "no measured request to show");
        }
        draw(root, &bars)
    });
    let caption = match case {
        None => "No case ran.".to_owned(),
        Some(c) => {
            let (rounds, order) = if c.rounds.is_empty() {
                (String::new(), "first token")
            } else {
                (
                    format!(" in {}", count(c.rounds.len(), ("round", "rounds"))),
                    "round and first token",
                )
            };
            format!(
                "Case {} ({} input tokens, {}, {} output tokens{}): one bar per measured \
                 request, n = {}{}{rounds}, ordered by {order}. Orange: sent → first \
                 token (waiting and prefill); blue: first token → final event (decode); red: a \
                 request that did not end ok, up to its last event. Times in seconds since the \
                 attempt started.",
                c.id,
                lengths.input(&[c]),
                load(c),
                lengths.output(&[c]),
                if c.complete { "" } else { "; incomplete" },
                count(bars.len(), ("request", "requests")),
                shown_of(c, bars.len()),
            )
        }
    };
    Figure {
        title: "Per-request timeline".into(),
        svg,
        caption,
    }
}

/// The case's load in a few words: "4 concurrent requests" for closed loads, else as the
/// incomplete-case line says it ("20 requests/s", "2 sessions in parallel").
fn load(c: &CaseSummary) -> String {
    let words = super::text::load_words(c);
    match words.strip_suffix(" concurrent") {
        Some(n) => format!("{n} concurrent requests"),
        None => words,
    }
}

/// " (the first n of N)" when the case had more measured requests than the timeline shows.
fn shown_of(c: &CaseSummary, shown: usize) -> String {
    let total = c.counts.measured() as usize;
    if total > shown && shown == TIMELINE_MAX {
        format!(
            " (the first {} of {})",
            thousands(crate::num::count(shown)),
            thousands(crate::num::count(total))
        )
    } else {
        String::new()
    }
}

const LEGEND: [(&str, RGBColor); 3] = [
    ("sent → first token (waiting, prefill)", PREFILL),
    ("first token → final event (decode)", DECODE),
    ("did not end ok", FAILED),
];

/// Where each legend entry goes in the strip above the chart, `(x, y, label, colour)`: in a
/// row while they fit the canvas, then in the next row.
fn legend_places() -> Vec<(i32, i32, &'static str, RGBColor)> {
    let right = i32::try_from(WIDTH).unwrap_or(i32::MAX) - 10;
    let (mut x, mut y) = (LEGEND_LEFT, 8);
    let mut places = Vec::new();
    for (label, color) in LEGEND {
        let width = 22 + text_width(label);
        if x > LEGEND_LEFT && x + width > right {
            (x, y) = (LEGEND_LEFT, y + LEGEND_ROW);
        }
        places.push((x, y, label, color));
        x += width + 24;
    }
    places
}

const LEGEND_LEFT: i32 = 90;
const LEGEND_ROW: i32 = 26;

/// The height of the strip that holds the legend, px.
fn legend_height() -> u32 {
    let rows = legend_places().iter().map(|p| p.1).max().unwrap_or(8) + LEGEND_ROW;
    u32::try_from(rows).unwrap_or(0)
}

/// The legend in a strip above the chart, where it can hide no bar.
fn legend(strip: &Area) -> Result<(), ChartError> {
    let style = text(&BLACK);
    for (x, y, label, color) in legend_places() {
        strip.draw(&Rectangle::new(
            [(x, y + 2), (x + 16, y + 16)],
            color.filled(),
        ))?;
        strip.draw(&Text::new(label, (x + 22, y), style.clone()))?;
    }
    Ok(())
}

fn draw(root: &Area, bars: &[Bar]) -> Result<(), ChartError> {
    let (strip, root) = root.split_vertically(legend_height());
    legend(&strip)?;
    let start = bars.iter().map(|b| b.sent).fold(f64::INFINITY, f64::min);
    let end = bars.iter().map(|b| b.end).fold(f64::NEG_INFINITY, f64::max);
    let pad = ((end - start) * 0.03).max(1e-3);
    let n = bars.len();
    // Row i is drawn at y = n − 1 − i, so that the first request is at the top.
    let y = |i: usize| (n - 1 - i) as f64;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(96)
        .build_cartesian_2d((start - pad)..(end + pad), -0.6..(n as f64 - 0.4))?;
    axes(&mut chart)
        .disable_y_mesh()
        .y_labels(n.min(24))
        .y_label_formatter(&|v: &f64| {
            let row = n as f64 - 1.0 - v.round();
            match bars.get(crate::num::to_usize(row)) {
                Some(b) if (v - v.round()).abs() < 1e-9 && row >= 0.0 => {
                    let repeat = match b.repeat {
                        0 => String::new(),
                        k => format!("repeat {k} "),
                    };
                    format!("{repeat}r{} #{}", b.round, b.index)
                }
                _ => String::new(),
            }
        })
        .x_label_formatter(&tick)
        .x_desc("seconds since the attempt started")
        .y_desc("request (round #index)")
        .draw()?;
    let rect = |i: usize, from: f64, to: f64, color: RGBColor| {
        Rectangle::new([(from, y(i) - 0.35), (to, y(i) + 0.35)], color.filled())
    };
    let mut shapes = Vec::new();
    for (i, b) in bars.iter().enumerate() {
        let tail = if b.ok { DECODE } else { FAILED };
        match b.first_token {
            Some(t) => {
                shapes.push(rect(i, b.sent, t, PREFILL));
                shapes.push(rect(i, t, b.end.max(t), tail));
            }
            None => shapes.push(rect(i, b.sent, b.end, FAILED)),
        }
    }
    chart.draw_series(shapes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_busiest_complete_case_is_shown_with_one_bar_per_request() {
        let report = fixture::report();
        assert_eq!(
            pick_case(&report).map(|c| c.id.as_str()),
            Some("in64-c2-out4")
        );
        let figure = timeline(&report, &Lengths::of(&report));
        let svg = figure.svg.expect("drawn");
        // One prefill and one decode bar per request, plus a legend swatch of each colour.
        assert_eq!(svg.matches(r##"fill="#FF7F0E""##).count(), 4 + 1, "{svg}");
        assert_eq!(svg.matches(r##"fill="#1F77B4""##).count(), 4 + 1, "{svg}");
        assert_eq!(svg.matches(r##"fill="#D62728""##).count(), 1, "{svg}");
        assert!(figure.caption.contains("n = 4 requests in 2 rounds"));
    }

    #[test]
    fn an_open_loop_case_is_captioned_by_its_rate_without_rounds() {
        let mut report = fixture::report();
        let case = &mut report.summary.cases[1];
        case.rounds.clear();
        case.load = Some(Box::new(fixture::open_loop(4)));
        let caption = timeline(&report, &Lengths::of(&report)).caption;
        assert!(
            caption.contains("64 input tokens, 20 requests/s, 4 output tokens"),
            "{caption}"
        );
        assert!(caption.contains("ordered by first token") && !caption.contains("rounds"));
    }

    #[test]
    fn the_legend_wraps_into_rows_inside_the_canvas_and_no_entry_overlaps_another() {
        let places = legend_places();
        assert_eq!(places.len(), LEGEND.len());
        let right = |p: &(i32, i32, &str, RGBColor)| p.0 + 22 + text_width(p.2);
        let canvas = i32::try_from(WIDTH).expect("small");
        assert!(places.iter().all(|p| right(p) <= canvas), "{places:?}");
        for pair in places.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(b.1 > a.1 || b.0 >= right(a), "{places:?}");
        }
        assert!(places.iter().any(|p| p.1 > 8), "the entries take two rows");
    }

    #[test]
    fn a_failed_request_is_drawn_up_to_its_last_event() {
        let records = fixture::records();
        let failed = records
            .iter()
            .find(|r| r.status != Status::Ok)
            .expect("the fixture has a failure");
        let bar = Bar::of(failed);
        assert!(!bar.ok);
        assert_eq!(bar.end, failed.sent_s + 0.08);
    }

    #[test]
    fn a_request_that_never_got_a_token_is_drawn_until_it_was_given_up() {
        let mut cancelled = fixture::records()
            .into_iter()
            .find(|r| r.status != Status::Ok)
            .expect("the fixture has a failure");
        cancelled.status = Status::Cancelled;
        cancelled.event_ms.clear();
        cancelled.first_token_s = None;
        cancelled.done_s = None;
        cancelled.ended_s = Some(cancelled.sent_s + 2.5);
        let bar = Bar::of(&cancelled);
        assert_eq!(bar.first_token, None);
        assert_eq!(bar.end, cancelled.sent_s + 2.5);
        assert!(bar.first_token_or_end() > bar.sent, "not an empty row");
    }
}
