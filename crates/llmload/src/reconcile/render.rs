//! `llmload reconcile`'s tables: the workload on each side, then each figure on each side with
//! the terms of its gap.

use super::{MetricRow, Reconciliation};
use crate::report::table::Table;
use std::fmt::Write as _;

/// The reconciliation as Markdown.
pub fn render(r: &Reconciliation) -> String {
    let mut out = format!(
        "# Reconciliation of case {} with {}\n\n",
        r.case, r.other_tool
    );
    for note in &r.notes {
        let _ = writeln!(out, "Note: {note}.\n");
    }
    out.push_str("## Workload\n\n");
    let mut table = Table::new(["What", "Other", "llmload", "Same"]);
    for w in &r.workload {
        table.push([
            w.what.clone(),
            number(w.other, 1),
            number(w.llmload, 1),
            if w.same { "yes" } else { "**no**" }.to_owned(),
        ]);
    }
    out.push_str(&table.markdown());
    out.push_str("\n## Figures\n\n");
    let mut table = Table::new([
        "Figure",
        "Other",
        "llmload as other",
        "llmload",
        "Definition",
        "Measurement",
    ]);
    for m in &r.metrics {
        table.push([
            m.name.clone(),
            number(m.other, 3),
            format!("{} (n = {})", number(m.llmload_as_other, 3), m.n),
            number(m.llmload, 3),
            amount(m, "definition"),
            amount(m, "measurement"),
        ]);
    }
    out.push_str(&table.markdown());
    out.push_str(
        "\nOther: the other tool's figure as its file gives it. llmload as other: llmload's \
         records computed with the other tool's definition. Definition = llmload as other − \
         llmload; measurement = other − llmload as other.\n\n",
    );
    for m in &r.metrics {
        let _ = writeln!(out, "- **{}**:", m.name);
        for t in &m.terms {
            let _ = writeln!(out, "  - {}: {}", t.kind, t.text);
        }
        if let (false, Some(other), Some(ours)) = (m.shares.is_empty(), m.other, m.llmload) {
            let _ = writeln!(
                out,
                "  - the gap, other − llmload = {:+.3} ms, in shares that sum to it:",
                other - ours
            );
            for s in &m.shares {
                let _ = writeln!(out, "    - {} {:+.3} ms: {}", s.cause, s.ms, s.text);
            }
        }
    }
    out
}

/// A figure to `digits` decimals, `–` where there is none.
fn number(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

/// The signed amount of `m`'s term of `kind`, `–` where it has none.
fn amount(m: &MetricRow, kind: &str) -> String {
    m.terms
        .iter()
        .find(|t| t.kind == kind)
        .and_then(|t| t.amount)
        .map_or_else(|| "–".to_owned(), |a| format!("{a:+.3}"))
}
