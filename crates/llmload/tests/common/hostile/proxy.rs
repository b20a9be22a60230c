//! The hostile modes that answer as a proxy: in front of a server that does not answer (the
//! error pages nginx, `HAProxy` and Caddy send), and in front of one that streams (passing each
//! token on, holding the stream and flushing it at intervals, or sending it with `MSG_MORE` so
//! that the kernel holds each piece up to 200 ms).

use super::{chunk, whole, Mode, STREAM_HEAD, TOKEN_EVENT};
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The chunk of a stream's final event, reporting `prompt_n` prompt tokens and `predicted_n`
/// generated ones, and the end of the chunked body.
pub(super) fn final_event(prompt_n: u64, predicted_n: u64) -> Vec<u8> {
    let last = json!({"content": "", "stop": true, "tokens_evaluated": prompt_n,
        "timings": {"prompt_n": prompt_n, "cache_n": 0, "predicted_n": predicted_n}});
    let mut out = chunk(format!("data: {last}\n\n").as_bytes());
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// [`Mode::Paced`] and [`Mode::Flushed`]: `asked` tokens, one every `ms` from `ms` on, written
/// at every multiple of `every` (at once when `every` is `ms`) and at the end.
pub(super) async fn paced(
    stream: &mut TcpStream,
    ms: u64,
    every: u64,
    asked: u64,
    prompt: u64,
) -> std::io::Result<bool> {
    stream.write_all(STREAM_HEAD).await?;
    let start = tokio::time::Instant::now();
    let mut held = Vec::new();
    let mut next_flush = every;
    for i in 1..=asked {
        let at = ms * i;
        while next_flush <= at {
            tokio::time::sleep_until(start + Duration::from_millis(next_flush)).await;
            if !held.is_empty() {
                stream.write_all(&held).await?;
                held.clear();
            }
            next_flush += every;
        }
        tokio::time::sleep_until(start + Duration::from_millis(at)).await;
        held.extend_from_slice(&chunk(TOKEN_EVENT));
        if every == ms {
            stream.write_all(&held).await?;
            held.clear();
        }
    }
    held.extend_from_slice(&final_event(prompt, asked));
    stream.write_all(&held).await?;
    Ok(true)
}

/// [`Mode::Corked`]: `asked` tokens, one every `ms` from `ms` on, the first one held starting a
/// timer of `hold` ms, when everything held goes in one write; the rest with the final event.
pub(super) async fn corked(
    stream: &mut TcpStream,
    ms: u64,
    hold: u64,
    asked: u64,
    prompt: u64,
) -> std::io::Result<bool> {
    stream.write_all(STREAM_HEAD).await?;
    let start = tokio::time::Instant::now();
    let mut waiting = Vec::new();
    let mut release = None;
    for i in 1..=asked {
        let at = ms * i;
        if let Some(due) = release.filter(|&due| due < at) {
            tokio::time::sleep_until(start + Duration::from_millis(due)).await;
            stream.write_all(&waiting).await?;
            waiting.clear();
            release = None;
        }
        tokio::time::sleep_until(start + Duration::from_millis(at)).await;
        waiting.extend_from_slice(&chunk(TOKEN_EVENT));
        release.get_or_insert(at + hold);
    }
    if let Some(due) = release {
        tokio::time::sleep_until(start + Duration::from_millis(due)).await;
    }
    waiting.extend_from_slice(&final_event(prompt, asked));
    stream.write_all(&waiting).await?;
    Ok(true)
}

/// The page of [`Mode::BadGateway`] (every request), [`Mode::GatewayTimeout`] and
/// [`Mode::EmptyBadGateway`] (generations); the connection stays open.
pub(super) async fn page(stream: &mut TcpStream, mode: &Mode) -> std::io::Result<bool> {
    let (status, kind, page) = match mode {
        Mode::BadGateway => (
            "502 Bad Gateway",
            "text/html",
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
             <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n\
             </body>\r\n</html>\r\n",
        ),
        Mode::GatewayTimeout => (
            "504 Gateway Time-out",
            "text/html",
            "<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n\
             </body></html>\n",
        ),
        _ => ("502 Bad Gateway", "text/plain", ""),
    };
    whole(stream, status, kind, page).await?;
    Ok(true)
}
