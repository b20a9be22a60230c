//! Records: one per request, warmups and failures included, appended to `requests.jsonl` the
//! moment the request ends, so that nothing measured is lost when a run stops or a server fails.
//!
//! Each record carries its times (seconds since the attempt started), the server's counters and
//! the verdict of checking them against what was asked: a response whose prompt was not processed
//! in full, came from the cache, or has the wrong length is `invalid` and kept out of statistics.

use crate::api::client::Exchange;
use crate::api::Counters;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use tokio::time::Instant;

/// Seconds since the attempt started.
pub type Seconds = f64;

/// Whether a request was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Unmeasured request before a case's rounds.
    Warmup,
    /// Part of a measured round.
    Measured,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Complete, and every counter the server reported matches the request.
    Ok,
    /// Complete, but a counter contradicts the request (see `error`).
    Invalid,
    /// Did not complete (see `error_kind`).
    Error,
    /// Stopped in flight by a stop of the run.
    Cancelled,
}

/// One request, as written to `requests.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Case id, e.g. `in2048-c4-out256`.
    pub case: String,
    /// Warmup or measured.
    pub phase: Phase,
    /// Measured round number (1-based); absent for warmups.
    pub round: Option<u32>,
    /// Index of the request within its round (or warmup sequence).
    pub index: u32,
    /// Open loop: when the arrival process said the request should start.
    pub scheduled_s: Option<Seconds>,
    /// When the request was handed to the connection.
    pub sent_s: Seconds,
    /// When the first event carrying a generated token arrived.
    pub first_token_s: Option<Seconds>,
    /// When the final event arrived.
    pub done_s: Option<Seconds>,
    /// Time to first token, from `sent`.
    pub ttft_ms: Option<f64>,
    /// Complete-response time, from `sent`.
    pub e2e_ms: Option<f64>,
    /// Prompt tokens requested.
    pub input_tokens: u32,
    /// Output tokens requested.
    pub requested_output_tokens: u32,
    /// Prompt tokens the server counted (cached included).
    pub prompt_tokens: Option<u32>,
    /// Prompt tokens the server took from its cache.
    pub cached_tokens: Option<u32>,
    /// Tokens of the shared system prompt the prompt opened with: the only ones the server may
    /// take from its cache (absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_tokens: u32,
    /// Tokens the server says it generated.
    pub output_tokens: Option<u32>,
    /// Events that carried at least one generated token.
    pub token_events: u32,
    /// Generated tokens counted in the stream itself.
    pub streamed_tokens: u32,
    /// How the request ended.
    pub status: Status,
    /// Whether the server reported every counter needed to verify the response.
    pub verified: bool,
    /// `http`, `connect`, `timeout`, `disconnected`, `malformed`, `server_error`, `cancelled`,
    /// or `invalid` for a response that failed verification.
    pub error_kind: Option<String>,
    /// What went wrong, in words.
    pub error: Option<String>,
    /// Remarks that do not change the status (e.g. stream count ≠ server count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Receipt time of each token-carrying event, in ms since `sent`.
    pub event_ms: Vec<f64>,
    /// Tokens per event, present only when some event carried more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_tokens: Vec<u32>,
}

/// What a request was.
#[derive(Clone, Debug)]
pub struct RequestMeta {
    /// Case id.
    pub case: String,
    /// Warmup or measured.
    pub phase: Phase,
    /// Measured round (1-based).
    pub round: Option<u32>,
    /// Index within the round.
    pub index: u32,
    /// Prompt tokens requested.
    pub input_tokens: u32,
    /// Output tokens requested.
    pub output_tokens: u32,
    /// Tokens of the shared system prompt that opens the prompt (0: none); the server may serve
    /// these, and only these, from its cache.
    pub shared_tokens: u32,
    /// Open loop: scheduled start.
    pub scheduled: Option<Instant>,
    /// Continuous and open loops: when the runner launched it (its send is no earlier).
    pub launched: Option<Instant>,
}

/// The verdict of checking a response's counters against its request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every counter was reported.
    pub verified: bool,
    /// Contradictions between counters and request; empty when valid.
    pub problems: Vec<String>,
    /// Remarks that do not invalidate the response.
    pub notes: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Checks a complete response's counters: prompt processed in full, nothing from the cache but
/// the `shared` tokens of a shared system prompt, exactly the requested number of output tokens
/// (SPEC §4).
pub fn verify(counters: &Counters, streamed: u32, input: u32, output: u32, shared: u32) -> Verdict {
    let mut v = Verdict {
        verified: true,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    match counters.prompt_tokens {
        Some(p) if p != input => v.problems.push(format!(
            "server counted {p} prompt tokens, {input} were sent"
        )),
        Some(_) => {}
        None => v.verified = false,
    }
    match counters.cached_tokens {
        Some(c) if c > shared => v.problems.push(match shared {
            0 => format!("{c} prompt tokens came from the server's cache"),
            s => {
                format!("{c} prompt tokens came from the server's cache, more than the {s} shared")
            }
        }),
        Some(_) => {}
        None => v.verified = false,
    }
    match counters.output_tokens {
        Some(o) if o != output => v.problems.push(format!(
            "server generated {o} tokens, {output} were requested"
        )),
        Some(o) if o != streamed => v.notes.push(format!(
            "stream carried {streamed} token events for {o} generated tokens"
        )),
        Some(_) => {}
        None => {
            v.verified = false;
            if streamed != output {
                v.problems.push(format!(
                    "stream carried {streamed} tokens, {output} were requested"
                ));
            }
        }
    }
    if !v.verified {
        v.notes
            .push("server did not report every counter: response unverified".into());
    }
    v
}

impl Record {
    /// Builds the record of an exchange; `origin` is the attempt's start.
    pub fn from_exchange(meta: RequestMeta, exchange: &Exchange, origin: Instant) -> Record {
        let since = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
        let ms_from_sent =
            |t: Instant| t.saturating_duration_since(exchange.sent).as_secs_f64() * 1e3;
        let streamed = exchange.streamed_tokens();
        let (status, error_kind, error, verdict) = match &exchange.failure {
            Some(f) => {
                let status = if *f == crate::api::client::Failure::Cancelled {
                    Status::Cancelled
                } else {
                    Status::Error
                };
                (status, Some(f.kind().to_owned()), Some(f.to_string()), None)
            }
            None => {
                let v = verify(
                    &exchange.counters,
                    streamed,
                    meta.input_tokens,
                    meta.output_tokens,
                    meta.shared_tokens,
                );
                if v.problems.is_empty() {
                    (Status::Ok, None, None, Some(v))
                } else {
                    let why = v.problems.join("; ");
                    (Status::Invalid, Some("invalid".into()), Some(why), Some(v))
                }
            }
        };
        let multi = exchange.token_events.iter().any(|(_, k)| k != 1);
        Record {
            case: meta.case,
            phase: meta.phase,
            round: meta.round,
            index: meta.index,
            scheduled_s: meta.scheduled.map(since),
            sent_s: since(exchange.sent),
            first_token_s: exchange.first_token().map(since),
            done_s: exchange.done.map(since),
            ttft_ms: exchange.first_token().map(ms_from_sent),
            e2e_ms: exchange
                .done
                .filter(|_| exchange.failure.is_none())
                .map(ms_from_sent),
            input_tokens: meta.input_tokens,
            requested_output_tokens: meta.output_tokens,
            prompt_tokens: exchange.counters.prompt_tokens,
            cached_tokens: exchange.counters.cached_tokens,
            shared_tokens: meta.shared_tokens,
            output_tokens: exchange.counters.output_tokens,
            token_events: exchange.token_events.len() as u32,
            streamed_tokens: streamed,
            status,
            verified: verdict.as_ref().is_some_and(|v| v.verified),
            error_kind,
            error,
            notes: {
                let mut notes = verdict.map(|v| v.notes).unwrap_or_default();
                if exchange.retried {
                    notes
                        .push("sent twice: the server had closed the kept-alive connection".into());
                }
                notes
            },
            event_ms: exchange
                .token_events
                .iter()
                .map(|(t, _)| round3(ms_from_sent(t)))
                .collect(),
            event_tokens: if multi {
                exchange.token_events.iter().map(|(_, k)| k).collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Output tokens for throughput: the server's counter, else the stream's count.
    pub fn generated_tokens(&self) -> u32 {
        self.output_tokens.unwrap_or(self.streamed_tokens)
    }

    /// Inter-token latencies in ms: an event carrying k tokens contributes k gaps of gap/k.
    pub fn itl_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.event_ms
            .windows(2)
            .enumerate()
            .flat_map(move |(i, w)| {
                let k = self.event_tokens.get(i + 1).copied().unwrap_or(1).max(1);
                std::iter::repeat_n((w[1] - w[0]) / f64::from(k), k as usize)
            })
    }

    /// Raw gaps between consecutive token-carrying events, in ms.
    pub fn chunk_gaps_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.event_ms.windows(2).map(|w| w[1] - w[0])
    }

    /// (time, tokens) of each token-carrying event, seconds since the attempt started.
    pub fn event_times(&self) -> impl Iterator<Item = (Seconds, u32)> + '_ {
        self.event_ms.iter().enumerate().map(|(i, ms)| {
            let tokens = self.event_tokens.get(i).copied().unwrap_or(1);
            (self.sent_s + ms / 1e3, tokens)
        })
    }

    /// The last moment the request occupied the server: its final event, else its last token
    /// event, else its send.
    pub fn last_seen(&self) -> Seconds {
        self.done_s
            .unwrap_or_else(|| self.sent_s + self.event_ms.last().copied().unwrap_or(0.0) / 1e3)
    }

    /// Time per output token after the first: (complete − TTFT) / (output tokens − 1).
    pub fn tpot_ms(&self) -> Option<f64> {
        let n = self.generated_tokens();
        let decode_ms = self.e2e_ms? - self.ttft_ms?;
        (n > 1).then(|| decode_ms / f64::from(n - 1))
    }
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// Appends records to `requests.jsonl`, one flushed line per record.
pub struct RecordSink {
    file: std::io::BufWriter<std::fs::File>,
}

impl RecordSink {
    /// Creates (or appends to) the file at `path`.
    pub fn create(path: &Path) -> std::io::Result<RecordSink> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(RecordSink {
            file: std::io::BufWriter::new(file),
        })
    }

    /// Writes one record and flushes it to the file.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.file, record)?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }
}

/// Reads every record of a `requests.jsonl` file.
pub fn read_records(path: &Path) -> anyhow::Result<Vec<Record>> {
    let mut records = Vec::new();
    for_each_record(path, |r| records.push(r))?;
    Ok(records)
}

/// Reads a `requests.jsonl` file one line at a time, handing each record to `f`, so that a long
/// run's file is never held whole. A last line cut short (a run killed while writing it, with no
/// newline after it) is left out; any other line that is not a record is an error.
pub fn for_each_record(path: &Path, mut f: impl FnMut(Record)) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::BufRead;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line.trim()) {
            Ok(record) => f(record),
            Err(_) if !line.ends_with('\n') => break,
            Err(e) => {
                return Err(e).with_context(|| format!("{}:{number}: not a record", path.display()))
            }
        }
    }
    Ok(())
}

/// A measured `ok` record for tests: sent at `sent_s`, one token per event at `event_ms` after
/// the send (TTFT the first, complete response the last).
#[cfg(test)]
pub(crate) fn ok_record(
    sent_s: Seconds,
    scheduled_s: Option<Seconds>,
    event_ms: Vec<f64>,
) -> Record {
    let ttft = event_ms.first().copied();
    let e2e = event_ms.last().copied();
    let tokens = event_ms.len() as u32;
    Record {
        case: "c".into(),
        phase: Phase::Measured,
        round: None,
        index: 0,
        scheduled_s,
        sent_s,
        first_token_s: ttft.map(|t| sent_s + t / 1e3),
        done_s: e2e.map(|t| sent_s + t / 1e3),
        ttft_ms: ttft,
        e2e_ms: e2e,
        input_tokens: 8,
        requested_output_tokens: tokens,
        prompt_tokens: Some(8),
        cached_tokens: Some(0),
        shared_tokens: 0,
        output_tokens: Some(tokens),
        token_events: tokens,
        streamed_tokens: tokens,
        status: Status::Ok,
        verified: true,
        error_kind: None,
        error: None,
        notes: Vec::new(),
        event_ms,
        event_tokens: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
