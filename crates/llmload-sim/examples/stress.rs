//! Holds many concurrent streams against a running simulator and checks each one completes:
//! `cargo run --release -p llmload-sim --example stress -- ADDRESS STREAMS [OUTPUT_TOKENS]`.
//! Uses raw sockets (one per stream, `Connection: close`) so the client stays cheap.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example: it prints what it measured and each failed stream"
)]

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let address = args
        .first()
        .ok_or("usage: stress ADDRESS STREAMS [OUTPUT_TOKENS]")?
        .clone();
    let streams: usize = args.get(1).map_or(Ok(1000), |s| s.parse())?;
    let output_tokens: usize = args.get(2).map_or(Ok(64), |s| s.parse())?;
    let start = Instant::now();
    let tasks: Vec<_> = (0..streams)
        .map(|index| tokio::spawn(one_stream(address.clone(), index, output_tokens)))
        .collect();
    let mut complete = 0;
    let mut first_tokens = Vec::new();
    for task in tasks {
        match task.await? {
            Ok(first_token) => {
                complete += 1;
                first_tokens.push(first_token);
            }
            Err(error) => eprintln!("stream failed: {error}"),
        }
    }
    first_tokens.sort();
    let median = first_tokens
        .get(first_tokens.len() / 2)
        .copied()
        .unwrap_or_default();
    println!(
        "{complete} of {streams} streams complete in {:.2} s; median TTFT {:.3} s",
        start.elapsed().as_secs_f64(),
        median.as_secs_f64()
    );
    Ok(())
}

async fn one_stream(
    address: String,
    index: usize,
    output_tokens: usize,
) -> Result<Duration, Box<dyn std::error::Error + Send + Sync>> {
    let prompt: Vec<usize> = (index * 64..index * 64 + 64).collect();
    let body = format!(
        "{{\"prompt\":{prompt:?},\"n_predict\":{output_tokens},\"ignore_eos\":true,\
         \"cache_prompt\":false,\"stream\":true}}"
    );
    let host = address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).await?;
    let sent = Instant::now();
    let request = format!(
        "POST /completion HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut first_token = None;
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        received.extend_from_slice(&buffer[..read]);
        if first_token.is_none() && received.windows(6).any(|w| w == b"data: ") {
            first_token = Some(sent.elapsed());
        }
    }
    let text = String::from_utf8_lossy(&received);
    let events = text.matches("data: ").count();
    if events != output_tokens + 1 || !text.contains("\"stop\":true") {
        return Err(format!("stream {index}: {events} events").into());
    }
    Ok(first_token.unwrap_or_default())
}
