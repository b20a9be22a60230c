//! Fixed and zero-cost schedules: tokens on an exact per-request timeline, whatever the load, or
//! as fast as the connection takes them.

mod common;

use std::time::{Duration, Instant};

use common::{read_events, start_with, Server};
use llmload_sim::{FaultSpec, Profile, Schedule, SimConfig};
use serde_json::json;

#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
async fn start(schedule: &str, faults: &[&str]) -> Server {
    let mut config = SimConfig::new(Profile::builtin("cpu-tiny").expect("built in"));
    config.schedule = schedule.parse::<Schedule>().expect("valid schedule");
    config.faults = faults
        .iter()
        .map(|spec| FaultSpec::parse(spec).expect("valid fault"))
        .collect();
    start_with(config).await
}

fn completions(tokens: usize) -> serde_json::Value {
    json!({"model": "tiny-sim", "prompt": (0..32).collect::<Vec<u32>>(), "max_tokens": tokens,
           "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})
}

/// Milliseconds from `start` to each event carrying text, and the whole stream's events.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
async fn token_times(server: &Server, tokens: usize) -> Vec<f64> {
    let start = Instant::now();
    let response = server.post("/v1/completions", completions(tokens)).await;
    let events = read_events(response).await.expect("complete stream");
    events
        .iter()
        .filter(|e| e.data != "[DONE]" && e.json()["choices"][0]["text"].is_string())
        .map(|e| e.at.duration_since(start).as_secs_f64() * 1e3)
        .collect()
}

#[tokio::test]
async fn fixed_schedule_sends_on_its_grid() {
    let server = start("fixed:ttft_ms=60,itl_ms=15", &[]).await;
    let times = token_times(&server, 6).await;
    assert_eq!(times.len(), 6);
    // Never before its time on the grid (the schedule's guarantee); how late on a busy machine
    // is what `scripts/bench-sim-streams.sh` measures.
    for (k, t) in times.iter().enumerate() {
        let due = 60.0 + 15.0 * k as f64;
        assert!(*t >= due - 1.0, "token {k} at {t} ms: {times:?}");
    }
    let props = server.get_json("/props").await;
    assert_eq!(
        props["llmload_sim"]["schedule"],
        "fixed:ttft_ms=60,itl_ms=15"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_schedule_ignores_the_engine_s_slots() {
    // cpu-tiny has two slots: under the engine model 100 requests would queue for seconds.
    let server = start("fixed:ttft_ms=200,itl_ms=10", &[]).await;
    let streams: Vec<_> = (0..100)
        .map(|_| {
            let client = server.client.clone();
            let url = format!("{}/v1/completions", server.base);
            tokio::spawn(async move {
                let start = Instant::now();
                let response = client.post(url).json(&completions(3)).send().await;
                let events = read_events(response.expect("sent"))
                    .await
                    .expect("complete");
                (events[0].at.duration_since(start), events.len())
            })
        })
        .collect();
    for stream in streams {
        let (first, events) = stream.await.expect("stream task");
        assert_eq!(events, 5, "three tokens, usage, [DONE]");
        // Every stream gets its own schedule (no slot queue): none waits for another, so
        // none is early, and all 100 complete with their three tokens.
        assert!(first >= Duration::from_millis(199), "{first:?}");
    }
}

#[tokio::test]
async fn zero_cost_streams_every_token_as_its_own_event_at_once() {
    let server = start("zero-cost:write=each", &[]).await;
    let response = server.post("/v1/completions", completions(256)).await;
    let events = read_events(response).await.expect("complete stream");
    assert_eq!(events.len(), 256 + 2);
    assert_eq!(events[256].json()["usage"]["completion_tokens"], 256);
    let chat = json!({"model": "tiny-sim", "messages": [{"role": "user", "content": "hi"}],
                      "max_tokens": 8, "ignore_eos": true, "stream": true});
    let response = server.post("/v1/chat/completions", chat).await;
    let events = read_events(response).await.expect("complete stream");
    // Role-only chunk, eight tokens, the finish chunk, [DONE].
    assert_eq!(events.len(), 1 + 8 + 1 + 1);
}

#[tokio::test]
async fn schedules_keep_faults_and_timings() {
    let server = start(
        "fixed:ttft_ms=5,itl_ms=2",
        &["multi-token:k=4", "early-eos:after=6"],
    )
    .await;
    let body = json!({"prompt": (0..16).collect::<Vec<u32>>(), "n_predict": 20,
                      "ignore_eos": true, "stream": true, "return_tokens": true});
    let response = server.post("/completion", body).await;
    let events = read_events(response).await.expect("complete stream");
    let carried: Vec<usize> = events
        .iter()
        .map(|e| e.json()["tokens"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(carried, vec![4, 2, 0], "k=4 then the rest before the EOS");
    let last = events[2].json();
    assert_eq!(last["stop_type"], "eos");
    assert_eq!(last["timings"]["predicted_n"], 6);
    assert_eq!(last["timings"]["prompt_ms"], 5.0);
    let server = start("zero-cost:write=each", &["drop:after=3"]).await;
    let response = server.post("/v1/completions", completions(10)).await;
    let events = read_events(response).await.expect_err("dropped");
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn zero_cost_without_write_each_streams_every_token_too() {
    let server = start("zero-cost", &[]).await;
    let response = server.post("/v1/completions", completions(64)).await;
    let events = read_events(response).await.expect("complete stream");
    assert_eq!(events.len(), 64 + 2);
    let texts = events[..64]
        .iter()
        .filter(|e| {
            e.json()["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert_eq!(texts, 64, "one token per event");
}
