//! The SSE decoder: any bytes, any split, decoded like a reference model and within its bound.

use super::*;

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
