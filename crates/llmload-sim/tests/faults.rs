//! Every fault kind over real HTTP on 127.0.0.1, checked by its effect on the wire.

mod common;

use std::time::{Duration, Instant};

use common::{read_events, start, Server};
use serde_json::{json, Value};

fn llama_request(n_predict: usize) -> Value {
    json!({"prompt": (0..64).collect::<Vec<u32>>(), "n_predict": n_predict, "ignore_eos": true,
           "cache_prompt": false, "stream": true, "return_tokens": true})
}

fn openai_request(max_tokens: usize) -> Value {
    json!({"prompt": (0..64).collect::<Vec<u32>>(), "max_tokens": max_tokens,
           "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})
}

async fn statuses(server: &Server, requests: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for _ in 0..requests {
        let response = server.post("/completion", llama_request(2)).await;
        statuses.push(response.status().as_u16());
        let _ = response.bytes().await;
    }
    statuses
}

#[tokio::test]
async fn http_status_faults_answer_json_errors() {
    for (kind, status, error_type) in [
        ("http429", 429, "rate_limit_error"),
        ("http500", 500, "server_error"),
        ("http503", 503, "unavailable_error"),
    ] {
        let server = start("cpu-tiny", 50.0, &[kind]).await;
        let response = server.post("/v1/completions", openai_request(4)).await;
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.expect("json error body");
        assert_eq!(body["error"]["code"], status);
        assert_eq!(body["error"]["type"], error_type);
    }
}

#[tokio::test]
async fn selectors_choose_requests_by_serial() {
    let server = start("cpu-tiny", 50.0, &["http503:every=2"]).await;
    assert_eq!(statuses(&server, 4).await, [200, 503, 200, 503]);
    let server = start("cpu-tiny", 50.0, &["http429:index=0;2"]).await;
    assert_eq!(statuses(&server, 4).await, [429, 200, 429, 200]);
    let server = start("cpu-tiny", 50.0, &["http500:rate=0"]).await;
    assert_eq!(statuses(&server, 2).await, [200, 200]);
}

#[tokio::test]
async fn drop_closes_the_connection_mid_stream() {
    let server = start("cpu-tiny", 50.0, &["drop:after=3"]).await;
    let response = server.post("/completion", llama_request(10)).await;
    let events = read_events(response).await.expect_err("stream breaks");
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|event| event.json()["stop"] == false));
    // Without streaming the connection closes before any answer.
    let mut request = llama_request(10);
    request["stream"] = json!(false);
    let sent = server
        .client
        .post(format!("{}/completion", server.base))
        .json(&request)
        .send()
        .await;
    assert!(sent.is_err());
}

#[tokio::test]
async fn stall_pauses_the_stream() {
    let server = start("cpu-tiny", 50.0, &["stall:after=2,ms=300"]).await;
    let response = server.post("/completion", llama_request(4)).await;
    let events = read_events(response)
        .await
        .expect("stream resumes and ends");
    assert_eq!(events.len(), 5);
    let gap = events[2].at - events[1].at;
    // A stall is never shorter than asked (a lower bound the timer guarantees); how much
    // longer is a matter of the machine's load, measured by the benchmarks, not tested.
    assert!(gap >= Duration::from_millis(290), "gap {gap:?}");
}

#[tokio::test]
async fn malformed_emits_one_broken_event() {
    let server = start("cpu-tiny", 50.0, &["malformed:after=2"]).await;
    let response = server.post("/completion", llama_request(4)).await;
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(events.len(), 6);
    let broken: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| serde_json::from_str::<Value>(&event.data).is_err())
        .map(|(index, _)| index)
        .collect();
    assert_eq!(broken, [2]);
}

#[tokio::test]
async fn early_eos_stops_despite_ignore_eos() {
    let server = start("cpu-tiny", 50.0, &["early-eos:after=3"]).await;
    let response = server.post("/completion", llama_request(10)).await;
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(events.len(), 4);
    let last = events[3].json();
    assert_eq!(last["stop_type"], "eos");
    assert_eq!(last["tokens_predicted"], 3);
    let response = server.post("/v1/completions", openai_request(10)).await;
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(events[2].json()["choices"][0]["finish_reason"], "stop");
    assert_eq!(events[3].json()["usage"]["completion_tokens"], 3);
}

#[tokio::test]
async fn fake_cache_reports_cached_tokens() {
    let server = start("cpu-tiny", 50.0, &["fake-cache:tokens=20", "fake-cache"]).await;
    let response = server.post("/completion", llama_request(2)).await;
    let events = read_events(response).await.expect("stream ends");
    let timings = &events[2].json()["timings"];
    assert_eq!(
        (timings["cache_n"].as_u64(), timings["prompt_n"].as_u64()),
        (Some(20), Some(44))
    );
    let response = server.post("/v1/completions", openai_request(2)).await;
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(
        events[2].json()["usage"]["prompt_tokens_details"]["cached_tokens"],
        20
    );
    let server = start("cpu-tiny", 50.0, &["fake-cache"]).await;
    let response = server.post("/completion", llama_request(2)).await;
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(events[2].json()["timings"]["cache_n"], 32);
}

#[tokio::test]
async fn multi_token_packs_tokens_per_event() {
    let server = start("cpu-tiny", 50.0, &["multi-token:k=3"]).await;
    let response = server.post("/completion", llama_request(10)).await;
    let events = read_events(response).await.expect("stream ends");
    let sizes: Vec<usize> = events
        .iter()
        .map(|event| event.json()["tokens"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, [3, 3, 3, 1, 0]);
    let words = events[0].json()["content"]
        .as_str()
        .map(|content| content.split_whitespace().count());
    assert_eq!(words, Some(3));
    assert_eq!(events[1].json()["tokens_predicted"], 6);
}

#[tokio::test]
async fn slow_first_byte_delays_headers() {
    let server = start("cpu-tiny", 50.0, &["slow-first-byte:ms=300"]).await;
    let sent = Instant::now();
    let response = server.post("/completion", llama_request(2)).await;
    let headers_after = sent.elapsed();
    assert!(
        headers_after >= Duration::from_millis(290),
        "{headers_after:?}"
    );
    let events = read_events(response).await.expect("stream ends");
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn faults_combine() {
    let server = start("cpu-tiny", 50.0, &["multi-token:k=2", "drop:after=4"]).await;
    let response = server.post("/completion", llama_request(10)).await;
    let events = read_events(response).await.expect_err("dropped");
    let tokens: usize = events
        .iter()
        .map(|event| event.json()["tokens"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!((events.len(), tokens), (2, 4));
}
