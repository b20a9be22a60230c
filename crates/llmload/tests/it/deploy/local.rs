//! The Job's container run as local processes, one per index, the way the Job controller runs
//! its pods, against one simulator; then the shards collected and merged.

use super::kube::{args, container, expand, pod_env, str_of};
use super::{render, script};
use crate::common::{json, measured, Simulator};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

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

/// The Job's campaign, scaled down to a few seconds: 40 requests at 20 per second, of short
/// prompts and answers, with everything else as the config map has it.
pub(super) fn small_campaign(config_map: &Value) -> String {
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

/// The Job's volumes as local folders: the config map's by `config`, the results claim's by
/// `results`.
pub(super) fn local_mounts(job: &Value, config: &Path, results: &Path) -> Vec<(String, PathBuf)> {
    let volumes = job["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let mounts = container(job)["volumeMounts"].as_array().expect("mounts");
    mounts
        .iter()
        .map(|mount| {
            let volume = volumes
                .iter()
                .find(|v| v["name"] == mount["name"])
                .expect("the mount's volume");
            let local = if volume["configMap"].is_object() {
                config
            } else {
                assert!(volume["persistentVolumeClaim"].is_object(), "{volume}");
                results
            };
            let at = str_of(&mount["mountPath"], "mountPath");
            (at.to_owned(), local.to_owned())
        })
        .collect()
}

/// Starts the pod of `index` as a local process: the container's arguments expanded from the
/// pod's environment, with that environment, paths under the mounts moved to their local
/// folders, stdout and stderr to `log`.
fn start_pod(job: &Value, index: usize, mounts: &[(String, PathBuf)], log: &Path) -> Child {
    let container = container(job);
    let mut env = pod_env(container, index);
    // The pods share this machine's network here, not one namespace each: each its own free
    // port, on loopback, and no linger.
    env.insert("METRICS_LISTEN".into(), "127.0.0.1:0".into());
    env.insert("METRICS_LINGER".into(), "0s".into());
    let args: Vec<String> = args(container)
        .iter()
        .map(|arg| {
            mounts.iter().fold(expand(arg, &env), |arg, (at, local)| {
                arg.replace(&format!("={at}/"), &format!("={}/", local.display()))
            })
        })
        .collect();
    let file = std::fs::File::create(log).expect("log file");
    Command::new("timeout")
        .args(["--signal=KILL", "300", env!("CARGO_BIN_EXE_llmload")])
        .args(&args)
        .envs(&env)
        .stdout(file.try_clone().expect("log file"))
        .stderr(file)
        .spawn()
        .expect("start the shard")
}

#[test]
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
    let config = dir.path().join("config");
    let results = dir.path().join("results");
    std::fs::create_dir_all(&config).expect("mkdir");
    let campaign = small_campaign(&config_map);
    std::fs::write(config.join("campaign.toml"), campaign).expect("write");
    let mounts = local_mounts(&job, &config, &results);
    // The Job controller starts one pod per index, all at once.
    let logs: Vec<PathBuf> = (0..4)
        .map(|index| dir.path().join(format!("pod-{index}.log")))
        .collect();
    let pods: Vec<Child> = (0..4)
        .map(|index| start_pod(&job, index, &mounts, &logs[index]))
        .collect();
    // Each pod serves its shard's /metrics while it waits for the start instant.
    for (index, pod) in pods.iter().enumerate() {
        let info = scrape_info(listening_port(pod.id()));
        assert!(info.contains(&format!("shard=\"{index}/4\"")), "{info}");
        assert!(info.contains("attempt_id=\"local-4\""), "{info}");
    }
    for (index, mut pod) in pods.into_iter().enumerate() {
        let status = pod.wait().expect("wait for the shard");
        let log = std::fs::read_to_string(&logs[index]).unwrap_or_default();
        assert_eq!(status.code(), Some(0), "shard {index}: {log}");
    }
    let section = collect(
        &results.join("local-4"),
        4,
        &dir.path().join("collected"),
        40,
    );
    let shards = section["shards"]
        .as_array()
        .expect("the merged summary lists its shards");
    let indices: Vec<u64> = shards.iter().filter_map(|s| s["index"].as_u64()).collect();
    assert_eq!(indices, [0, 1, 2, 3], "{section}");
    for shard in shards {
        assert_eq!(shard["attempt_id"], "local-4", "{shard}");
        assert_eq!(shard["seed"], 17, "{shard}");
        assert_eq!(
            shard["records"], 11,
            "10 arrivals and a warmup each: {shard}"
        );
    }
}

/// The TCP port process `pid` (or, under `timeout`, its child) listens on, once it listens
/// (within 60 s): read from `/proc`, so that every server of a test takes the port the system
/// picks and none is guessed.
pub(super) fn listening_port(pid: u32) -> u16 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let pids =
            std::iter::once(pid).chain(children.split_whitespace().filter_map(|c| c.parse().ok()));
        for pid in pids.collect::<Vec<u32>>() {
            if let Some(port) = listening(pid) {
                return port;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The port of a listening TCP socket that process `pid` holds, if any.
fn listening(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            std::fs::read_to_string(table)
                .ok()?
                .lines()
                .skip(1)
                .find_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    // local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 the inode.
                    let listens = fields.get(3) == Some(&"0A")
                        && inodes.iter().any(|i| fields.get(9) == Some(&i.as_str()));
                    let port = fields.get(1)?.rsplit_once(':')?.1;
                    listens
                        .then(|| u16::from_str_radix(port, 16).ok())
                        .flatten()
                })
        })
}

/// The `llmload_info` line of the `/metrics` on `port`, once it answers (within 30 s).
fn scrape_info(port: u16) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let mut text = String::new();
            let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: pod\r\n\r\n");
            let _ = stream.read_to_string(&mut text);
            if let Some(line) = text.lines().find(|l| l.starts_with("llmload_info{")) {
                return line.to_owned();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no /metrics on port {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `collect.sh --local ROOT --shards N`: merges the shard folders under `root` into `dest`;
/// checks that the merged attempt holds the plan's `measured` requests, every shard there and
/// completed, and returns its section on the shards.
pub(super) fn collect(root: &Path, shards: u64, dest: &Path, measured_total: usize) -> Value {
    let output = script(
        "collect.sh",
        &[
            "--local",
            root.to_str().expect("UTF-8"),
            "--shards",
            &shards.to_string(),
            "--dest",
            dest.to_str().expect("UTF-8"),
        ],
        &[("LLMLOAD", env!("CARGO_BIN_EXE_llmload"))],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "collect.sh: {stderr}");
    let merged = attempt_folders(&dest.join("merged"));
    assert_eq!(merged.len(), 1, "one merged attempt: {merged:?}");
    // The union of the shards is the plan.
    assert_eq!(measured(&merged[0]).len(), measured_total);
    let summary = json(&merged[0].join("summary.json"));
    let section = summary["shards"].clone();
    assert_eq!(section["count"], shards, "{section}");
    assert_eq!(section["missing"], serde_json::json!([]), "{section}");
    assert_eq!(section["incomplete"], serde_json::json!([]), "{section}");
    for shard in section["shards"].as_array().expect("shards") {
        assert_eq!(shard["status"], "completed", "{shard}");
    }
    section
}
