//! A mix of models (`--model NAME:WEIGHT,…`) against the simulator serving a model and two LoRA
//! adapters: every request's model drawn from the seed and recorded, warmups to each model in
//! turn, every figure per model and overall in summary.json, report.md, report.html and
//! cases.csv, the per-model figures adding up to the case's, the same draws from the same seed,
//! `compare` matching the models by name; and the mixes refused before anything is sent.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{count as n, json, json_lines, llmload, run_against, Simulator};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const MIX: &str = "tiny-sim:70,adapter-a:20,adapter-b:10";

fn simulator() -> Simulator {
    Simulator::start(&[
        "--profile",
        "cpu-tiny",
        "--adapters",
        "adapter-a,adapter-b",
        "--time-scale",
        "20",
    ])
}

/// Five rounds of 4 requests of the mix with `seed`.
fn run(sim: &Simulator, out: &Path, name: &str, seed: &str) -> std::path::PathBuf {
    let (run, dir) = run_against(
        out,
        name,
        &sim.url,
        &[
            "--model",
            MIX,
            "--input-tokens",
            "32",
            "--output-tokens",
            "8",
            "--concurrency",
            "4",
            "--rounds",
            "5",
            "--seed",
            seed,
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Per model"), "{}", run.stdout);
    dir
}

/// The summary `llmload report --json` rebuilds from the attempt's records.
fn rebuilt(dir: &Path) -> Value {
    let run = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

/// The model of each measured request, by (round, index).
fn drawn(dir: &Path) -> BTreeMap<(u64, u64), String> {
    json_lines(&dir.join("requests.jsonl"))
        .iter()
        .filter(|r| r["phase"] == "measured")
        .map(|r| {
            let model = r["model"].as_str().expect("a model on every record");
            ((n(&r["round"]), n(&r["index"])), model.to_owned())
        })
        .collect()
}

#[test]
fn a_mix_is_drawn_from_the_seed_and_reported_per_model_and_overall() {
    let sim = simulator();
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run(&sim, out.path(), "mix", "9");
    let records = json_lines(&dir.join("requests.jsonl"));
    let warmups: Vec<&str> = records
        .iter()
        .filter(|r| r["phase"] == "warmup")
        .filter_map(|r| r["model"].as_str())
        .collect();
    assert_eq!(warmups, ["tiny-sim", "adapter-a", "adapter-b"]);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["prompt_tokens"], 32, "{r}");
        assert_eq!(r["cached_tokens"], 0, "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
    }
    let models = drawn(&dir);
    assert_eq!(models.len(), 20);
    let mut per_model: BTreeMap<&str, u64> = BTreeMap::new();
    for m in models.values() {
        *per_model.entry(m.as_str()).or_default() += 1;
    }
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let figures = case["models"].as_array().expect("per-model figures");
    assert_eq!(figures.len(), per_model.len(), "{case}");
    let (mut ok, mut tps) = (0, 0.0);
    for m in figures {
        let name = m["model"].as_str().expect("name");
        let count = per_model[name];
        assert_eq!(n(&m["counts"]["ok"]), count, "{m}");
        for d in ["ttft_ms", "e2e_ms", "tpot_ms", "decode_rate_tps"] {
            assert_eq!(n(&m[d]["n"]), count, "{d}: {m}");
        }
        assert_eq!(n(&m["itl_ms"]["n"]), count * 7, "{m}");
        assert_eq!(n(&m["output_tokens"]), count * 8, "{m}");
        let share = m["share"].as_f64().expect("share");
        assert!((share - count as f64 / 20.0).abs() < 1e-12, "{m}");
        ok += n(&m["counts"]["ok"]);
        tps += m["output_tps"].as_f64().expect("tokens/s");
    }
    assert_eq!(ok, n(&case["counts"]["ok"]));
    // The models' throughputs add up to the case's tokens over its rounds' summed spans.
    let rounds = case["rounds"].as_array().expect("rounds");
    let spans: f64 = rounds.iter().filter_map(|r| r["duration_s"].as_f64()).sum();
    let tokens: u64 = rounds.iter().map(|r| n(&r["output_tokens"])).sum();
    assert!((tps - tokens as f64 / spans).abs() < 1e-6, "{tps} {case}");

    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("\n## Per model\n"), "{report}");
    for name in per_model.keys() {
        assert!(
            report.contains(&format!("| in32-c4-out8 | {name} |")),
            "{report}"
        );
    }
    assert!(
        report.contains("| in32-c4-out8 | (all models) | 100% |"),
        "{report}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("<section id=\"models\">\n<h2>Per model</h2>"));
    let csv = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    assert_eq!(csv.lines().count(), 1 + 1 + per_model.len(), "{csv}");
    assert!(csv
        .lines()
        .next()
        .is_some_and(|h| h.ends_with("model_slo_met_share")));
    // Rebuilt from the records, the figures are the same.
    assert_eq!(rebuilt(&dir)["cases"][0]["models"], case["models"]);

    // The same seed draws the same models; compare matches them by name.
    let again = run(&sim, out.path(), "again", "9");
    assert_eq!(drawn(&again), models);
    let compared = llmload(&[
        "compare",
        dir.to_str().expect("UTF-8"),
        again.to_str().expect("UTF-8"),
        "--json",
    ]);
    assert_eq!(compared.code, 0, "{}", compared.stderr);
    let compared: Value = serde_json::from_str(&compared.stdout).expect("JSON");
    let matched = &compared["cases"][0];
    assert_eq!(matched["mix"], "tiny-sim 70%, adapter-a 20%, adapter-b 10%");
    let names: Vec<&str> = matched["models"]
        .as_array()
        .expect("models")
        .iter()
        .filter_map(|m| m["model"].as_str())
        .collect();
    let expected: Vec<&str> = per_model.keys().copied().collect();
    assert_eq!(names, expected);
}

#[test]
fn bad_mixes_are_refused_before_anything_is_sent() {
    let sim = simulator();
    let out = tempfile::tempdir().expect("temp dir");
    let out = out.path().to_str().expect("UTF-8");
    let run = |model: &str, extra: &[&str]| {
        let mut args = vec!["run", "--url", &sim.url, "--out", out, "--model", model];
        args.extend_from_slice(extra);
        args.extend([
            "--input-tokens",
            "32",
            "--output-tokens",
            "4",
            "--rounds",
            "1",
        ]);
        llmload(&args)
    };
    let unknown = run("tiny-sim:70,adapter-z:30", &[]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    let line = unknown.stderr.trim();
    assert!(!line.contains('\n'), "{line}");
    assert!(line.contains("\"adapter-z\""), "{line}");
    assert!(line.contains("(tiny-sim, adapter-a, adapter-b)"), "{line}");
    for (model, extra, says) in [
        (
            "tiny-sim:70,adapter-a:0",
            &[][..],
            "weights are numbers above 0",
        ),
        (
            "tiny-sim:70,adapter-a:-1",
            &[][..],
            "weights are numbers above 0",
        ),
        ("tiny-sim:70,tiny-sim:30", &[][..], "is named twice"),
        ("tiny-sim:70,adapter-a", &[][..], "NAME:WEIGHT"),
        (
            "tiny-sim:1,adapter-a:1",
            &["--api", "llamacpp"][..],
            "--api",
        ),
    ] {
        let refused = run(model, extra);
        assert_eq!(refused.code, 2, "{model}: {}", refused.stderr);
        assert!(refused.stderr.contains(says), "{model}: {}", refused.stderr);
        assert_eq!(
            refused.stderr.trim().lines().count(),
            1,
            "{}",
            refused.stderr
        );
    }
    assert!(
        std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_none()),
        "no attempt folder for a refused run"
    );
}

#[test]
fn an_open_loop_of_a_mix_splits_its_window_figures_by_model_each_judged_by_its_objectives() {
    let sim = simulator();
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "open",
        &sim.url,
        &[
            "--model",
            MIX,
            "--arrival",
            "poisson",
            "--rate",
            "40",
            "--requests",
            "40",
            "--input-tokens",
            "32",
            "--output-tokens",
            "8",
            "--slo-e2e",
            "10s,adapter-a=1us",
            "--seed",
            "4",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let load = &case["load"];
    let models = case["models"].as_array().expect("per-model figures");
    let sum = |field: &str| -> f64 { models.iter().filter_map(|m| m[field].as_f64()).sum() };
    let f = |v: &Value| v.as_f64().expect("a number");
    // Each figure over the same window, so the models' add up to the load's.
    assert!(
        (sum("output_tps") - f(&load["throughput_tps"])).abs() < 1e-6,
        "{case}"
    );
    assert!(
        (sum("completed_rps") - f(&load["completed_rps"])).abs() < 1e-6,
        "{case}"
    );
    assert!(
        (sum("goodput_rps") - f(&load["goodput_rps"])).abs() < 1e-6,
        "{case}"
    );
    let measured: u64 = models.iter().map(|m| n(&m["counts"]["ok"])).sum();
    assert_eq!(measured, 40);
    // adapter-a's own objective, 1 µs, no response meets; the others' 10 s, every one.
    for m in models {
        let met = if m["model"] == "adapter-a" { 0.0 } else { 1.0 };
        assert_eq!(m["slo_met_share"], met, "{m}");
    }
    let planned = &json(&dir.join("campaign.json"))["config"]["model_slo"]["adapter-a"];
    assert_eq!(planned["e2e_ms"], 0.001, "{planned}");
    // Rebuilt from the records with the objectives campaign.json keeps, the same figures.
    assert_eq!(rebuilt(&dir)["cases"][0]["models"], case["models"]);
}

#[test]
fn the_built_in_simulator_serves_every_model_of_a_mix() {
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "builtin",
        "--model",
        "Qwen3-8B-Q4_K_M:1,adapter-x:1",
        "--input-tokens",
        "32",
        "--output-tokens",
        "4",
        "--concurrency",
        "2",
        "--rounds",
        "1",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("with adapters adapter-x"),
        "{}",
        run.stderr
    );
    let dir = common::attempt_dir(out.path(), "builtin");
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["target"]["api"], "completions");
    let listed: Vec<&str> = campaign["target"]["server"]["models"]["data"]
        .as_array()
        .expect("models")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(listed, ["Qwen3-8B-Q4_K_M", "adapter-x"]);
    let warmups: Vec<String> = json_lines(&dir.join("requests.jsonl"))
        .iter()
        .filter(|r| r["phase"] == "warmup" && r["status"] == "ok")
        .filter_map(|r| r["model"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(warmups, ["Qwen3-8B-Q4_K_M", "adapter-x"]);
}
