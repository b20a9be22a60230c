//! GPU telemetry beside the runner: readings every interval from NVML, `nvidia-smi` or a replay
//! file, appended to `telemetry.jsonl` and handed to an observer (the guard), which may stop the campaign.
//!
//! Sources sit behind one enum so that the sampler does not care where readings come from. The
//! source is settled before the attempt starts: `auto` tries NVML, then `nvidia-smi`, and a
//! machine with neither runs on with telemetry off, saying so once; a source asked for by name
//! that is not there is an error.

pub mod nvidia_smi;
pub mod nvml;
pub mod replay;
pub mod server_metrics;

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One GPU reading. Fields other than `t_s`, `gpu` and `temperature_c` are absent when
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
    /// NVML if it loads and sees a GPU, else `nvidia-smi` if it answers, else off (said once).
    Auto,
    /// NVML (`libnvidia-ml`), loaded at run time.
    Nvml,
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
            "nvml" => Ok(Source::Nvml),
            "nvidia-smi" => Ok(Source::NvidiaSmi),
            "off" => Ok(Source::Off),
            _ => match s.strip_prefix("replay:") {
                Some(path) if !path.is_empty() => Ok(Source::Replay(PathBuf::from(path))),
                _ => Err(format!(
                    "{s:?}: expected auto, nvml, nvidia-smi, replay:FILE or off"
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

/// A source asked for by name is not there.
#[derive(Debug, thiserror::Error)]
#[error(
    "--telemetry {asked}: {why}; use another source (auto, nvml, nvidia-smi, replay:FILE) or off"
)]
pub struct Unavailable {
    /// The source asked for.
    pub asked: &'static str,
    /// Why it cannot be read, in one line.
    pub why: String,
}

impl From<Unavailable> for crate::error::Error {
    fn from(e: Unavailable) -> Self {
        crate::error::Error::Target(e.to_string())
    }
}

/// A source settled at the start of a run.
enum Live {
    Nvml(Arc<nvml_wrapper::Nvml>),
    NvidiaSmi,
    Replay(PathBuf),
    /// No readings; the summary's `source` says why.
    Without(&'static str),
}

/// The sampler: a settled source and the time between readings.
pub struct Sampler {
    live: Live,
    interval: Duration,
}

impl Sampler {
    /// Settles `source`: `auto` picks NVML, else `nvidia-smi`, else none (said once on stderr);
    /// `nvml` and `nvidia-smi` must answer now, or the run does not start. `quiet` keeps the note
    /// off stderr (the summary still says there were no readings).
    pub async fn connect(
        source: &Source,
        interval: Duration,
        quiet: bool,
    ) -> Result<Sampler, Unavailable> {
        let live = match source {
            Source::Off => Live::Without("off"),
            Source::Replay(path) => Live::Replay(path.clone()),
            Source::Nvml => {
                Live::Nvml(nvml::open().map_err(|why| Unavailable { asked: "nvml", why })?)
            }
            Source::NvidiaSmi if nvidia_smi::available().await => Live::NvidiaSmi,
            Source::NvidiaSmi => {
                return Err(Unavailable {
                    asked: "nvidia-smi",
                    why: "nvidia-smi is not installed or does not answer a query".into(),
                })
            }
            Source::Auto => match nvml::open() {
                Ok(handle) => Live::Nvml(handle),
                Err(_) if nvidia_smi::available().await => Live::NvidiaSmi,
                Err(why) => {
                    if !quiet {
                        crate::console::note(format_args!(
                            "note: no GPU telemetry available ({why}; nvidia-smi not found or not \
                         answering); running without it"
                        ));
                    }
                    Live::Without("none available")
                }
            },
        };
        Ok(Sampler { live, interval })
    }

    /// Reads until `stop`, writing `telemetry.jsonl` in `dir` and passing each reading to
    /// `observe` (the guard). Returns the summary.
    pub async fn run(
        self,
        dir: PathBuf,
        origin: Instant,
        mut observe: impl FnMut(Reading) + Send,
        stop: CancellationToken,
    ) -> TelemetrySummary {
        let mut summary = TelemetrySummary {
            source: match &self.live {
                Live::Nvml(_) => "nvml".into(),
                Live::NvidiaSmi => "nvidia-smi".into(),
                Live::Replay(path) => format!("replay:{}", path.display()),
                Live::Without(why) => (*why).into(),
            },
            ..TelemetrySummary::default()
        };
        if let Live::Without(_) = self.live {
            return summary;
        }
        let mut file = match std::fs::File::create(dir.join(FILE)) {
            Ok(f) => std::io::BufWriter::new(f),
            Err(e) => {
                crate::console::note(format_args!("warning: cannot write {FILE}: {e}"));
                return summary;
            }
        };
        let mut counts = [(0u32, 0u32); 3];
        let mut on_reading = |r: Reading| {
            if serde_json::to_writer(&mut file, &r).is_ok() {
                let _ = file.write_all(b"\n").and_then(|()| file.flush());
            }
            summary.add(&r, &mut counts);
            observe(r);
        };
        match self.live {
            Live::Replay(path) => replay::play(&path, origin, &stop, &mut on_reading).await,
            Live::NvidiaSmi => {
                nvidia_smi::sample(self.interval, origin, &stop, &mut on_reading).await;
            }
            Live::Nvml(handle) => {
                nvml::sample(handle, self.interval, origin, &stop, &mut on_reading).await;
            }
            Live::Without(_) => {}
        }
        summary
    }
}

/// The readings file of an attempt.
pub const FILE: &str = "telemetry.jsonl";

/// The readings written so far to `telemetry.jsonl` in `dir`; none when there is no file. A line
/// that does not parse (one being written) is skipped.
pub fn written(dir: &std::path::Path) -> Vec<Reading> {
    crate::files::read_text(&dir.join(FILE))
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Calls `read` every `interval` on an absolute schedule until `stop`, with the reading time in
/// seconds since `origin`, and passes each reading it returns to `on_reading`: the loop every
/// live GPU source shares.
pub(crate) async fn every<F, Fut>(
    interval: Duration,
    origin: Instant,
    stop: &CancellationToken,
    on_reading: &mut impl FnMut(Reading),
    mut read: F,
) where
    F: FnMut(f64) -> Fut,
    Fut: std::future::Future<Output = Vec<Reading>>,
{
    let mut next = Instant::now();
    loop {
        let t_s = next.saturating_duration_since(origin).as_secs_f64();
        for reading in read(t_s).await {
            on_reading(reading);
        }
        next += interval;
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep_until(next) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_name_parses_and_a_bad_one_lists_them() {
        assert_eq!("nvml".parse(), Ok(Source::Nvml));
        assert_eq!("auto".parse(), Ok(Source::Auto));
        assert_eq!("nvidia-smi".parse(), Ok(Source::NvidiaSmi));
        assert_eq!(
            "replay:t.jsonl".parse(),
            Ok(Source::Replay(PathBuf::from("t.jsonl")))
        );
        let e = "gpu".parse::<Source>().expect_err("not a source");
        assert!(e.contains("nvml") && e.contains("replay:FILE"), "{e}");
        assert!("replay:".parse::<Source>().is_err());
    }

    #[test]
    fn written_readings_skip_a_torn_line_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(written(dir.path()).is_empty());
        std::fs::write(
            dir.path().join(FILE),
            "{\"t_s\":0.5,\"gpu\":0,\"temperature_c\":60}\n{\"t_s\":1.5,\"gpu\":0,\"tem",
        )
        .expect("write");
        let readings = written(dir.path());
        assert_eq!(readings.len(), 1);
        assert_eq!(readings[0].t_s, 0.5);
    }
}
