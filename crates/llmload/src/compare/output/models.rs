//! A mix of models in `llmload compare`: each model's figures matched by name between the
//! attempts, as rows under their case and in the JSON.

use super::{case_json, figures, letter};
use crate::summary::CaseSummary;

/// A mix of models: each model any attempt's case ran, in name order, with each attempt's
/// figures of it as a case of their own ([`crate::summary::CaseSummary::for_model`]), `None` where the attempt
/// did not run the case or the model. Models are matched by name, never pooled.
pub(super) fn by_model(cases: &[Option<&CaseSummary>]) -> Vec<(String, Vec<Option<CaseSummary>>)> {
    let names: std::collections::BTreeSet<&str> = cases
        .iter()
        .flatten()
        .flat_map(|c| c.models.iter().flatten())
        .map(|m| m.model.as_str())
        .collect();
    names
        .into_iter()
        .map(|name| {
            let views = cases
                .iter()
                .map(|c| {
                    let c = (*c)?;
                    let m = c.models.as_ref()?.iter().find(|m| m.model == name)?;
                    Some(c.for_model(m))
                })
                .collect();
            (name.to_owned(), views)
        })
        .collect()
}

/// Each model of a matched case in the JSON: its name and each attempt's row of its figures,
/// ratios to attempt A's same model; empty without a mix.
pub(super) fn to_json(found: &[Option<&CaseSummary>]) -> Vec<serde_json::Value> {
    by_model(found)
        .into_iter()
        .map(|(model, views)| {
            let base = views[0].as_ref().filter(|c| c.complete).map(figures);
            let rows: Vec<serde_json::Value> = views
                .iter()
                .enumerate()
                .map(|(i, v)| case_json(&letter(i), v.as_ref(), base))
                .collect();
            serde_json::json!({"model": model, "attempts": rows})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::compare::gate::{evaluate, rules};
    use crate::compare::identity::KeyedAttempt;
    use crate::fixture;
    use crate::workload::mix::ModelMix;

    /// The mixed fixture as compare reads it, its campaign naming the mix `mix`; with every
    /// adapter-a TTFT times `slower`.
    fn mixed(mix: &str, slower: f64) -> KeyedAttempt {
        let mut summary = fixture::mixed_models().summary;
        for case in &mut summary.cases {
            for m in case.models.iter_mut().flatten() {
                if let (true, Some(d)) = (m.model == "adapter-a", m.ttft_ms.as_mut()) {
                    d.median *= slower;
                    d.ci = None;
                }
            }
        }
        let mut campaign = fixture::campaign();
        campaign.config.mix = ModelMix::parse(mix).expect("a mix");
        KeyedAttempt {
            summary,
            keys: crate::compare::keys::keys(&campaign),
        }
    }

    #[test]
    fn each_model_is_matched_by_name_under_its_case_never_pooled() {
        let (a, b) = (
            mixed("base:1,adapter-a:1", 1.0),
            mixed("base:1,adapter-a:1", 2.0),
        );
        let out = super::super::render(&[a.clone(), b.clone()]);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 64 | 2 |"))
            .collect();
        // The case's two rows, then two per model.
        assert_eq!(rows.len(), 6, "{out}");
        for (row, holds) in [
            (0, "models base 50%, adapter-a 50%"),
            (2, "↳ model adapter-a | A | 13.5 ms | 1.00 |"),
            (3, "↳ model adapter-a | B | 27.0 ms | 2.00 |"),
            (5, "↳ model base | B | 13.5 ms | 1.00 |"),
        ] {
            assert!(rows[row].contains(holds), "{}", rows[row]);
        }
        assert!(out.contains("matched by name"), "{out}");
        let json = super::super::to_json(&[], &[a.clone(), b.clone()], None);
        let case = &json["cases"][1];
        assert_eq!(case["mix"], "base 50%, adapter-a 50%", "{case}");
        assert_eq!(case["models"][0]["model"], "adapter-a");
        let ratio = case["models"][0]["attempts"][1]["ttft_ratio"].as_f64();
        assert!(ratio.is_some_and(|r| (r - 2.0).abs() < 1e-9), "{case}");
        // The gate checks each model too, named.
        let checks = evaluate(
            &rules(&["ttft_p50 > +10%".into()], None).expect("rule"),
            &[a, b],
        );
        let adapter: Vec<_> = checks
            .iter()
            .filter(|c| c.model.as_deref() == Some("adapter-a") && c.case == "in64-c2-out4")
            .collect();
        assert_eq!(adapter.len(), 1);
        assert_eq!(adapter[0].subject(), "in64-c2-out4, model adapter-a");
        assert!(checks
            .iter()
            .any(|c| c.model.as_deref() == Some("base") && c.case == "in64-c2-out4"));
    }

    #[test]
    fn another_mix_or_none_is_another_case() {
        let out = super::super::render(&[
            mixed("base:1,adapter-a:1", 1.0),
            mixed("base:9,adapter-a:1", 1.0),
        ]);
        assert!(out.contains("Only in A:"), "{out}");
        assert!(out.contains("Only in B:"), "{out}");
        let mut plain = mixed("base:1,adapter-a:1", 1.0);
        plain.keys = crate::compare::keys::keys(&fixture::campaign());
        let out = super::super::render(&[mixed("base:1,adapter-a:1", 1.0), plain]);
        assert!(out.contains("Only in A:"), "{out}");
    }
}
