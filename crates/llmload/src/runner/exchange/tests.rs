//! Unit tests of `runner/exchange.rs`.

use super::*;

fn counters(p: u32, c: u32, o: u32) -> Counters {
    Counters {
        prompt_tokens: Some(p),
        cached_tokens: Some(c),
        output_tokens: Some(o),
    }
}

fn strict(input: u32, output: u32, shared: u32) -> Asked {
    Asked {
        input: Some(input),
        output,
        shared,
        head: 0,
        history: None,
        images_untold: false,
        lenient: false,
        client_counted: false,
    }
}

#[test]
fn a_turn_may_take_its_history_from_the_cache_and_nothing_more() {
    // A third turn of 300 prompt tokens whose history (everything before its new message) is
    // 250 tokens, 16 of them a shared prefix.
    let turn = Asked {
        history: Some(Some(250)),
        ..strict(300, 8, 16)
    };
    for cached in [0, 16, 200, 250] {
        let v = verify(&counters(300, cached, 8), 8, turn);
        assert!(v.verified && v.problems.is_empty(), "{cached}: {v:?}");
    }
    let v = verify(&counters(300, 251, 8), 8, turn);
    assert_eq!(v.problems.len(), 1, "{v:?}");
    assert!(v.problems[0].contains("more than the 250"), "{v:?}");
    // A first turn's history is its shared part: more is flagged as before.
    let first = Asked {
        history: Some(Some(16)),
        ..strict(300, 8, 16)
    };
    assert_eq!(verify(&counters(300, 17, 8), 8, first).problems.len(), 1);
    // A history the server could not show: nothing checked, and said so.
    let untold = Asked {
        history: Some(None),
        ..strict(300, 8, 16)
    };
    let v = verify(&counters(300, 290, 8), 8, untold);
    assert!(!v.verified && v.problems.is_empty(), "{v:?}");
    assert!(v.notes.iter().any(|n| n == UNTOLD_HISTORY));
}

#[test]
fn verification_accepts_exact_uncached_responses() {
    let v = verify(&counters(128, 0, 32), 32, strict(128, 32, 0));
    assert!(v.verified && v.problems.is_empty() && v.notes.is_empty());
}

#[test]
fn verification_rejects_each_contradiction() {
    assert_eq!(
        verify(&counters(129, 0, 32), 32, strict(128, 32, 0))
            .problems
            .len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 64, 32), 32, strict(128, 32, 0))
            .problems
            .len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 0, 7), 7, strict(128, 32, 0))
            .problems
            .len(),
        1
    );
    assert_eq!(
        verify(&counters(100, 5, 7), 7, strict(128, 32, 0))
            .problems
            .len(),
        3
    );
}

#[test]
fn missing_counters_leave_the_response_unverified() {
    let v = verify(&Counters::default(), 32, strict(128, 32, 0));
    assert!(!v.verified && v.problems.is_empty());
    let v = verify(&Counters::default(), 31, strict(128, 32, 0));
    assert_eq!(v.problems.len(), 1);
}

#[test]
fn stream_and_counter_disagreement_is_noted() {
    let v = verify(&counters(128, 0, 32), 30, strict(128, 32, 0));
    assert!(v.problems.is_empty() && v.notes.len() == 1);
}

#[test]
fn best_effort_turns_length_contradictions_into_reasons_not_invalid() {
    let lenient = Asked {
        lenient: true,
        ..strict(128, 32, 0)
    };
    // The server stopped at 7 of 32 tokens: unverified, with the reason, not invalid.
    let v = verify(&counters(128, 0, 7), 7, lenient);
    assert!(!v.verified && v.problems.is_empty());
    assert!(
        v.notes[0].contains("server generated 7 tokens, 32 were requested"),
        "{v:?}"
    );
    // No counters and a short stream: unverified, both reasons given.
    let v = verify(&Counters::default(), 5, lenient);
    assert!(!v.verified && v.problems.is_empty());
    assert_eq!(v.notes.len(), 2, "{v:?}");
    assert!(v.notes[1].contains("prompt tokens, cached tokens, generated tokens"));
    // The cache serving more than the shared prompt stays a contradiction, even in best effort.
    let v = verify(&counters(128, 64, 32), 32, lenient);
    assert_eq!(v.problems.len(), 1);
    // An exact, fully counted response is verified in best effort too.
    assert!(verify(&counters(128, 0, 32), 32, lenient).verified);
}

#[test]
fn more_token_events_than_generated_tokens_is_invalid_and_fewer_is_noted() {
    // 13 events, each one token at least, for 8 generated: the counters or the stream lie.
    let v = verify(&counters(128, 0, 8), 13, strict(128, 8, 0));
    assert_eq!(v.problems.len(), 1, "{v:?}");
    assert!(
        v.problems[0].contains("13 token events, more than the 8"),
        "{v:?}"
    );
    // Best effort: unverified with the reason.
    let lenient = Asked {
        lenient: true,
        ..strict(128, 8, 0)
    };
    let v = verify(&counters(128, 0, 8), 13, lenient);
    assert!(!v.verified && v.problems.is_empty(), "{v:?}");
    // Counted by the client's tokenizer, the count is the client's own: a note, not a verdict.
    let client = Asked {
        client_counted: true,
        ..strict(128, 8, 0)
    };
    let v = verify(&counters(128, 0, 8), 13, client);
    assert!(v.verified && v.problems.is_empty(), "{v:?}");
    // Fewer events than tokens: chunks carrying several tokens, noted.
    let v = verify(&counters(128, 0, 8), 5, strict(128, 8, 0));
    assert!(v.verified && v.problems.is_empty(), "{v:?}");
    assert_eq!(
        v.notes,
        vec!["stream carried 5 token events for 8 generated tokens".to_owned()]
    );
}

#[test]
fn a_count_with_no_token_event_streamed_is_no_response() {
    // The end came before any text, the final usage saying all 24 were generated (any API: a
    // Responses completion, a chat chunk with usage only, a Messages delta).
    let v = verify(&counters(96, 0, 24), 0, strict(96, 24, 0));
    assert_eq!(v.problems.len(), 1, "{v:?}");
    assert!(v.problems[0].contains("no token event"), "{v:?}");
    // Best effort: unverified with that reason, never a verified response.
    let lenient = Asked {
        lenient: true,
        ..strict(96, 24, 0)
    };
    let v = verify(&counters(96, 0, 24), 0, lenient);
    assert!(!v.verified && v.problems.is_empty(), "{v:?}");
    // One event for all 24 tokens is a stream that carried text: noted, not refused.
    assert!(verify(&counters(96, 0, 24), 1, strict(96, 24, 0)).verified);
}

#[test]
fn an_as_is_prompt_is_not_checked_for_length_but_its_cache_is() {
    let as_is = Asked {
        input: None,
        ..strict(0, 32, 0)
    };
    let v = verify(&counters(77, 0, 32), 32, as_is);
    assert!(v.verified && v.problems.is_empty(), "{v:?}");
    assert_eq!(v.notes, vec![AS_IS.to_owned()]);
    let cached = verify(&counters(77, 16, 32), 32, as_is);
    assert_eq!(cached.problems.len(), 1, "{cached:?}");
}

/// The record of a complete exchange of 2 tokens, its first 10 ms after the send, with what the
/// server `reported` of its own timings.
fn with_server(reported: Option<crate::api::server_timings::Reported>) -> Record {
    let mut exchange = Exchange::new();
    let sent = exchange.sent;
    exchange
        .token_events
        .push(sent + Duration::from_millis(10), 1);
    exchange
        .token_events
        .push(sent + Duration::from_millis(20), 1);
    exchange.done = Some(sent + Duration::from_millis(21));
    exchange.counters = counters(4, 0, 2);
    exchange.server = reported;
    exchange.server_request_id = Some("cmpl-a-1".into());
    let meta = RequestMeta {
        input_tokens: 4,
        output_tokens: 2,
        request_id: Some("a-1".into()),
        ..crate::record::test_meta()
    };
    record(meta, &exchange, sent, false)
}

#[test]
fn a_record_carries_its_ids_and_the_server_s_timings_checked_against_its_ttft() {
    use crate::api::server_timings::Reported;
    use crate::record::{ServerTimings, TimingSource};
    let timings = |ttft_ms: f64| {
        let mut t = ServerTimings::new(TimingSource::LlamaServer);
        (t.ttft_ms, t.prefill_ms) = (Some(ttft_ms), Some(ttft_ms));
        Reported {
            timings: Some(t),
            notes: vec!["the server's timings: cache_n is -1, not a count of tokens".into()],
        }
    };
    let r = with_server(Some(timings(4.0)));
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.request_id.as_deref(), Some("a-1"));
    assert_eq!(r.server_request_id.as_deref(), Some("cmpl-a-1"));
    let server = r.server.expect("server timings");
    assert!(!server.ttft_exceeds_client);
    assert!(server.ttft_ms <= r.ttft_ms);
    assert_eq!(r.notes.len(), 1, "the value left out: {:?}", r.notes);
    // A server TTFT past the client's: flagged, with a note, and the status unchanged.
    let r = with_server(Some(timings(25.0)));
    assert_eq!(r.status, Status::Ok);
    assert!(r.server.expect("server timings").ttft_exceeds_client);
    assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
    assert!(r.notes[1].contains("exceeds the client's"), "{:?}", r.notes);
    // No timings reported: no server object, no note.
    let r = with_server(None);
    assert!(r.server.is_none() && r.notes.is_empty(), "{r:?}");
}

#[test]
fn the_chat_template_s_opening_may_come_from_the_cache_and_nothing_more() {
    // A server that reuses its cache though asked not to (llama-server's Messages API): the
    // template's opening, 4 tokens the same in every prompt, may be served; the user's text not.
    let asked = Asked {
        head: 4,
        ..strict(64, 8, 0)
    };
    for cached in [0, 1, 4] {
        let v = verify(&counters(64, cached, 8), 8, asked);
        assert!(v.verified && v.problems.is_empty(), "{cached}: {v:?}");
        assert_eq!(v.notes.len(), usize::from(cached > 0), "{cached}: {v:?}");
    }
    let v = verify(&counters(64, 5, 8), 8, asked);
    assert_eq!(v.problems.len(), 1, "{v:?}");
    assert!(
        v.problems[0].contains("more than the 4 of the chat template"),
        "{v:?}"
    );
    // A shared system prompt (which holds the opening on the chat APIs) sets the bound alone.
    let shared = Asked {
        head: 4,
        ..strict(64, 8, 16)
    };
    assert!(verify(&counters(64, 16, 8), 8, shared).notes.is_empty());
    assert_eq!(verify(&counters(64, 17, 8), 8, shared).problems.len(), 1);
}

#[test]
fn an_abandoned_stream_is_its_own_status_with_its_close_and_no_error() {
    let mut exchange = Exchange::new();
    let sent = exchange.sent;
    for ms in [10, 20, 30] {
        exchange
            .token_events
            .push(sent + Duration::from_millis(ms), 1);
    }
    exchange.abandoned = Some(sent + Duration::from_millis(30));
    exchange.failure = Some(Failure::Abandoned(crate::record::CancelAfter::Tokens(3)));
    let meta = RequestMeta {
        input_tokens: 4,
        output_tokens: 24,
        cancel_after: Some(crate::record::CancelAfter::Tokens(3)),
        ..crate::record::test_meta()
    };
    let r = record(meta, &exchange, sent, false);
    assert_eq!(r.status, Status::Abandoned);
    assert_eq!((r.error_kind, r.error.as_deref()), (None, None));
    assert!(!r.verified, "no counters of a whole response to check");
    assert_eq!(r.e2e_ms, None);
    assert_eq!(r.done_s, Some(0.03));
    // Token events are kept to the microsecond from their own base.
    assert!(
        r.ttft_ms.is_some_and(|t| (t - 10.0).abs() < 0.01),
        "{:?}",
        r.ttft_ms
    );
    assert_eq!(r.streamed_tokens, 3);
    assert_eq!(r.cancel_after, Some(crate::record::CancelAfter::Tokens(3)));
    assert_eq!(
        r.notes,
        vec![
            "abandoned by the client after 3 tokens (--cancel-after): its connection closed at \
              30.0 ms, with 3 tokens received"
        ]
    );
}

#[test]
fn a_pooling_answer_is_checked_for_its_results_and_the_servers_count() {
    let sent = Instant::now();
    let meta = RequestMeta {
        input_tokens: 16,
        output_tokens: 0,
        inputs: 4,
        ..crate::record::test_meta()
    };
    let answered = |results: u32, prompt: Option<u32>, problem: Option<&str>| {
        let mut exchange = Exchange::new();
        exchange.sent = sent;
        exchange.done = Some(sent + Duration::from_millis(20));
        exchange.inputs = 4;
        exchange.pooled = Some(Pooled {
            results,
            dimension: Some(8),
            problem: problem.map(str::to_owned),
            counters: Counters {
                prompt_tokens: prompt,
                ..Counters::default()
            },
        });
        exchange.counters.prompt_tokens = prompt;
        record(meta.clone(), &exchange, sent, false)
    };
    let ok = answered(4, Some(64), None);
    assert_eq!((ok.status, ok.verified), (Status::Ok, true));
    assert_eq!((ok.ttft_ms, ok.e2e_ms), (None, Some(20.0)));
    let pooling = ok.pooling.expect("a pooling record");
    assert_eq!((pooling.inputs, pooling.tokens), (4, 64));
    assert_eq!((pooling.results, pooling.dimension), (Some(4), Some(8)));
    assert_eq!(ok.work_tokens(), 64);
    assert_eq!(ok.event_times().collect::<Vec<_>>(), [(0.02, 64)]);

    let short = answered(3, Some(64), None);
    assert_eq!(short.status, Status::Invalid);
    assert_eq!(
        short.error.as_deref(),
        Some("the answer held 3 results for 4 inputs")
    );
    let miscounted = answered(4, Some(60), None);
    assert_eq!(miscounted.status, Status::Invalid);
    assert!(miscounted
        .error
        .is_some_and(|e| e.contains("server counted 60 prompt tokens, 64 were sent")));
    let unsound = answered(4, Some(64), Some("two results name index 0"));
    assert_eq!(unsound.error.as_deref(), Some("two results name index 0"));
    let uncounted = answered(4, None, None);
    assert_eq!((uncounted.status, uncounted.verified), (Status::Ok, false));
    assert!(uncounted
        .notes
        .iter()
        .any(|n| n.contains("did not report prompt tokens")));
    assert_eq!(uncounted.work_tokens(), 64);
}

#[test]
fn images_add_their_cost_to_the_prompt_checked_or_leave_it_unverified_when_untold() {
    let sent = Instant::now();
    let with = |tokens: Option<u32>, prompt: u32| {
        let meta = RequestMeta {
            input_tokens: 16,
            output_tokens: 1,
            images: Some(crate::record::Images {
                count: 2,
                width: 224,
                height: 224,
                tokens,
            }),
            ..crate::record::test_meta()
        };
        let mut exchange = Exchange::new();
        exchange.sent = sent;
        exchange
            .token_events
            .push(sent + Duration::from_millis(5), 1);
        exchange.done = Some(sent + Duration::from_millis(6));
        exchange.counters = counters(prompt, 0, 1);
        record(meta, &exchange, sent, false)
    };
    let exact = with(Some(128), 144);
    assert_eq!((exact.status, exact.verified), (Status::Ok, true));
    assert_eq!(exact.images.and_then(|i| i.tokens), Some(128));
    let short = with(Some(128), 140);
    assert_eq!(short.status, Status::Invalid);
    assert!(short
        .error
        .is_some_and(|e| e.contains("server counted 140 prompt tokens, 144 were sent")));
    let untold = with(None, 140);
    assert_eq!((untold.status, untold.verified), (Status::Ok, false));
    assert!(
        untold.notes.iter().any(|n| n == UNTOLD_IMAGES),
        "{:?}",
        untold.notes
    );
}
