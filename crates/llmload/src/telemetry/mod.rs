//! GPU telemetry beside the runner: readings every interval from `nvidia-smi` or a replay file,
//! appended to `telemetry.jsonl` and handed to the guard, which may stop the campaign.
//!
//! Sources sit behind one enum so that the sampler does not care where readings come from; a
//! machine without NVIDIA tools runs on with telemetry off, and says so once.

pub mod nvidia_smi;
pub mod replay;
pub mod server_metrics;

use crate::guard::Guard;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One GPU reading (SPEC §7). Fields other than `t_s`, `gpu` and `temperature_c` are absent when
/// the driver did not report them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Seconds since the attempt started.
    pub t_s: f64,
    /// GPU index.
    pub gpu: u32,
    /// Core temperature, °C.
    pub temperature_c: f64,
    /// Distance to the slowdown temperature (T.Limit), °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_c: Option<f64>,
    /// Power draw, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// Power limit, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<f64>,
    /// GPU utilisation, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
    /// Memory used, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib: Option<f64>,
    /// Software thermal slowdown active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_thermal_slowdown: Option<bool>,
    /// Hardware thermal slowdown active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_thermal_slowdown: Option<bool>,
    /// Software power cap active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_power_cap: Option<bool>,
}

/// Where readings come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "file")]
pub enum Source {
    /// `nvidia-smi` if it answers, else off (said once).
    Auto,
    /// `nvidia-smi --query-gpu … --format=csv`.
    NvidiaSmi,
    /// A JSONL file of readings, played on the real clock from the attempt's start.
    Replay(PathBuf),
    /// No telemetry.
    Off,
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Source, String> {
        match s {
            "auto" => Ok(Source::Auto),
            "nvidia-smi" => Ok(Source::NvidiaSmi),
            "off" => Ok(Source::Off),
            "nvml" => Err("NVML is not supported yet; use nvidia-smi".into()),
            _ => match s.strip_prefix("replay:") {
                Some(path) if !path.is_empty() => Ok(Source::Replay(PathBuf::from(path))),
                _ => Err(format!(
                    "{s:?}: expected auto, nvidia-smi, replay:FILE or off"
                )),
            },
        }
    }
}

/// Summary of the readings of an attempt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// Where readings came from, or why there were none.
    pub source: String,
    /// Readings taken (all GPUs).
    pub readings: u32,
    /// Highest sampled temperature, °C.
    pub max_temperature_c: Option<f64>,
    /// Lowest sampled T.Limit margin, °C.
    pub min_margin_c: Option<f64>,
    /// Share of readings (0–1) with SW thermal slowdown active, among those that report it.
    pub sw_thermal_slowdown_share: Option<f64>,
    /// Share with HW thermal slowdown active.
    pub hw_thermal_slowdown_share: Option<f64>,
    /// Share with the SW power cap active.
    pub sw_power_cap_share: Option<f64>,
    /// The target's own `/metrics`, where it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<server_metrics::ServerMetricsSummary>,
}

impl TelemetrySummary {
    fn add(&mut self, r: &Reading, counts: &mut [(u32, u32); 3]) {
        self.readings += 1;
        self.max_temperature_c = Some(
            self.max_temperature_c
                .map_or(r.temperature_c, |m| m.max(r.temperature_c)),
        );
        if let Some(margin) = r.margin_c {
            self.min_margin_c = Some(self.min_margin_c.map_or(margin, |m| m.min(margin)));
        }
        for (i, flag) in [r.sw_thermal_slowdown, r.hw_thermal_slowdown, r.sw_power_cap]
            .into_iter()
            .enumerate()
        {
            if let Some(active) = flag {
                counts[i].0 += u32::from(active);
                counts[i].1 += 1;
            }
        }
        let share = |(active, of): (u32, u32)| (of > 0).then(|| f64::from(active) / f64::from(of));
        self.sw_thermal_slowdown_share = share(counts[0]);
        self.hw_thermal_slowdown_share = share(counts[1]);
        self.sw_power_cap_share = share(counts[2]);
    }
}

/// The sampler's settings.
#[derive(Clone, Debug)]
pub struct Sampler {
    /// Where readings come from.
    pub source: Source,
    /// Time between live readings.
    pub interval: Duration,
}

impl Sampler {
    /// Reads until `stop`, writing `telemetry.jsonl` in `dir` and passing each reading to the
    /// guard. Returns the summary.
    pub async fn run(
        self,
        dir: PathBuf,
        origin: Instant,
        guard: Arc<Guard>,
        stop: CancellationToken,
    ) -> TelemetrySummary {
        let mut summary = TelemetrySummary::default();
        let source = match self.source {
            Source::Auto if nvidia_smi::available().await => Source::NvidiaSmi,
            Source::Auto => {
                eprintln!("note: no GPU telemetry available (nvidia-smi not found or not answering); running without it");
                summary.source = "none available".into();
                return summary;
            }
            other => other,
        };
        summary.source = match &source {
            Source::Replay(path) => format!("replay:{}", path.display()),
            Source::NvidiaSmi => "nvidia-smi".into(),
            _ => "off".into(),
        };
        if source == Source::Off {
            return summary;
        }
        let mut file = match std::fs::File::create(dir.join("telemetry.jsonl")) {
            Ok(f) => std::io::BufWriter::new(f),
            Err(e) => {
                eprintln!("warning: cannot write telemetry.jsonl: {e}");
                return summary;
            }
        };
        let mut counts = [(0u32, 0u32); 3];
        let mut on_reading = |r: Reading| {
            if serde_json::to_writer(&mut file, &r).is_ok() {
                let _ = file.write_all(b"\n").and_then(|()| file.flush());
            }
            summary.add(&r, &mut counts);
            guard.observe_reading(r);
        };
        match source {
            Source::Replay(path) => replay::play(&path, origin, &stop, &mut on_reading).await,
            Source::NvidiaSmi => {
                nvidia_smi::sample(self.interval, origin, &stop, &mut on_reading).await
            }
            Source::Auto | Source::Off => {}
        }
        summary
    }
}
