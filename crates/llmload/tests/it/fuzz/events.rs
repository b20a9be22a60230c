//! The three APIs' event parsers: any bytes and any JSON never panic; counters at the edges.

use super::*;

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
        check_event(Api::Llamacpp, &value, &Ok(event.clone()))?;
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
