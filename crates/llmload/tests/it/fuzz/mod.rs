//! Property-based fuzzing of every decoder that reads bytes from outside: the SSE decoder, the
//! three APIs' event parsers, the HTTP/1.1 head parser and body decoder, the `requests.jsonl`
//! reader and the readers of other tools' result files. Each is fed arbitrary bytes, split at arbitrary points, and must
//! not panic; where the decoder has a contract (the same events for any split, a bound on what
//! it holds, exactly the payload of a well-formed encoding), the contract is checked too.
//!
//! The default case count is proptest's (256, or `PROPTEST_CASES`); `scripts/fuzz.sh` runs the
//! same properties for many more cases in release mode.
#![expect(
    clippy::expect_used,
    reason = "strategies and helpers fail loudly on a broken fixture"
)]

use llmload::api::http1::{parse_head, BodyDecoder, Framing};
use llmload::api::sse::{decode_all, SseDecoder, TooLong, MAX_EVENT_BYTES};
use llmload::api::{Api, Counters, Event, EventError};
use llmload::attempt::records::{for_each_record, read_records};
use llmload::record::Record;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::Write as _;

const APIS: [Api; 3] = [Api::Llamacpp, Api::Completions, Api::Chat];

/// The largest response head `parse_head` waits for (its private `MAX_HEAD`).
const MAX_HEAD: usize = 64 * 1024;

mod events;
mod http;
mod peers;
mod records;
mod sse;

// ---------------------------------------------------------------------------------------------
// Splitting

/// Cut points for a stream: up to 12 arbitrary positions, or (one case in eight) every byte.
fn cuts() -> impl Strategy<Value = Cuts> {
    prop_oneof![
        7 => prop::collection::vec(any::<Index>(), 0..12).prop_map(Cuts::At),
        1 => Just(Cuts::EveryByte),
    ]
}

/// Where to split a stream.
#[derive(Clone, Debug)]
enum Cuts {
    /// At these positions (empty pieces included, when two coincide).
    At(Vec<Index>),
    /// Into single bytes.
    EveryByte,
}

impl Cuts {
    /// `bytes` in pieces, in order; their concatenation is `bytes`.
    fn split<'a>(&self, bytes: &'a [u8]) -> Vec<&'a [u8]> {
        match self {
            Cuts::EveryByte => bytes.chunks(1).collect(),
            Cuts::At(indices) => {
                let mut points: Vec<usize> =
                    indices.iter().map(|i| i.index(bytes.len() + 1)).collect();
                points.sort_unstable();
                let mut pieces = Vec::with_capacity(points.len() + 1);
                let mut start = 0;
                for point in points {
                    pieces.push(&bytes[start..point]);
                    start = point;
                }
                pieces.push(&bytes[start..]);
                pieces
            }
        }
    }
}

/// Concatenated byte tokens, up to `max` of them: arbitrary runs mixed with `words`, so that
/// inputs are sometimes close to what the decoder expects.
fn bytes_with(words: &'static [&'static [u8]], max: usize) -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..16),
        3 => prop::sample::select(words).prop_map(<[u8]>::to_vec),
        1 => "[ -~]{0,12}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(token, 0..max).prop_map(|tokens| tokens.concat())
}
