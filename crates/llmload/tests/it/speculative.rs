//! Speculative decoding on the suite's llama-server: with a draft model (the model drafting for
//! itself) every ok response carries the server's drafted and accepted tokens, and the summary
//! gives their pooled acceptance in (0, 1] with the report's section; without a draft, none is
//! claimed. Every assertion is on a count or a structure, never a duration.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, count, json, llmload, measured, LlamaServer, SERIAL};
use serde_json::Value;
use std::path::Path;
use std::sync::PoisonError;

/// A small chat case against `url`, named `name` under `out`: the summary's first case.
fn chat_case(out: &Path, name: &str, url: &str) -> (Vec<Value>, Value, String) {
    let run = llmload(&[
        "run",
        "--url",
        url,
        "--api",
        "chat",
        "--input-tokens",
        "32",
        "--output-tokens",
        "16",
        "--concurrency",
        "2",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--telemetry",
        "off",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        name,
        "--timeout",
        "10m",
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out, name);
    let summary = json(&dir.join("summary.json"));
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    (measured(&dir), summary["cases"][0].clone(), report)
}

#[test]
fn with_a_draft_model_every_response_says_what_was_drafted_and_accepted() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let server = LlamaServer::speculating();
    let (records, case, report) = chat_case(out.path(), "drafted", &server.url);
    drop(server);
    assert_eq!(records.len(), 4);
    let (mut drafted, mut accepted) = (0, 0);
    for r in &records {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let d = &r["server"]["drafts"];
        assert!(count(&d["accepted"]) <= count(&d["drafted"]), "{r}");
        drafted += count(&d["drafted"]);
        accepted += count(&d["accepted"]);
    }
    let s = &case["server"]["speculative"];
    assert_eq!(
        (count(&s["responses"]), count(&s["without"])),
        (4, 0),
        "{s}"
    );
    assert_eq!(
        (count(&s["drafted"]), count(&s["accepted"])),
        (drafted, accepted)
    );
    assert!(drafted > 0, "the draft proposed tokens: {s}");
    let rate = s["acceptance_rate"].as_f64().expect("a rate");
    assert!(rate > 0.0 && rate <= 1.0, "{s}");
    #[expect(clippy::cast_precision_loss, reason = "a few tokens")]
    let pooled = accepted as f64 / drafted as f64;
    assert!((rate - pooled).abs() < 1e-12, "{rate} against {pooled}");
    assert!(report.contains("## Speculative decoding"), "{report}");

    // Without a draft model: the same case claims none.
    let server = LlamaServer::start();
    let (records, case, report) = chat_case(out.path(), "plain", &server.url);
    assert!(records.iter().all(|r| r["server"]["drafts"].is_null()));
    assert!(
        case["server"].is_object() && case["server"]["speculative"].is_null(),
        "{case}"
    );
    assert!(!report.contains("Speculative decoding"), "{report}");
}
