//! A TCP front on the loopback for tests against a real server: it passes every connection on
//! byte for byte, counts the connections whose first request is a generation, and can refuse
//! those with `503` in the server's place, or hold what the server sends and pass it on at
//! intervals, as a buffering proxy does.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a [`Front`] does with a generation request (`POST /completion`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Passes it on to llama-server, as every other request.
    Pass,
    /// Answers `503 Service Unavailable` itself: the server refuses every generation.
    Refuse,
    /// Passes everything on, but holds what the server sends and writes it to the client at
    /// every interval of this long (`HAProxy`'s way with a stream in its default configuration).
    Buffer(Duration),
}

/// A TCP front on a free loopback port in front of llama-server: every connection is passed on
/// byte for byte, and the connections whose first request is a generation are counted (a
/// request sent on a kept-alive connection opens none). In [`Mode::Refuse`] it answers those
/// requests `503` instead.
pub(crate) struct Front {
    /// Base URL.
    pub url: String,
    generations: Arc<AtomicUsize>,
}

impl Front {
    /// Starts a front for `upstream` (`http://host:port`) on a free loopback port.
    pub(crate) fn start(upstream: &str, mode: Mode) -> Front {
        let upstream = upstream
            .strip_prefix("http://")
            .expect("an http:// URL")
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let generations = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&generations);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let (upstream, counter) = (upstream.clone(), Arc::clone(&counter));
                std::thread::spawn(move || {
                    let _ = serve(client, &upstream, mode, &counter);
                });
            }
        });
        Front { url, generations }
    }

    /// Connections whose first request was a generation, so far.
    pub(crate) fn generations(&self) -> usize {
        self.generations.load(Ordering::SeqCst)
    }
}

/// One connection: its first request head read (64 KiB at most, 60 s at most), then passed on
/// or refused.
fn serve(
    mut client: TcpStream,
    upstream: &str,
    mode: Mode,
    generations: &AtomicUsize,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut read = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = client.read(&mut buf)?;
        if n == 0 || read.len() > 64 << 10 {
            return Ok(());
        }
        read.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&read[..head_end]).to_ascii_lowercase();
    if let Mode::Buffer(every) = mode {
        generations.fetch_add(
            usize::from(head.starts_with("post /completion ")),
            Ordering::SeqCst,
        );
        return buffered(client, upstream, &read, every);
    }
    if !head.starts_with("post /completion ") {
        return pass(client, upstream, &read);
    }
    generations.fetch_add(1, Ordering::SeqCst);
    if mode == Mode::Pass {
        return pass(client, upstream, &read);
    }
    // The body read whole first, so that closing never resets the connection under the answer.
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while read.len() < head_end + length.min(1 << 20) {
        let n = client.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        read.extend_from_slice(&buf[..n]);
    }
    let body = r#"{"error":{"code":503,"message":"refused by the test front"}}"#;
    write!(
        client,
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    client.flush()?;
    client.shutdown(Shutdown::Both)
}

/// Passes a connection on: what was read so far, then both directions until the server closes.
fn pass(mut client: TcpStream, upstream: &str, read: &[u8]) -> std::io::Result<()> {
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(read)?;
    let (mut from_server, mut to_client) = (server.try_clone()?, client.try_clone()?);
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Both);
    });
    client.set_read_timeout(None)?;
    let _ = std::io::copy(&mut client, &mut server);
    let _ = server.shutdown(Shutdown::Write);
    let _ = back.join();
    Ok(())
}

/// As [`pass`], the server's bytes held and written to the client once every `every` (what is
/// held when the server closes, at once).
fn buffered(
    mut client: TcpStream,
    upstream: &str,
    read: &[u8],
    every: Duration,
) -> std::io::Result<()> {
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(read)?;
    let held = Arc::new(std::sync::Mutex::new((Vec::<u8>::new(), false)));
    let (mut from_server, into) = (server.try_clone()?, Arc::clone(&held));
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            let n = from_server.read(&mut buf).unwrap_or(0);
            let mut held = into
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if n == 0 {
                held.1 = true;
                return;
            }
            held.0.extend_from_slice(&buf[..n]);
        }
    });
    let mut to_client = client.try_clone()?;
    let flusher = std::thread::spawn(move || loop {
        std::thread::sleep(every);
        let (bytes, closed) = {
            let mut held = held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (std::mem::take(&mut held.0), held.1)
        };
        if !bytes.is_empty() && to_client.write_all(&bytes).is_err() {
            return;
        }
        if closed {
            let _ = to_client.shutdown(Shutdown::Both);
            return;
        }
    });
    client.set_read_timeout(None)?;
    let _ = std::io::copy(&mut client, &mut server);
    let _ = server.shutdown(Shutdown::Write);
    let _ = flusher.join();
    Ok(())
}
