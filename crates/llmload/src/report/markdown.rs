//! `report.md`, and what the terminal prints of a run where stdout is no terminal: the page
//! ([`super::page`]) written as Markdown, a `##` heading per section, every string escaped
//! ([`super::markup::markdown`]); a chart is a line that says it is in `report.html`. This file
//! only writes blocks.

use super::markup::markdown as escape;
use super::page::{chart_line, Block, Section};
use super::Report;
use crate::summary::Summary;
use std::fmt::Write;

/// The report of `summary` in Markdown.
pub fn render(summary: &Summary) -> String {
    let report = Report::of(summary);
    let sections = super::sections(&report);
    write(&sections)
}

/// `sections` in Markdown, under the report's title.
pub fn write(sections: &[Section<'_>]) -> String {
    let mut out = String::from("# llmload report\n");
    for section in sections {
        let _ = write!(out, "\n## {}\n", escape(&section.heading));
        for block in &section.blocks {
            out.push('\n');
            write_block(&mut out, block);
        }
    }
    out
}

/// One block, and the line break after it.
fn write_block(out: &mut String, block: &Block<'_>) {
    match block {
        Block::Heading(text) => {
            let _ = writeln!(out, "### {}", escape(text));
        }
        Block::Table(table) => out.push_str(&table.markdown()),
        Block::Paragraph(text) | Block::Note(text) | Block::Absent { text, .. } => {
            let _ = writeln!(out, "{}", escape(text));
        }
        Block::List(items) => {
            for item in items {
                let _ = writeln!(out, "- {}", escape(item));
            }
        }
        Block::Banner { text, .. } => {
            let _ = writeln!(out, "**{}**", escape(text));
        }
        Block::Chart(chart) => {
            let _ = writeln!(out, "{}", escape(&chart_line(chart)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fmt::seconds;

    #[test]
    fn histogram_percentiles_are_named_with_their_error() {
        let mut summary = crate::fixture::report().summary;
        assert!(!render(&summary).contains("Percentiles read from a histogram"));
        let case = &mut summary.cases[0];
        let itl = case.itl_ms.as_mut().expect("the fixture has ITL");
        itl.n = 250_000;
        itl.relative_error = Some(0.001);
        let id = case.id.clone();
        let text = render(&summary);
        assert!(
            text.contains(&format!(
                "Percentiles read from a histogram (more than 100,000 samples; each within 0.1 % \
                 of the exact value; n, mean, min and max exact): {id}: ITL (n = 250000)."
            )),
            "{text}"
        );
    }

    #[test]
    fn numbers_read_like_the_reference_table() {
        use crate::fmt::thousands;
        assert_eq!(thousands(8192_u32), "8,192");
        assert_eq!(thousands(512_u32), "512");
        assert_eq!(thousands(1_000_000_u32), "1,000,000");
        assert_eq!(seconds(Some(190.4)), "0.19 s");
        assert_eq!(seconds(Some(12.34)), "12.3 ms");
        assert_eq!(seconds(None), "–");
    }

    #[test]
    fn the_section_lists_turns_and_incomplete_sessions() {
        let mut summary = crate::fixture::report().summary;
        assert!(!render(&summary).contains("Multi-turn sessions"));
        let one = |v: f64| crate::stats::Distribution::from_samples(&mut [v]);
        summary.cases[0].sessions = Some(Box::new(crate::summary::sessions::SessionSummary {
            turns: 2,
            rate_rps: None,
            started: 3,
            completed: 2,
            incomplete: 1,
            incomplete_sessions: vec![7],
            duration_s: one(3.5),
            active_s: one(1.25),
            prompt_tokens: one(300.0),
            output_tokens: one(16.0),
            graph: None,
            by_turn: vec![crate::summary::sessions::TurnSummary {
                turn: 2,
                n: 2,
                ttft_ms: one(40.0),
                prompt_tokens: one(200.0),
                history_tokens: one(150.0),
                cache_n: 2,
                cached_tokens: 240,
                hit_rate: Some(0.6),
            }],
        }));
        let text = render(&summary);
        assert!(
            text.contains("3 sessions of 2 turns started, 2 complete, 1 incomplete (sessions 7)"),
            "{text}"
        );
        assert!(text.contains("duration p50 3.50 s"), "{text}");
        assert!(
            text.contains("| 2 | 2 | 40.0 ms | 40.0 ms | 200 | 150 | 60.0% | 2 |"),
            "{text}"
        );
    }

    #[test]
    fn no_complete_case_is_one_line_that_says_where_the_failures_are() {
        let mut summary = crate::fixture::report().summary;
        for case in &mut summary.cases {
            case.complete = false;
        }
        summary.cases[1].first_error = Some("http 500: boom".into());
        let text = render(&summary);
        assert!(!text.contains("| Input tokens per request"), "{text}");
        assert!(!text.contains("|---|".repeat(3).as_str()), "{text}");
        assert!(
            text.contains(
                "No case completed (0 of 4): each case and its failures are listed under \
                 \"Incomplete cases\" below, every request in requests.jsonl; first failure: \
                 http 500: boom\n"
            ),
            "{text}"
        );
        assert!(text.contains("\n## Incomplete cases\n"));
        let quiet = crate::report::terminal::results(&summary, 100);
        assert!(
            quiet.contains("No case completed (0 of 4)") && quiet.contains("Incomplete cases\n"),
            "{quiet}"
        );
    }

    #[test]
    fn the_results_note_names_itl_and_tpot_and_the_cases_without_itl() {
        let mut summary = crate::fixture::report().summary;
        let text = render(&summary);
        assert!(text.contains("\n### Distributions\n"), "{text}");
        assert!(
            text.contains("ITL: inter-token latency, the gaps between a response's tokens"),
            "{text}"
        );
        assert!(text.contains("(descriptive)"), "{text}");
        assert!(!text.contains("No ITL"), "{text}");
        summary.cases[0].itl_ms = None;
        let id = summary.cases[0].id.clone();
        let text = render(&summary);
        assert!(
            text.contains(&format!(
                "No ITL (–) for {id}: their records hold no per-token gaps; TPOT is the per-token \
                 figure."
            )),
            "{text}"
        );
    }

    #[test]
    fn a_summary_without_energy_has_no_section() {
        let summary = crate::fixture::report().summary;
        assert!(summary.cases.iter().all(|c| c.energy.is_none()));
        assert!(!render(&summary).contains("## Energy"));
    }

    #[test]
    fn the_server_s_own_account_is_a_row_per_case_whose_server_gave_one() {
        use crate::record::TimingSource;
        use crate::summary::server_side::ServerSideSummary;
        let mut summary = crate::fixture::report().summary;
        assert!(
            !render(&summary).contains("## The server's own account"),
            "no server timings, no section"
        );
        let one = |v: f64| crate::stats::Distribution::from_samples(&mut [v]);
        summary.cases[0].server = Some(Box::new(ServerSideSummary {
            responses: 3,
            sources: vec![TimingSource::Vllm],
            ttft_exceeds_client: 1,
            queue_ms: one(0.5),
            prefill_ms: one(20.0),
            ttft_ms: one(20.5),
            decode_ms: one(100.0),
            delivery_ms: one(4.0),
            ttft_parts: Some(crate::summary::server_side::TtftParts::example()),
            speculative: None,
            pace: Some(crate::summary::pace::Pace {
                prefill_ms_per_token: one(0.3125),
                decode_ms_per_token: None,
            }),
        }));
        let text = render(&summary);
        let at = text
            .find("## The server's own account")
            .expect("the section");
        let text = &text[at..];
        let text = &text[..text[3..].find("\n## ").map_or(text.len(), |end| end + 3)];
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 4, "two tables of a header and one case: {text}");
        let parts: Vec<&str> = rows[3].split(" | ").collect();
        assert_eq!(parts.len(), 7, "{text}");
        assert_eq!((parts[3], parts[5]), ("–", "4.5 ms"), "{text}");
        assert!(text.contains("Unavailable: "), "{text}");
        let cells: Vec<&str> = rows[1].split(" | ").collect();
        assert_eq!(cells.len(), 11, "{text}");
        assert_eq!(cells[2], "vllm per-request metrics", "{text}");
        assert!(cells[8].starts_with('1'), "the flagged response: {text}");
        // The server's pace: prefill per prompt token known, decode not.
        assert_eq!((cells[9], cells[10]), ("0.312 ms", "– |"), "{text}");
    }

    #[test]
    fn without_phases_there_is_no_section() {
        let mut summary = crate::fixture::report().summary;
        for case in &mut summary.cases {
            case.phases = None;
        }
        assert!(!render(&summary).contains("## Where the time goes"));
    }
}
