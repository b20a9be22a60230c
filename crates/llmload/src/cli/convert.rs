//! Flags into the core's types: `Settings` for `run`, `SweepOptions`, the compare gate's rules,
//! `Question` for `plan` and `SimOptions` for `sim`.

use super::{CompareArgs, PlanArgs, RunArgs, SimArgs, SweepArgs};
use crate::cases::SweepOptions;
use crate::config::{parse_duration, ConfigError, Lengths, Settings};
use crate::plan::{parse_budget, Question, Wanted};
use crate::sim::SimOptions;
use crate::summary::gate::Rule;
use crate::summary::sweep::StopRules;

impl RunArgs {
    /// The run's settings: these flags over the campaign file of `--config`, if any.
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let flags = Settings::from(self);
        match &self.config {
            Some(path) => Ok(flags.over(Settings::read(path)?)),
            None => Ok(flags),
        }
    }
}

impl From<&RunArgs> for Settings {
    fn from(a: &RunArgs) -> Settings {
        let list = |v: &Vec<u32>| (!v.is_empty()).then(|| v.clone());
        Settings {
            url: a.url.clone(),
            api: a.api,
            model: a.model.clone(),
            api_key: a.api_key.clone(),
            headers: a.headers.clone(),
            timeout: a.timeout.clone(),
            setup_timeout: a.setup_timeout.clone(),
            ca_cert: a.ca_cert.clone(),
            insecure: a.insecure.then_some(true),
            show_headers: a.show_headers.clone(),
            // Not JSON: kept as text, which the config rejects with its own message.
            extra_body: a.extra_body.as_deref().map(|text| {
                serde_json::from_str(text)
                    .unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
            }),
            input_tokens: Lengths::from_flags(&a.input_tokens),
            concurrency: list(&a.concurrency),
            output_tokens: Lengths::from_flags(&a.output_tokens),
            arrival: a.arrival,
            rate: (!a.rate.is_empty()).then(|| a.rate.clone()),
            burstiness: a.burstiness,
            duration: a.duration.clone(),
            requests: a.requests,
            max_in_flight: a.max_in_flight,
            warmup_time: a.warmup_time.clone(),
            system_prompt_tokens: a.system_prompt_tokens,
            series_window: a.series_window.clone(),
            slo_ttft: a.slo_ttft.clone(),
            slo_tpot: a.slo_tpot.clone(),
            slo_e2e: a.slo_e2e.clone(),
            trace: a.trace.clone(),
            trace_block_tokens: a.trace_block_tokens,
            dataset: a.dataset.clone(),
            dataset_lengths: a.dataset_lengths,
            dataset_output: a.dataset_output,
            stages: a.stages.clone().map(crate::config::StagesSetting::Text),
            turns: a.turns,
            turn_input: a.turn_input,
            think_time: a.think_time.clone(),
            history: a.history,
            sessions: a.sessions,
            rounds: a.rounds,
            warmup: a.warmup,
            seed: a.seed,
            out: a.out.clone(),
            name: a.name.clone(),
            corpus: a.corpus.clone(),
            tokenizer: a.tokenizer.clone(),
            best_effort: a.best_effort.then_some(true),
            telemetry: a.telemetry.clone(),
            telemetry_interval: a.telemetry_interval.clone(),
            stop_temp: a.stop_temp,
            stop_margin: a.stop_margin,
            max_duration: a.max_duration.clone(),
            max_errors: a.max_errors,
            max_error_rate: a.max_error_rate,
            cool_down_below: a.cool_down_below,
            cool_down_timeout: a.cool_down_timeout.clone(),
            quiet: a.quiet.then_some(true),
            shard: a.shard.clone(),
            attempt_id: a.attempt_id.clone(),
            start_at: a.start_at.clone(),
        }
    }
}

impl TryFrom<&SweepArgs> for SweepOptions {
    type Error = ConfigError;

    fn try_from(a: &SweepArgs) -> Result<SweepOptions, ConfigError> {
        let whole = |text: &str| {
            text.parse::<crate::workload::shard::Shard>()
                .is_ok_and(crate::workload::shard::Shard::is_whole)
        };
        if a.run.shard.as_deref().is_some_and(|s| !whole(s)) {
            return Err(ConfigError(crate::SWEEP_NOT_SHARDED.into()));
        }
        let ttft_p99_ms = a
            .stop_ttft_p99
            .as_deref()
            .map(|t| parse_duration("stop-ttft-p99", t).map(|d| d.as_secs_f64() * 1e3))
            .transpose()?;
        Ok(SweepOptions {
            auto: a.auto,
            max_load: a.max_load.unwrap_or(256.0),
            rules: StopRules {
                ttft_p99_ms,
                error_share: a.stop_error_rate,
                min_gain: a.min_gain.unwrap_or(0.05),
                stop_when_flat: a.stop_flat,
            },
        })
    }
}

impl CompareArgs {
    /// The gate's rules: `--fail-if`, then the `--thresholds` file's.
    pub fn rules(&self) -> Result<Vec<Rule>, ConfigError> {
        let text = match &self.thresholds {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                ConfigError(format!(
                    "cannot read thresholds file {}: {e}",
                    path.display()
                ))
            })?),
            None => None,
        };
        let path = self.thresholds.as_ref().map(|p| p.display().to_string());
        crate::summary::gate::rules(&self.fail_if, path.as_deref().zip(text.as_deref()))
    }
}

impl TryFrom<&PlanArgs> for Question {
    type Error = ConfigError;

    fn try_from(args: &PlanArgs) -> Result<Question, ConfigError> {
        let bad = |message: &str| Err(ConfigError(message.into()));
        if args.prompt_tokens == 0 || args.output_tokens == 0 {
            return bad("--prompt-tokens and --output-tokens must be above zero");
        }
        if args
            .max_prompt_tokens
            .is_some_and(|m| m < args.prompt_tokens)
        {
            return bad("--max-prompt-tokens is below --prompt-tokens");
        }
        let wanted = match (args.concurrency, args.rate) {
            (Some(_), Some(_)) => return bad("give --concurrency or --rate, not both"),
            (Some(0), _) => return bad("--concurrency must be above zero"),
            (_, Some(r)) if !(r.is_finite() && r > 0.0) => return bad("--rate must be above zero"),
            (Some(c), _) => Some(Wanted::Concurrency(c)),
            (None, Some(r)) => Some(Wanted::RateRps(r)),
            (None, None) => None,
        };
        Ok(Question {
            prompt_tokens: args.prompt_tokens,
            max_prompt_tokens: args.max_prompt_tokens,
            output_tokens: args.output_tokens,
            ttft_ms: parse_budget("ttft", &args.ttft)?,
            tpot_ms: args
                .tpot
                .as_ref()
                .map(|t| parse_budget("tpot", t))
                .transpose()?,
            percentile: args.percentile,
            wanted,
        })
    }
}

impl From<&SimArgs> for SimOptions {
    fn from(a: &SimArgs) -> SimOptions {
        SimOptions {
            host: a.host.clone(),
            port: a.port,
            profile: a.profile.clone(),
            slots: a.slots,
            seed: a.seed,
            time_scale: a.time_scale,
            faults: a.faults.clone(),
            schedule: a.schedule.clone(),
            hosted: a.hosted,
        }
    }
}
