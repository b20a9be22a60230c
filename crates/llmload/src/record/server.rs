//! The server's own account of one request, the `server` object of a record: what the server
//! said it spent in its queue, on the prompt and on decoding, next to what the client measured.
//!
//! The figures are the server's, read from one field of one API (`source`) and kept only when
//! they are durations a request can have; `raw` holds the server's own fields they came from,
//! under the server's names, so that a figure can be checked against its source.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a server's timings came from, as `source` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimingSource {
    /// llama-server's `timings` object, on the final event of `/completion` and on the usage
    /// chunk of its `OpenAI` streams.
    #[serde(rename = "llama-server timings")]
    LlamaServer,
    /// vLLM's `metrics` object on the final usage chunk (`--enable-per-request-metrics`).
    #[serde(rename = "vllm per-request metrics")]
    Vllm,
}

impl TimingSource {
    /// The source as records and reports name it.
    pub fn name(self) -> &'static str {
        match self {
            TimingSource::LlamaServer => "llama-server timings",
            TimingSource::Vllm => "vllm per-request metrics",
        }
    }
}

/// The server's side of one request (`server` in `requests.jsonl`): present only when the
/// server reported timings. Durations are ms, as the server counted them on its own clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    /// Which field of which API the figures came from.
    pub source: TimingSource,
    /// The time the request waited before the server began on it, ms (vLLM: queued to
    /// scheduled); absent where the server does not say (llama-server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<f64>,
    /// The server's time to first token, ms: its queue and its prefill, from the moment it took
    /// the request in, as far as it reports them (llama-server: its prompt processing alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// From the server's start on the prompt to its first token, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms: Option<f64>,
    /// From the server's first token to its last, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms: Option<f64>,
    /// The server's own fields the figures were read from, under its names (durations in ms,
    /// counts in tokens).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raw: BTreeMap<String, f64>,
    /// The server's TTFT is longer than the client's: the two cannot both be right (a clock or
    /// an attribution error), and the record's notes say by how much.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ttft_exceeds_client: bool,
    /// Speculative decoding: the draft tokens the server proposed for this response and those
    /// it accepted; absent where the server reported no drafting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<Drafts>,
}

/// What a server's speculative decoding did for one response, in its own counts (llama-server's
/// `draft_n` and `draft_n_accepted`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drafts {
    /// Tokens the draft proposed.
    pub drafted: u64,
    /// Of those, the tokens the target model accepted.
    pub accepted: u64,
}

impl ServerTimings {
    /// Timings from `source` with no figure yet.
    pub fn new(source: TimingSource) -> ServerTimings {
        ServerTimings {
            source,
            queue_ms: None,
            ttft_ms: None,
            prefill_ms: None,
            decode_ms: None,
            raw: BTreeMap::new(),
            ttft_exceeds_client: false,
            drafts: None,
        }
    }

    /// Whether the server reported any figure.
    pub fn has_figures(&self) -> bool {
        self.queue_ms.is_some()
            || self.ttft_ms.is_some()
            || self.prefill_ms.is_some()
            || self.decode_ms.is_some()
    }

    /// Checks the server's TTFT against the client's `client_ttft_ms`: a server TTFT longer than
    /// the client's is flagged, and the note that says so is returned.
    pub fn check_against(&mut self, client_ttft_ms: Option<f64>) -> Option<String> {
        let (server, client) = (self.ttft_ms?, client_ttft_ms?);
        if server <= client {
            return None;
        }
        self.ttft_exceeds_client = true;
        Some(format!(
            "the server's TTFT ({server:.3} ms) exceeds the client's ({client:.3} ms): a clock or \
             attribution error, not a time the request can have taken"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_ttft_past_the_client_s_is_flagged_with_a_note() {
        let mut t = ServerTimings::new(TimingSource::Vllm);
        assert!(!t.has_figures());
        t.ttft_ms = Some(12.0);
        assert!(t.check_against(Some(15.0)).is_none());
        assert!(!t.ttft_exceeds_client);
        assert!(t.check_against(None).is_none());
        let note = t.check_against(Some(10.0)).expect("a note");
        assert!(t.ttft_exceeds_client);
        assert!(
            note.contains("12.000 ms") && note.contains("10.000 ms"),
            "{note}"
        );
    }

    #[test]
    fn the_object_is_written_compactly_and_reads_back() {
        let mut t = ServerTimings::new(TimingSource::LlamaServer);
        t.prefill_ms = Some(5.5);
        t.raw.insert("prompt_ms".into(), 5.5);
        let text = serde_json::to_string(&t).expect("json");
        assert!(text.contains(t.source.name()), "{text}");
        assert_eq!(
            text,
            r#"{"source":"llama-server timings","prefill_ms":5.5,"raw":{"prompt_ms":5.5}}"#
        );
        assert_eq!(
            serde_json::from_str::<ServerTimings>(&text).expect("reads back"),
            t
        );
    }
}

/// What asking the server to drop its prefix cache before a case did (`--reset-prefix-cache`).
pub type PrefixReset = ServerCall;

/// What asking the server to do something outside the load did: drop its prefix cache
/// (`--reset-prefix-cache`), start or stop its profiler (`--profile-server`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCall {
    /// The requests it took, as sent (`POST /reset_prefix_cache`).
    pub how: String,
    /// Whether the server said it was done.
    pub done: bool,
    /// Why not, in one line: the server's refusal (its words reduced to one printable line) or
    /// the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// `--profile-server N`: the server's profiler around the first round of the first case of N or
/// more streams, started once the server said it was running N requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerProfile {
    /// The round profiled.
    pub round: u32,
    /// The running requests it waited for.
    pub at: u32,
    /// The gauge of the server's `/metrics` read for them (`vllm:num_requests_running`, …);
    /// absent where it has none, and the profiler started once the round's requests were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gauge: Option<String>,
    /// The gauge's reading when the profiler was asked to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    /// When it was asked to start, seconds since the attempt started; absent when the server
    /// never ran that many during the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// What asking it to start did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<ServerCall>,
    /// When it was asked to stop (the round's end), seconds since the attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_s: Option<f64>,
    /// What asking it to stop did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<ServerCall>,
    /// Where the profile goes: the server writes it on its own machine.
    pub location: String,
}
