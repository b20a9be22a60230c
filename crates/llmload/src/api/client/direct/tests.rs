//! Unit tests of `direct.rs`: which connection a request goes on, against a local server that
//! keeps its connections, closes them after a response (with or without saying so), or sends
//! bytes nobody asked for.

use super::*;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// What the server does with a connection after each response.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// Keeps it for the next request.
    Keep,
    /// Says `Connection: close` in the head, but leaves the socket open.
    SaysClose,
    /// Closes it when the test says so, and says when it has.
    CloseWhenTold,
    /// Sends bytes nobody asked for, and keeps it.
    Junk,
}

/// A local server of one llama.cpp stream per request.
struct Server {
    address: String,
    accepted: Arc<AtomicUsize>,
    close: mpsc::Sender<()>,
    closed: mpsc::Receiver<()>,
}

const EVENTS: &str = "data: {\"content\":\"a\",\"tokens\":[1],\"stop\":false}\n\n\
                      data: {\"content\":\"\",\"tokens\":[],\"stop\":true,\
                      \"tokens_predicted\":1,\"tokens_evaluated\":4}\n\n";

impl Server {
    fn start(after: After) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let (close, told) = mpsc::channel();
        let (done, closed) = mpsc::channel();
        let told = Arc::new(Mutex::new(told));
        let count = Arc::clone(&accepted);
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                count.fetch_add(1, Ordering::SeqCst);
                let (told, done) = (Arc::clone(&told), done.clone());
                std::thread::spawn(move || serve(stream, after, &told, &done));
            }
        });
        Server {
            address,
            accepted,
            close,
            closed,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Has the server close the connection it answered last, and waits until it has.
    fn close_last(&self) {
        self.close.send(()).expect("tell");
        self.closed
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("closed");
    }
}

/// Answers every request on `stream` with a stream of one token, then does what `after` says.
fn serve(
    mut stream: TcpStream,
    after: After,
    told: &Mutex<mpsc::Receiver<()>>,
    done: &mpsc::Sender<()>,
) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buffer[..n]),
            }
        }
        // The request's body is small and comes with its head here; what is read is dropped.
        request.clear();
        let connection = if after == After::SaysClose {
            "Connection: close\r\n"
        } else {
            ""
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
             Transfer-Encoding: chunked\r\n{connection}\r\n{:x}\r\n{EVENTS}\r\n0\r\n\r\n",
            EVENTS.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
        match after {
            After::Keep | After::SaysClose => {}
            After::Junk => {
                let _ = stream.write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n");
            }
            After::CloseWhenTold => {
                let _ = told.lock().expect("lock").recv();
                drop(stream);
                let _ = done.send(());
                return;
            }
        }
    }
}

/// One request through `origin`: whether it went on a kept connection, and whether it was sent
/// twice.
async fn request(origin: &Origin) -> (bool, bool) {
    let mut exchange = Exchange::new();
    let bytes = origin.request(Api::Llamacpp.path(), bytes::Bytes::from_static(b"{}"), "");
    read_direct(origin, Api::Llamacpp, bytes, &mut exchange)
        .await
        .expect("a whole stream");
    assert!(exchange.done.is_some());
    let reused = exchange.timing.expect("timing").reused;
    (reused, exchange.retried)
}

fn origin(server: &Server) -> Origin {
    Origin::parse(&format!("http://{}", server.address), &[], None).expect("origin")
}

#[tokio::test]
async fn a_kept_connection_is_reused_while_the_server_keeps_it() {
    let server = Server::start(After::Keep);
    let origin = origin(&server);
    assert_eq!(request(&origin).await, (false, false));
    assert_eq!(request(&origin).await, (true, false));
    assert_eq!(request(&origin).await, (true, false));
    assert_eq!(server.accepted(), 1);
}

/// The server closes the connection after the response has been read whole, and the runtime
/// (one thread, held here) has not turned its reactor since: tokio's record of the socket says
/// nothing happened. The check asks the socket itself, finds the end, and opens a new
/// connection; nothing is sent twice.
#[tokio::test]
async fn a_connection_closed_after_its_response_is_never_written_to() {
    let server = Server::start(After::CloseWhenTold);
    let origin = origin(&server);
    assert_eq!(request(&origin).await, (false, false));
    server.close_last();
    // The close reaches this socket while the runtime is held.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        request(&origin).await,
        (false, false),
        "a new connection, not a stale one sent twice"
    );
    assert_eq!(server.accepted(), 2);
    // The server closes after a response: connections are not kept any more (the next one
    // is left open by the server, yet a request after it opens its own).
    assert_eq!(request(&origin).await, (false, false));
    assert_eq!(server.accepted(), 3);
}

#[tokio::test]
async fn a_response_that_says_connection_close_gives_no_connection_back() {
    let server = Server::start(After::SaysClose);
    let origin = origin(&server);
    assert_eq!(request(&origin).await, (false, false));
    assert_eq!(request(&origin).await, (false, false));
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn a_connection_with_bytes_nobody_asked_for_is_dropped() {
    let server = Server::start(After::Junk);
    let origin = origin(&server);
    assert_eq!(request(&origin).await, (false, false));
    // Let the stray bytes arrive.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(request(&origin).await, (false, false));
    assert_eq!(server.accepted(), 2);
}

/// A server that answers one request with `events` as a chunked event stream, ended cleanly.
fn answer_once(events: &'static str) -> Origin {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buffer[..n]),
            }
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{events}\r\n0\r\n\r\n",
            events.len()
        );
        let _ = stream.write_all(response.as_bytes());
        let _ = stream.flush();
    });
    Origin::parse(&format!("http://{address}"), &[], None).expect("origin")
}

/// One chat stream from `origin`.
async fn chat(origin: &Origin) -> (Result<(), Failure>, Exchange) {
    let mut exchange = Exchange::new();
    let bytes = origin.request(Api::Chat.path(), bytes::Bytes::from_static(b"{}"), "");
    let result = read_direct(origin, Api::Chat, bytes, &mut exchange).await;
    (result, exchange)
}

#[tokio::test]
async fn a_stream_that_ends_after_its_finish_reason_without_done_is_complete() {
    let events = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n\
                  data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\n\n\
                  data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n";
    let (result, exchange) = chat(&answer_once(events)).await;
    assert!(result.is_ok(), "{result:?}");
    assert!(exchange.ended_without_done);
    assert_eq!(exchange.done, exchange.finished);
    assert_eq!(exchange.token_events.len(), 2);
    assert_eq!(exchange.counters.output_tokens, Some(2));
}

#[tokio::test]
async fn a_stream_that_ends_before_any_finish_reason_is_cut_short() {
    let events = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n";
    let (result, exchange) = chat(&answer_once(events)).await;
    assert!(
        matches!(&result, Err(Failure::Disconnected(m)) if m.contains("before its final event")),
        "{result:?}"
    );
    assert!(!exchange.ended_without_done && exchange.done.is_none());
}

#[tokio::test]
async fn done_after_the_finish_reason_is_the_end_as_ever() {
    let events =
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n\
                  data: [DONE]\n\n";
    let (result, exchange) = chat(&answer_once(events)).await;
    assert!(result.is_ok(), "{result:?}");
    assert!(!exchange.ended_without_done && exchange.done.is_some());
}

/// A stream's future is what each of 10,000 in-flight requests holds for as long as it lasts:
/// kept small (no future held twice, the rare paths boxed). An `async fn` that takes another
/// future by value holds it twice, which once made this 5 KB.
#[test]
fn a_streams_future_stays_small() {
    let endpoint = crate::api::client::Endpoint::build(
        "http://127.0.0.1:1",
        Api::Chat,
        (Duration::from_secs(1), Duration::from_secs(1)),
        None,
        &[],
        &crate::api::tls::TlsOptions::default(),
    )
    .expect("endpoint");
    let cancel = tokio_util::sync::CancellationToken::new();
    let body = crate::api::Body::from_json(&serde_json::json!({}));
    let stream = endpoint.stream(body, &cancel);
    let size = std::mem::size_of_val(&stream);
    assert!(size <= 3 * 1024, "{size} bytes");
}
