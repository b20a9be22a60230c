//! Test support: a simulator on 127.0.0.1 port 0 and a small SSE reader over reqwest.

#![allow(dead_code)]
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use std::time::{Duration, Instant};

use llmload_sim::{serve, FaultSpec, Profile, SimConfig};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A running simulator; stops when dropped.
pub(crate) struct Server {
    pub base: String,
    pub client: reqwest::Client,
    shutdown: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts a simulator with this profile, time scale and faults.
pub(crate) async fn start(profile: &str, time_scale: f64, faults: &[&str]) -> Server {
    let mut config = SimConfig::new(Profile::builtin(profile).expect("built in"));
    config.time_scale = time_scale;
    config.seed = 5;
    config.faults = faults
        .iter()
        .map(|spec| FaultSpec::parse(spec).expect("valid fault"))
        .collect();
    start_with(config).await
}

/// Starts a simulator with a full config.
pub(crate) async fn start_with(config: SimConfig) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(listener, config, shutdown.clone()));
    // reqwest's TLS (rustls without a built-in provider) wants one even for plain http; a
    // second test installing it is refused harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Server {
        base: format!("http://{address}"),
        client: reqwest::Client::new(),
        shutdown,
    }
}

impl Server {
    pub(crate) async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("request sent")
    }

    pub(crate) async fn get_json(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request sent");
        assert!(response.status().is_success(), "{path}");
        response.json().await.expect("json")
    }
}

/// One SSE event as received: its data and when it arrived.
#[derive(Debug)]
pub(crate) struct Event {
    pub data: String,
    pub at: Instant,
}

impl Event {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// Reads a stream to its end; `Err` carries the events received before the body failed.
pub(crate) async fn read_events(mut response: reqwest::Response) -> Result<Vec<Event>, Vec<Event>> {
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok()),
        Some("text/event-stream")
    );
    let mut events = Vec::new();
    let mut buffer = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), response.chunk())
            .await
            .expect("stream makes progress");
        let chunk = match chunk {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(events),
            Err(_) => return Err(events),
        };
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data = event.trim_end().strip_prefix("data: ").expect("data line");
            events.push(Event {
                data: data.to_owned(),
                at: Instant::now(),
            });
        }
    }
}
