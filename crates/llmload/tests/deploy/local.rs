//! The Job's container run as local processes, one per index, the way the Job controller runs
//! its pods, against one simulator; then the shards collected and merged.

use crate::common::{json, measured, Simulator};
use crate::kube::{args, container, expand, pod_env, str_of};
use crate::{render, script};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The attempt folders (those holding `campaign.json`) under `root`, at any depth.
fn attempt_folders(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_owned()];
    while let Some(dir) = todo.pop() {
        if dir.join("campaign.json").is_file() {
            found.push(dir);
            continue;
        }
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            if entry.path().is_dir() {
                todo.push(entry.path());
            }
        }
    }
    found
}

/// The first value under `key`, anywhere in `value`.
fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|v| find_key(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

/// The Job's campaign, scaled down to a few seconds: 40 requests at 20 per second, of short
/// prompts and answers, with everything else as the config map has it.
fn small_campaign(config_map: &Value) -> String {
    let text = str_of(&config_map["data"]["campaign.toml"], "campaign");
    let mut table: toml::Table = toml::from_str(text).expect("TOML");
    for key in ["duration", "warmup_time", "slo_ttft", "slo_tpot"] {
        table.remove(key);
    }
    table.insert("rate".into(), toml::Value::Array(vec![20.0.into()]));
    table.insert("requests".into(), 40.into());
    table.insert("input_tokens".into(), toml::Value::Array(vec![32.into()]));
    table.insert("output_tokens".into(), toml::Value::Array(vec![4.into()]));
    toml::to_string(&table).expect("TOML")
}

#[test]
#[ignore = "needs --shard and merge"]
fn job_runs_locally_as_the_job_controller_would() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "16"]);
    let (config_map, job) = render(&[
        "--attempt-id",
        "local-4",
        "--url",
        &sim.url,
        "--shards",
        "4",
        "--start-at",
        "+5s",
        "--seed",
        "17",
    ]);
    let dir = tempfile::tempdir().expect("temp dir");
    // The pod's volumes, here: the ConfigMap's folder and the results volume.
    let config_dir = dir.path().join("config");
    let results = dir.path().join("results");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::write(
        config_dir.join("campaign.toml"),
        small_campaign(&config_map),
    )
    .expect("write");
    let container = container(&job);
    let mounts: Vec<(String, PathBuf)> = container["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .map(|m| {
            let local = if m["name"] == "results" {
                &results
            } else {
                &config_dir
            };
            (
                str_of(&m["mountPath"], "mountPath").to_owned(),
                local.clone(),
            )
        })
        .collect();
    let localise = |arg: String| {
        mounts.iter().fold(arg, |arg, (at, local)| {
            arg.replace(&format!("={at}/"), &format!("={}/", local.display()))
        })
    };
    // The Job controller starts one pod per index, all at once; each pod's log is a file.
    let pods: Vec<_> = (0..4)
        .map(|index| {
            let env = pod_env(container, index);
            let args: Vec<String> = args(container)
                .iter()
                .map(|a| localise(expand(a, &env)))
                .collect();
            let log = dir.path().join(format!("pod-{index}.log"));
            let file = std::fs::File::create(&log).expect("log file");
            let child = Command::new("timeout")
                .args(["--signal=KILL", "300", env!("CARGO_BIN_EXE_llmload")])
                .args(&args)
                .envs(&env)
                .stdout(file.try_clone().expect("log file"))
                .stderr(file)
                .spawn()
                .expect("start the shard");
            (child, log)
        })
        .collect();
    for (index, (mut child, log)) in pods.into_iter().enumerate() {
        let status = child.wait().expect("wait for the shard");
        let log = std::fs::read_to_string(log).unwrap_or_default();
        assert_eq!(status.code(), Some(0), "shard {index}: {log}");
    }
    let shards_root = results.join("local-4");
    let merged_root = dir.path().join("collected");
    let output = script(
        "collect.sh",
        &[
            "--local",
            shards_root.to_str().expect("UTF-8"),
            "--shards",
            "4",
            "--dest",
            merged_root.to_str().expect("UTF-8"),
        ],
        &[("LLMLOAD", env!("CARGO_BIN_EXE_llmload"))],
    );
    assert!(
        output.status.success(),
        "collect.sh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged = attempt_folders(&merged_root.join("merged"));
    assert_eq!(merged.len(), 1, "one merged attempt: {merged:?}");
    // The union of the shards is the plan: 40 measured requests, each once.
    let records = measured(&merged[0]);
    assert_eq!(records.len(), 40);
    let summary = json(&merged[0].join("summary.json"));
    let shards = find_key(&summary, "shards").expect("the merged summary lists its shards");
    assert!(
        shards.as_array().map(Vec::len) == Some(4) || shards == 4,
        "4 shards: {shards}"
    );
}
