//! The deployment, checked without a cluster: the `Containerfile`, the Kubernetes Indexed Job of
//! `deploy/kubernetes/` and its `render.sh` and `collect.sh`, read and run here the way the
//! image builder and the Job controller would use them.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
mod dashboard;
mod image;
mod kube;
mod local;
mod prometheus;

use kube::{args, args_of, container, documents, expand, flag, pod_env, str_of, volume_of};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative))
        .unwrap_or_else(|e| panic!("reading {relative}: {e}"))
}

/// Checks the Job's shape for `shards` pods: an Indexed `batch/v1` Job, one pod per shard,
/// never retried, whose container runs the shard of its index.
fn check_job(job: &Value, shards: u64) {
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], shards, "{spec}");
    assert_eq!(spec["parallelism"], shards, "{spec}");
    assert_eq!(spec["backoffLimitPerIndex"], 0, "a shard is never retried");
    assert!(
        spec.get("backoffLimit").is_none(),
        "one shard's failure must not end the Job"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let grace = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("grace");
    assert!(grace >= 60, "room for the SIGTERM path: {grace} s");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["runAsUser"], 65532,
        "the image's USER"
    );

    let container = container(job);
    let env = pod_env(container, 0);
    assert_eq!(env["SHARDS"], shards.to_string());
    let args = args(container);
    assert_eq!(args[0], "run");
    assert!(
        args.contains(&"--shard=$(JOB_COMPLETION_INDEX)/$(SHARDS)"),
        "{args:?}"
    );
    assert_eq!(flag(&args, "--attempt-id"), "$(ATTEMPT_ID)");
    assert_eq!(flag(&args, "--start-at"), "$(START_AT)");
    assert_eq!(flag(&args, "--seed"), "$(SEED)");
    for arg in &args {
        let expanded = expand(arg, &env);
        assert!(
            !expanded.contains("$("),
            "{arg} refers to an unset variable"
        );
        assert!(
            !arg.starts_with("--api-key"),
            "a key on the command line: {arg}"
        );
    }
    let key = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "LLMLOAD_API_KEY")
        .expect("the API key's variable");
    assert_eq!(key["valueFrom"]["secretKeyRef"]["optional"], true, "{key}");

    // --out on the results volume, a ReadWriteMany claim of pvc.yaml; each shard its own folder.
    let out = flag(&args, "--out");
    assert!(out.ends_with("/shard-$(JOB_COMPLETION_INDEX)"), "{out}");
    let claim = &volume_of(job, out)["persistentVolumeClaim"]["claimName"];
    let pvc = &documents(&read("deploy/kubernetes/pvc.yaml"))[0];
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(*claim, pvc["metadata"]["name"]);
    assert_eq!(
        pvc["spec"]["accessModes"],
        serde_json::json!(["ReadWriteMany"])
    );
    // --config from the campaign ConfigMap.
    let config = flag(&args, "--config");
    assert!(config.ends_with("/campaign.toml"), "{config}");
    assert!(volume_of(job, config)["configMap"]["name"].is_string());
    check_scraping(job, container, &env);
    for resource in ["requests", "limits"] {
        for what in ["cpu", "memory"] {
            assert!(
                container["resources"][resource][what].is_string(),
                "{resource}.{what}"
            );
        }
    }
}

/// Every pod is annotated for Prometheus' pod discovery, and serves /metrics on that port, on
/// the pod's address, declared as the container's port, kept up after the run for a last scrape.
fn check_scraping(
    job: &Value,
    container: &Value,
    env: &std::collections::BTreeMap<String, String>,
) {
    let annotations = &job["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true", "{annotations}");
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
    let port = str_of(&annotations["prometheus.io/port"], "port");
    let args = args(container);
    let listen = expand(flag(&args, "--metrics-listen"), env);
    assert_eq!(
        listen,
        format!("0.0.0.0:{port}"),
        "the pod's address, the annotated port"
    );
    let ports = container["ports"]
        .as_array()
        .expect("the container's ports");
    assert!(
        ports.iter().any(|p| p["name"] == "metrics"
            && p["containerPort"]
                .as_u64()
                .map(|n| n.to_string())
                .as_deref()
                == Some(port)),
        "{ports:?}"
    );
    let linger = expand(flag(&args, "--metrics-linger"), env);
    let linger = humantime::parse_duration(&linger).expect("a duration");
    assert!(
        linger.as_secs() >= 15,
        "at least a scrape interval: {linger:?}"
    );
}

#[test]
fn the_job_template_is_an_indexed_job_of_four_shards() {
    let docs = documents(&read("deploy/kubernetes/job.yaml"));
    assert_eq!(docs.len(), 1);
    check_job(&docs[0], 4);
}

/// Runs `deploy/kubernetes/SCRIPT` with `args` and extra environment, for at most two minutes.
fn script(name: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("timeout")
        .args(["--signal=KILL", "120", "bash"])
        .arg(repo().join("deploy/kubernetes").join(name))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"))
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// The rendered config map and Job.
fn render(args: &[&str]) -> (Value, Value) {
    let output = script("render.sh", args, &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "render.sh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // No placeholder (`@NAME@`) is left: every one the template has is filled in.
    let template = read("deploy/kubernetes/job.yaml");
    let placeholders: BTreeSet<&str> = template.split('@').skip(1).step_by(2).collect();
    let filled = ["ATTEMPT_ID", "IMAGE", "SEED", "START_AT", "TARGET_URL"];
    assert_eq!(placeholders, BTreeSet::from(filled));
    for name in placeholders {
        assert!(
            !text.contains(&format!("@{name}@")),
            "@{name}@ left in\n{text}"
        );
    }
    let mut docs = documents(&text).into_iter();
    let (config_map, job) = (docs.next().expect("ConfigMap"), docs.next().expect("Job"));
    assert!(docs.next().is_none());
    assert_eq!(config_map["kind"], "ConfigMap");
    assert_eq!(
        config_map["metadata"]["name"],
        volume_of(&job, flag(&args_of(&job), "--config"))["configMap"]["name"]
    );
    (config_map, job)
}

#[test]
fn render_fills_every_placeholder() {
    let before = now_s();
    let (config_map, job) = render(&[
        "--attempt-id",
        "fleet-7",
        "--url",
        "https://gateway.example:8443/v1",
        "--shards",
        "3",
        "--start-at",
        "+90s",
        "--seed",
        "11",
    ]);
    let after = now_s();
    check_job(&job, 3);
    assert_eq!(job["metadata"]["name"], "llmload-fleet-7");
    let env = pod_env(container(&job), 2);
    assert_eq!(env["ATTEMPT_ID"], "fleet-7");
    assert_eq!(env["TARGET_URL"], "https://gateway.example:8443/v1");
    assert_eq!(env["SEED"], "11");
    let start = humantime::parse_rfc3339(&env["START_AT"]).expect("an RFC 3339 instant");
    let start = start
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    assert!((before + 90..=after + 90).contains(&start), "{start}");
    let args = args_of(&job);
    assert_eq!(
        expand(flag(&args, "--out"), &env),
        "/results/fleet-7/shard-2"
    );
    assert_eq!(expand(args[3], &env), "--shard=2/3");
    // The image is the one the Containerfile's comment builds.
    let image = format!("llmload:{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(container(&job)["image"], image.as_str());
    assert!(read("Containerfile").contains(&format!("-t {image} -f Containerfile")));
    // The campaign travels unchanged.
    assert_eq!(
        str_of(&config_map["data"]["campaign.toml"], "campaign").trim_end(),
        read("deploy/kubernetes/campaign.toml").trim_end()
    );
    // An instant given as one stays as it is; no seed draws a fresh one.
    let (_, job) = render(&[
        "--attempt-id",
        "a",
        "--url",
        "http://x",
        "--start-at",
        "2026-12-01T09:00:00Z",
    ]);
    let env = pod_env(container(&job), 0);
    assert_eq!(env["START_AT"], "2026-12-01T09:00:00Z");
    assert!(env["SEED"].parse::<u64>().is_ok(), "{}", env["SEED"]);
}

#[test]
fn render_refuses_bad_arguments_in_one_line() {
    let good = ["--attempt-id", "a1", "--url", "http://x"];
    let bad: [&[&str]; 6] = [
        &["--url", "http://x"],
        &["--attempt-id", "Upper", "--url", "http://x"],
        &["--attempt-id", "a1", "--url", "ftp://x"],
        &[&good[..], &["--shards", "0"]].concat(),
        &[&good[..], &["--start-at", "tomorrow"]].concat(),
        &[&good[..], &["--speed", "1"]].concat(),
    ];
    for args in bad {
        let output = script("render.sh", args, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} printed a manifest");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn the_campaign_is_an_open_loop_llmload_campaign() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("campaign.toml");
    std::fs::write(&file, read("deploy/kubernetes/campaign.toml")).expect("write");
    let mut settings = llmload::config::Settings::read(&file).expect("a campaign file");
    // Resolved as a pod resolves it, with the arguments the Job adds: a shard holds its share of
    // the attempt's rate and in-flight cap.
    settings.target.url = Some(vec!["http://vllm.inference:8000".into()]);
    settings.sharding.shard = Some("0/4".into());
    settings.sharding.attempt_id = Some("a1".into());
    settings.sharding.start_at = Some("+2m".into());
    let config = llmload::config::Config::resolve(settings).expect("a valid campaign");
    // Closed rounds cannot be split across machines: the Job's campaign is an open loop.
    assert!(config.is_open());
    // Every shard takes these from the Job's arguments, not from the file.
    let table: toml::Table =
        toml::from_str(&read("deploy/kubernetes/campaign.toml")).expect("TOML");
    for key in ["url", "seed", "out", "api_key"] {
        assert!(!table.contains_key(key), "{key} belongs to the Job");
    }
    // The API key reaches llmload from LLMLOAD_API_KEY, the variable the Job sets.
    let help = common::llmload(&["run", "--help"]);
    assert!(help.stdout.contains("LLMLOAD_API_KEY"), "{}", help.stdout);
}

/// The instructions of a Containerfile: (keyword, rest), continuation lines joined.
fn instructions(text: &str) -> Vec<(String, String)> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (word, rest) = l.split_once(' ').unwrap_or((l, ""));
            (word.to_uppercase(), rest.trim().to_owned())
        })
        .collect()
}

#[test]
fn the_containerfile_builds_a_static_binary_into_a_small_non_root_image() {
    let steps = instructions(&read("Containerfile"));
    let stages: Vec<usize> = (0..steps.len()).filter(|&i| steps[i].0 == "FROM").collect();
    assert_eq!(stages.len(), 2, "a builder and the image");
    for &i in &stages {
        let image = steps[i].1.split_whitespace().next().expect("an image");
        let tag = image.rsplit_once(':').map(|(_, t)| t).expect("a tag");
        assert!(
            !tag.contains('/') && tag != "latest",
            "pinned by tag: {image}"
        );
    }
    assert!(steps[stages[0]].1.ends_with(" AS builder"));
    let (builder, image) = steps.split_at(stages[1]);
    let build = builder
        .iter()
        .find(|(w, r)| w == "RUN" && r.contains("cargo build"))
        .expect("a cargo build");
    assert!(build
        .1
        .contains("--release --locked --target x86_64-unknown-linux-musl -p llmload"));
    assert!(build
        .1
        .contains("target/x86_64-unknown-linux-musl/release/llmload /usr/local/bin/llmload"));
    let base = &image[0].1;
    assert!(
        base.starts_with("scratch") || base.contains("distroless/static"),
        "{base}"
    );
    let step = |word: &str| -> Vec<&str> {
        image
            .iter()
            .filter(|(w, _)| w == word)
            .map(|(_, r)| r.as_str())
            .collect()
    };
    assert!(step("COPY").contains(&"--from=builder /usr/local/bin/llmload /usr/local/bin/llmload"));
    assert_eq!(step("USER"), ["65532:65532"], "a non-root user");
    assert_eq!(step("ENTRYPOINT"), [r#"["/usr/local/bin/llmload"]"#]);
    // The build context keeps what the build needs.
    let ignore = read(".dockerignore");
    for kept in ["!Cargo.toml", "!Cargo.lock", "!crates/"] {
        assert!(ignore.lines().any(|l| l == kept), "{kept}");
    }
}

/// The crates in Cargo.lock that bind a C library (`-sys`), each known not to break a static
/// musl build: they are for other platforms, pure Rust, or loaded at run time.
#[test]
fn nothing_links_a_c_library_that_breaks_the_static_build() {
    let allowed = [
        "core-foundation-sys",    // macOS only
        "security-framework-sys", // macOS only
        "jni-sys",                // Android only
        "js-sys",                 // WebAssembly only
        "web-sys",                // WebAssembly only
        "windows-sys",            // Windows only
        "linux-raw-sys",          // pure Rust system calls
        "nvml-wrapper-sys",       // dlopen'ed at run time, never linked
        "openssl-probe",          // pure Rust: looks for CA files, links nothing
    ];
    let lock = read("Cargo.lock");
    for name in lock.lines().filter_map(|l| l.strip_prefix("name = \"")) {
        let name = name.trim_end_matches('"');
        assert!(
            !(name.ends_with("-sys") || name.contains("openssl") || name == "native-tls")
                || allowed.contains(&name),
            "{name}: check that the musl build of the Containerfile still links statically"
        );
    }
}

/// Makes `root/shard-I/scale-out/FOLDER/campaign.json` for each (I, FOLDER).
fn shard_folders(root: &Path, folders: &[(usize, &str)]) {
    for (index, folder) in folders {
        let dir = root.join(format!("shard-{index}/scale-out/{folder}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("campaign.json"), "{}").expect("write");
    }
}

#[test]
fn collect_merges_one_folder_per_shard_and_refuses_a_shard_run_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("results");
    shard_folders(&root, &[(0, "a"), (1, "b"), (3, "d")]);
    let root_text = root.to_str().expect("UTF-8");
    let run = || {
        script(
            "collect.sh",
            &[
                "--local",
                root_text,
                "--shards",
                "4",
                "--dest",
                "/merged-here",
            ],
            // `echo` stands in for llmload: it prints what llmload was asked to do.
            &[("LLMLOAD", "echo")],
        )
    };
    let output = run();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expected: Vec<String> = [(0, "a"), (1, "b"), (3, "d")]
        .iter()
        .map(|(i, f)| format!("{root_text}/shard-{i}/scale-out/{f}"))
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("merge {} --out /merged-here/merged", expected.join(" "))
    );
    assert!(
        stderr.contains("no folder for shard 2: merging 3 of 4 shards"),
        "{stderr}"
    );

    // Shard 1 again (a second run under the attempt id): nothing is merged.
    shard_folders(&root, &[(1, "b2")]);
    let output = run();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(stderr.contains("shard 1 has 2 attempt folders"), "{stderr}");
}
