//! Hostile servers for llmload's tests: a stand-in for llama-server, written as raw HTTP/1.1
//! over tokio, that answers setup the way llama-server does and then misbehaves in one chosen
//! way. Every request it gets is recorded (method, path, head), so that tests can say what was
//! and was not sent. Also: the llmload binary run as a child with a bound on its time, signals
//! sent to it, and the files a folder holds.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// A path prefix the server answers under as well as at its root: a base URL's path with a
/// space in it, as it must arrive (percent-encoded).
pub(crate) const PREFIX: &str = "/my%20api";

/// What [`Mode::Controls`] puts in its texts.
pub(crate) const CONTROLS: &str =
    "\u{1b}]0;pwned\u{7}\u{1b}[2J\rerror: forged line\u{9b}31m\u{202e}";

/// One request as the server received it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target, e.g. `/completion`.
    pub path: String,
    /// The whole request head (request line and header lines).
    pub head: String,
    /// The body, as text.
    pub body: String,
}

type Log = Arc<Mutex<Vec<Seen>>>;

#[path = "hostile/apis.rs"]
mod apis;
#[path = "hostile/cut.rs"]
mod cut;
#[path = "hostile/misframed.rs"]
mod misframed;
#[path = "hostile/mode.rs"]
mod mode;
#[path = "hostile/process.rs"]
mod process;
#[path = "hostile/proxy.rs"]
mod proxy;
#[path = "hostile/strict.rs"]
mod strict;
pub(crate) use apis::Fault;
pub(crate) use cut::OVERFLOW;
use misframed::{echo, misframed};
pub(crate) use mode::Mode;
pub(crate) use process::{
    eventually, files_under, is_empty_or_absent, llmload_within, Finished, Running,
};
use proxy::final_event;
pub(crate) use strict::TEMPLATE_TOKENS;

/// A hostile server on a free loopback port; stopped when dropped.
pub(crate) struct Server {
    /// Base URL, e.g. `http://127.0.0.1:40123`.
    pub url: String,
    seen: Log,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Starts a server that behaves as `mode` says.
    pub(crate) fn start(mode: Mode) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the hostile server");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let seen = Log::default();
        runtime.spawn(accept(listener, Arc::new(mode), Arc::clone(&seen)));
        Server {
            url,
            seen,
            runtime: Some(runtime),
        }
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Requests received so far for `path`.
    pub(crate) fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }

    /// Requests received so far, all paths.
    pub(crate) fn total(&self) -> usize {
        self.requests().len()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept(listener: TcpListener, mode: Arc<Mode>, seen: Log) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(serve(stream, Arc::clone(&mode), Arc::clone(&seen)));
    }
}

/// A request's head and body.
struct Request {
    seen: Seen,
    body: Vec<u8>,
}

/// Serves the requests of one connection until it closes or a response ends it.
async fn serve(mut stream: TcpStream, mode: Arc<Mode>, seen: Log) {
    let mut buffer = Vec::new();
    while let Ok(Some(request)) = read_request(&mut stream, &mut buffer).await {
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.seen.clone());
        if *mode == Mode::Silent {
            // Hold the connection open and say nothing, until the server is dropped.
            std::future::pending::<()>().await;
        }
        match respond(&mut stream, &mode, &request).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// Reads one request (head and `Content-Length` body); `None` when the connection closed first.
async fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<Request>> {
    let mut chunk = vec![0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > 64 * 1024 {
            return Err(std::io::Error::other("request head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or_default().to_owned();
    let path = words.next().unwrap_or_default().to_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Ok(Some(Request {
        seen: Seen {
            method,
            path,
            head,
            body: String::from_utf8_lossy(&body).into_owned(),
        },
        body,
    }))
}

/// Writes a whole response with a `Content-Length` body; the connection stays open.
async fn whole(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await
}

/// One chunk of a chunked body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

const STREAM_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

const TOKEN_EVENT: &[u8] = b"data: {\"content\":\"x\",\"tokens\":[5],\"stop\":false}\n\n";

/// Answers one request; whether the connection may carry another.
async fn respond(stream: &mut TcpStream, mode: &Mode, request: &Request) -> std::io::Result<bool> {
    let Seen { method, path, .. } = &request.seen;
    let json_kind = "application/json";
    // Served at the root and under [`PREFIX`] alike.
    let path = path.strip_prefix(PREFIX).unwrap_or(path);
    if *mode == Mode::Interim {
        stream.write_all(misframed::INTERIM).await?;
    }
    if *mode == Mode::BadGateway {
        return proxy::page(stream, mode).await;
    }
    if let Mode::Strict { named } = mode {
        return strict::respond(stream, request, *named).await;
    }
    if let Mode::Apis(fault) = mode {
        return apis::respond(stream, request, *fault).await;
    }
    match (method.as_str(), path) {
        ("GET", "/health") => {
            if let Mode::Redirect(to) = mode {
                let response = format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}/health\r\nContent-Length: 0\r\n\r\n"
                );
                stream.write_all(response.as_bytes()).await?;
            } else {
                whole(stream, "200 OK", json_kind, r#"{"status":"ok"}"#).await?;
            }
        }
        ("GET", "/props") if *mode == Mode::Controls => {
            let props = json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
                "model_path": format!("/models/{CONTROLS}.gguf")});
            whole(stream, "200 OK", json_kind, &props.to_string()).await?;
        }
        ("GET", "/props") if *mode == Mode::TwoLengthsInSetup => {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}";
            stream.write_all(head.as_bytes()).await?;
        }
        ("GET", "/props") => {
            let props = r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":1}"#;
            whole(stream, "200 OK", json_kind, props).await?;
        }
        ("GET", "/v1/models") if *mode == Mode::Controls => {
            let models = json!({"data": [{"id": CONTROLS}]});
            whole(stream, "200 OK", json_kind, &models.to_string()).await?;
        }
        ("GET", "/v1/models") => {
            whole(stream, "200 OK", json_kind, r#"{"data":[{"id":"m"}]}"#).await?;
        }
        ("POST", "/tokenize") => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let text = body["content"].as_str().unwrap_or_default();
            let tokens: Vec<u32> = text.split_whitespace().map(token_id).collect();
            whole(
                stream,
                "200 OK",
                json_kind,
                &json!({ "tokens": tokens }).to_string(),
            )
            .await?;
        }
        ("POST", "/completion") if matches!(mode, Mode::EchoInError | Mode::EchoInStream) => {
            return echo(stream, mode, request).await;
        }
        ("POST", "/completion") if *mode == Mode::CutEveryOther => {
            return cut::every_other(stream, request).await;
        }
        ("POST", "/completion") if *mode == Mode::StopsEarly && !is_probe(&request.body) => {
            return cut::early(stream, request).await;
        }
        ("POST", "/completion") if *mode == Mode::Overflow && !is_probe(&request.body) => {
            return cut::overflow(stream).await;
        }
        ("POST", "/completion") => return generate(stream, mode, &request.body).await,
        _ => {
            whole(
                stream,
                "404 Not Found",
                json_kind,
                r#"{"error":"not found"}"#,
            )
            .await?;
        }
    }
    Ok(true)
}

/// Whether a generation asks for one token at most (a probe during setup).
fn is_probe(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|b| b["n_predict"].as_u64().unwrap_or(0) <= 1)
}

/// A token ID below 1,000 for a word.
fn token_id(word: &str) -> u32 {
    word.bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 1000
}

/// `POST /completion`. A one-token request (a probe during setup) is always answered properly;
/// any other gets the server's misbehaviour.
async fn generate(stream: &mut TcpStream, mode: &Mode, body: &[u8]) -> std::io::Result<bool> {
    let body: Value = serde_json::from_slice(body).unwrap_or_default();
    let prompt = match &body["prompt"] {
        Value::Array(ids) => ids.len(),
        Value::String(text) => text.split_whitespace().count(),
        _ => 0,
    };
    let prompt = u64::try_from(prompt).expect("a prompt length fits in u64");
    let asked = body["n_predict"].as_u64().unwrap_or(0);
    let mode = if asked <= 1 { &Mode::Normal } else { mode };
    match mode {
        Mode::Endless => {
            stream.write_all(STREAM_HEAD).await?;
            let burst = chunk(&TOKEN_EVENT.repeat(64));
            loop {
                stream.write_all(&burst).await?;
            }
        }
        Mode::Unterminated => {
            stream.write_all(STREAM_HEAD).await?;
            stream.write_all(&chunk(b"data: ")).await?;
            let burst = chunk(&vec![b'a'; 64 * 1024]);
            loop {
                stream.write_all(&burst).await?;
            }
        }
        Mode::GatewayTimeout | Mode::EmptyBadGateway => proxy::page(stream, mode).await,
        Mode::Paced(ms) => proxy::paced(stream, *ms, *ms, asked, prompt).await,
        Mode::Flushed { ms, every } => proxy::paced(stream, *ms, *every, asked, prompt).await,
        Mode::Corked { ms, hold } => proxy::corked(stream, *ms, *hold, asked, prompt).await,
        Mode::Html => {
            let page = "<html><body><h1>Welcome to nginx!</h1></body></html>";
            whole(stream, "200 OK", "text/html", page).await?;
            Ok(true)
        }
        Mode::Lies => {
            stream.write_all(STREAM_HEAD).await?;
            stream_tokens(stream, asked, prompt + 7, asked.saturating_sub(1)).await?;
            Ok(true)
        }
        Mode::Unreported => {
            let mut out = STREAM_HEAD.to_vec();
            for _ in 0..asked {
                out.extend_from_slice(&chunk(TOKEN_EVENT));
            }
            out.extend_from_slice(&chunk(b"data: {\"content\":\"\",\"stop\":true}\n\n"));
            out.extend_from_slice(b"0\r\n\r\n");
            stream.write_all(&out).await?;
            Ok(true)
        }
        Mode::Controls => {
            let body = format!("{CONTROLS} upstream failed");
            whole(stream, "500 Internal Server Error", "text/plain", &body).await?;
            Ok(true)
        }
        Mode::Interim
        | Mode::TwoLengths
        | Mode::Gzip
        | Mode::NoContent
        | Mode::ErrorEvent
        | Mode::Clumped
        | Mode::AbsurdTimings => misframed(stream, mode, asked, prompt).await,
        Mode::Overcount => {
            stream.write_all(STREAM_HEAD).await?;
            stream_tokens(stream, asked + 5, prompt, asked).await?;
            Ok(true)
        }
        Mode::Bom => {
            stream.write_all(STREAM_HEAD).await?;
            stream.write_all(&chunk(b"\xEF\xBB\xBF")).await?;
            stream_tokens(stream, asked, prompt, asked).await?;
            Ok(true)
        }
        // (answered before the path is looked at)
        Mode::BadGateway
        | Mode::Normal
        | Mode::TwoLengthsInSetup
        | Mode::Silent
        | Mode::Redirect(_)
        | Mode::Strict { .. }
        | Mode::Apis(_)
        | Mode::CutEveryOther
        | Mode::StopsEarly
        | Mode::Overflow
        | Mode::EchoInError
        | Mode::EchoInStream => {
            stream.write_all(STREAM_HEAD).await?;
            stream_tokens(stream, asked, prompt, asked).await?;
            Ok(true)
        }
    }
}

/// The rest of an event stream whose head is sent: `tokens` token events, then a final event
/// reporting `prompt_n` prompt tokens and `predicted_n` generated ones.
async fn stream_tokens(
    stream: &mut TcpStream,
    tokens: u64,
    prompt_n: u64,
    predicted_n: u64,
) -> std::io::Result<()> {
    let mut out = Vec::new();
    for _ in 0..tokens {
        out.extend_from_slice(&chunk(TOKEN_EVENT));
    }
    out.extend_from_slice(&final_event(prompt_n, predicted_n));
    stream.write_all(&out).await
}

/// The values of the header `name` in a request head, any case.
pub(crate) fn header_values<'a>(head: &'a str, name: &str) -> Vec<&'a str> {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
        .collect()
}
