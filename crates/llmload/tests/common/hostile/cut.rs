//! The hostile modes whose streams end early: one that cuts every other stream after its first
//! token and ends it as if complete (llama-cpp-python at concurrency 2 ends the stream in progress
//! when the next request arrives), one that stops every stream at its own end of sequence, early,
//! and one that writes why in plain text, outside any event, before it closes (a server whose
//! context filled up mid-stream).

use super::proxy::final_event;
use super::{chunk, Request, STREAM_HEAD, TOKEN_EVENT};
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

/// What [`Mode::Overflow`](super::Mode::Overflow) writes before it closes.
pub(crate) const OVERFLOW: &str = "Requested tokens (2100) exceed context window of 2048";

/// The serial number at the end of a request's `X-Request-Id` (`ATTEMPT-N`).
fn serial(request: &Request) -> Option<u64> {
    let head = request.seen.head.to_ascii_lowercase();
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id:"))?
        .trim();
    id.rsplit('-').next()?.parse().ok()
}

/// `POST /completion` of [`Mode::CutEveryOther`](super::Mode::CutEveryOther): a request whose
/// id's serial number is even gets one token and a final event that says one was generated;
/// the others all they asked for.
pub(super) async fn every_other(
    stream: &mut TcpStream,
    request: &Request,
) -> std::io::Result<bool> {
    stop_at(stream, request, |serial, asked| {
        if serial % 2 == 0 {
            asked.min(1)
        } else {
            asked
        }
    })
    .await
}

/// `POST /completion` of [`Mode::StopsEarly`](super::Mode::StopsEarly): 20, 30 or 40 % of the
/// tokens asked for (rounded), by the request id's serial number.
pub(super) async fn early(stream: &mut TcpStream, request: &Request) -> std::io::Result<bool> {
    stop_at(stream, request, |serial, asked| {
        (asked * (2 + serial % 3) + 5) / 10
    })
    .await
}

/// A stream of the tokens `tokens(serial, asked)` says, ended as if complete with a final event
/// that counts them.
async fn stop_at(
    stream: &mut TcpStream,
    request: &Request,
    tokens: impl Fn(u64, u64) -> u64,
) -> std::io::Result<bool> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let prompt = body["prompt"].as_array().map_or(0, Vec::len);
    let prompt = u64::try_from(prompt).unwrap_or(u64::MAX);
    let asked = body["n_predict"].as_u64().unwrap_or(0);
    let tokens = tokens(serial(request).unwrap_or(1), asked);
    let mut out = STREAM_HEAD.to_vec();
    for _ in 0..tokens {
        out.extend_from_slice(&chunk(TOKEN_EVENT));
    }
    out.extend_from_slice(&final_event(prompt, tokens));
    stream.write_all(&out).await?;
    Ok(true)
}

/// A generation of [`Mode::Overflow`](super::Mode::Overflow): three tokens, then [`OVERFLOW`]
/// as a line of plain text, and the end of the body without a final event.
pub(super) async fn overflow(stream: &mut TcpStream) -> std::io::Result<bool> {
    let mut out = STREAM_HEAD.to_vec();
    for _ in 0..3 {
        out.extend_from_slice(&chunk(TOKEN_EVENT));
    }
    out.extend_from_slice(&chunk(format!("{OVERFLOW}\n\n").as_bytes()));
    out.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&out).await?;
    Ok(false)
}
