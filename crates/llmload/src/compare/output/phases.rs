//! The phases section of `llmload compare`: for every case any attempt ran, each attempt's own
//! medians of a new connection's setup, the response head and the first event, and the share of
//! its responses that went on a kept-alive connection. As in the results table, figures are
//! never pooled and an incomplete case gets none.

use super::{cell, letter};
use crate::compare::identity::CaseKey;
use crate::report::phases::ms;
use crate::summary::CaseSummary;
use std::fmt::Write;

/// The section, or nothing when no attempt's records carry phases.
pub(super) fn render(out: &mut String, rows: &[(CaseKey, Vec<Option<&CaseSummary>>)]) {
    let any = rows
        .iter()
        .flat_map(|(_, cases)| cases.iter().flatten())
        .any(|c| c.phases.is_some());
    if !any {
        return;
    }
    out.push_str(
        "\nWhere the time goes (medians over each attempt's ok responses; connect over those on \
         a new connection, before the send and not part of TTFT; head and first event from the \
         send):\n\n\
         | Case | Attempt | Responses (n) | Kept-alive share | Connect | Response head | \
         First event |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (_, cases) in rows {
        // The case's id in the first attempt that ran it (the key is the same on every side).
        let id = cases.iter().flatten().next().map_or("", |c| c.id.as_str());
        for (i, case) in cases.iter().enumerate() {
            let _ = writeln!(out, "| {} | {} | {} |", cell(id), letter(i), cells(*case));
        }
    }
}

fn cells(case: Option<&CaseSummary>) -> String {
    match case {
        None => "not in this attempt | | | | |".into(),
        Some(c) if !c.complete => "incomplete | | | | |".into(),
        Some(c) => match &c.phases {
            None => "no phases recorded | | | | |".into(),
            Some(p) => {
                let median =
                    |d: &Option<crate::stats::Distribution>| ms(d.as_ref().map(|d| d.median));
                format!(
                    "{} | {} | {} | {} | {}",
                    p.responses,
                    p.reused_share()
                        .map_or("–".into(), |s| format!("{:.0} %", s * 100.0)),
                    median(&p.connect_ms),
                    median(&p.head_ms),
                    median(&p.first_event_ms),
                )
            }
        },
    }
}

/// One attempt's phase figures of a case in the JSON: `null` without phases.
pub(super) fn to_json(case: &CaseSummary) -> serde_json::Value {
    let Some(p) = &case.phases else {
        return serde_json::Value::Null;
    };
    let median = |d: &Option<crate::stats::Distribution>| d.as_ref().map(|d| d.median);
    serde_json::json!({
        "responses": p.responses,
        "new_connections": p.new_connections,
        "reused_connections": p.reused_connections,
        "reused_share": p.reused_share(),
        "connect_median_ms": median(&p.connect_ms),
        "head_median_ms": median(&p.head_ms),
        "first_event_median_ms": median(&p.first_event_ms),
    })
}
