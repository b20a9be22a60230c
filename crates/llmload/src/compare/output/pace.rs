//! The server's own pace in `llmload compare`: for every case any attempt ran, each attempt's
//! prefill time per prompt token and decode time per generated token as the server reported
//! them (`summary::pace`), with the ratio to attempt A's beside the client's ratios of the
//! results table. Where the server's pace moved as much as the client's figures, the machine
//! or the build moved; where it held, the client's change is beyond the server (the path).

use super::{cell, letter};
use crate::compare::identity::CaseKey;
use crate::stats::Distribution;
use crate::summary::CaseSummary;
use std::fmt::Write;

/// The case's pace at prefill and decode, where its records carried the server's timings.
fn paces(case: &CaseSummary) -> Option<[Option<&Distribution>; 2]> {
    let pace = case.server.as_ref()?.pace.as_ref()?;
    Some([
        pace.prefill_ms_per_token.as_ref(),
        pace.decode_ms_per_token.as_ref(),
    ])
}

/// The section, or nothing when no attempt's records carry the server's timings.
pub(super) fn render(out: &mut String, rows: &[(CaseKey, Vec<Option<&CaseSummary>>)]) {
    let any = rows
        .iter()
        .flat_map(|(_, cases)| cases.iter().flatten())
        .any(|c| paces(c).is_some());
    if !any {
        return;
    }
    out.push_str(
        "\nThe server's own pace (medians of each ok response's server timings: prefill ms per \
         prompt token it processed, decode ms per generated token after the first; × A: this \
         attempt's over A's, beside the client's ratios above; where the server's pace moved as \
         much as the client's figures, the machine or the build moved; where it held, the change \
         is beyond the server: a proxy, a gateway, the network or the client):\n\n\
         | Case | Attempt | Responses (n) | Prefill per prompt token | × A | Decode per token | \
         × A |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (_, cases) in rows {
        let id = cases.iter().flatten().next().map_or("", |c| c.id.as_str());
        let base = cases[0].filter(|c| c.complete).and_then(paces);
        for (i, case) in cases.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(id),
                letter(i),
                cells(*case, base)
            );
        }
    }
}

/// One attempt's pace cells, against A's `base`.
fn cells(case: Option<&CaseSummary>, base: Option<[Option<&Distribution>; 2]>) -> String {
    let case = match case {
        None => return "not in this attempt | | | |".into(),
        Some(c) if !c.complete => return "incomplete | | | |".into(),
        Some(c) => c,
    };
    let Some(pace) = paces(case) else {
        return "no server timings | | | |".into();
    };
    let responses = case.server.as_ref().map_or(0, |s| s.responses);
    let mut text = responses.to_string();
    for (k, d) in pace.iter().enumerate() {
        let figure = d.map_or_else(
            || "–".to_owned(),
            |d| format!("{:.3} ms (n = {})", d.median, d.n),
        );
        let ratio = d
            .zip(base.and_then(|b| b[k]))
            .filter(|(_, b)| b.median > 0.0)
            .map_or_else(
                || "–".to_owned(),
                |(d, b)| format!("{:.2}", d.median / b.median),
            );
        let _ = write!(text, " | {figure} | {ratio}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_pace(prefill: f64, decode: f64) -> CaseSummary {
        let mut case = crate::fixture::report().summary.cases[0].clone();
        let one = |v: f64| Distribution::from_samples(&mut [v, v]);
        case.server = Some(Box::new(crate::summary::server_side::ServerSideSummary {
            responses: 2,
            sources: vec![crate::record::TimingSource::LlamaServer],
            ttft_exceeds_client: 0,
            queue_ms: None,
            prefill_ms: None,
            ttft_ms: None,
            decode_ms: None,
            delivery_ms: None,
            ttft_parts: None,
            speculative: None,
            pace: Some(crate::summary::pace::Pace {
                prefill_ms_per_token: one(prefill),
                decode_ms_per_token: one(decode),
            }),
        }));
        case
    }

    #[test]
    fn each_attempt_s_pace_is_shown_with_its_ratio_to_a() {
        let (a, b) = (with_pace(2.0, 40.0), with_pace(3.0, 30.0));
        let key = crate::compare::identity::CaseKey {
            input: crate::compare::identity::LengthKey::fixed(64),
            load: crate::compare::identity::LoadKey::Rounds { concurrency: 1 },
            output: crate::compare::identity::LengthKey::fixed(4),
            shared_prefix_tokens: 0,
            prompts: None,
            batch: None,
            images: None,
            models: None,
            api: "llamacpp".into(),
        };
        let mut out = String::new();
        render(&mut out, &[(key, vec![Some(&a), Some(&b), None])]);
        assert!(
            out.contains("| A | 2 | 2.000 ms (n = 2) | 1.00 | 40.000 ms (n = 2) | 1.00 |"),
            "{out}"
        );
        assert!(
            out.contains("| B | 2 | 3.000 ms (n = 2) | 1.50 | 30.000 ms (n = 2) | 0.75 |"),
            "{out}"
        );
        assert!(out.contains("| C | not in this attempt"), "{out}");
        let mut none = String::new();
        let plain = crate::fixture::report().summary.cases[0].clone();
        let key = crate::compare::identity::CaseKey {
            api: "chat".into(),
            ..crate::compare::keys::keys(&crate::fixture::campaign())
                .into_values()
                .next()
                .expect("a key")
        };
        render(&mut none, &[(key, vec![Some(&plain)])]);
        assert!(none.is_empty(), "no timings, no section: {none}");
    }
}
