//! Property-based fuzzing of every decoder that reads bytes from outside: the SSE decoder, the
//! three APIs' event parsers, the HTTP/1.1 head parser and body decoder, and the
//! `requests.jsonl` reader. Each is fed arbitrary bytes, split at arbitrary points, and must
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

// ---------------------------------------------------------------------------------------------
// SSE

const SSE_WORDS: &[&[u8]] = &[
    b"data:",
    b"data: ",
    b"data",
    b":",
    b": keep-alive",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\r\n\r\n",
    b"event: message",
    b"id: 7",
    b"retry: 10",
    b"[DONE]",
    b"{\"content\":\"x\"}",
    b" ",
];

/// Streams of mostly `data` lines with few blank ones, so that events' data grows up to and past
/// small bounds; the last line is sometimes left unterminated, for `finish` to end.
fn data_lines() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        2 => Just("data".to_owned()),
        2 => Just("data:".to_owned()),
        3 => "data: ?[a-z]{0,8}",
        1 => Just(": keep-alive".to_owned()),
        1 => Just(String::new()),
    ];
    let ending = prop::sample::select(vec!["\n", "\r\n", "\r"]);
    (prop::collection::vec((line, ending), 0..32), any::<bool>()).prop_map(|(lines, terminated)| {
        let mut stream = String::new();
        let mut last_ending = 0;
        for (line, ending) in lines {
            stream.push_str(&line);
            stream.push_str(ending);
            last_ending = ending.len();
        }
        if !terminated {
            stream.truncate(stream.len() - last_ending);
        }
        stream.into_bytes()
    })
}

/// What a stream decodes to under a bound, worked out from the rules at once rather than
/// incrementally: the events the stream's lines give, whether a line or an event's data passed
/// the bound (which ends decoding), and the events `finish` adds when it did not.
#[derive(Debug, Default, PartialEq)]
struct SseOutcome {
    events: Vec<Vec<u8>>,
    overflowed: bool,
    at_finish: Vec<Vec<u8>>,
}

/// The reference decoder: LF, CR and CRLF end lines; a line longer than `limit`, or event data
/// longer than `limit` once a line has ended, is an overflow.
fn sse_model(stream: &[u8], limit: usize) -> SseOutcome {
    let mut outcome = SseOutcome::default();
    let mut data = None;
    let mut rest = stream;
    while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
        let line = &rest[..end];
        rest = &rest[end
            + if rest[end..].starts_with(b"\r\n") {
                2
            } else {
                1
            }..];
        if line.len() > limit {
            outcome.overflowed = true;
            return outcome;
        }
        model_line(line, &mut data, &mut outcome.events);
        if data.as_ref().is_some_and(|d: &Vec<u8>| d.len() > limit) {
            outcome.overflowed = true;
            return outcome;
        }
    }
    if rest.len() > limit {
        outcome.overflowed = true;
        return outcome;
    }
    if !rest.is_empty() {
        model_line(rest, &mut data, &mut outcome.at_finish);
    }
    // The last line may take the event's data past the bound: then `finish` gives nothing.
    if data.as_ref().is_some_and(|d: &Vec<u8>| d.len() > limit) {
        return outcome;
    }
    model_line(b"", &mut data, &mut outcome.at_finish);
    outcome
}

/// One line of the reference decoder: a blank line dispatches the event, `data` fields append.
fn model_line(line: &[u8], data: &mut Option<Vec<u8>>, events: &mut Vec<Vec<u8>>) {
    if line.is_empty() {
        events.extend(data.take());
        return;
    }
    if line[0] == b':' {
        return;
    }
    let (name, value) = match line.iter().position(|&b| b == b':') {
        Some(colon) => {
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[][..]),
    };
    if name == b"data" {
        match data {
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(value);
            }
            None => *data = Some(value.to_vec()),
        }
    }
}

/// Feeds `pieces` to a decoder with `limit`, checking that an error is final (every later feed
/// fails, more bytes included, and no event comes after it, nor from `finish`), then finishes
/// it when there was none.
fn sse_feed(pieces: &[&[u8]], limit: usize) -> Result<SseOutcome, TestCaseError> {
    let mut decoder = SseDecoder::with_limit(limit);
    let mut outcome = SseOutcome::default();
    let mut after_error = Vec::new();
    for piece in pieces {
        let mut events = Vec::new();
        let fed = decoder.feed(piece, &mut |d: &[u8]| events.push(d.to_vec()));
        if outcome.overflowed {
            prop_assert_eq!(fed, Err(TooLong(limit)), "an error is final");
            after_error.append(&mut events);
        } else {
            // Events before the error, in the same piece, count.
            outcome.events.append(&mut events);
            if fed.is_err() {
                prop_assert_eq!(fed, Err(TooLong(limit)));
                outcome.overflowed = true;
            }
        }
    }
    if outcome.overflowed {
        let fed = decoder.feed(b"\n\ndata: after\n\n", &mut |d: &[u8]| {
            after_error.push(d.to_vec());
        });
        prop_assert_eq!(fed, Err(TooLong(limit)), "an error is final");
        decoder.finish(&mut |d: &[u8]| after_error.push(d.to_vec()));
        prop_assert!(
            after_error.is_empty(),
            "events after the error: {:?}",
            after_error
        );
    } else {
        decoder.finish(&mut |d: &[u8]| outcome.at_finish.push(d.to_vec()));
    }
    Ok(outcome)
}

proptest! {
    /// Any bytes, any split, small bounds and the default one: the decoder never panics, gives
    /// the events of the reference decoder (and of `decode_all` under the default bound, for
    /// the whole stream and any split of it), fails exactly when a line or an event passes the
    /// bound, and never gives an event past the bound while it is fed.
    #[test]
    fn sse_any_bytes_any_split_decode_like_the_reference(
        stream in prop_oneof![3 => bytes_with(SSE_WORDS, 160), 1 => data_lines()],
        limit in prop_oneof![4 => 1usize..64, 1 => Just(MAX_EVENT_BYTES)],
        cuts in cuts(),
    ) {
        let pieces = cuts.split(&stream);
        let fed = sse_feed(&pieces, limit)?;
        let whole = sse_feed(&[&stream[..]], limit)?;
        let model = sse_model(&stream, limit);
        for event in &fed.events {
            prop_assert!(event.len() <= limit, "an event of {} bytes", event.len());
        }
        prop_assert_eq!(&fed, &whole, "the split changed the outcome");
        prop_assert_eq!(&fed, &model);
        if limit == MAX_EVENT_BYTES {
            prop_assert!(!fed.overflowed);
            let all: Vec<Vec<u8>> = fed.events.iter().chain(&fed.at_finish).cloned().collect();
            prop_assert_eq!(all, decode_all(&stream));
        }
    }

    /// An event that `finish` completes is bounded too: data and lines are held to the bound,
    /// so no event, the last one included, is longer than it.
    #[test]
    fn sse_no_event_passes_the_bound_at_finish(
        stream in prop_oneof![1 => bytes_with(SSE_WORDS, 160), 3 => data_lines()],
        limit in 1usize..32,
        cuts in cuts(),
    ) {
        let fed = sse_feed(&cuts.split(&stream), limit)?;
        for event in fed.events.iter().chain(&fed.at_finish) {
            prop_assert!(event.len() <= limit, "an event of {} bytes > {}: {:?}",
                event.len(), limit, String::from_utf8_lossy(event));
        }
    }

    /// A stream whose lines each fit the bound, and whose events' data each fit it, never
    /// overflows, however it is split; it gives the events `decode_all` gives.
    #[test]
    fn sse_streams_within_the_bound_never_fail(
        (limit, stream) in (1usize..64).prop_flat_map(|limit| (Just(limit), bounded_stream(limit))),
        cuts in cuts(),
    ) {
        let mut decoder = SseDecoder::with_limit(limit);
        let mut events = Vec::new();
        for piece in cuts.split(&stream) {
            let fed = decoder.feed(piece, &mut |d: &[u8]| events.push(d.to_vec()));
            prop_assert_eq!(fed, Ok(()));
        }
        decoder.finish(&mut |d: &[u8]| events.push(d.to_vec()));
        for event in &events {
            prop_assert!(event.len() <= limit);
        }
        prop_assert_eq!(events, decode_all(&stream));
    }
}

/// A stream whose every line holds at most `limit` bytes, with a blank line inserted wherever
/// an event's lines would otherwise add up to more than `limit` (so no event's data, which is
/// at most its lines' bytes, passes it).
fn bounded_stream(limit: usize) -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..=limit.saturating_sub(5))
            .prop_map(|v| [&b"data:"[..], &v].concat()),
        1 => prop::collection::vec(any::<u8>(), 0..=limit.saturating_sub(6))
            .prop_map(|v| [&b"data: "[..], &v].concat()),
        1 => prop::collection::vec(any::<u8>(), 0..=limit),
        1 => Just(Vec::new()),
    ]
    .prop_map(move |mut l: Vec<u8>| {
        // A line holds no line ending, and fits the bound.
        l.retain(|&b| b != b'\n' && b != b'\r');
        l.truncate(limit);
        l
    });
    let ending = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\r"]);
    let lines = prop::collection::vec((line, ending), 0..48);
    (lines, any::<bool>()).prop_map(move |(lines, terminated)| {
        let mut stream = Vec::new();
        let mut held = 0;
        let mut after_cr = false;
        let mut last_ending = 0;
        let mut push = |stream: &mut Vec<u8>, line: &[u8], ending: &[u8]| {
            // A blank line ended by LF right after a CR would join the CR's line ending.
            let ending = if line.is_empty() && after_cr && ending == b"\n" {
                &b"\r"[..]
            } else {
                ending
            };
            stream.extend_from_slice(line);
            stream.extend_from_slice(ending);
            after_cr = ending == b"\r";
            last_ending = ending.len();
        };
        for (line, ending) in lines {
            if line.is_empty() {
                held = 0;
            } else {
                let added = usize::from(held > 0) + line.len();
                if held + added > limit {
                    push(&mut stream, b"", b"\n");
                    held = line.len();
                } else {
                    held += added;
                }
            }
            push(&mut stream, &line, ending);
        }
        if !terminated {
            // The last line, unterminated, is ended by `finish`.
            stream.truncate(stream.len() - last_ending);
        }
        stream
    })
}

// ---------------------------------------------------------------------------------------------
// Events

/// Keys the three APIs' events use, and a few of their neighbours.
const EVENT_KEYS: &[&str] = &[
    "content",
    "tokens",
    "stop",
    "timings",
    "prompt_n",
    "cache_n",
    "predicted_n",
    "tokens_evaluated",
    "tokens_predicted",
    "choices",
    "text",
    "delta",
    "reasoning_content",
    "reasoning",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "error",
    "message",
    "index",
];

/// Numbers at the edges of the counters' type, and past them.
fn edge_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(u32::MAX)),
        Just(json!(u32::MAX - 1)),
        Just(json!(u64::from(u32::MAX) + 1)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(i64::MIN)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
    ]
}

/// Arbitrary JSON, at most 4 levels deep, whose object keys are mostly the events' own.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        edge_number(),
        ".{0,8}".prop_map(Value::String),
        Just(json!("")),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        let key = prop_oneof![
            4 => prop::sample::select(EVENT_KEYS).prop_map(str::to_owned),
            1 => "[a-z_]{0,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..8)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// The field `name` of an object, or the element `index` of an array (serde reads a struct from
/// either).
fn field<'a>(value: &'a Value, name: &str, index: usize) -> Option<&'a Value> {
    match value {
        Value::Object(fields) => fields.get(name),
        Value::Array(items) => items.get(index),
        _ => None,
    }
}

/// Checks what an event parser may say about a JSON value: a server error only for a non-null
/// `error` field; for llama.cpp, `done` exactly when `stop` is true and counters only then; for
/// the `OpenAI` APIs, never `done` and at most one token per choice.
fn check_event(
    api: Api,
    value: &Value,
    parsed: &Result<Event, EventError>,
) -> Result<(), TestCaseError> {
    match parsed {
        Err(EventError::Server(_)) => {
            let index = if api == Api::Llamacpp { 6 } else { 2 };
            prop_assert!(
                field(value, "error", index).is_some_and(|e| !e.is_null()),
                "a server error without an error field"
            );
        }
        Err(EventError::Malformed(_)) => {}
        Ok(event) if api == Api::Llamacpp => {
            let stop = field(value, "stop", 2) == Some(&Value::Bool(true));
            prop_assert_eq!(event.done, stop);
            if !stop {
                prop_assert_eq!(event.counters, Counters::default());
            }
            let tokens = match (field(value, "tokens", 1), field(value, "content", 0)) {
                (Some(Value::Array(ids)), _) => ids.len(),
                (_, Some(Value::String(text))) => usize::from(!text.is_empty()),
                _ => 0,
            };
            prop_assert_eq!(usize::try_from(event.tokens).ok(), Some(tokens));
        }
        Ok(event) => {
            prop_assert!(!event.done);
            let choices = match field(value, "choices", 0) {
                Some(Value::Array(choices)) => choices.len(),
                _ => 0,
            };
            prop_assert!(usize::try_from(event.tokens).is_ok_and(|t| t <= choices));
        }
    }
    Ok(())
}

/// A counter as an event may carry it: absent, or a number that may not fit `u32`.
fn counter() -> impl Strategy<Value = Option<Value>> {
    prop::option::weighted(0.7, edge_number())
}

/// The counter as `u32`: `Ok(None)` when absent or null, `Err` when it does not fit.
fn as_u32(value: Option<&Value>) -> Result<Option<u32>, ()> {
    value.filter(|v| !v.is_null()).map_or(Ok(None), |v| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or(())
    })
}

/// Sets `key` to `value` when there is one.
fn put(object: &mut Value, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object[key] = value;
    }
}

/// A llama.cpp `/completion` event of the right shape, with counters at and past `u32`'s edge.
fn llamacpp_event() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![
            ".{0,4}".prop_map(Value::String),
            Just(Value::Null)
        ]),
        prop::option::of(prop::collection::vec(any::<u32>(), 0..4)),
        prop::option::of(any::<bool>()),
        (counter(), counter()),
        prop::option::of((counter(), counter(), counter())),
    )
        .prop_map(|(content, tokens, stop, (evaluated, predicted), timings)| {
            let mut event = json!({});
            put(&mut event, "content", content);
            put(&mut event, "tokens", tokens.map(|t| json!(t)));
            put(&mut event, "stop", stop.map(Value::Bool));
            put(&mut event, "tokens_evaluated", evaluated);
            put(&mut event, "tokens_predicted", predicted);
            if let Some((prompt_n, cache_n, predicted_n)) = timings {
                let mut t = json!({"prompt_ms": 1.5});
                put(&mut t, "prompt_n", prompt_n);
                put(&mut t, "cache_n", cache_n);
                put(&mut t, "predicted_n", predicted_n);
                event["timings"] = t;
            }
            event
        })
}

/// An `OpenAI` chunk of the right shape: choices with or without text, and a usage object with
/// counters at and past `u32`'s edge.
fn openai_chunk() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        ".{0,4}".prop_map(Value::String),
        Just(Value::Null),
        Just(json!("")),
    ];
    let choice = prop_oneof![
        text.clone()
            .prop_map(|t| json!({"index": 0, "text": t, "finish_reason": null})),
        (text.clone(), text.clone(), text).prop_map(
            |(c, r, s)| json!({"delta": {"content": c, "reasoning_content": r, "reasoning": s}})
        ),
        Just(json!({"delta": {"role": "assistant"}})),
        Just(json!({})),
    ];
    (
        prop::option::of(prop::collection::vec(choice, 0..4)),
        prop::option::of((counter(), counter(), prop::option::of(counter()))),
    )
        .prop_map(|(choices, usage)| {
            let mut chunk = json!({"id": "x", "object": "chat.completion.chunk"});
            put(&mut chunk, "choices", choices.map(Value::Array));
            if let Some((prompt, completion, details)) = usage {
                let mut u = json!({"total_tokens": 3});
                put(&mut u, "prompt_tokens", prompt);
                put(&mut u, "completion_tokens", completion);
                if let Some(cached) = details {
                    let mut d = json!({});
                    put(&mut d, "cached_tokens", cached);
                    u["prompt_tokens_details"] = d;
                }
                chunk["usage"] = u;
            }
            chunk
        })
}

/// Whether a text field counts as a token (a non-empty string).
fn carries(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

/// Edits applied to bytes: cut at a point, or a byte replaced.
fn mutate(mut bytes: Vec<u8>, edits: &[(Index, u8, bool)]) -> Vec<u8> {
    for (at, byte, cut) in edits {
        if bytes.is_empty() {
            break;
        }
        let at = at.index(bytes.len());
        if *cut {
            bytes.truncate(at);
        } else {
            bytes[at] = *byte;
        }
    }
    bytes
}

const JSON_WORDS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\"content\":",
    b"\"tokens\":",
    b"\"stop\":true",
    b"\"timings\":",
    b"\"prompt_n\":4294967295",
    b"\"cache_n\":4294967295",
    b"\"choices\":",
    b"\"delta\":",
    b"\"usage\":",
    b"\"error\":",
    b"null",
    b"true",
    b"-1",
    b"1e999",
    b"18446744073709551616",
    b"\\u0000",
    b"\\ud800",
    b"[DONE]",
];

proptest! {
    /// Arbitrary bytes, JSON-ish bytes and mutated JSON: no parser panics, and what each says is
    /// consistent with the value (see `check_event`).
    #[test]
    fn events_of_any_bytes_never_panic(
        bytes in prop_oneof![
            bytes_with(JSON_WORDS, 96),
            (json_value(), prop::collection::vec((any::<Index>(), any::<u8>(), any::<bool>()), 0..4))
                .prop_map(|(v, edits)| mutate(serde_json::to_vec(&v).expect("serialises"), &edits)),
        ],
    ) {
        for api in APIS {
            let parsed = api.parse_event(&bytes);
            if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                check_event(api, &value, &parsed)?;
            }
        }
    }

    /// Arbitrary JSON values, mostly with the events' own keys: no parser panics, and what each
    /// says is consistent with the value.
    #[test]
    fn events_of_any_json_never_panic(value in json_value()) {
        let bytes = serde_json::to_vec(&value).expect("serialises");
        for api in APIS {
            check_event(api, &value, &api.parse_event(&bytes))?;
        }
    }

    /// llama.cpp events with counters anywhere in `u32` and past it: a counter that does not fit
    /// is a malformed event, `prompt_n + cache_n` never overflows (no counter rather than a
    /// wrapped one), and every counter is the one sent.
    #[test]
    fn llamacpp_counters_at_the_edges(value in llamacpp_event()) {
        let parsed = Api::Llamacpp.parse_event(&serde_json::to_vec(&value).expect("serialises"));
        let timings = value.get("timings");
        let counters = [
            value.get("tokens_evaluated"),
            value.get("tokens_predicted"),
            timings.and_then(|t| t.get("prompt_n")),
            timings.and_then(|t| t.get("cache_n")),
            timings.and_then(|t| t.get("predicted_n")),
        ]
        .map(as_u32);
        if counters.iter().any(Result::is_err) {
            prop_assert!(matches!(parsed, Err(EventError::Malformed(_))), "{:?}", parsed);
            return Ok(());
        }
        let [evaluated, predicted, prompt_n, cache_n, predicted_n] =
            counters.map(Result::unwrap_or_default);
        let event = parsed.expect("a well-shaped event");
        check_event(Api::Llamacpp, &value, &Ok(event))?;
        if event.done {
            let sum = prompt_n.map(|p| u64::from(p) + u64::from(cache_n.unwrap_or(0)));
            let expected = Counters {
                prompt_tokens: evaluated.or_else(|| sum.and_then(|s| u32::try_from(s).ok())),
                cached_tokens: cache_n,
                output_tokens: predicted_n.or(predicted),
            };
            prop_assert_eq!(event.counters, expected);
        }
    }

    /// `OpenAI` chunks with usage counters anywhere in `u32` and past it: a counter that does not
    /// fit is a malformed chunk; otherwise one token per choice with text, and the counters sent.
    #[test]
    fn openai_counters_at_the_edges(value in openai_chunk()) {
        let bytes = serde_json::to_vec(&value).expect("serialises");
        let usage = value.get("usage");
        let counters = [
            usage.and_then(|u| u.get("prompt_tokens")),
            usage.and_then(|u| u.get("completion_tokens")),
            usage.and_then(|u| u.get("prompt_tokens_details")).and_then(|d| d.get("cached_tokens")),
        ]
        .map(as_u32);
        for api in [Api::Completions, Api::Chat] {
            let parsed = api.parse_event(&bytes);
            if counters.iter().any(Result::is_err) {
                prop_assert!(matches!(parsed, Err(EventError::Malformed(_))), "{:?}", parsed);
                continue;
            }
            let [prompt, completion, cached] = counters.map(Result::unwrap_or_default);
            let event = parsed.expect("a well-shaped chunk");
            let choices = value.get("choices").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let tokens = choices
                .iter()
                .filter(|c| {
                    let delta = c.get("delta");
                    carries(c.get("text"))
                        || ["content", "reasoning_content", "reasoning"]
                            .iter()
                            .any(|k| carries(delta.and_then(|d| d.get(*k))))
                })
                .count();
            prop_assert_eq!(usize::try_from(event.tokens).ok(), Some(tokens));
            prop_assert!(!event.done);
            prop_assert_eq!(
                event.counters,
                Counters { prompt_tokens: prompt, cached_tokens: cached, output_tokens: completion }
            );
        }
    }

    /// `[DONE]`, with any ASCII whitespace around it, ends an `OpenAI` stream.
    #[test]
    fn openai_done_with_whitespace(before in "[ \t\r\n]{0,4}", after in "[ \t\r\n]{0,4}") {
        let data = format!("{before}[DONE]{after}");
        for api in [Api::Completions, Api::Chat] {
            prop_assert_eq!(
                api.parse_event(data.as_bytes()),
                Ok(Event { done: true, ..Event::default() })
            );
        }
    }
}

/// Nesting far past `serde_json`'s recursion limit, under every field the parsers look into, is a
/// malformed event, not a stack overflow.
#[test]
fn deeply_nested_events_are_malformed_not_a_stack_overflow() {
    for depth in [127, 128, 129, 1_000, 100_000] {
        for prefix in [
            "",
            r#"{"tokens":"#,
            r#"{"content":"#,
            r#"{"timings":"#,
            r#"{"error":"#,
            r#"{"choices":"#,
            r#"{"choices":[{"delta":"#,
            r#"{"usage":"#,
        ] {
            for open in ["[", "{\"a\":"] {
                let data = format!("{prefix}{}", open.repeat(depth));
                for api in APIS {
                    assert!(
                        matches!(
                            api.parse_event(data.as_bytes()),
                            Err(EventError::Malformed(_))
                        ),
                        "{api:?} at depth {depth} under {prefix:?}"
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1

const HTTP_WORDS: &[&[u8]] = &[
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"200 OK",
    b"\r\n",
    b"\n",
    b"\r\n\r\n",
    b": ",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked",
    b"Connection: close",
    b"Connection: keep-alive",
    b"Content-Type: text/event-stream",
    b"18446744073709551616",
    b"0",
    b"5",
    b"ffffffffffffffff",
    b";ext=1",
    b"0\r\n\r\n",
];

proptest! {
    /// Any bytes: `parse_head` never panics; incomplete only below its bound; a complete head
    /// lies within the input and its content type is at most 200 characters.
    #[test]
    fn heads_of_any_bytes_never_panic(bytes in bytes_with(HTTP_WORDS, 160)) {
        match parse_head(&bytes) {
            Ok(None) => prop_assert!(bytes.len() < MAX_HEAD),
            Ok(Some(head)) => {
                prop_assert!(head.length <= bytes.len());
                prop_assert!(head.content_type.is_none_or(|t| t.chars().count() <= 200));
            }
            Err(_) => {}
        }
    }

    /// A head still without its end is incomplete below 64 KiB and an error from there on.
    #[test]
    fn an_unfinished_head_is_bounded(
        length in (MAX_HEAD - 600)..(MAX_HEAD + 600),
        value in any::<u8>().prop_filter("a header value byte", |b| *b == b'\t' || (b' '..=b'~').contains(b) || *b >= 0x80),
    ) {
        let mut head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Filler: ".to_vec();
        head.resize(length, value);
        match parse_head(&head) {
            Ok(None) => prop_assert!(length < MAX_HEAD, "incomplete at {} bytes", length),
            Err(e) => prop_assert!(length >= MAX_HEAD, "{} at {} bytes", e, length),
            Ok(Some(head)) => prop_assert!(false, "complete without its end: {:?}", head),
        }
    }

    /// A well-formed head followed by any body: parsed completely, with its length, status,
    /// framing, keep-alive and content type; every shorter prefix of it is incomplete.
    #[test]
    fn well_formed_heads_parse_and_their_prefixes_are_incomplete(
        (wire, head_len, expected) in well_formed_head(),
        body in prop::collection::vec(any::<u8>(), 0..64),
        prefixes in prop::collection::vec(any::<Index>(), 0..16),
    ) {
        let mut bytes = wire.clone();
        bytes.extend_from_slice(&body);
        let head = parse_head(&bytes).expect("a well-formed head").expect("complete");
        prop_assert_eq!(head.length, head_len);
        prop_assert_eq!((head.status, head.framing, head.keep_alive), (expected.status, expected.framing, expected.keep_alive));
        prop_assert_eq!(head.content_type, expected.content_type);
        for prefix in prefixes {
            let prefix = prefix.index(head_len);
            prop_assert_eq!(parse_head(&wire[..prefix]), Ok(None), "prefix of {} bytes", prefix);
        }
    }
}

/// What a head generated by `well_formed_head` must parse to.
#[derive(Clone, Debug)]
struct ExpectedHead {
    status: u16,
    framing: Framing,
    keep_alive: bool,
    content_type: Option<String>,
}

/// A well-formed response head, its length, and what it says: HTTP/1.0 or 1.1, any status,
/// at most one each of `Transfer-Encoding`, `Content-Length`, `Connection`, `Content-Type`, in
/// any order among other headers.
fn well_formed_head() -> impl Strategy<Value = (Vec<u8>, usize, ExpectedHead)> {
    let header = prop_oneof![
        ("[Xx]-[A-Za-z]{1,8}", "[ -~]{0,20}").prop_map(|(n, v)| (n, v, 0)),
        prop::sample::select(vec![
            "chunked",
            "Chunked",
            "gzip, chunked",
            "gzip",
            "identity"
        ])
        .prop_map(|v| ("Transfer-Encoding".to_owned(), v.to_owned(), 1)),
        any::<u64>().prop_map(|n| ("content-length".to_owned(), n.to_string(), 2)),
        prop::sample::select(vec![
            "close",
            "keep-alive",
            "Keep-Alive",
            "upgrade",
            "Close"
        ])
        .prop_map(|v| ("Connection".to_owned(), v.to_owned(), 3)),
        "[ -~\u{a0}-\u{2fff}]{0,260}".prop_map(|v| ("Content-Type".to_owned(), v, 4)),
    ];
    (
        any::<bool>(),
        100u16..1000,
        "[A-Za-z ]{0,12}",
        prop::collection::vec(header, 0..8),
    )
        .prop_map(|(http11, status, reason, headers)| {
            let mut wire = format!("HTTP/1.{} {status} {reason}\r\n", u8::from(http11));
            let mut expected = ExpectedHead {
                status,
                framing: Framing::Close,
                keep_alive: http11,
                content_type: None,
            };
            let mut seen = [false; 5];
            for (name, value, kind) in headers {
                if kind > 0 && std::mem::replace(&mut seen[kind], true) {
                    continue;
                }
                let _ = write!(wire, "{name}: {value}\r\n");
                let trimmed = value.trim();
                match kind {
                    1 if trimmed.to_ascii_lowercase().ends_with("chunked") => {
                        expected.framing = Framing::Chunked;
                    }
                    2 if expected.framing != Framing::Chunked => {
                        expected.framing = Framing::Length(value.parse().expect("a number"));
                    }
                    3 => {
                        let v = trimmed.to_ascii_lowercase();
                        expected.keep_alive = v.contains("keep-alive")
                            || (expected.keep_alive && !v.contains("close"));
                    }
                    4 => expected.content_type = Some(trimmed.chars().take(200).collect()),
                    _ => {}
                }
            }
            expected.keep_alive &= expected.framing != Framing::Close;
            wire.push_str("\r\n");
            let len = wire.len();
            (wire.into_bytes(), len, expected)
        })
}

/// Feeds `pieces` to a body decoder: the body bytes it gave up to its first error, whether it
/// failed, whether it was done (at the end, or at the error), and all the body bytes it gave.
/// Pieces after an error are fed too (they must not panic) but count only in the last.
fn body_feed(framing: Framing, pieces: &[&[u8]]) -> (Vec<u8>, bool, bool, usize) {
    let mut decoder = BodyDecoder::new(framing);
    let (mut out, mut failed, mut done, mut all) = (Vec::new(), false, false, 0);
    for piece in pieces {
        let mut given = Vec::new();
        let fed = decoder.feed(piece, &mut |d: &[u8]| given.extend_from_slice(d));
        all += given.len();
        if !failed {
            out.extend_from_slice(&given);
            failed = fed.is_err();
            done = decoder.done();
        }
    }
    if !failed {
        done = decoder.done();
    }
    (out, failed, done, all)
}

const CHUNK_WORDS: &[&[u8]] = &[
    b"0",
    b"1",
    b"a",
    b"F",
    b"ffffffffffffffff",
    b"100000000000000",
    b"\r\n",
    b"\r",
    b"\n",
    b";",
    b";name=value",
    b" ",
    b"\t",
    b"0\r\n\r\n",
    b"5\r\nhello\r\n",
    b"X-Trailer: 1\r\n",
];

proptest! {
    /// Any bytes, any framing, any split: the decoder never panics and gives no more bytes than
    /// it was given; a length-delimited body gives exactly its first n bytes and is done after
    /// them, a body to the close gives everything, and a chunked body gives the same bytes,
    /// fails at the same byte and ends at the same byte however it is split.
    #[test]
    fn bodies_of_any_bytes_never_panic(
        bytes in bytes_with(CHUNK_WORDS, 160),
        framing in prop_oneof![
            3 => Just(Framing::Chunked),
            1 => (0u64..3000).prop_map(Framing::Length),
            1 => Just(Framing::Length(u64::MAX)),
            1 => Just(Framing::Close),
        ],
        cuts in cuts(),
    ) {
        let (out, failed, done, all) = body_feed(framing, &cuts.split(&bytes));
        prop_assert!(all <= bytes.len(), "{} body bytes from {} bytes", all, bytes.len());
        match framing {
            Framing::Length(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                prop_assert_eq!(&out[..], &bytes[..bytes.len().min(n)]);
                prop_assert!(!failed);
                prop_assert_eq!(done, out.len() == n);
            }
            Framing::Close => {
                prop_assert_eq!(&out, &bytes);
                prop_assert!(!failed && !done);
            }
            Framing::Chunked => {
                let (whole, whole_failed, whole_done, _) = body_feed(framing, &[&bytes]);
                prop_assert_eq!(out, whole);
                prop_assert_eq!((failed, done), (whole_failed, whole_done));
            }
        }
    }

    /// A well-formed chunked encoding of random payloads (sizes in either case, with leading
    /// zeros, extensions and trailers), followed by unrelated bytes and split anywhere: the
    /// decoder gives exactly the payload, is done exactly once the body's last byte is in, and
    /// takes nothing after it.
    #[test]
    fn chunked_encodings_decode_to_their_payload(
        (wire, end, payload) in chunked_body(),
        cuts in cuts(),
    ) {
        let mut decoder = BodyDecoder::new(Framing::Chunked);
        let mut out = Vec::new();
        let mut fed = 0;
        for piece in cuts.split(&wire) {
            let result = decoder.feed(piece, &mut |d: &[u8]| out.extend_from_slice(d));
            prop_assert_eq!(result, Ok(()));
            fed += piece.len();
            prop_assert_eq!(decoder.done(), fed >= end, "done after {} of {} bytes", fed, end);
        }
        prop_assert!(decoder.done());
        prop_assert_eq!(out, payload);
    }
}

/// A chunked body: its bytes followed by unrelated ones, where the body ends, and its payload.
fn chunked_body() -> impl Strategy<Value = (Vec<u8>, usize, Vec<u8>)> {
    let extension = prop_oneof![
        3 => Just(String::new()),
        1 => "(;[a-z]{1,6}(=[a-z0-9]{0,6})?){1,3}",
        1 => Just(";x=\"quoted value\"".to_owned()),
    ];
    let chunk = (
        prop::collection::vec(any::<u8>(), 1..300),
        any::<bool>(),
        0usize..4,
        extension.clone(),
    );
    (
        prop::collection::vec(chunk, 0..8),
        (0usize..4, extension),
        prop::collection::vec("[A-Za-z-]{1,8}: [ -~]{0,12}", 0..3),
        prop::collection::vec(any::<u8>(), 0..32),
    )
        .prop_map(|(chunks, (last_zeros, last_ext), trailers, after)| {
            let mut wire = Vec::new();
            for (data, upper, zeros, ext) in &chunks {
                let size = if *upper {
                    format!("{:X}", data.len())
                } else {
                    format!("{:x}", data.len())
                };
                wire.extend_from_slice(format!("{}{size}{ext}\r\n", "0".repeat(*zeros)).as_bytes());
                wire.extend_from_slice(data);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(format!("{}0{last_ext}\r\n", "0".repeat(last_zeros)).as_bytes());
            for trailer in trailers {
                wire.extend_from_slice(format!("{trailer}\r\n").as_bytes());
            }
            wire.extend_from_slice(b"\r\n");
            let end = wire.len();
            wire.extend_from_slice(&after);
            let payload = chunks.into_iter().flat_map(|(data, ..)| data).collect();
            (wire, end, payload)
        })
}

// ---------------------------------------------------------------------------------------------
// requests.jsonl

/// A seconds or milliseconds figure: finite, mostly ordinary.
fn figure() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1e6..1e6f64,
        1 => any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

/// Text with anything in it: quotes, backslashes, control and multi-byte characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,16}",
        any::<String>().prop_map(|s| s.chars().take(16).collect())
    ]
}

/// A record with arbitrary values in every field, built from JSON as `requests.jsonl` holds it.
fn record() -> impl Strategy<Value = Record> {
    use prop::option::of;
    let statuses = ["ok", "invalid", "error", "cancelled"];
    let kinds = [
        "cancelled",
        "connect",
        "disconnected",
        "http",
        "invalid",
        "malformed",
        "server_error",
        "timeout",
    ];
    (
        (
            text(),
            any::<bool>(),
            of(any::<u32>()),
            any::<u32>(),
            of(figure()),
            figure(),
        ),
        (of(figure()), of(figure()), of(figure()), of(figure())),
        (
            any::<u32>(),
            any::<u32>(),
            of(any::<u32>()),
            of(any::<u32>()),
            any::<u32>(),
            of(any::<u32>()),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            prop::sample::select(statuses.to_vec()),
            any::<bool>(),
        ),
        (
            of(prop::sample::select(kinds.to_vec())),
            of(text()),
            prop::collection::vec(text(), 0..3),
        ),
        (
            prop::collection::vec(figure(), 0..8),
            prop::collection::vec(any::<u32>(), 0..4),
        ),
    )
        .prop_map(|(a, b, c, d, e, f)| {
            let value = json!({
                "case": a.0, "phase": if a.1 { "warmup" } else { "measured" }, "round": a.2,
                "index": a.3, "scheduled_s": a.4, "sent_s": a.5,
                "first_token_s": b.0, "done_s": b.1, "ttft_ms": b.2, "e2e_ms": b.3,
                "input_tokens": c.0, "requested_output_tokens": c.1, "prompt_tokens": c.2,
                "cached_tokens": c.3, "shared_tokens": c.4, "output_tokens": c.5,
                "token_events": d.0, "streamed_tokens": d.1, "status": d.2, "verified": d.3,
                "error_kind": e.0, "error": e.1, "notes": e.2,
                "event_ms": f.0, "event_tokens": f.1,
            });
            serde_json::from_value(value).expect("the template is a record")
        })
}

/// A file holding `bytes`, in a folder of its own.
fn file_of(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("requests.jsonl");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .expect("the file is written");
    (dir, path)
}

/// Reads `path` with both readers, which must agree.
fn read_both(path: &std::path::Path) -> Result<Result<Vec<Record>, String>, TestCaseError> {
    let mut each = Vec::new();
    let streamed = for_each_record(path, |r| each.push(r)).map_err(|e| e.to_string());
    let read = read_records(path).map_err(|e| e.to_string());
    prop_assert_eq!(streamed.clone().map(|()| each), read.clone());
    Ok(read)
}

/// Lines of records, as `RecordSink` writes them.
fn lines_of(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| serde_json::to_string(r).expect("a record serialises"))
        .collect()
}

/// Whole record lines mixed with blank lines, CRLF endings, garbage and invalid UTF-8.
fn record_file_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        2 => record().prop_map(|r| serde_json::to_vec(&r).expect("a record serialises")),
        1 => record().prop_flat_map(|r| {
            let bytes = serde_json::to_vec(&r).expect("a record serialises");
            let len = bytes.len();
            (Just(bytes), 0..len).prop_map(|(b, cut)| b[..cut].to_vec())
        }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => prop::sample::select(vec![&b""[..], b" \t", b"{}", b"null", b"\xff\xfe", b"\xe2\x89"])
            .prop_map(<[u8]>::to_vec),
    ];
    let ending = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\n\n", b""]);
    prop::collection::vec((line, ending), 0..8).prop_map(|lines| {
        lines
            .into_iter()
            .flat_map(|(l, e)| [l, e.to_vec()].concat())
            .collect()
    })
}

/// The line number of a "…:N: not a record" message.
fn bad_line(message: &str, path: &str) -> Option<usize> {
    let rest = message.strip_prefix(path)?.strip_prefix(':')?;
    let (number, rest) = rest.split_once(':')?;
    rest.starts_with(" not a record")
        .then(|| number.parse().ok())?
}

proptest! {
    /// A file of any bytes: the readers never panic and agree; an error names the file, and a
    /// line that is not a record is named by a line number the file has.
    #[test]
    fn record_files_of_any_bytes_never_panic(
        bytes in prop_oneof![record_file_bytes(), prop::collection::vec(any::<u8>(), 0..2048)],
    ) {
        let (_dir, path) = file_of(&bytes);
        let shown = path.display().to_string();
        if let Err(message) = read_both(&path)? {
            prop_assert!(message.contains(&shown), "{}", message);
            if message.contains("not a record") {
                let number = bad_line(&message, &shown);
                let lines = bytes.split(|&b| b == b'\n').count();
                prop_assert!(number.is_some_and(|n| (1..=lines).contains(&n)), "{}", message);
            }
        }
    }

    /// Every error names the line it is about, whatever the bytes.
    #[test]
    fn record_file_errors_name_the_line(
        bytes in prop_oneof![record_file_bytes(), prop::collection::vec(any::<u8>(), 0..2048)],
    ) {
        let (_dir, path) = file_of(&bytes);
        let shown = path.display().to_string();
        if let Err(message) = read_both(&path)? {
            prop_assert!(bad_line(&message, &shown).is_some(), "{}", message);
        }
    }

    /// Whole records, blank lines among them, then a last line cut short at a character
    /// boundary (a run killed while writing it): exactly the whole records.
    #[test]
    fn whole_records_then_a_cut_line_at_a_char_boundary(
        records in prop::collection::vec(record(), 0..6),
        last in record(),
        cut in any::<Index>(),
        crlf in any::<bool>(),
        blank in prop::option::of(any::<Index>()),
    ) {
        let last = serde_json::to_string(&last).expect("a record serialises");
        let boundaries: Vec<usize> = (0..last.len()).filter(|&i| last.is_char_boundary(i)).collect();
        let cut = boundaries[cut.index(boundaries.len())];
        let bytes = record_file(&records, crlf, blank, &last.as_bytes()[..cut]);
        let (_dir, path) = file_of(&bytes);
        prop_assert_eq!(read_both(&path)?, Ok(records));
    }

    /// Whole records then a last line cut short at any byte, perhaps inside a multi-byte
    /// character of a server's error message: exactly the whole records.
    #[test]
    fn whole_records_then_a_cut_line_anywhere(
        records in prop::collection::vec(record(), 0..6),
        last in record(),
        cut in any::<Index>(),
        crlf in any::<bool>(),
    ) {
        let last = serde_json::to_vec(&last).expect("a record serialises");
        let cut = cut.index(last.len());
        let bytes = record_file(&records, crlf, None, &last[..cut]);
        let (_dir, path) = file_of(&bytes);
        prop_assert_eq!(read_both(&path)?, Ok(records));
    }

    /// A line that is not a record, anywhere but last-and-unterminated, is an error naming the
    /// file and that line.
    #[test]
    fn a_bad_whole_line_is_named(
        records in prop::collection::vec(record(), 0..6),
        bad in "[ -~]{1,40}".prop_filter("not blank", |s| !s.trim().is_empty()),
        at in any::<Index>(),
    ) {
        let mut lines = lines_of(&records);
        let at = at.index(lines.len() + 1);
        lines.insert(at, bad);
        let bytes: Vec<u8> = lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
        let (_dir, path) = file_of(&bytes);
        let expected = format!("{}:{}: not a record", path.display(), at + 1);
        let read = read_both(&path)?;
        prop_assert!(read.as_ref().is_err_and(|m| m.starts_with(&expected)), "{:?}", read);
    }
}

/// `records` one a line (CRLF or LF), a blank line perhaps among them, then `last` without a
/// line ending.
fn record_file(records: &[Record], crlf: bool, blank: Option<Index>, last: &[u8]) -> Vec<u8> {
    let mut lines = lines_of(records);
    if let Some(at) = blank {
        lines.insert(at.index(lines.len() + 1), "  ".to_owned());
    }
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut bytes: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}{ending}").into_bytes())
        .collect();
    bytes.extend_from_slice(last);
    bytes
}
