//! LoRA adapters on the simulator over real HTTP: listed at /v1/models under their model,
//! answering requests that name them (the answer names the adapter), and a model it does not
//! serve answered 404 as vLLM answers it.

mod common;

use common::start_with;
use llmload_sim::{Profile, SimConfig};
use serde_json::{json, Value};

#[tokio::test]
async fn adapters_are_listed_served_by_name_and_others_refused() {
    let mut config = SimConfig::new(Profile::builtin("cpu-tiny").expect("built in"));
    config.time_scale = 50.0;
    config.adapters = vec!["adapter-a".into(), "adapter-b".into()];
    let server = start_with(config).await;
    let models = server.get_json("/v1/models").await;
    let listed: Vec<(&str, Option<&str>)> = models["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| (m["id"].as_str().expect("id"), m["parent"].as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("tiny-sim", None),
            ("adapter-a", Some("tiny-sim")),
            ("adapter-b", Some("tiny-sim"))
        ]
    );
    for model in ["tiny-sim", "adapter-b"] {
        let answer = server
            .post(
                "/v1/completions",
                json!({"model": model, "prompt": "one two three", "max_tokens": 3,
                    "ignore_eos": true}),
            )
            .await;
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.expect("json");
        assert_eq!(body["model"], model, "{body}");
        assert_eq!(body["usage"]["completion_tokens"], 3, "{body}");
    }
    let answer = server
        .post(
            "/v1/chat/completions",
            json!({"model": "adapter-c", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 3}),
        )
        .await;
    assert_eq!(answer.status(), 404);
    let body: Value = answer.json().await.expect("json");
    assert!(
        body.to_string()
            .contains("The model `adapter-c` does not exist."),
        "{body}"
    );
}

#[test]
fn adapters_that_clash_are_refused_in_the_profile() {
    for adapters in [vec!["tiny-sim"], vec!["a", "a"], vec![""]] {
        let mut config = SimConfig::new(Profile::builtin("cpu-tiny").expect("built in"));
        config.adapters = adapters.iter().map(|&a| a.to_owned()).collect();
        let error = config.effective_profile().expect_err("refused");
        assert!(
            error.to_string().contains("adapter"),
            "{adapters:?}: {error}"
        );
    }
}
