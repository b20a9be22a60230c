//! The checks a resolved [`Config`] passes before a run starts: each option's bounds and the
//! combinations that cannot run, one clear line each (the checks of one option's group live
//! beside its resolution: `load.rs`, `pooling.rs`, `images.rs`, …).

use super::parse::bad;
use super::{cancel, dataset, images, objectives, pooling, repeat, Config};
use crate::api::tls::read_ca_certs;
use crate::api::Api;
use crate::error::ConfigError;
use crate::telemetry::Source;
use crate::workload::length::Length;
use crate::workload::shape::Arrival;

impl Config {
    /// A shared system prompt leaves room in every prompt for the nonce and one more token.
    fn check_shared_prefix(&self) -> Result<(), ConfigError> {
        let shared = self.load.system_prompt_tokens;
        if shared == 0 {
            return Ok(());
        }
        let floor =
            shared.saturating_add(crate::num::count(crate::workload::prompt::NONCE_LEN) + 1);
        let traced = self.load.trace_entries.iter().flat_map(|e| e.iter());
        let shortest = self
            .input_tokens
            .iter()
            .map(Length::min_tokens)
            .chain(traced.map(|e| e.input_tokens))
            .min()
            .unwrap_or(0);
        if shortest < floor {
            return bad(format!(
                "--system-prompt-tokens {shared} needs prompts of at least {floor} tokens (the \
                 shared part, the {}-token nonce and one more); the shortest is {shortest}",
                crate::workload::prompt::NONCE_LEN
            ));
        }
        Ok(())
    }

    /// Refuses what asks one server for something with several `--url`: their caches and
    /// profilers are each their own.
    fn check_replicas(&self) -> Result<(), ConfigError> {
        if self.replicas.urls.is_empty() {
            return Ok(());
        }
        if self.reset_prefix_cache {
            return bad(
                "--reset-prefix-cache with several --url: each replica keeps its own cache; \
                 reset them before the run, or measure one replica",
            );
        }
        if self.profile_server.is_some() {
            return bad("--profile-server with several --url: profile one replica at a time");
        }
        Ok(())
    }

    /// Refuses a `--profile-server N` no round can meet: it profiles a round of N or more
    /// streams.
    fn check_profile_server(&self) -> Result<(), ConfigError> {
        let Some(at) = self.profile_server else {
            return Ok(());
        };
        let load = &self.load;
        if at == 0 {
            return bad("--profile-server 0: profile from 1 or more running requests");
        }
        if load.arrival != Arrival::Rounds || load.session.is_some() || load.stages.is_some() {
            return bad("--profile-server profiles a round: it goes with closed rounds");
        }
        if !self.concurrency.iter().any(|&c| c >= at) {
            return bad(format!(
                "--profile-server {at}: no case has {at} or more streams (--concurrency)"
            ));
        }
        Ok(())
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.concurrency.is_empty() || self.concurrency.contains(&0) {
            return bad("--concurrency needs one or more values above 0");
        }
        self.check_sizes()?;
        pooling::check(self)?;
        images::check(self)?;
        if let Some(corpus) = &self.corpus {
            match std::fs::metadata(corpus) {
                Ok(m) if m.is_file() && m.len() > 0 => {}
                Ok(_) => {
                    return bad(format!(
                        "--corpus {}: not a non-empty file",
                        corpus.display()
                    ))
                }
                Err(e) => return bad(format!("--corpus {}: {e}", corpus.display())),
            }
        }
        if let Some(path) = &self.tls.ca_cert {
            read_ca_certs(path).map_err(|e| ConfigError(e.to_string()))?;
        }
        self.load.validate()?;
        dataset::check_prompts(self.dataset.as_ref(), &self.load, self.api)?;
        self.check_shared_prefix()?;
        repeat::check(self)?;
        cancel::check(self)?;
        super::canaries::check(self)?;
        self.check_profile_server()?;
        self.check_replicas()?;
        self.check_sharding()?;
        objectives::check(&self.load.model_slo, &self.mix_names())?;
        if self.mix.is_some() && self.api == Some(Api::Llamacpp) {
            return bad(
                "a mix of models needs an API that names each request's model (--api \
                 completions, chat, messages or responses): llama.cpp's /completion has no model",
            );
        }
        if self.rounds == 0 {
            return bad("--rounds must be at least 1");
        }
        if self.cool_down_below_c.is_some() && self.telemetry == Source::Off {
            return bad("--cool-down-below needs GPU readings: --telemetry is off");
        }
        if self.name.is_empty() || self.name.contains(['/', '\\']) || self.name.starts_with('.') {
            return bad(format!("--name {:?} cannot be a folder name", self.name));
        }
        if let Some(window) = self.series_window {
            if window.is_zero() {
                return bad("--series-window must be longer than 0");
            }
            if self.load.arrival == crate::workload::shape::Arrival::Rounds {
                return bad("--series-window needs --arrival closed-continuous or an open loop");
            }
        }
        if let Some(key) = &self.api_key {
            if !crate::api::http1::is_field_value(&format!("Bearer {key}")) {
                return bad("--api-key holds characters not allowed in a header");
            }
        }
        for (flag, duration) in [
            ("--timeout", self.timeout),
            ("--setup-timeout", self.setup_timeout),
            ("--telemetry-interval", self.telemetry_interval),
        ] {
            if duration.is_zero() {
                return bad(format!("{flag} must be longer than 0"));
            }
        }
        let finite = |v: Option<f64>| v.is_none_or(f64::is_finite);
        if !(finite(self.limits.stop_temp_c)
            && finite(self.limits.stop_margin_c)
            && finite(self.cool_down_below_c))
        {
            return bad("--stop-temp, --stop-margin and --cool-down-below must be numbers");
        }
        if self
            .limits
            .max_error_rate
            .is_some_and(|r| !(0.0..=1.0).contains(&r))
        {
            return bad("--max-error-rate is a share between 0 and 1");
        }
        Ok(())
    }
}
