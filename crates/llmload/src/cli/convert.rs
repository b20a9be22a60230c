//! Flags into the core's types: the campaign file under `run`'s flags, `SweepOptions`, the
//! compare gate's rules and `Question` for `plan`.

use super::{CompareArgs, PlanArgs, RunArgs, SweepArgs};
use crate::cases::SweepOptions;
use crate::compare::gate::Rule;
use crate::config::{parse_duration, Combine, ConfigError, Settings};
use crate::plan::{parse_budget, Question, Wanted};
use crate::summary::sweep::StopRules;

impl RunArgs {
    /// The run's settings: these flags over the campaign file of `--config`, if any.
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let flags = self.settings.clone();
        match &self.config {
            Some(path) => Ok(flags.combine(Settings::read(path)?)),
            None => Ok(flags),
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
        if a.run
            .settings
            .sharding
            .shard
            .as_deref()
            .is_some_and(|s| !whole(s))
        {
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
            max_loads: match a.max_loads {
                Some(0 | 1) => {
                    return Err(ConfigError(
                        "--max-loads must be 2 or more (a sweep needs two loads)".into(),
                    ))
                }
                Some(n) => n,
                None => 12,
            },
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
            Some(path) => Some(crate::files::read_text(path).map_err(|e| {
                ConfigError(format!(
                    "cannot read thresholds file {}: {e}",
                    path.display()
                ))
            })?),
            None => None,
        };
        let path = self.thresholds.as_ref().map(|p| p.display().to_string());
        crate::compare::gate::rules(&self.fail_if, path.as_deref().zip(text.as_deref()))
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
