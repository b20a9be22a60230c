//! Server-sent events decoding: the byte stream of a streaming response → the `data` payloads.
//!
//! A pure, incremental decoder (the WHATWG event-stream rules, minus `id`/`retry`, which no LLM
//! API we speak relies on; of `event` only whether an event is an `error`, which some servers send
//! in the middle of a stream instead of a status): it accepts the stream split at arbitrary byte boundaries and gives
//! the same events for any split. LF, CR and CRLF end lines; lines starting with `:` are comments
//! (keep-alives); several `data:` lines in one event are joined with `\n`; a UTF-8 byte order mark
//! opening the stream is dropped, as the rules say, even when it arrives split. A line that lies
//! whole inside the received bytes is not copied.

/// The bound on one event line and on one event's data.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// An event line or an event's data grew past the decoder's bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an event passed {0} bytes without ending")]
pub struct TooLong(pub usize);

/// Incremental SSE decoder; feed it bytes as they arrive. It holds at most its bound of
/// unfinished line and of unfinished event data: a stream that goes past it is an error, and the
/// decoder takes nothing more.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent flags of the decoder's place in the stream, each its own rule"
)]
pub struct SseDecoder {
    /// Part of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The `data` of the event being assembled.
    data: Vec<u8>,
    /// Whether the event being assembled has seen a `data` field (it may be empty).
    has_data: bool,
    /// Whether the event being assembled is named `error` (its last `event` field).
    is_error: bool,
    /// The previous byte was a CR, so an LF starting the next chunk ends nothing.
    skip_lf: bool,
    /// The most bytes of one line, and of one event's data.
    limit: usize,
    /// The bound was passed: nothing more is decoded.
    overflowed: bool,
    /// At the stream's start: how many bytes of a byte order mark have arrived (held back until
    /// the mark is whole or proves not to be one); `None` once past the start.
    bom: Option<usize>,
    /// The last line that was no field of an event (plain text a server wrote into the stream,
    /// such as why it stopped), its first [`STRAY_BYTES`] bytes.
    stray: Vec<u8>,
}

/// The most bytes kept of a line that is no field.
const STRAY_BYTES: usize = 512;

/// The UTF-8 byte order mark, which may open an event stream and is no part of it.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream, with the default bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose lines and event data may hold at most `limit` bytes each.
    pub fn with_limit(limit: usize) -> Self {
        SseDecoder {
            partial: Vec::new(),
            data: Vec::new(),
            has_data: false,
            is_error: false,
            skip_lf: false,
            limit,
            overflowed: false,
            bom: Some(0),
            stray: Vec::new(),
        }
    }

    /// Decodes `bytes`, calling `on_event` with each complete event's data; an error once a
    /// line or an event's data passes the bound.
    pub fn feed(&mut self, bytes: &[u8], on_event: &mut impl FnMut(&[u8])) -> Result<(), TooLong> {
        self.feed_events(bytes, &mut |event: Event<'_>| on_event(event.data))
    }

    /// As [`SseDecoder::feed`], each event with whether it is named `error`.
    pub fn feed_events(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<(), TooLong> {
        if self.overflowed {
            return Err(TooLong(self.limit));
        }
        if let Some(seen) = self.bom {
            let wanted = &BOM[seen..];
            let matched = bytes.iter().zip(wanted).take_while(|(a, b)| a == b).count();
            if matched == bytes.len() && matched < wanted.len() {
                self.bom = Some(seen + matched);
                return Ok(());
            }
            self.bom = None;
            if matched == wanted.len() {
                bytes = &bytes[matched..];
            } else if seen > 0 {
                // What looked like the start of a mark was the stream's own bytes.
                self.feed_events(&BOM[..seen], on_event)?;
            }
        }
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        // The line search is most of the decoder's time: done a word at a time, not a byte.
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (line, rest) = bytes.split_at(end);
            let crlf = rest.starts_with(b"\r\n");
            if rest[0] == b'\r' && rest.len() == 1 {
                self.skip_lf = true;
            }
            bytes = &rest[if crlf { 2 } else { 1 }..];
            if self.partial.len() + line.len() > self.limit {
                return self.overflow();
            }
            if self.partial.is_empty() {
                self.end_line(line, on_event);
            } else {
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                self.end_line(&whole, on_event);
                self.partial = whole;
                self.partial.clear();
            }
            if self.data.len() > self.limit {
                return self.overflow();
            }
        }
        if self.partial.len() + bytes.len() > self.limit {
            return self.overflow();
        }
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    fn overflow(&mut self) -> Result<(), TooLong> {
        self.overflowed = true;
        self.partial = Vec::new();
        self.data = Vec::new();
        Err(TooLong(self.limit))
    }

    /// Ends the stream: a last line or event without its terminating blank line still counts,
    /// because some servers close the connection right after their final `data:` line.
    pub fn finish(&mut self, on_event: &mut impl FnMut(&[u8])) {
        self.finish_events(&mut |event: Event<'_>| on_event(event.data));
    }

    /// As [`SseDecoder::finish`], each event with whether it is named `error`.
    pub fn finish_events(&mut self, on_event: &mut impl FnMut(Event<'_>)) {
        if self.overflowed {
            return;
        }
        if let Some(seen) = self.bom.take().filter(|&seen| seen > 0) {
            // A stream that ended inside what could have been a mark: those were its bytes.
            if self.feed_events(&BOM[..seen], on_event).is_err() {
                return;
            }
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.end_line(&line, on_event);
        }
        // The last line may have taken the event's data past the bound.
        if self.data.len() > self.limit {
            let _ = self.overflow();
            return;
        }
        self.end_line(b"", on_event);
    }

    fn end_line(&mut self, line: &[u8], on_event: &mut impl FnMut(Event<'_>)) {
        if line.is_empty() {
            if self.has_data {
                on_event(Event {
                    data: &self.data,
                    error: self.is_error,
                });
            }
            self.data.clear();
            self.has_data = false;
            self.is_error = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if name == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        } else if name == b"event" {
            self.is_error = value == b"error";
        } else if name != b"id" && name != b"retry" {
            self.stray.clear();
            self.stray
                .extend_from_slice(&line[..line.len().min(STRAY_BYTES)]);
        }
    }

    /// The last line of the stream that was no field of an event (at most 512 bytes of it):
    /// what a server wrote outside its events, such as why it stopped; empty when none.
    pub fn stray(&self) -> &[u8] {
        &self.stray
    }
}

/// One event: its data, and whether the server named it `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `data` lines, joined with `\n`.
    pub data: &'a [u8],
    /// `event: error`: the data is the server's account of a failure, not a chunk.
    pub error: bool,
}

/// Decodes a whole stream at once (tests and tools).
pub fn decode_all(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut decoder = SseDecoder::new();
    let mut push = |data: &[u8]| events.push(data.to_vec());
    if decoder.feed(bytes, &mut push).is_ok() {
        decoder.finish(&mut push);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(events: Vec<Vec<u8>>) -> Vec<String> {
        events
            .into_iter()
            .map(|e| String::from_utf8(e).expect("test data is UTF-8"))
            .collect()
    }

    #[test]
    fn decodes_events_comments_and_line_endings() {
        let stream = b": keep-alive\n\ndata: {\"a\":1}\n\ndata: two\r\ndata: lines\r\n\r\nevent: x\nid: 7\ndata:nospace\r\rdata: [DONE]\n\n";
        assert_eq!(
            texts(decode_all(stream)),
            vec!["{\"a\":1}", "two\nlines", "nospace", "[DONE]"]
        );
    }

    #[test]
    fn an_event_named_error_says_so_and_the_name_ends_with_its_event() {
        let mut seen = Vec::new();
        let mut decoder = SseDecoder::new();
        let stream = b"data: a\n\nevent: error\ndata: {\"message\":\"boom\"}\n\ndata: b\n\nevent: message\ndata: c\n\n";
        decoder
            .feed_events(stream, &mut |e| seen.push((e.data.to_vec(), e.error)))
            .expect("within the bound");
        decoder.finish_events(&mut |e| seen.push((e.data.to_vec(), e.error)));
        let flags: Vec<bool> = seen.iter().map(|(_, error)| *error).collect();
        assert_eq!(flags, [false, true, false, false]);
        assert_eq!(seen[1].0, br#"{"message":"boom"}"#.to_vec());
    }

    #[test]
    fn comment_only_and_empty_events_yield_nothing() {
        assert!(decode_all(b":\n\n: ping\n\n\n\nevent: noop\n\n").is_empty());
    }

    #[test]
    fn empty_data_field_is_an_event() {
        assert_eq!(texts(decode_all(b"data\n\ndata:\n\n")), vec!["", ""]);
    }

    #[test]
    fn unterminated_last_event_is_kept_at_finish() {
        assert_eq!(
            texts(decode_all(b"data: a\n\ndata: last")),
            vec!["a", "last"]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_ending() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        let mut push = |d: &[u8]| out.push(d.to_vec());
        decoder
            .feed(b"data: a\r", &mut push)
            .expect("within the bound");
        decoder.feed(b"\n\r", &mut push).expect("within the bound");
        decoder
            .feed(b"\ndata: b\n\n", &mut push)
            .expect("within the bound");
        assert_eq!(texts(out), vec!["a", "b"]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_dropped_once_even_split() {
        let stream = b"\xEF\xBB\xBFdata: first\n\ndata: second\n\n";
        assert_eq!(texts(decode_all(stream)), vec!["first", "second"]);
        for cut in 0..=stream.len() {
            let mut decoder = SseDecoder::new();
            let mut out = Vec::new();
            let mut push = |d: &[u8]| out.push(d.to_vec());
            for piece in [&stream[..cut], &stream[cut..]] {
                decoder.feed(piece, &mut push).expect("within the bound");
            }
            decoder.finish(&mut push);
            assert_eq!(texts(out), vec!["first", "second"], "cut at {cut}");
        }
        // Only at the start: a mark later on is data, and bytes that only begin like one are kept.
        assert_eq!(
            decode_all(b"data: a\xEF\xBB\xBF\n\n"),
            vec![b"a\xEF\xBB\xBF".to_vec()]
        );
        assert_eq!(decode_all(b"\xEF\xBBdata: a\n\n"), Vec::<Vec<u8>>::new());
        assert_eq!(
            decode_all(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"),
            Vec::<Vec<u8>>::new()
        );
    }

    fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z{}\":, ]{0,12}".prop_map(|s| format!("data: {s}")),
            "[a-z ]{0,6}".prop_map(|s| format!(":{s}")),
            Just(String::new()),
            Just("data".to_string()),
            Just("event: message".to_string()),
        ];
        let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        (any::<bool>(), prop::collection::vec((line, ending), 0..24)).prop_map(|(bom, lines)| {
            let start = if bom { BOM } else { b"" };
            start
                .iter()
                .copied()
                .chain(
                    lines
                        .into_iter()
                        .flat_map(|(l, e)| format!("{l}{e}").into_bytes()),
                )
                .collect()
        })
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(
            stream in stream_strategy(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let whole = decode_all(&stream);
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
            points.sort_unstable();
            let mut decoder = SseDecoder::new();
            let mut pieces = Vec::new();
            let mut push = |d: &[u8]| pieces.push(d.to_vec());
            let mut start = 0;
            for point in points {
                decoder.feed(&stream[start..point], &mut push).expect("within the bound");
                start = point;
            }
            decoder.feed(&stream[start..], &mut push).expect("within the bound");
            decoder.finish(&mut push);
            prop_assert_eq!(whole, pieces);
        }
    }

    #[test]
    fn a_line_or_an_event_past_the_bound_is_an_error_and_ends_decoding() {
        let mut events = Vec::new();
        let mut push = |data: &[u8]| events.push(data.to_vec());
        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(decoder.feed(&[b'x'; 10], &mut push), Ok(()));
        assert_eq!(decoder.feed(&[b'x'; 10], &mut push), Err(TooLong(16)));
        assert_eq!(
            decoder.feed(b"\n\ndata: a\n\n", &mut push),
            Err(TooLong(16))
        );
        let mut decoder = SseDecoder::with_limit(16);
        let many_lines = b"data: 0123456789\ndata: 0123456789\n".repeat(2);
        assert_eq!(decoder.feed(&many_lines, &mut push), Err(TooLong(16)));
        decoder.finish(&mut push);
        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(decoder.feed(b"data: short\n\n", &mut push), Ok(()));
        assert_eq!(
            events,
            vec![b"short".to_vec()],
            "only the event within the bound"
        );
    }
}
