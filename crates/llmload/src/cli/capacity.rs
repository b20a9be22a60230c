//! `llmload capacity`'s flags into the core's types: the run's settings with the capacity
//! defaults (closed-continuous, or sessions of 4 turns with `--think-time`, or Poisson with
//! `--rate`), and `CapacityOptions`.

use super::CapacityArgs;
use crate::capacity::{parse_resolution, CapacityOptions, Rule};
use crate::config::{ConfigError, Settings};
use crate::workload::shape::Arrival;

/// Turns per user session when `--think-time` is given without `--turns`.
const DEFAULT_TURNS: u32 = 4;

impl CapacityArgs {
    /// The run's settings (flags over `--config`), with the capacity defaults: the load is
    /// what the search sets, so `--concurrency` is refused; with `--think-time`, sessions of
    /// [`DEFAULT_TURNS`] turns; without `--arrival`, closed-continuous (Poisson where `--rate`
    /// gives the first rate).
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let mut settings = self.run.settings()?;
        if settings.load.concurrency.is_some() {
            return Err(ConfigError(
                "capacity sets the load itself: leave out --concurrency (bound the search with \
                 --max-load)"
                    .into(),
            ));
        }
        if settings.sessions.think_time.is_some() {
            settings.sessions.turns.get_or_insert(DEFAULT_TURNS);
        }
        if settings.load.arrival.is_none() {
            settings.load.arrival = Some(if settings.load.rate.is_some() {
                Arrival::Poisson
            } else {
                Arrival::ClosedContinuous
            });
        }
        if matches!(settings.load.arrival, Some(Arrival::Rounds)) {
            return Err(ConfigError(
                "capacity keeps the load steady: --arrival rounds does not apply (closed-continuous, \
                 poisson, gamma or constant)"
                    .into(),
            ));
        }
        let open = matches!(
            settings.load.arrival,
            Some(Arrival::Poisson | Arrival::Gamma | Arrival::Constant)
        );
        if open {
            // The first rate the search tries.
            settings.load.rate.get_or_insert_with(|| vec![1.0]);
        }
        Ok(settings)
    }

    /// The search's options; `command` is the command line as given (for the line that goes on).
    pub fn options(&self, command: Vec<String>) -> Result<CapacityOptions, ConfigError> {
        let rules = self
            .slo
            .iter()
            .map(|text| Ok((text.parse::<Rule>()?, text.clone())))
            .collect::<Result<Vec<_>, ConfigError>>()?;
        for (flag, value) in [("--max-load", self.max_load), ("--start", self.start)] {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(ConfigError(format!("{flag} {v} must be above zero")));
            }
        }
        if let (Some(start), Some(max)) = (self.start, self.max_load) {
            if start > max {
                return Err(ConfigError(format!(
                    "--start {start} is above --max-load {max}"
                )));
            }
        }
        // `run`'s --gpu-cost-per-hour and --gpus (checked where the run's settings are
        // resolved): each block's cost, and the answer's.
        let guard = self.settings()?.guard;
        Ok(CapacityOptions {
            rules,
            resolution: self
                .resolution
                .as_deref()
                .map(parse_resolution)
                .transpose()?,
            start: self.start,
            max_load: self.max_load,
            budget: self
                .budget
                .as_deref()
                .map(|b| crate::config::parse_duration("budget", b))
                .transpose()?,
            gpu_cost_per_hour: guard.gpu_cost_per_hour,
            gpus: guard.gpus.unwrap_or(1),
            resume: self.resume.clone(),
            command,
        })
    }
}
