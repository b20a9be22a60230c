//! Live readings from `nvidia-smi --query-gpu … --format=csv`, once per interval.
//!
//! The T.Limit margin (`temperature.gpu.tlimit`) exists only on recent drivers: the query is
//! tried with it first and without it when the driver refuses the field.

use super::Reading;
use std::time::Duration;
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const BASE_FIELDS: &str = "index,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,\
utilization.gpu,memory.used,clocks_event_reasons.sw_thermal_slowdown,\
clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap";

/// The longest one `nvidia-smi` query may take.
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn query(with_margin: bool) -> Option<String> {
    let fields = if with_margin {
        format!("{BASE_FIELDS},temperature.gpu.tlimit")
    } else {
        BASE_FIELDS.to_owned()
    };
    // A wedged driver can hang nvidia-smi: it gets a deadline, and is killed past it.
    let run = Command::new("nvidia-smi")
        .args([
            format!("--query-gpu={fields}"),
            "--format=csv,noheader,nounits".to_owned(),
        ])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(QUERY_TIMEOUT, run).await.ok()?.ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether `nvidia-smi` answers a query.
pub async fn available() -> bool {
    query(false)
        .await
        .is_some_and(|text| !text.trim().is_empty())
}

fn number(field: &str) -> Option<f64> {
    field.trim().parse().ok()
}

fn active(field: &str) -> Option<bool> {
    match field.trim() {
        "Active" => Some(true),
        "Not Active" => Some(false),
        _ => None,
    }
}

/// Parses one CSV line of the query (`[N/A]` and unsupported values become absent fields).
pub fn parse_line(line: &str, t_s: f64) -> Option<Reading> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 11 {
        return None;
    }
    Some(Reading {
        t_s,
        gpu: f[0].trim().parse().ok()?,
        temperature_c: number(f[1])?,
        power_w: number(f[2]),
        power_limit_w: number(f[3]),
        sm_clock_mhz: number(f[4]),
        mem_clock_mhz: number(f[5]),
        utilization_pct: number(f[6]),
        memory_used_mib: number(f[7]),
        sw_thermal_slowdown: active(f[8]),
        hw_thermal_slowdown: active(f[9]),
        sw_power_cap: active(f[10]),
        margin_c: f.get(11).and_then(|m| number(m)),
    })
}

/// Reads every `interval` (on an absolute schedule) until `stop`; drops the margin column once
/// the driver refuses it.
pub async fn sample(
    interval: Duration,
    origin: Instant,
    stop: &CancellationToken,
    on_reading: &mut impl FnMut(Reading),
) {
    let with_margin = std::sync::atomic::AtomicBool::new(true);
    super::every(interval, origin, stop, on_reading, |t_s| {
        let with_margin = &with_margin;
        async move {
            use std::sync::atomic::Ordering::Relaxed;
            let mut text = query(with_margin.load(Relaxed)).await;
            if text.is_none() && with_margin.load(Relaxed) {
                with_margin.store(false, Relaxed);
                text = query(false).await;
            }
            text.iter()
                .flat_map(|t| t.lines())
                .filter_map(|l| parse_line(l, t_s))
                .collect()
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_query_line_with_and_without_margin() {
        let r = parse_line(
            "0, 64, 240.50, 300.00, 2100, 12001, 97, 40210, Not Active, Not Active, Active, 21",
            1.0,
        )
        .expect("valid line");
        assert_eq!((r.gpu, r.temperature_c, r.margin_c), (0, 64.0, Some(21.0)));
        assert_eq!(
            (r.sw_power_cap, r.hw_thermal_slowdown),
            (Some(true), Some(false))
        );
        let r = parse_line(
            "1, 55, [N/A], 300.00, 2100, 12001, 0, 100, Not Active, Not Active, Not Active",
            2.0,
        )
        .expect("valid line");
        assert_eq!((r.gpu, r.power_w, r.margin_c), (1, None, None));
        assert!(parse_line("garbage", 0.0).is_none());
    }
}
