//! The page's charts: latency and throughput against the load, latency against throughput (for
//! generation cases), the per-request timeline, and the GPU's telemetry or why there is none.

use super::charts::lengths::Lengths;
use super::page::{Block, Chart, Section};
use super::plot::Figure;
use super::{charts, gpu, timeline, Report};
use crate::summary::CaseSummary;

/// A chart of `title` that `draw` draws.
fn chart<'a>(title: String, draw: impl Fn() -> Option<Figure> + 'a) -> Block<'a> {
    Block::Chart(Chart {
        id: None,
        title,
        draw: Box::new(draw),
    })
}

/// The charts section; every attempt has one.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let summary = &report.summary;
    if summary.ab.is_some() && summary.cases.is_empty() {
        // `llmload ab`: each arm's charts are in its own attempt's report.html.
        return None;
    }
    let mut section = Section::new("charts", "Charts");
    let sessions_only =
        !summary.cases.is_empty() && summary.cases.iter().all(|c| c.sessions.is_some());
    if sessions_only {
        section.note(
            "The latency and throughput charts plot closed rounds and open loops against their \
             load; this attempt's cases ran multi-turn sessions, whose chart by turn is in the \
             results.",
        );
    } else if summary.cases.is_empty() || summary.cases.iter().any(CaseSummary::generates) {
        let load = charts::load_name(summary, &Lengths::default());
        section.push(chart(format!("Latency against {load}"), move || {
            Some(charts::latency(&report.summary, &Lengths::of(report)))
        }));
        section.push(chart(
            format!("Aggregate throughput against {load}"),
            move || Some(charts::throughput(&report.summary, &Lengths::of(report))),
        ));
        section.push(chart("Latency against throughput".into(), move || {
            Some(charts::latency_throughput(
                &report.summary,
                &Lengths::of(report),
            ))
        }));
    } else {
        section.push(Block::Absent {
            id: "no-generation-charts",
            text: "The latency and throughput charts plot generation cases (TTFT, output \
                   tokens); this attempt's cases are embeddings or rerank, whose figures are in \
                   their table."
                .into(),
        });
    }
    section.push(chart("Per-request timeline".into(), move || {
        Some(timeline::timeline(report, &Lengths::of(report)))
    }));
    // The summary says whether there were readings; `report.md` is written without them.
    let readings =
        !report.telemetry.is_empty() || summary.telemetry.as_ref().is_some_and(|t| t.readings > 0);
    match gpu::absent(report).filter(|_| !readings) {
        None => section.push(chart(gpu::TITLE.into(), move || gpu::telemetry(report))),
        Some(why) => {
            section.push(Block::Heading(gpu::TITLE.into()));
            section.push(Block::Absent {
                id: "no-telemetry",
                text: why,
            });
        }
    }
    Some(section)
}
