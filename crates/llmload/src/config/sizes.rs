//! What no run can afford, refused before anything is created: lengths and counts past their
//! bounds, more streams than the process may open sockets for or the memory holds.

use super::parse::bad;
use super::{Config, MAX_ARRIVALS, MAX_ROUNDS, MAX_TOKENS};
use crate::error::ConfigError;
use crate::workload::length::Length;

/// This process's open-files limit, as high as it may raise it.
pub(super) fn open_files_limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE)
        .ok()
        .map(|(_, hard)| hard)
        .filter(|&hard| hard != rlimit::INFINITY)
}

/// Open files llmload keeps for itself beside its sockets: its records, its runtime, a margin.
const OWN_FILES: u64 = 64;

/// The memory available to new work (`MemAvailable` of `/proc/meminfo`), in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

impl Config {
    /// Values that no run can afford are usage errors, before anything is created: lengths,
    /// counts, and the streams against the open-files limit and the memory.
    pub(super) fn check_sizes(&self) -> Result<(), ConfigError> {
        let tokens = |what: &str, lengths: &[Length]| {
            let longest = lengths.iter().map(Length::max_tokens).max().unwrap_or(0);
            if longest > MAX_TOKENS {
                return bad(format!(
                    "--{what} {longest} is above the {MAX_TOKENS} tokens llmload sends or reads \
                     per request"
                ));
            }
            Ok(longest)
        };
        let input = tokens("input-tokens", &self.input_tokens)?;
        let output = tokens("output-tokens", &self.output_tokens)?;
        if self.rounds > MAX_ROUNDS || self.warmup > MAX_ROUNDS {
            return bad(format!("--rounds and --warmup are at most {MAX_ROUNDS}"));
        }
        if let Some(n) = self.load.requests.filter(|&n| n > MAX_ARRIVALS) {
            return bad(format!("--requests {n} is above {MAX_ARRIVALS} per case"));
        }
        if let Some(arrivals) = self
            .load
            .stage_arrivals()
            .filter(|&a| a > MAX_ARRIVALS as f64)
        {
            return bad(format!(
                "--stages make about {arrivals:.0} arrivals, above the {MAX_ARRIVALS} a run may \
                 schedule"
            ));
        }
        if let (Some(duration), Some(rate)) = (
            self.load.duration,
            self.load.rate_rps.iter().copied().reduce(f64::max),
        ) {
            let arrivals = duration.as_secs_f64() * rate;
            if arrivals > MAX_ARRIVALS as f64 {
                return bad(format!(
                    "--rate {rate} for --duration {} makes about {arrivals:.0} arrivals, above \
                     the {MAX_ARRIVALS} a case may schedule",
                    humantime::format_duration(duration)
                ));
            }
        }
        // A shard holds only its share of the concurrency or of the in-flight cap.
        let shard = self.sharding.shard;
        let streams = self
            .concurrency
            .iter()
            .copied()
            .chain(self.load.max_in_flight)
            .max()
            .map_or(1, |c| shard.share_u32(c));
        // Besides a socket per stream: llmload's own files, the runtime's, a few spare.
        let needed = u64::from(streams) + OWN_FILES;
        if let Some(limit) = open_files_limit().filter(|&l| needed > l) {
            return bad(format!(
                "--concurrency {streams} needs {needed} open files ({streams} sockets and \
                 {OWN_FILES} of llmload's own), more than the {limit} this process may open \
                 (`ulimit -Hn`); raise the limit or lower the concurrency"
            ));
        }
        // Each stream holds its request body (about 8 bytes a token) and 8 bytes per token
        // event, with about 16 KiB of buffers and state.
        let per_stream = 16_384 + 8 * (u64::from(input) + u64::from(output));
        let needed = u64::from(streams).saturating_mul(per_stream);
        if let Some(available) = available_memory().filter(|&a| needed > a / 10 * 8) {
            return bad(format!(
                "{streams} streams of {input} prompt and {output} output tokens need about {} \
                 MiB, more than the {} MiB of memory available",
                needed >> 20,
                available >> 20
            ));
        }
        Ok(())
    }
}
