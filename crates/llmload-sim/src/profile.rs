//! Engine profiles: the named parameters of the cost model, capacity and chat template that make
//! the simulator behave like one model on one machine. Profiles are TOML; two are built in.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::SimError;

/// The built-in profiles, as TOML text compiled into the binary.
const BUILTINS: &[(&str, &str)] = &[
    (
        "seed-qwen3-8b",
        include_str!("../profiles/seed-qwen3-8b.toml"),
    ),
    ("cpu-tiny", include_str!("../profiles/cpu-tiny.toml")),
];

/// Names of the built-in profiles, in the order `builtin_names` lists them.
const BUILTIN_NAMES: &[&str] = &["seed-qwen3-8b", "cpu-tiny"];

/// A modelled inference engine: capacity, cost model and chat template.
///
/// Step time (modelled milliseconds, divided by the time scale on the wall clock) is
/// `step_overhead_ms` + Σ over prefill chunks of `prefill_ms_per_token × n +
/// prefill_attention_ms_per_token_ctx × Σ positions` + (when any sequence decodes)
/// `decode_base_ms + decode_per_seq_ms × sequences + decode_per_ctx_token_ms × Σ context`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name, reported as `model_path` in `/props`.
    pub name: String,
    /// Model id reported by `/v1/models` and in responses.
    pub model: String,
    /// Slots: the most sequences running at once.
    pub slots: usize,
    /// Context of one slot in tokens; prompt + output larger than this is a 400.
    pub slot_context_tokens: usize,
    /// KV-cache capacity in tokens over all slots; `None` means `slots × slot_context_tokens`.
    #[serde(default)]
    pub kv_capacity_tokens: Option<usize>,
    /// Tokens one engine step may process (llama.cpp's `n_batch`); decode tokens count first.
    #[serde(default = "default_prefill_chunk_tokens")]
    pub prefill_chunk_tokens: usize,
    /// Fixed cost of every engine step, in milliseconds.
    pub step_overhead_ms: f64,
    /// Linear prefill cost per prompt token, in milliseconds.
    pub prefill_ms_per_token: f64,
    /// Attention prefill cost per prompt token per token of context before it, in milliseconds.
    pub prefill_attention_ms_per_token_ctx: f64,
    /// Cost of a step that decodes at least one sequence, in milliseconds.
    pub decode_base_ms: f64,
    /// Decode cost per decoding sequence, in milliseconds.
    pub decode_per_seq_ms: f64,
    /// Decode cost per context token summed over decoding sequences, in milliseconds.
    pub decode_per_ctx_token_ms: f64,
    /// Relative step-time jitter: each step is scaled by `1 + jitter × u`, u uniform in [-1, 1].
    #[serde(default)]
    pub jitter: f64,
    /// Probability per generated token of an EOS when the request does not ignore EOS.
    #[serde(default)]
    pub eos_probability: f64,
    /// Whether a block prefix cache serves requests that allow `cache_prompt`.
    #[serde(default)]
    pub prefix_cache: bool,
    /// Tokens per prefix-cache block.
    #[serde(default = "default_block_tokens")]
    pub block_tokens: usize,
    /// Prefix-cache capacity in blocks (LRU); `None` means KV capacity / `block_tokens`.
    #[serde(default)]
    pub cache_capacity_blocks: Option<usize>,
    /// Chat-template tokens added per message (role markers and separators).
    #[serde(default = "default_chat_tokens_per_message")]
    pub chat_tokens_per_message: usize,
    /// Chat-template tokens added once for the assistant's generation prompt.
    #[serde(default = "default_chat_generation_prompt_tokens")]
    pub chat_generation_prompt_tokens: usize,
    /// LoRA adapters served beside `model`: each name is listed at `/v1/models` (its `parent`
    /// the model) and may be asked for as a request's `model`.
    #[serde(default)]
    pub adapters: Vec<String>,
    /// What an adapter adds to a decode step per decoding sequence that uses one, in
    /// milliseconds (its low-rank matrices applied beside the base weights).
    #[serde(default)]
    pub adapter_decode_per_seq_ms: f64,
}

/// What a request's `model` names, for a profile ([`Profile::adapter_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The profile's model.
    Model,
    /// One of its adapters, by index.
    Adapter(usize),
    /// A model it does not serve.
    Unknown,
}

/// The most adapters a profile may serve.
pub(crate) const MAX_ADAPTERS: usize = 1024;

fn default_prefill_chunk_tokens() -> usize {
    2048
}

fn default_block_tokens() -> usize {
    16
}

fn default_chat_tokens_per_message() -> usize {
    4
}

fn default_chat_generation_prompt_tokens() -> usize {
    3
}

/// The most slots a profile (or `--slots`) may have.
pub(crate) const MAX_SLOTS: usize = 65_536;

/// The most tokens of context one slot may have.
pub(crate) const MAX_CONTEXT_TOKENS: usize = 16 << 20;

impl Profile {
    /// The built-in profile with this name, if there is one.
    #[expect(
        clippy::expect_used,
        clippy::missing_panics_doc,
        reason = "the built-in profiles are compiled in, and the builtins_parse test parses each"
    )]
    pub fn builtin(name: &str) -> Option<Profile> {
        let (_, text) = BUILTINS.iter().find(|(known, _)| *known == name)?;
        let profile = Self::from_toml_str(text, &format!("built-in {name}"))
            .expect("built-in profiles are valid: checked by the builtins_parse test");
        Some(profile)
    }

    /// Names of the built-in profiles.
    pub fn builtin_names() -> &'static [&'static str] {
        BUILTIN_NAMES
    }

    /// A built-in name or a path to a TOML file, as `--profile` takes it.
    pub fn resolve(name_or_path: &str) -> Result<Profile, SimError> {
        if let Some(profile) = Self::builtin(name_or_path) {
            return Ok(profile);
        }
        let path = Path::new(name_or_path);
        let named_toml = path.extension().is_some_and(|ext| ext == "toml");
        if path.exists() || named_toml {
            return Self::from_toml_file(path);
        }
        Err(SimError::UnknownProfile {
            name: name_or_path.to_owned(),
            known: BUILTIN_NAMES.join(", "),
        })
    }

    /// Reads and validates a profile from a TOML file.
    pub fn from_toml_file(path: &Path) -> Result<Profile, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::ProfileRead {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates a profile from TOML text; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Profile, SimError> {
        let profile: Profile = toml::from_str(text).map_err(|error| SimError::ProfileParse {
            origin: origin.to_owned(),
            message: error.message().replace('\n', " "),
        })?;
        profile.validate()?;
        Ok(profile)
    }

    /// This profile with `slots` overridden (a derived KV capacity follows the slot count).
    #[must_use]
    pub fn with_slots(mut self, slots: usize) -> Profile {
        self.slots = slots;
        self
    }

    /// KV-cache capacity in tokens.
    pub fn kv_capacity(&self) -> usize {
        self.kv_capacity_tokens
            .unwrap_or(self.slots.saturating_mul(self.slot_context_tokens))
    }

    /// Prefix-cache capacity in blocks.
    pub fn cache_capacity(&self) -> usize {
        self.cache_capacity_blocks
            .unwrap_or(self.kv_capacity() / self.block_tokens.max(1))
    }

    /// Checks that every value is in range.
    pub fn validate(&self) -> Result<(), SimError> {
        let invalid = |reason: String| SimError::InvalidProfile {
            name: self.name.clone(),
            reason,
        };
        let counts = [
            ("slots", self.slots),
            ("slot_context_tokens", self.slot_context_tokens),
            ("prefill_chunk_tokens", self.prefill_chunk_tokens),
            ("block_tokens", self.block_tokens),
        ];
        if let Some((field, _)) = counts.iter().find(|(_, value)| *value == 0) {
            return Err(invalid(format!("{field} must be at least 1")));
        }
        // Each slot and token of context holds memory from the start: a bound keeps an absurd
        // profile a one-line error, not an allocation that aborts.
        if self.slots > MAX_SLOTS {
            return Err(invalid(format!("slots must be at most {MAX_SLOTS}")));
        }
        if self.slot_context_tokens > MAX_CONTEXT_TOKENS {
            return Err(invalid(format!(
                "slot_context_tokens must be at most {MAX_CONTEXT_TOKENS}"
            )));
        }
        if self.kv_capacity() < self.slot_context_tokens {
            return Err(invalid(
                "kv_capacity_tokens is smaller than one slot's context".to_owned(),
            ));
        }
        let costs = [
            ("step_overhead_ms", self.step_overhead_ms),
            ("prefill_ms_per_token", self.prefill_ms_per_token),
            (
                "prefill_attention_ms_per_token_ctx",
                self.prefill_attention_ms_per_token_ctx,
            ),
            ("decode_base_ms", self.decode_base_ms),
            ("decode_per_seq_ms", self.decode_per_seq_ms),
            ("decode_per_ctx_token_ms", self.decode_per_ctx_token_ms),
        ];
        if let Some((field, value)) = costs.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
            return Err(invalid(format!(
                "{field} = {value} is not a finite cost ≥ 0"
            )));
        }
        if costs.iter().all(|(_, value)| *value == 0.0) {
            return Err(invalid(
                "every cost is zero; steps would take no time".to_owned(),
            ));
        }
        if !self.adapter_decode_per_seq_ms.is_finite() || self.adapter_decode_per_seq_ms < 0.0 {
            return Err(invalid(format!(
                "adapter_decode_per_seq_ms = {} is not a finite cost ≥ 0",
                self.adapter_decode_per_seq_ms
            )));
        }
        self.validate_adapters().map_err(invalid)?;
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(invalid(format!(
                "jitter = {} is not in [0, 1)",
                self.jitter
            )));
        }
        if !(0.0..1.0).contains(&self.eos_probability) {
            return Err(invalid(format!(
                "eos_probability = {} is not in [0, 1)",
                self.eos_probability
            )));
        }
        Ok(())
    }
}

impl Profile {
    /// Adapter names: not empty, not the model's, each once, at most [`MAX_ADAPTERS`].
    fn validate_adapters(&self) -> Result<(), String> {
        if self.adapters.len() > MAX_ADAPTERS {
            return Err(format!("more than {MAX_ADAPTERS} adapters"));
        }
        for (i, name) in self.adapters.iter().enumerate() {
            if name.trim().is_empty() || name.len() > 256 {
                return Err(format!("adapter name {name:?} is empty or too long"));
            }
            if *name == self.model {
                return Err(format!("adapter {name:?} has the model's own name"));
            }
            if self.adapters[..i].contains(name) {
                return Err(format!("adapter {name:?} is listed twice"));
            }
        }
        Ok(())
    }

    /// What a request naming `model` runs: `Served::Model` for the model itself (or no name),
    /// `Served::Adapter(i)` for adapter `i`; an unknown name is `Served::Unknown` where
    /// adapters are served, and the model itself where none is (a server of one model takes
    /// any name).
    pub fn adapter_of(&self, model: Option<&str>) -> Served {
        match model {
            None => Served::Model,
            Some(name) if name == self.model => Served::Model,
            Some(name) => match self.adapters.iter().position(|a| a == name) {
                Some(i) => Served::Adapter(i),
                None if self.adapters.is_empty() => Served::Model,
                None => Served::Unknown,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for name in Profile::builtin_names() {
            let profile = Profile::builtin(name).expect("listed built-in exists");
            assert_eq!(&profile.name, name);
        }
        assert_eq!(BUILTINS.len(), BUILTIN_NAMES.len());
    }

    #[test]
    fn seed_profile_has_the_seeds_slots() {
        let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
        assert_eq!(profile.slots, 4);
        assert_eq!(profile.slot_context_tokens, 8704);
        assert_eq!(profile.kv_capacity(), 34_816);
        assert_eq!(profile.with_slots(8).kv_capacity(), 69_632);
    }

    #[test]
    fn unknown_field_and_bad_values_are_errors() {
        let base = include_str!("../profiles/cpu-tiny.toml");
        let unknown = format!("{base}\nbogus = 1\n");
        let error = Profile::from_toml_str(&unknown, "test").expect_err("unknown field");
        assert!(error.to_string().contains("bogus"), "{error}");
        let bad = base.replace("slots = 2", "slots = 0");
        let error = Profile::from_toml_str(&bad, "test").expect_err("zero slots");
        assert!(
            error.to_string().contains("slots must be at least 1"),
            "{error}"
        );
        assert!(Profile::resolve("no-such-profile").is_err());
    }
}
