//! The simulator over real HTTP on 127.0.0.1: every endpoint's wire format, the three
//! generation APIs streaming and not, errors, the prefix cache, and first-token timing.

mod common;

use std::time::Instant;

use common::{read_events, start};
use serde_json::{json, Value};

#[tokio::test]
async fn info_endpoints() {
    let server = start("cpu-tiny", 1.0, &["drop:every=2"]).await;
    assert_eq!(server.get_json("/health").await, json!({"status": "ok"}));
    let props = server.get_json("/props").await;
    assert_eq!(props["total_slots"], 2);
    assert_eq!(props["default_generation_settings"]["n_ctx"], 4096);
    assert_eq!(props["model_path"], "cpu-tiny");
    assert_eq!(props["llmload_sim"]["faults"], json!(["drop:every=2"]));
    assert_eq!(props["llmload_sim"]["time_scale"], 1.0);
    assert!(props["build_info"]
        .as_str()
        .expect("string")
        .starts_with("llmload-sim "));
    let slots = server.get_json("/slots").await;
    assert_eq!(slots.as_array().map(Vec::len), Some(2));
    assert_eq!(
        slots[1],
        json!({"id": 1, "is_processing": false, "n_ctx": 4096})
    );
    let models = server.get_json("/v1/models").await;
    assert_eq!(models["data"][0]["id"], "tiny-sim");
    assert_eq!(models["data"][0]["owned_by"], "llmload-sim");

    let metrics = server
        .client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    for name in [
        "prompt_tokens_total",
        "tokens_predicted_total",
        "requests_processing",
        "requests_deferred",
        "kv_cache_usage_ratio",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE llamacpp:{name} ")),
            "{name}"
        );
        assert!(metrics.contains(&format!("\nllamacpp:{name} ")), "{name}");
    }
}

#[tokio::test]
async fn tokenize_round_trips() {
    let server = start("cpu-tiny", 1.0, &[]).await;
    let text = "The quick  brown fox\njumps. ";
    let tokens: Value = server
        .post("/tokenize", json!({"content": text, "add_special": false}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(tokens["tokens"].as_array().map(Vec::len), Some(6));
    let back: Value = server
        .post("/detokenize", json!({"tokens": tokens["tokens"]}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(back["content"], text);
    let unknown: Value = server
        .post("/detokenize", json!({"tokens": [12345]}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(unknown["content"], " <unk>");
}

#[tokio::test]
async fn errors_are_json_with_status() {
    let server = start("cpu-tiny", 1.0, &[]).await;
    let missing = server.post("/nowhere", json!({})).await;
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.expect("json");
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["type"], "not_found_error");
    let bad = server
        .client
        .post(format!("{}/completion", server.base))
        .body("{not json")
        .send()
        .await
        .expect("sent");
    assert_eq!(bad.status(), 400);
    let too_long = server
        .post(
            "/completion",
            json!({"prompt": vec![1; 4000], "n_predict": 200}),
        )
        .await;
    assert_eq!(too_long.status(), 400);
    let body: Value = too_long.json().await.expect("json");
    assert!(body["error"]["message"]
        .as_str()
        .expect("message")
        .contains("context"));
    let wrong_method = server.post("/health", json!({})).await;
    assert_eq!(wrong_method.status(), 405);
}

#[tokio::test]
async fn llama_stream_has_one_event_per_token_and_timings() {
    let server = start("cpu-tiny", 20.0, &[]).await;
    let prompt: Vec<u32> = (1..=100).collect();
    let response = server
        .post(
            "/completion",
            json!({"prompt": prompt, "n_predict": 8, "ignore_eos": true, "stream": true,
                   "cache_prompt": false, "return_tokens": true}),
        )
        .await;
    let events = read_events(response).await.expect("complete stream");
    assert_eq!(events.len(), 9);
    let mut text = String::new();
    for (k, event) in events[..8].iter().enumerate() {
        let event = event.json();
        assert_eq!(event["stop"], false);
        assert_eq!(event["tokens_predicted"], k + 1);
        assert_eq!(event["tokens_evaluated"], 100);
        assert_eq!(event["tokens"].as_array().map(Vec::len), Some(1));
        text.push_str(event["content"].as_str().expect("content"));
    }
    let last = events[8].json();
    assert_eq!(last["stop"], true);
    assert_eq!(last["stop_type"], "limit");
    assert_eq!(last["tokens_predicted"], 8);
    assert_eq!(last["model"], "tiny-sim");
    let timings = &last["timings"];
    assert_eq!(timings["predicted_n"], 8);
    assert_eq!(timings["cache_n"], 0);
    assert_eq!(timings["prompt_n"], 100);
    assert!(timings["prompt_ms"].as_f64().expect("number") > 0.0);
    assert_eq!(text.split_whitespace().count(), 8);

    // Without return_tokens the events carry no token ids.
    let response = server
        .post(
            "/completion",
            json!({"prompt": "hello", "n_predict": 2, "stream": true}),
        )
        .await;
    let events = read_events(response).await.expect("complete stream");
    assert!(events[0].json().get("tokens").is_none());
}

#[tokio::test]
async fn completions_stream_ends_with_usage_and_done() {
    let server = start("cpu-tiny", 20.0, &[]).await;
    let response = server
        .post(
            "/v1/completions",
            json!({"model": "tiny-sim", "prompt": (0..50).collect::<Vec<u32>>(),
                   "max_tokens": 5, "ignore_eos": true, "stream": true,
                   "stream_options": {"include_usage": true}}),
        )
        .await;
    let events = read_events(response).await.expect("complete stream");
    assert_eq!(events.len(), 7);
    for (k, event) in events[..5].iter().enumerate() {
        let chunk = event.json();
        assert_eq!(chunk["object"], "text_completion");
        let reason = if k == 4 { json!("length") } else { Value::Null };
        assert_eq!(chunk["choices"][0]["finish_reason"], reason);
        assert!(chunk["id"].as_str().expect("id").starts_with("cmpl-"));
    }
    let usage = events[5].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55,
               "prompt_tokens_details": {"cached_tokens": 0}})
    );
    assert_eq!(events[6].data, "[DONE]");
}

#[tokio::test]
async fn chat_stream_starts_role_only_and_counts_the_template() {
    let server = start("cpu-tiny", 20.0, &[]).await;
    let response = server
        .post(
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "one two three"}],
                   "max_tokens": 3, "ignore_eos": true, "stream": true,
                   "stream_options": {"include_usage": true}}),
        )
        .await;
    let events = read_events(response).await.expect("complete stream");
    // role, 3 content chunks, finish, usage, [DONE]
    assert_eq!(events.len(), 7);
    let role = events[0].json();
    assert_eq!(role["object"], "chat.completion.chunk");
    assert_eq!(
        role["choices"][0]["delta"],
        json!({"role": "assistant", "content": null})
    );
    for event in &events[1..4] {
        let delta = &event.json()["choices"][0]["delta"];
        assert!(delta["content"].as_str().expect("content").starts_with(' '));
    }
    let finish = events[4].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    // 3 content tokens + 4 per message + 3 for the generation prompt.
    assert_eq!(events[5].json()["usage"]["prompt_tokens"], 10);
    assert_eq!(events[6].data, "[DONE]");
}

#[tokio::test]
async fn tokenize_shows_a_chat_prompt_as_the_chat_api_counts_it() {
    let server = start("cpu-tiny", 1.0, &[]).await;
    let chat: Value = server
        .post(
            "/tokenize",
            json!({"messages": [{"role": "user", "content": "one two three"}],
                   "add_generation_prompt": true}),
        )
        .await
        .json()
        .await
        .expect("json");
    // As the chat API counts it: 3 content tokens + 4 per message + 3 for the generation prompt.
    let tokens = chat["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 10);
    let plain: Value = server
        .post("/tokenize", json!({"content": "one two three"}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        tokens[4..7],
        plain["tokens"].as_array().expect("tokens")[..]
    );
    let neither = server.post("/tokenize", json!({})).await;
    assert_eq!(neither.status(), 400);
}

#[tokio::test]
async fn non_streaming_answers() {
    let server = start("cpu-tiny", 20.0, &[]).await;
    let llama: Value = server
        .post(
            "/completion",
            json!({"prompt": [1, 2, 3], "n_predict": 4, "return_tokens": true}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(llama["tokens_predicted"], 4);
    assert_eq!(llama["tokens"].as_array().map(Vec::len), Some(4));
    assert_eq!(llama["timings"]["prompt_n"], 3);
    assert_eq!(
        llama["content"]
            .as_str()
            .map(|c| c.split_whitespace().count()),
        Some(4)
    );
    let completion: Value = server
        .post("/v1/completions", json!({"prompt": "a b", "max_tokens": 2}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(completion["usage"]["total_tokens"], 4);
    assert_eq!(completion["choices"][0]["finish_reason"], "length");
    let chat: Value = server
        .post(
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(chat["object"], "chat.completion");
    assert_eq!(chat["choices"][0]["message"]["role"], "assistant");
    assert_eq!(chat["usage"]["completion_tokens"], 2);
}

#[tokio::test]
async fn prefix_cache_shows_only_when_allowed() {
    let server = start("cpu-tiny", 20.0, &[]).await;
    let prompt: Vec<u32> = (0..200).collect();
    let mut cached = Vec::new();
    for cache_prompt in [true, true, false] {
        let answer: Value = server
            .post(
                "/completion",
                json!({"prompt": prompt, "n_predict": 1, "cache_prompt": cache_prompt}),
            )
            .await
            .json()
            .await
            .expect("json");
        let timings = &answer["timings"];
        let (cache_n, prompt_n) = (timings["cache_n"].as_u64(), timings["prompt_n"].as_u64());
        assert_eq!(cache_n.zip(prompt_n).map(|(c, p)| c + p), Some(200));
        cached.push(cache_n.expect("number"));
    }
    // 12 full blocks of 16 tokens.
    assert_eq!(cached, [0, 192, 0]);
}

#[tokio::test]
async fn first_token_arrives_after_the_modelled_prefill() {
    let mut profile = llmload_sim::Profile::builtin("seed-qwen3-8b").expect("built in");
    profile.jitter = 0.0;
    let server = common::start_with(llmload_sim::SimConfig::new(profile)).await;
    // Modelled: 0.5 + 0.0903 × 2048 + 3.9e-6 × 2048 × 1023.5 = 193.6 ms.
    let sent = Instant::now();
    let response = server
        .post(
            "/completion",
            json!({"prompt": (0..2048).collect::<Vec<u32>>(), "n_predict": 2,
                   "ignore_eos": true, "cache_prompt": false, "stream": true}),
        )
        .await;
    let events = read_events(response).await.expect("complete stream");
    let ttft_ms = (events[0].at - sent).as_secs_f64() * 1e3;
    assert!((193.0..400.0).contains(&ttft_ms), "TTFT {ttft_ms} ms");
}

/// The values of Prometheus series in one read of `/metrics`.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
async fn gauges<const N: usize>(server: &common::Server, names: [&str; N]) -> [f64; N] {
    let metrics = server
        .client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    names.map(|name| {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&format!("llamacpp:{name} ")))
            .and_then(|value| value.parse().ok())
            .expect("series present")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::float_cmp,
    reason = "the gauges compared are whole counts, printed and parsed exactly"
)]
async fn many_concurrent_streams_queue_and_complete() {
    let server = start("cpu-tiny", 10.0, &[]).await;
    let requests: Vec<_> = (0..300u32)
        .map(|index| {
            let client = server.client.clone();
            let url = format!("{}/completion", server.base);
            let prompt: Vec<u32> = (index * 100..index * 100 + 32).collect();
            tokio::spawn(async move {
                let body = json!({"prompt": prompt, "n_predict": 8, "ignore_eos": true,
                                  "cache_prompt": false, "stream": true});
                let response = client.post(url).json(&body).send().await.expect("sent");
                read_events(response).await.expect("complete stream")
            })
        })
        .collect();
    let mut deferred = 0.0;
    for _ in 0..100 {
        let [waiting, processing] =
            gauges(&server, ["requests_deferred", "requests_processing"]).await;
        deferred = waiting;
        if deferred > 0.0 {
            assert_eq!(processing, 2.0);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(deferred > 0.0, "requests queue behind the two slots");
    for request in requests {
        let events = request.await.expect("task");
        assert_eq!(events.len(), 9);
        assert_eq!(events[8].json()["stop"], true);
    }
    let totals = gauges(&server, ["tokens_predicted_total", "requests_deferred"]).await;
    assert_eq!(totals, [2400.0, 0.0]);
}
