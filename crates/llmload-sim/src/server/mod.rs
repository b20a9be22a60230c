//! The HTTP layer: accepts connections, routes requests to the info endpoints or to generation,
//! and applies faults. Everything about time lives in the engine task (`driver`); this layer
//! only formats what the engine reports.

mod events;
mod generate;
mod info;
mod pool;
mod reply;
mod request;
mod stamped;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::driver::EngineHandle;
use crate::fault::FaultInjector;
use crate::{Profile, Tokenizer};
use generate::Outcome;
use reply::{ApiError, Body};
use request::Api;

/// Largest request body accepted, in bytes.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Everything request handlers share.
pub(crate) struct State {
    /// The effective profile (slots overridden).
    pub profile: Profile,
    /// Seed of every random choice.
    pub seed: u64,
    /// Modelled time per wall-clock time.
    pub time_scale: f64,
    /// Serial numbers and fault decisions.
    pub faults: FaultInjector,
    /// The shared tokenizer.
    pub tokenizer: Tokenizer,
    /// The engine task.
    pub engine: EngineHandle,
    /// Whether tokens follow the engine or a fixed timeline.
    pub schedule: crate::Schedule,
    /// Playing a hosted endpoint (see [`crate::SimConfig::hosted`]).
    pub hosted: bool,
    /// Generation requests in flight: from their arrival to their answer's end.
    pub generating: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// One generation request counted in flight until dropped.
#[derive(Debug)]
pub(crate) struct Generating(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Generating {
    /// Counts one more request in `count` until the guard is dropped.
    pub(crate) fn start(count: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Generating(std::sync::Arc::clone(count))
    }
}

impl Drop for Generating {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What a hosted endpoint does not have.
const NOT_HOSTED: &[&str] = &[
    "/props",
    "/slots",
    "/metrics",
    "/tokenize",
    "/detokenize",
    "/completion",
    "/completions",
    "/start_profile",
    "/stop_profile",
];

/// Accepts connections until `shutdown` is cancelled.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => spawn_connection(stream, Arc::clone(&state), shutdown.clone()),
            // Accept errors (out of file descriptors, aborted handshakes) pass; back off a
            // little so that a full descriptor table does not spin the loop.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

fn spawn_connection(stream: TcpStream, state: Arc<State>, shutdown: CancellationToken) {
    // Small SSE frames must leave at once, not wait for Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    tokio::spawn(async move {
        let (stream, arrival) = stamped::Stamped::new(stream);
        let service =
            service_fn(move |request| handle(Arc::clone(&state), request, Arc::clone(&arrival)));
        let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
        tokio::select! {
            _ = connection => {}
            () = shutdown.cancelled() => {}
        }
    });
}

/// Error a handler returns to make hyper close the connection without an answer.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by the drop fault")]
struct Dropped;

/// Answers one request; `arrival` is when its connection's latest bytes arrived.
async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    arrival: stamped::Arrival,
) -> Result<Response<Body>, Dropped> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    if state.hosted && NOT_HOSTED.contains(&path) {
        return Ok(
            ApiError::new(StatusCode::NOT_FOUND, format!("no endpoint at {path}")).into_response(),
        );
    }
    let generation = generation_api(path);
    if parts.method == Method::POST {
        let posted = match read_body(body).await {
            Ok(bytes) => bytes,
            Err(error) => return Ok(error.into_response()),
        };
        // The body is whole: the latest bytes were its last.
        let arrived = arrival
            .lock()
            .ok()
            .and_then(|a| *a)
            .unwrap_or_else(tokio::time::Instant::now);
        let outcome = match (generation, pool::route(path)) {
            (Some(api), _) => Some(generate::generate(&state, api, &posted, arrived).await),
            (None, Some(kind)) => Some(pool::answer(&state, kind, &posted, arrived).await),
            (None, None) => None,
        };
        let response = match (outcome, path) {
            (Some(Outcome::Respond(response)), _) => Ok(response),
            (Some(Outcome::Drop), _) => return Err(Dropped),
            (None, "/tokenize") => info::tokenize(&state, &posted),
            (None, "/detokenize") => info::detokenize(&state, &posted),
            // vLLM's and SGLang's profiler: nothing to profile here, so nothing is written.
            (None, "/start_profile" | "/stop_profile") => {
                Ok(reply::json_response(StatusCode::OK, &serde_json::json!({})))
            }
            (None, _) => Err(unrouted(path, false)),
        };
        return Ok(response.unwrap_or_else(ApiError::into_response));
    }
    let response = match (&parts.method, path) {
        (&Method::GET, "/health") => info::health(),
        (&Method::GET, "/props") => info::props(&state),
        (&Method::GET, "/slots") => info::slots(&state),
        (&Method::GET, "/v1/models" | "/models") => info::models(&state),
        (&Method::GET, "/metrics") => info::metrics(&state),
        _ => unrouted(path, generation.is_some() || pool::route(path).is_some()).into_response(),
    };
    Ok(response)
}

fn generation_api(path: &str) -> Option<Api> {
    match path {
        "/completion" | "/completions" => Some(Api::Llama),
        "/v1/completions" => Some(Api::Completions),
        "/v1/chat/completions" | "/chat/completions" => Some(Api::Chat),
        _ => None,
    }
}

fn unrouted(path: &str, generation: bool) -> ApiError {
    const KNOWN: &[&str] = &[
        "/health",
        "/props",
        "/slots",
        "/v1/models",
        "/models",
        "/metrics",
        "/tokenize",
        "/detokenize",
        "/start_profile",
        "/stop_profile",
    ];
    if generation || KNOWN.contains(&path) {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method not allowed on {path}"),
        )
    } else {
        ApiError::new(StatusCode::NOT_FOUND, format!("no endpoint at {path}"))
    }
}

async fn read_body(body: Incoming) -> Result<Bytes, ApiError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("cannot read the request body: {error}"),
        )),
    }
}
