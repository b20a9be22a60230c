//! The image for real: built by `scripts/build-image.sh` with podman (offline, `FROM scratch`
//! with the binary's shared libraries), then two shards of one attempt run as containers of it,
//! each with the arguments, environment and volumes of its pod in the rendered Job (the
//! `--network host` of the machine standing in for each pod's own address), against a simulator
//! on the host, and merged by `collect.sh` and `llmload merge`.
//!
//! It needs podman and runc (Debian's packages, which `scripts/test.sh` installs), so a plain
//! `cargo test` lists it as ignored, and `scripts/test.sh` runs it with `--include-ignored`.
//! Run where podman is missing, it fails saying so: it never passes without running.

use super::kube::{args, container, expand, pod_env};
use super::local::{collect, local_mounts, small_campaign};
use super::{render, repo};
use crate::common::Simulator;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Builds the image of `binary` as `tag`: the podman configuration and the image's name.
fn build_image(tag: &str, binary: &str) -> (String, String) {
    let output = Command::new("timeout")
        .args(["--signal=KILL", "600", "bash"])
        .arg(repo().join("scripts/build-image.sh"))
        .args(["--tag", tag, "--binary", binary])
        .output()
        .expect("build-image.sh runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "build-image.sh: {said}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name}= in {stdout}"))
            .to_owned()
    };
    (value("CONTAINERS_CONF"), value("IMAGE"))
}

/// Starts the pod of `index` as a container of `image`: the container's environment and
/// arguments as the kubelet expands them, its volumes from `mounts`, read-only as the Job says,
/// without capabilities and with a read-only root, as its security context says.
fn start_container(
    (conf, image): (&str, &str),
    job: &serde_json::Value,
    index: usize,
    mounts: &[(String, std::path::PathBuf)],
    log: &Path,
) -> Child {
    let container = container(job);
    let mut env: BTreeMap<String, String> = pod_env(container, index);
    // Both containers share this machine's network: each its own port, on loopback, no linger.
    env.insert("METRICS_LISTEN".into(), "127.0.0.1:0".into());
    env.insert("METRICS_LINGER".into(), "0s".into());
    let mut command = Command::new("timeout");
    command
        .args([
            "--signal=KILL",
            "300",
            "podman",
            "run",
            "--rm",
            "--network",
            "host",
        ])
        .args([
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
        ])
        .env("CONTAINERS_CONF", conf);
    for (name, value) in &env {
        command.args(["--env", &format!("{name}={value}")]);
    }
    let read_only: Vec<bool> = container["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .map(|m| m["readOnly"] == true)
        .collect();
    for ((at, local), ro) in mounts.iter().zip(read_only) {
        let suffix = if ro { ":ro" } else { "" };
        command.args(["--volume", &format!("{}:{at}{suffix}", local.display())]);
    }
    command.arg(image);
    command.args(args(container).iter().map(|a| expand(a, &env)));
    let file = std::fs::File::create(log).expect("log file");
    command
        .stdout(file.try_clone().expect("log file"))
        .stderr(Stdio::from(file))
        .spawn()
        .expect("start the container")
}

#[test]
#[ignore = "needs podman and runc (Debian packages): scripts/test.sh runs it with --include-ignored"]
fn two_shards_run_as_containers_of_the_image_and_merge_into_one_attempt() {
    let podman = Command::new("podman").arg("--version").output();
    assert!(
        podman.is_ok_and(|o| o.status.success()),
        "podman is not installed here: this test cannot run (Debian packages podman and runc)"
    );
    let tag = format!("localhost/llmload-test:{}", std::process::id());
    let (conf, image) = build_image(&tag, env!("CARGO_BIN_EXE_llmload"));
    assert_eq!(image, tag);
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "16"]);
    let (config_map, job) = render(&[
        "--attempt-id",
        "image-2",
        "--url",
        &sim.url,
        "--shards",
        "2",
        "--start-at",
        "+10s",
        "--seed",
        "23",
        "--image",
        &image,
    ]);
    assert_eq!(container(&job)["image"], image.as_str());
    let dir = tempfile::tempdir().expect("temp dir");
    let (config, results) = (dir.path().join("config"), dir.path().join("results"));
    for d in [&config, &results] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    // The image's user (65532) writes the results, as the Job's fsGroup lets it on a volume.
    let _ = Command::new("chmod").arg("0777").arg(&results).status();
    std::fs::write(config.join("campaign.toml"), small_campaign(&config_map)).expect("write");
    let mounts = local_mounts(&job, &config, &results);
    let logs: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("container-{i}.log")))
        .collect();
    let containers: Vec<Child> = (0..2)
        .map(|i| start_container((&conf, &image), &job, i, &mounts, &logs[i]))
        .collect();
    for (index, mut c) in containers.into_iter().enumerate() {
        let status = c.wait().expect("wait for the container");
        let log = std::fs::read_to_string(&logs[index]).unwrap_or_default();
        assert_eq!(
            status.code(),
            Some(0),
            "shard {index} in its container: {log}"
        );
    }
    let section = collect(
        &results.join("image-2"),
        2,
        &dir.path().join("collected"),
        40,
    );
    for shard in section["shards"].as_array().expect("shards") {
        assert_eq!(
            shard["records"], 21,
            "20 arrivals and a warmup each: {shard}"
        );
    }
    let _ = Command::new("podman")
        .args(["rmi", "--force", &image])
        .env("CONTAINERS_CONF", &conf)
        .output();
}
