//! The hostile modes whose generations frame their response wrongly, end it with an error event,
//! echo the request they got, or say what no request can have.

use super::{chunk, generate, stream_tokens, whole, Mode, Request, STREAM_HEAD, TOKEN_EVENT};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

/// `POST /completion` of [`Mode::EchoInError`] and [`Mode::EchoInStream`]; a one-token request
/// (a probe during setup) is answered properly.
pub(super) async fn echo(
    stream: &mut TcpStream,
    mode: &Mode,
    request: &Request,
) -> std::io::Result<bool> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    if body["n_predict"].as_u64().unwrap_or(0) <= 1 {
        return generate(stream, &Mode::Normal, &request.body).await;
    }
    let text = format!(
        "{}\r\n\r\n{}",
        request.seen.head,
        String::from_utf8_lossy(&request.body)
    );
    if *mode == Mode::EchoInError {
        whole(stream, "500 Internal Server Error", "text/plain", &text).await?;
        return Ok(true);
    }
    let mut out = STREAM_HEAD.to_vec();
    out.extend_from_slice(&chunk(TOKEN_EVENT));
    out.extend_from_slice(&chunk(TOKEN_EVENT));
    let error = json!({"error": {"code": 500, "message": text, "type": "server_error"}});
    out.extend_from_slice(&chunk(format!("data: {error}\n\n").as_bytes()));
    out.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&out).await?;
    Ok(false)
}

/// The interim heads [`Mode::Interim`] sends before every answer.
pub(super) const INTERIM: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";

/// A generation of the modes that frame their response wrongly, clump its tokens, or end it
/// with an error event.
pub(super) async fn misframed(
    stream: &mut TcpStream,
    mode: &Mode,
    asked: u64,
    prompt: u64,
) -> std::io::Result<bool> {
    match mode {
        Mode::Interim => {
            // The interim heads went before (as before every answer of this mode).
            stream.write_all(STREAM_HEAD).await?;
            stream_tokens(stream, asked, prompt, asked).await?;
            Ok(true)
        }
        Mode::TwoLengths => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 10\r\nContent-Length: 2000\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&[b'x'; 2000]).await?;
            Ok(false)
        }
        Mode::Gzip => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            stream_tokens(stream, asked, prompt, asked).await?;
            Ok(true)
        }
        Mode::Clumped => {
            let mut out = STREAM_HEAD.to_vec();
            for _ in 0..asked / 4 {
                out.extend_from_slice(&chunk(
                    b"data: {\"content\":\"x x x x\",\"stop\":false}\n\n",
                ));
            }
            let last = json!({"content": "", "stop": true, "tokens_evaluated": prompt,
                "timings": {"prompt_n": prompt, "cache_n": 0, "predicted_n": asked}});
            out.extend_from_slice(&chunk(format!("data: {last}\n\n").as_bytes()));
            out.extend_from_slice(b"0\r\n\r\n");
            stream.write_all(&out).await?;
            Ok(true)
        }
        Mode::ErrorEvent => {
            let mut out = STREAM_HEAD.to_vec();
            out.extend_from_slice(&chunk(TOKEN_EVENT));
            out.extend_from_slice(&chunk(TOKEN_EVENT));
            let error =
                b"event: error\ndata: {\"error\": {\"message\": \"overloaded: retry later\"}}\n\n";
            out.extend_from_slice(&chunk(error));
            out.extend_from_slice(b"0\r\n\r\n");
            stream.write_all(&out).await?;
            Ok(false)
        }
        Mode::NoContent => {
            stream.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await?;
            Ok(true)
        }
        Mode::AbsurdTimings => {
            let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n".to_vec();
            out.extend_from_slice(b"X-Request-Id: \xe2\x80\xae\xffid-");
            out.extend_from_slice(&[b'a'; 300]);
            out.extend_from_slice(b"\r\nTransfer-Encoding: chunked\r\n\r\n");
            for _ in 0..asked {
                out.extend_from_slice(&chunk(TOKEN_EVENT));
            }
            let last = json!({"content": "", "stop": true, "tokens_evaluated": prompt,
                "timings": {"prompt_n": prompt, "cache_n": 0, "predicted_n": asked,
                    "prompt_ms": -1e300, "predicted_ms": 2.5}});
            out.extend_from_slice(&chunk(format!("data: {last}\n\n").as_bytes()));
            out.extend_from_slice(b"0\r\n\r\n");
            stream.write_all(&out).await?;
            Ok(true)
        }
        _ => unreachable!("not a misframing mode"),
    }
}
