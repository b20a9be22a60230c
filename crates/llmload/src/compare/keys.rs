//! The key of each case of an attempt, from its `campaign.json`: what `llmload compare` matches
//! cases on ([`super::identity`]). A campaign written before shapes were recorded ran closed
//! rounds, the only shape there was then, at fixed lengths.

use crate::attempt::campaign::{
    read_campaign, Campaign, CampaignCase, CampaignDataset, CaseLoad, LengthSpec,
};
use crate::attempt::load::read;
use crate::compare::identity::{CaseKey, KeyedAttempt, LengthKey, LoadKey};
use crate::error::Context;
use crate::summary::window::LoadShape;
use crate::workload::schedule::Process;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The key of every case of `campaign`, by case id.
pub fn keys(campaign: &Campaign) -> BTreeMap<String, CaseKey> {
    let shared = campaign.config.system_prompt_tokens;
    let api = campaign.target.api.name();
    let prompts = campaign
        .config
        .dataset
        .as_ref()
        .map(CampaignDataset::describe);
    let models = campaign
        .config
        .mix
        .as_ref()
        .map(crate::workload::mix::ModelMix::describe);
    campaign
        .cases
        .iter()
        .map(|c| {
            let mut key = key(c, shared, api);
            key.prompts.clone_from(&prompts);
            key.models.clone_from(&models);
            (c.id.clone(), key)
        })
        .collect()
}

/// The key of one case.
pub fn key(c: &CampaignCase, shared_prefix_tokens: u32, api: &str) -> CaseKey {
    let number = |v: f64| format!("{v}");
    // The process's name, as `campaign.json` writes it (`kind`); `open` where none was recorded.
    let kind = |p: Option<&Process>| p.map_or("open", |p| LoadShape::of(p).as_str());
    let load = match &c.load {
        None | Some(CaseLoad::Rounds { .. }) => LoadKey::Rounds {
            concurrency: c.concurrency,
        },
        Some(CaseLoad::ClosedContinuous { .. }) => LoadKey::ClosedContinuous {
            concurrency: c.concurrency,
        },
        Some(CaseLoad::Open {
            process,
            rate_rps,
            max_in_flight,
            ..
        }) => LoadKey::Open {
            process: kind(Some(process)).to_owned(),
            burstiness: match process {
                Process::Gamma { cv } => Some(number(*cv)),
                Process::Poisson | Process::Constant => None,
            },
            rate_rps: number(*rate_rps),
            max_in_flight: *max_in_flight,
        },
        Some(CaseLoad::Replay {
            trace,
            max_in_flight,
            ..
        }) => LoadKey::Replay {
            trace: trace
                .file_name()
                .map_or_else(|| "(unnamed)".into(), |n| n.to_string_lossy().into_owned()),
            max_in_flight: *max_in_flight,
        },
        Some(CaseLoad::Sessions {
            process,
            rate_rps,
            spec,
            ..
        }) => LoadKey::Sessions {
            concurrency: c.concurrency,
            arrivals: rate_rps
                .map(|r| format!("{} at {} sessions/s", kind(process.as_ref()), number(r))),
            turns: spec.turns,
            turn_input: spec.turn_input,
            think_time: spec.think.to_string(),
            history: spec.history.as_str().to_owned(),
        },
    };
    CaseKey {
        input: length(c.input_length.as_ref(), c.input_tokens),
        load,
        output: length(c.output_length.as_ref(), c.output_tokens),
        shared_prefix_tokens,
        api: api.to_owned(),
        prompts: None,
        batch: c.batch,
        images: c.images,
        models: None,
    }
}

/// A length spec of `campaign.json` (a number, or a distribution's text), else `nominal` fixed.
fn length(spec: Option<&LengthSpec>, nominal: u32) -> LengthKey {
    match spec {
        Some(LengthSpec::Distribution(text)) => LengthKey {
            nominal,
            spec: text.clone(),
        },
        Some(LengthSpec::Fixed(n)) => LengthKey::fixed(*n),
        None => LengthKey::fixed(nominal),
    }
}

/// Every attempt folder of `dirs` with its summary recomputed from the records and the key of
/// each case.
pub fn keyed(dirs: &[PathBuf]) -> crate::error::Result<Vec<KeyedAttempt>> {
    dirs.iter()
        .map(|dir| {
            let summary = read(dir)
                .map(|r| r.summary)
                .with_context(|| format!("attempt {}", dir.display()))?;
            let keys =
                keys(&read_campaign(dir).with_context(|| format!("attempt {}", dir.display()))?);
            Ok(KeyedAttempt { summary, keys })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(json: serde_json::Value) -> CampaignCase {
        serde_json::from_value(json).expect("a campaign case")
    }

    #[test]
    fn keys_read_the_shape_its_parameters_and_the_length_specs() {
        let open = case(serde_json::json!({
            "id": "inchoice:32/256-gamma-r20-out16", "input_tokens": 144, "concurrency": 8,
            "output_tokens": 16, "input_length": "choice:32,256", "output_length": 16,
            "shape": "open", "process": {"kind": "gamma", "cv": 2.0}, "rate_rps": 20.0,
            "bound": {"requests": 100}, "max_in_flight": 8, "warmup_s": 0.0,
        }));
        let k = key(&open, 512, "chat");
        assert_eq!(k.input.spec, "choice:32,256");
        assert_eq!(k.input.nominal, 144);
        assert_eq!(k.output, LengthKey::fixed(16));
        assert_eq!(
            k.load,
            LoadKey::Open {
                process: "gamma".into(),
                burstiness: Some("2".into()),
                rate_rps: "20".into(),
                max_in_flight: Some(8),
            }
        );
        assert_eq!((k.shared_prefix_tokens, k.api.as_str()), (512, "chat"));
        let old = case(serde_json::json!({
            "id": "in64-c2-out4", "input_tokens": 64, "concurrency": 2, "output_tokens": 4,
        }));
        assert_eq!(
            key(&old, 0, "llamacpp").load,
            LoadKey::Rounds { concurrency: 2 },
            "a campaign without shapes ran closed rounds"
        );
        let continuous = case(serde_json::json!({
            "id": "in64-cc2-out4", "input_tokens": 64, "concurrency": 2, "output_tokens": 4,
            "shape": "closed-continuous", "bound": {"requests": 10},
        }));
        assert_ne!(key(&continuous, 0, "llamacpp"), key(&old, 0, "llamacpp"));
    }

    #[test]
    fn sessions_are_keyed_by_their_turns_think_time_and_history() {
        use crate::workload::length::Length;
        use crate::workload::session::{History, SessionSpec, Think};
        use crate::workload::shape::{Arrival, LoadPoint, ShapeTemplate};
        let plan = |turns: u32, history: History| {
            let template = ShapeTemplate {
                arrival: Arrival::Rounds,
                rounds: 1,
                bound: None,
                burstiness: 1.0,
                max_in_flight: None,
                warmup_time: std::time::Duration::ZERO,
                trace: None,
                session: Some(SessionSpec {
                    turns,
                    turn_input: Some(32),
                    think: "exp:2s".parse::<Think>().expect("a think time"),
                    history,
                    stagger: false,
                }),
                graph: None,
            };
            let plan = template.plan(
                &Length::Fixed(64),
                LoadPoint::Concurrency(2),
                &Length::Fixed(8),
            );
            // As campaign.json holds it.
            key(&case(serde_json::to_value(&plan).expect("JSON")), 0, "chat")
        };
        let three = plan(3, History::AsGenerated);
        assert_eq!(
            three.load,
            LoadKey::Sessions {
                concurrency: 2,
                arrivals: None,
                turns: 3,
                turn_input: Some(32),
                think_time: "exp:2s".into(),
                history: "as-generated".into(),
            }
        );
        assert_eq!(
            three.load.label(),
            "sessions of 3 turns, 2 in parallel (think exp:2s, history as-generated, 32-token \
             turns)"
        );
        assert_ne!(three, plan(4, History::AsGenerated));
        assert_ne!(three, plan(3, History::Placeholder));
    }

    #[test]
    fn a_dataset_run_is_keyed_apart_from_a_corpus_run() {
        let one = case(serde_json::json!({
            "id": "in64-c2-out4", "input_tokens": 64, "concurrency": 2, "output_tokens": 4,
        }));
        let corpus = key(&one, 0, "chat");
        let dataset = CampaignDataset {
            path: "data/prompts.jsonl".into(),
            lengths: crate::workload::dataset::Lengths::AsIs,
            output: crate::workload::dataset::Output::Fixed,
            ..CampaignDataset::default()
        };
        let mut from_dataset = corpus.clone();
        from_dataset.prompts = Some(dataset.describe());
        assert_ne!(corpus, from_dataset);
        assert!(from_dataset
            .load_label()
            .ends_with(", dataset prompts.jsonl, as-is, output fixed"));
    }
}
