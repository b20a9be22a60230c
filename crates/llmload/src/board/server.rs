//! The `/metrics` endpoint: HTTP/1.1, read-only, bounded. `GET /metrics` (and `HEAD`) renders the
//! board; anything else is refused with a status. At most [`CONNECTIONS`] connections are served
//! at once (one past that is closed unanswered), each answers one request within [`DEADLINE`],
//! and a request head larger than hyper's smallest buffer (8 KiB) is refused. Nothing in an
//! answer comes from a request: a scraper cannot make it say anything else.

use super::text::Format;
use super::Board;
use crate::error::{Error, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Connections served at once.
pub const CONNECTIONS: usize = 8;

/// The longest a connection may take, from accept to its answer sent.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The longest a client may take to send its request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);

/// The endpoint, serving until stopped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Server {
    /// Binds `addr` and serves `board` there.
    pub async fn bind(addr: SocketAddr, board: Arc<Board>) -> Result<Server> {
        let listener = TcpListener::bind(addr).await.map_err(|source| Error::Io {
            what: format!("--metrics-listen {addr}: cannot listen"),
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| Error::Io {
            what: format!("--metrics-listen {addr}"),
            source,
        })?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept(listener, board, stop.clone()));
        Ok(Server { addr, stop, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves on for `linger`, or until `stop` fires, then stops.
    pub async fn linger(self, linger: Duration, stop: impl std::future::Future<Output = ()>) {
        if !linger.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(linger) => {}
                () = stop => {}
            }
        }
        self.stop().await;
    }

    /// Stops accepting; connections being served are dropped.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn accept(listener: TcpListener, board: Arc<Board>, stop: CancellationToken) {
    let places = Arc::new(Semaphore::new(CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => {
                // Out of descriptors, a reset before accept: try the next one after a breath.
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                stream
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let board = board.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| {
                let board = board.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&board, &request)) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_DEADLINE)
                .max_buf_size(8192)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(DEADLINE, connection).await;
            drop(place);
        });
    }
    connections.abort_all();
}

/// The answer to one request: the board at `GET /metrics`, a status otherwise.
fn answer(board: &Board, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let get = matches!(*request.method(), Method::GET | Method::HEAD);
    let (status, content_type, body) = match (path, get) {
        ("/metrics", true) => {
            let accept = request
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let format = Format::from_accept(accept);
            (StatusCode::OK, format.content_type(), board.render(format))
        }
        ("/metrics", false) => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "GET /metrics only\n".to_owned(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "llmload serves GET /metrics only\n".to_owned(),
        ),
    };
    let body = if *request.method() == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(body)
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
    }
    response
}

#[cfg(test)]
mod tests;
