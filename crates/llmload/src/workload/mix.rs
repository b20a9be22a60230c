//! `--model NAME:WEIGHT,…`: a weighted mix of models sent in one load, such as a base model and
//! its LoRA adapters on one server. Each measured request's model is drawn from the seed and the
//! request's serial number alone (a session's from its id), so the same seed sends the same
//! requests to the same models; warmups go to the models in turn.

use serde::{Deserialize, Serialize};

/// The most models a mix may name.
pub const MAX_MODELS: usize = 256;

/// Salt of a request's draw.
const REQUEST_SALT: u64 = 0x6d69_785f_7265_7131;

/// Salt of a session's draw.
const SESSION_SALT: u64 = 0x6d69_785f_7365_7331;

/// One model of a mix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MixModel {
    /// The name sent as the request's `model`.
    pub model: String,
    /// The weight given.
    pub weight: f64,
    /// Its share of the requests: the weight over the sum of the weights.
    pub share: f64,
}

/// A weighted mix of at least two models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelMix {
    models: Vec<MixModel>,
}

impl ModelMix {
    /// `--model`'s value: `None` for one model (a name without a comma is a name, colons and
    /// all), a mix for `NAME:WEIGHT,NAME:WEIGHT,…`; an error in words otherwise.
    pub fn parse(text: &str) -> Result<Option<ModelMix>, String> {
        let text = text.trim();
        if !text.contains(',') {
            return Ok(None);
        }
        let shown: String = text.chars().take(120).collect();
        let mut models: Vec<MixModel> = Vec::new();
        for entry in text.split(',').map(str::trim) {
            let Some((name, weight)) = entry.rsplit_once(':') else {
                return Err(format!(
                    "--model {shown:?}: each model of a mix takes its weight, NAME:WEIGHT \
                     (e.g. base:70,adapter-a:20,adapter-b:10); {entry:?} has none"
                ));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(format!("--model {shown:?}: {entry:?} names no model"));
            }
            let weight: f64 = weight.trim().parse().map_err(|_| {
                format!("--model {shown:?}: the weight of {name:?} is not a number: {weight:?}")
            })?;
            if !(weight.is_finite() && weight > 0.0) {
                return Err(format!(
                    "--model {shown:?}: the weight of {name:?} is {weight}: weights are \
                     numbers above 0"
                ));
            }
            if models.iter().any(|m| m.model == name) {
                return Err(format!(
                    "--model {shown:?}: {name:?} is named twice: give each model once, with \
                     its whole weight"
                ));
            }
            models.push(MixModel {
                model: name.to_owned(),
                weight,
                share: 0.0,
            });
        }
        if models.len() > MAX_MODELS {
            return Err(format!(
                "--model: {} models in the mix, more than {MAX_MODELS}",
                models.len()
            ));
        }
        // Scaled by the largest first: weights each finite can still sum past f64's range
        // (`1e308,1e308`), and tiny ones below it.
        let largest = models.iter().map(|m| m.weight).fold(0.0, f64::max);
        let total: f64 = models.iter().map(|m| m.weight / largest).sum();
        for m in &mut models {
            m.share = m.weight / largest / total;
        }
        Ok(Some(ModelMix { models }))
    }

    /// The models, in the order given.
    pub fn models(&self) -> &[MixModel] {
        &self.models
    }

    /// How many models it holds.
    pub fn len(&self) -> u32 {
        crate::num::count(self.models.len())
    }

    /// Whether it holds none (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.iter().map(|m| m.model.as_str())
    }

    /// Each model and its share of the requests, in the order given: "base 70%, adapter-a
    /// 30%".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .models
            .iter()
            .map(|m| format!("{} {}%", m.model, crate::fmt::number(m.share * 100.0)))
            .collect();
        parts.join(", ")
    }

    /// The model of the measured request numbered `serial`.
    pub fn pick(&self, seed: u64, serial: u64) -> &str {
        self.by_share(super::prompt::uniform(seed, serial, REQUEST_SALT))
    }

    /// The model of session `id`, which all its turns go to.
    pub fn pick_session(&self, seed: u64, id: u64) -> &str {
        self.by_share(super::prompt::uniform(seed, id, SESSION_SALT))
    }

    /// The model of warmup `index`: the models in turn, so that as many warmups as models
    /// reach each once.
    pub fn warmup(&self, index: u32) -> &str {
        let i = crate::num::index(u64::from(index)) % self.models.len().max(1);
        self.models.get(i).map_or("", |m| m.model.as_str())
    }

    /// The model whose cumulative share first exceeds `u` (in [0, 1)).
    fn by_share(&self, u: f64) -> &str {
        let mut cumulative = 0.0;
        for m in &self.models {
            cumulative += m.share;
            if u < cumulative {
                return &m.model;
            }
        }
        // Rounding left the cumulative sum a hair below 1.
        self.models.last().map_or("", |m| m.model.as_str())
    }
}

#[cfg(test)]
mod tests;
