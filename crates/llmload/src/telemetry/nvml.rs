//! Live readings from NVML (`libnvidia-ml`), once per interval.
//!
//! The library is loaded at run time, so the binary starts and runs on a machine without NVIDIA
//! drivers: [`open`] then fails with a reason, and `--telemetry auto` moves on to `nvidia-smi`.
//! Every field but the temperature is read on its own: a query the GPU or driver does not support
//! leaves that field absent rather than losing the reading.
//!
//! The T.Limit margin is not read here: NVML has it (`nvmlDeviceGetMarginTemperature`, recent
//! drivers), but the `nvml-wrapper` crate offers no safe call for it, and this workspace forbids
//! `unsafe`. NVML readings therefore carry no `margin_c`; `--stop-margin` needs `nvidia-smi`
//! (which reads `temperature.gpu.tlimit`) or a replay file.

use super::Reading;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// What NVML answered for one GPU, in its own units; `None` where the query failed or is not
/// supported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawReading {
    /// GPU index.
    pub gpu: u32,
    /// Die temperature, °C.
    pub temperature_c: Option<u32>,
    /// Power draw, mW.
    pub power_mw: Option<u32>,
    /// Enforced power limit, mW.
    pub power_limit_mw: Option<u32>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<u32>,
    /// GPU utilisation over the driver's last sample period, %.
    pub utilization_pct: Option<u32>,
    /// Memory used, bytes.
    pub memory_used_bytes: Option<u64>,
    /// The clock throttle reasons bitmask (`nvmlClocksThrottleReason*`).
    pub throttle_reasons: Option<u64>,
}

/// The throttle reasons a reading keeps, from NVML's bitmask: (SW thermal slowdown, HW thermal
/// slowdown, SW power cap). Other reasons (idle, application clocks, sync boost, power brake, …)
/// are not kept; the generic HW slowdown bit is not taken for a thermal one.
pub fn throttle_flags(bits: u64) -> (bool, bool, bool) {
    let reasons = ThrottleReasons::from_bits_truncate(bits);
    (
        reasons.contains(ThrottleReasons::SW_THERMAL_SLOWDOWN),
        reasons.contains(ThrottleReasons::HW_THERMAL_SLOWDOWN),
        reasons.contains(ThrottleReasons::SW_POWER_CAP),
    )
}

/// Converts what NVML answered into a reading at `t_s`; `None` without a temperature (the one
/// field a reading must have).
pub fn to_reading(raw: &RawReading, t_s: f64) -> Option<Reading> {
    let flags = raw.throttle_reasons.map(throttle_flags);
    Some(Reading {
        t_s,
        gpu: raw.gpu,
        temperature_c: f64::from(raw.temperature_c?),
        margin_c: None,
        power_w: raw.power_mw.map(|mw| f64::from(mw) / 1e3),
        power_limit_w: raw.power_limit_mw.map(|mw| f64::from(mw) / 1e3),
        sm_clock_mhz: raw.sm_clock_mhz.map(f64::from),
        mem_clock_mhz: raw.mem_clock_mhz.map(f64::from),
        utilization_pct: raw.utilization_pct.map(f64::from),
        memory_used_mib: raw.memory_used_bytes.map(|b| b as f64 / MIB),
        sw_thermal_slowdown: flags.map(|f| f.0),
        hw_thermal_slowdown: flags.map(|f| f.1),
        sw_power_cap: flags.map(|f| f.2),
    })
}

/// Loads NVML and checks that it sees at least one GPU; the error says why not, in one line.
pub fn open() -> Result<Arc<Nvml>, String> {
    let nvml = Nvml::init().map_err(|e| match e {
        NvmlError::LibloadingError(e) => one_line(&format!("cannot load NVML: {e}")),
        e => one_line(&format!("NVML does not start: {e}")),
    })?;
    match nvml.device_count() {
        Ok(0) => Err("NVML sees no GPU".into()),
        Ok(_) => Ok(Arc::new(nvml)),
        Err(e) => Err(one_line(&format!("NVML cannot count GPUs: {e}"))),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Queries every GPU NVML sees (blocking calls: run it off the async threads).
pub fn query(nvml: &Nvml) -> Vec<RawReading> {
    let count = nvml.device_count().unwrap_or(0);
    (0..count)
        .filter_map(|index| {
            let device = nvml.device_by_index(index).ok()?;
            Some(RawReading {
                gpu: index,
                temperature_c: device.temperature(TemperatureSensor::Gpu).ok(),
                power_mw: device.power_usage().ok(),
                power_limit_mw: device.enforced_power_limit().ok(),
                sm_clock_mhz: device.clock_info(Clock::SM).ok(),
                mem_clock_mhz: device.clock_info(Clock::Memory).ok(),
                utilization_pct: device.utilization_rates().ok().map(|u| u.gpu),
                memory_used_bytes: device.memory_info().ok().map(|m| m.used),
                throttle_reasons: device.current_throttle_reasons().ok().map(|r| r.bits()),
            })
        })
        .collect()
}

/// Reads every `interval` (on an absolute schedule) until `stop`.
pub async fn sample(
    nvml: Arc<Nvml>,
    interval: Duration,
    origin: Instant,
    stop: &CancellationToken,
    on_reading: &mut impl FnMut(Reading),
) {
    super::every(interval, origin, stop, on_reading, |t_s| {
        let handle = nvml.clone();
        async move {
            let raw = tokio::task::spawn_blocking(move || query(&handle))
                .await
                .unwrap_or_default();
            raw.iter().filter_map(|r| to_reading(r, t_s)).collect()
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_bits_map_to_the_three_kept_reasons() {
        // NVML: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, idle 0x1.
        assert_eq!(throttle_flags(0), (false, false, false));
        assert_eq!(throttle_flags(0x4), (false, false, true));
        assert_eq!(throttle_flags(0x20), (true, false, false));
        assert_eq!(throttle_flags(0x40), (false, true, false));
        assert_eq!(throttle_flags(0x20 | 0x40 | 0x4), (true, true, true));
        assert_eq!(
            throttle_flags(0x1 | 0x8 | 0x80),
            (false, false, false),
            "idle, generic HW slowdown and power brake are not thermal or power-cap reasons"
        );
        assert_eq!(throttle_flags(u64::MAX), (true, true, true));
    }

    #[test]
    fn raw_values_convert_to_the_reading_units() {
        let raw = RawReading {
            gpu: 1,
            temperature_c: Some(71),
            power_mw: Some(245_500),
            power_limit_mw: Some(300_000),
            sm_clock_mhz: Some(1980),
            mem_clock_mhz: Some(10_501),
            utilization_pct: Some(97),
            memory_used_bytes: Some(40_210 * 1024 * 1024),
            throttle_reasons: Some(0x4),
        };
        let r = to_reading(&raw, 2.5).expect("has a temperature");
        assert_eq!((r.t_s, r.gpu, r.temperature_c), (2.5, 1, 71.0));
        assert_eq!((r.power_w, r.power_limit_w), (Some(245.5), Some(300.0)));
        assert_eq!(
            (r.sm_clock_mhz, r.mem_clock_mhz),
            (Some(1980.0), Some(10501.0))
        );
        assert_eq!(
            (r.utilization_pct, r.memory_used_mib),
            (Some(97.0), Some(40210.0))
        );
        assert_eq!(
            (r.sw_thermal_slowdown, r.hw_thermal_slowdown, r.sw_power_cap),
            (Some(false), Some(false), Some(true))
        );
        assert_eq!(r.margin_c, None, "the wrapper has no margin query");
    }

    #[test]
    fn unsupported_queries_leave_fields_absent_and_no_temperature_no_reading() {
        let raw = RawReading {
            gpu: 0,
            temperature_c: Some(55),
            ..RawReading::default()
        };
        let r = to_reading(&raw, 0.0).expect("has a temperature");
        assert_eq!(
            (r.power_w, r.sw_power_cap, r.memory_used_mib),
            (None, None, None)
        );
        let json = serde_json::to_value(&r).expect("serialises");
        assert_eq!(
            json.as_object().map(serde_json::Map::len),
            Some(3),
            "absent fields are left out of telemetry.jsonl: {json}"
        );
        assert!(to_reading(&RawReading::default(), 0.0).is_none());
    }
}
