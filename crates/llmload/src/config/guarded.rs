//! The guard's options (`--telemetry`, its stop rules, the cool-down between cases), resolved.

use super::parse::{bad, optional_duration, parse_duration, parse_source};
use super::GuardOptions;
use crate::error::ConfigError;
use crate::guard::Limits;
use crate::summary::cost::Price;
use crate::telemetry::Source;
use std::time::Duration;

/// The guard's options, resolved: the telemetry source and its interval, the stop rules, and the
/// cool-down between cases.
pub(super) struct Guarded {
    pub(super) telemetry: Source,
    pub(super) telemetry_interval: Duration,
    pub(super) limits: Limits,
    pub(super) cool_down_below_c: Option<f64>,
    pub(super) cool_down_timeout: Duration,
    pub(super) price: Option<Price>,
}

impl Guarded {
    pub(super) fn resolve(options: GuardOptions) -> Result<Guarded, ConfigError> {
        let GuardOptions {
            telemetry,
            telemetry_interval,
            stop_temp,
            stop_margin,
            max_duration,
            max_errors,
            max_error_rate,
            cool_down_below,
            cool_down_timeout,
            gpu_cost_per_hour,
            gpus,
        } = options;
        Ok(Guarded {
            telemetry: parse_source(telemetry)?,
            telemetry_interval: parse_duration(
                "telemetry-interval",
                telemetry_interval.as_deref().unwrap_or("1s"),
            )?,
            limits: Limits {
                stop_temp_c: stop_temp,
                stop_margin_c: stop_margin,
                max_duration: optional_duration("max-duration", max_duration)?,
                max_errors,
                max_error_rate,
            },
            cool_down_below_c: cool_down_below,
            cool_down_timeout: parse_duration(
                "cool-down-timeout",
                cool_down_timeout.as_deref().unwrap_or("10m"),
            )?,
            price: price(gpu_cost_per_hour, gpus)?,
        })
    }
}

/// `--gpu-cost-per-hour` and `--gpus`, checked: a finite price above 0, at least one GPU, and
/// no `--gpus` without a price (it would change nothing).
fn price(per_hour: Option<f64>, gpus: Option<u32>) -> Result<Option<Price>, ConfigError> {
    let Some(per_hour) = per_hour else {
        return match gpus {
            Some(_) => bad("--gpus is for --gpu-cost-per-hour, which is not given"),
            None => Ok(None),
        };
    };
    if !(per_hour.is_finite() && per_hour > 0.0) {
        return bad(format!(
            "--gpu-cost-per-hour must be a price above 0, not {per_hour}"
        ));
    }
    let gpus = gpus.unwrap_or(1);
    if gpus == 0 {
        return bad("--gpus must be at least 1");
    }
    Ok(Some(Price { per_hour, gpus }))
}
