//! What makes two attempts' cases the same case, for `llmload compare`: everything that defines
//! the load a server saw (the API, the load shape and its parameters, the input and output
//! length specs, the shared system prompt), never only input × concurrency × output. How much was
//! measured (rounds, duration, requests, warmup, seed) is not part of it. The keys are built from
//! `campaign.json` (`compare::keys`); matching them is here, pure.

use crate::fmt::thousands;
use crate::summary::{CaseSummary, Summary};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A prompt or output length as a case asked for it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LengthKey {
    /// The nominal tokens (a distribution's mean), for ordering and the tables.
    pub nominal: u32,
    /// The spec: a number (fixed) or a distribution (`choice:32,256`, `uniform:10,90`, …).
    pub spec: String,
}

impl LengthKey {
    /// A fixed length of `tokens`.
    pub fn fixed(tokens: u32) -> LengthKey {
        LengthKey {
            nominal: tokens,
            spec: tokens.to_string(),
        }
    }

    /// The spec as a table shows it: a fixed length with thousands separators.
    pub fn label(&self) -> String {
        if self.spec == self.nominal.to_string() {
            thousands(self.nominal)
        } else {
            self.spec.clone()
        }
    }
}

/// How the requests of a case were launched, with every parameter that changes the load. Rates
/// and coefficients are kept as Rust's shortest text for the number, which is equal exactly when
/// the numbers are.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "shape", rename_all = "kebab-case")]
pub enum LoadKey {
    /// Rounds of `concurrency` simultaneous requests.
    Rounds {
        /// Requests per round.
        concurrency: u32,
    },
    /// `concurrency` requests kept in flight.
    ClosedContinuous {
        /// Requests in flight.
        concurrency: u32,
    },
    /// Arrivals from a schedule.
    Open {
        /// `poisson`, `gamma` or `constant`.
        process: String,
        /// Gamma arrivals: the coefficient of variation of the gaps.
        burstiness: Option<String>,
        /// Arrivals per second.
        rate_rps: String,
        /// The in-flight cap, if any.
        max_in_flight: Option<u32>,
    },
    /// Arrivals and lengths from a trace.
    Replay {
        /// The trace's file name.
        trace: String,
        /// The in-flight cap, if any.
        max_in_flight: Option<u32>,
    },
    /// Multi-turn sessions.
    Sessions {
        /// Sessions in parallel (closed), 0 when they arrive at a rate.
        concurrency: u32,
        /// Open: the arrival process and the sessions started per second.
        arrivals: Option<String>,
        /// Turns per session.
        turns: u32,
        /// Tokens of each later user message, when set apart from the prompt length.
        turn_input: Option<u32>,
        /// The think time, as written.
        think_time: String,
        /// `as-generated` or `placeholder`.
        history: String,
    },
}

impl LoadKey {
    /// The concurrency column: requests together or in flight, the in-flight cap of an open loop,
    /// or "–".
    pub fn concurrency_label(&self) -> String {
        match self {
            LoadKey::Rounds { concurrency } | LoadKey::ClosedContinuous { concurrency } => {
                concurrency.to_string()
            }
            LoadKey::Open { max_in_flight, .. } | LoadKey::Replay { max_in_flight, .. } => {
                max_in_flight.map_or_else(|| "–".into(), |m| format!("≤ {m}"))
            }
            LoadKey::Sessions { concurrency: 0, .. } => "–".into(),
            LoadKey::Sessions { concurrency, .. } => concurrency.to_string(),
        }
    }

    /// The shape and its parameters in words, the concurrency aside.
    pub fn label(&self) -> String {
        match self {
            LoadKey::Rounds { .. } => "closed rounds".into(),
            LoadKey::ClosedContinuous { .. } => "closed continuous".into(),
            LoadKey::Open {
                process,
                burstiness,
                rate_rps,
                ..
            } => match burstiness {
                Some(cv) => format!("{process} (burstiness {cv}) at {rate_rps} requests/s"),
                None => format!("{process} at {rate_rps} requests/s"),
            },
            LoadKey::Replay { trace, .. } => format!("trace {trace}"),
            LoadKey::Sessions {
                concurrency,
                arrivals,
                turns,
                turn_input,
                think_time,
                history,
            } => {
                let load = arrivals
                    .clone()
                    .unwrap_or_else(|| format!("{concurrency} in parallel"));
                let turn_input =
                    turn_input.map_or_else(String::new, |t| format!(", {t}-token turns"));
                format!(
                    "sessions of {turns} turns, {load} (think {think_time}, history \
                     {history}{turn_input})"
                )
            }
        }
    }
}

/// Everything that defines a case. Two cases match only when their keys are equal.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CaseKey {
    /// Prompt length.
    pub input: LengthKey,
    /// The load shape and its parameters.
    pub load: LoadKey,
    /// Output length.
    pub output: LengthKey,
    /// Tokens of the shared system prompt that open every prompt; 0 for none.
    pub shared_prefix_tokens: u32,
    /// The API driven (`llamacpp`, `completions`, `chat`).
    pub api: String,
    /// Where the prompts came from when not the corpus: a dataset, and how it was used.
    pub prompts: Option<String>,
    /// Embeddings and rerank: the inputs per request; absent for generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Chat with images: the images of each request; absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::workload::image::ImageSpec>,
    /// A mix of models: each model and its share of the requests, in the order given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<String>,
}

impl CaseKey {
    /// The load column: the shape, its parameters and the shared prefix.
    pub fn load_label(&self) -> String {
        let load = self.load.label();
        let load = match self.shared_prefix_tokens {
            0 => load,
            shared => format!("{load}, {} shared prompt tokens", thousands(shared)),
        };
        let load = match &self.prompts {
            Some(prompts) => format!("{load}, {prompts}"),
            None => load,
        };
        match &self.models {
            Some(models) => format!("{load}, models {models}"),
            None => load,
        }
    }

    /// The whole key in words, for cases listed on their own.
    pub fn describe(&self) -> String {
        let concurrency = match self.load {
            LoadKey::Rounds { concurrency } | LoadKey::ClosedContinuous { concurrency } => {
                format!(" × {concurrency} concurrent")
            }
            LoadKey::Sessions { concurrency, .. } if concurrency > 0 => {
                format!(" × {concurrency} sessions in parallel")
            }
            LoadKey::Open {
                max_in_flight: Some(m),
                ..
            }
            | LoadKey::Replay {
                max_in_flight: Some(m),
                ..
            } => format!(" × at most {m} in flight"),
            _ => String::new(),
        };
        let work = match self.batch {
            Some(batch) => format!("{batch} inputs per request"),
            None => format!("{} output tokens", self.output.label()),
        };
        let images = self
            .images
            .map_or_else(String::new, |i| format!(" + {}", i.words()));
        format!(
            "{} input tokens{images}{concurrency} × {work} ({}, {} API)",
            self.input.label(),
            self.load_label(),
            self.api
        )
    }
}

/// An attempt as `compare` reads it: its summary, and the key of each of its cases by case id.
#[derive(Clone, Debug)]
pub struct KeyedAttempt {
    /// The summary, recomputed from the records.
    pub summary: Summary,
    /// The key of each case, by case id.
    pub keys: BTreeMap<String, CaseKey>,
}

impl KeyedAttempt {
    /// The attempt's cases with their keys, in run order; a case without a key (not in
    /// `campaign.json`) is left out.
    pub fn cases(&self) -> impl Iterator<Item = (&CaseKey, &CaseSummary)> {
        self.summary
            .cases
            .iter()
            .filter_map(|c| self.keys.get(&c.id).map(|k| (k, c)))
    }

    /// The case whose key is `key`.
    pub fn case(&self, key: &CaseKey) -> Option<&CaseSummary> {
        self.cases().find(|(k, _)| *k == key).map(|(_, c)| c)
    }
}

/// Every key that any of `attempts` ran, in order (input, load, output, shared prefix, API),
/// with each attempt's case of that key or `None`.
pub fn matched(attempts: &[KeyedAttempt]) -> Vec<(CaseKey, Vec<Option<&CaseSummary>>)> {
    let keys: BTreeSet<&CaseKey> = attempts
        .iter()
        .flat_map(|a| a.cases().map(|(k, _)| k))
        .collect();
    keys.into_iter()
        .map(|k| (k.clone(), attempts.iter().map(|a| a.case(k)).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn key(load: LoadKey) -> CaseKey {
        CaseKey {
            input: LengthKey::fixed(64),
            load,
            output: LengthKey::fixed(16),
            shared_prefix_tokens: 0,
            prompts: None,
            models: None,
            api: "llamacpp".into(),
            batch: None,
            images: None,
        }
    }

    fn open(rate: &str) -> LoadKey {
        LoadKey::Open {
            process: "poisson".into(),
            burstiness: None,
            rate_rps: rate.into(),
            max_in_flight: None,
        }
    }

    /// An attempt of one case, id `id`, under `key`.
    fn attempt(id: &str, key: CaseKey) -> KeyedAttempt {
        let mut summary = fixture::report().summary;
        summary.cases.truncate(1);
        summary.cases[0].id = id.into();
        KeyedAttempt {
            summary,
            keys: BTreeMap::from([(id.to_owned(), key)]),
        }
    }

    #[test]
    fn rates_shapes_prefixes_and_apis_keep_cases_apart() {
        let rounds = key(LoadKey::Rounds { concurrency: 4 });
        let continuous = key(LoadKey::ClosedContinuous { concurrency: 4 });
        assert_ne!(
            rounds, continuous,
            "closed rounds are not closed continuous"
        );
        assert_ne!(key(open("20")), key(open("80")), "20 requests/s is not 80");
        assert_eq!(key(open("20")), key(open("20")));
        let shared = CaseKey {
            shared_prefix_tokens: 512,
            prompts: None,
            models: None,
            ..rounds.clone()
        };
        assert_ne!(rounds, shared);
        let chat = CaseKey {
            api: "chat".into(),
            ..rounds.clone()
        };
        assert_ne!(rounds, chat);
        let mix = CaseKey {
            input: LengthKey {
                nominal: 64,
                spec: "uniform:32,96".into(),
            },
            ..rounds.clone()
        };
        assert_ne!(rounds, mix, "a fixed 64 is not a mix whose mean is 64");
    }

    #[test]
    fn cases_of_one_side_are_kept_with_none_for_the_other() {
        let slow = attempt("in64-poisson-r20-out16", key(open("20")));
        let fast = attempt("in64-poisson-r80-out16", key(open("80")));
        let both = [slow, fast];
        let rows = matched(&both);
        assert_eq!(rows.len(), 2, "two cases, neither dropped");
        let sides: Vec<(bool, bool)> = rows
            .iter()
            .map(|(_, c)| (c[0].is_some(), c[1].is_some()))
            .collect();
        assert_eq!(sides, vec![(true, false), (false, true)]);
        let rounds = attempt("in64-c4-out16", key(LoadKey::Rounds { concurrency: 4 }));
        let continuous = attempt(
            "in64-cc4-out16",
            key(LoadKey::ClosedContinuous { concurrency: 4 }),
        );
        assert_eq!(matched(&[rounds.clone(), continuous]).len(), 2);
        let twice = [rounds.clone(), rounds];
        let same = matched(&twice);
        assert_eq!(same.len(), 1);
        assert!(same[0].1.iter().all(Option::is_some));
    }

    #[test]
    fn descriptions_name_the_shape_and_its_parameters() {
        let gamma = key(LoadKey::Open {
            process: "gamma".into(),
            burstiness: Some("2".into()),
            rate_rps: "20".into(),
            max_in_flight: Some(8),
        });
        assert_eq!(
            gamma.describe(),
            "64 input tokens × at most 8 in flight × 16 output tokens (gamma (burstiness 2) \
             at 20 requests/s, llamacpp API)"
        );
        assert_eq!(gamma.load.concurrency_label(), "≤ 8");
        let shared = CaseKey {
            shared_prefix_tokens: 2048,
            prompts: None,
            models: None,
            ..key(LoadKey::Rounds { concurrency: 4 })
        };
        assert_eq!(
            shared.load_label(),
            "closed rounds, 2,048 shared prompt tokens"
        );
    }
}
