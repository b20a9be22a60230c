//! The ways a hostile server misbehaves.

/// How a server misbehaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Speaks llama-server's dialect correctly.
    Normal,
    /// Accepts connections, reads the request and never answers anything.
    Silent,
    /// Answers setup; a generation streams tokens and never stops.
    Endless,
    /// Answers setup; a generation sends `data: ` and then bytes without any newline, forever.
    Unterminated,
    /// Answers setup; a generation gets `200 OK` with an HTML page.
    Html,
    /// `GET /health` answers `302 Found` to this base URL (another server); the rest is normal.
    Redirect(String),
    /// Answers setup; a generation's final event says 7 more prompt tokens than were sent and
    /// one fewer generated token than were asked for (and streamed).
    Lies,
    /// Answers setup; a generation streams the tokens asked for and a final event without any
    /// counter (as a gateway that drops them would).
    Unreported,
    /// Answers setup; a generation streams 5 token events more than were asked for, and a final
    /// event that says exactly the tokens asked for were generated.
    Overcount,
    /// Speaks llama-server's dialect correctly, each event stream opened by a UTF-8 byte order
    /// mark.
    Bom,
    /// Terminal control sequences in every text it sends: the model's path and name, and a
    /// generation's `500` error body (which would clear the screen, retitle the window and forge
    /// a line if printed raw).
    Controls,
    /// Answers setup; a generation's `500` body is the request it got, head and body (the key
    /// and every header included), as some proxies' error pages are.
    EchoInError,
    /// Answers setup; a generation streams two tokens, then an error event whose message is the
    /// request's head.
    EchoInStream,
    /// Every answer, setup's and generations', comes after `100 Continue` and `103 Early Hints`.
    Interim,
    /// `/props` answers with two `Content-Length` fields that disagree (the rest is normal).
    TwoLengthsInSetup,
    /// Answers setup; a generation's response has two `Content-Length` fields that disagree.
    TwoLengths,
    /// Answers setup; a generation's stream comes with `Content-Encoding: gzip`.
    Gzip,
    /// Answers setup; a generation gets `204 No Content` and the connection stays open.
    NoContent,
    /// Answers setup; a generation streams two tokens, then an `event: error` whose data says
    /// why, and ends.
    ErrorEvent,
    /// Answers setup; a generation streams its tokens four to an event, as text without a token
    /// list (nothing says how many each carried), and a final event that counts them all.
    Clumped,
    /// Answers setup; a generation's head says back a request id of 300 characters and bytes
    /// outside ASCII, and its final event's timings hold a `prompt_ms` no request can have
    /// (its `predicted_ms` holds).
    AbsurdTimings,
    /// A proxy in front of a stopped server: every request answered 502 with nginx's page.
    BadGateway,
    /// A proxy whose server stops answering during the run: setup as `Normal`, every
    /// generation answered 504 with the page `HAProxy` sends.
    GatewayTimeout,
    /// As `GatewayTimeout`, Caddy's way: 502 with an empty body.
    EmptyBadGateway,
    /// Answers setup; a generation streams one token event every `ms` milliseconds, each
    /// written on its own, after a first token at `ms` (a server streaming token by token).
    Paced(u64),
    /// Speaks only the `OpenAI` chat API and refuses every body field it does not know with
    /// `422`, as `transformers serve` does; `named`: whether the refusal names the fields.
    Strict {
        /// The refusal names the fields it refuses.
        named: bool,
    },
    /// Speaks the `OpenAI` chat, Responses and Anthropic Messages APIs, each generation going
    /// wrong as the fault says.
    Apis(super::apis::Fault),
    /// Answers setup; a generation whose request id's serial number is even gets one token and
    /// ends as if complete, the others every token asked for.
    CutEveryOther,
    /// Answers setup; a generation stops at its "end of sequence" after 20, 30 or 40 % of the
    /// tokens asked for (in turn, by its request id's serial number), and ends as if complete: a
    /// server that cannot be told to ignore it.
    StopsEarly,
    /// Answers setup; a generation streams three tokens, then writes why it stops in plain
    /// text (outside any event) and ends the body without a final event.
    Overflow,
    /// As `Paced(ms)`, behind a proxy that holds the stream and forwards what it holds every
    /// `every` milliseconds in one write (on a timer of its own).
    Flushed {
        /// Milliseconds between tokens at the server.
        ms: u64,
        /// Milliseconds between the proxy's flushes.
        every: u64,
    },
    /// As `Paced(ms)`, behind `HAProxy` in its default configuration: it sends the stream on with
    /// `MSG_MORE`, and the kernel holds what it was given until `hold` milliseconds after the
    /// first byte it held, then sends it all at once. Slower than `hold` per token, each flush
    /// carries a token or two: bursts as small as a busy client's clumps.
    Corked {
        /// Milliseconds between tokens at the server.
        ms: u64,
        /// Milliseconds the kernel holds the first byte of what it sends together.
        hold: u64,
    },
}
