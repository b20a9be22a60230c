//! Test support: a real llama-server on a free loopback port, and helpers to run the llmload
//! binary and read what an attempt left on disk.
#![allow(dead_code)]
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

pub(crate) mod chromium;
pub(crate) mod front;
pub(crate) mod hostile;

use serde_json::Value;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tests that load a server run one at a time, so that timings do not interfere.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

/// A llama-server process, killed when dropped (and by `timeout` if the test process dies).
pub(crate) struct LlamaServer {
    child: Child,
    /// Base URL, e.g. `http://127.0.0.1:40123`.
    pub url: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Paths of the llama-server binary and the model: from `LLAMA_SERVER` and `LLMLOAD_MODEL`, or
/// from the install script (which builds and caches them on first use).
fn installed() -> (String, String) {
    if let (Ok(server), Ok(model)) = (
        std::env::var("LLAMA_SERVER"),
        std::env::var("LLMLOAD_MODEL"),
    ) {
        return (server, model);
    }
    let script = repo_root().join("scripts/setup-llama-server.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/setup-llama-server.sh");
    assert!(
        output.status.success(),
        "scripts/setup-llama-server.sh failed"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("setup script printed no {key}"))
            .to_owned()
    };
    (value("LLAMA_SERVER="), value("LLMLOAD_MODEL="))
}

impl LlamaServer {
    /// Starts llama-server with 4 slots of 1,024 tokens and metrics, on a port the OS picks.
    pub(crate) fn start() -> LlamaServer {
        LlamaServer::start_with(&[])
    }

    /// As [`LlamaServer::start`], speculating: the model drafts for itself (`draft-simple`).
    pub(crate) fn speculating() -> LlamaServer {
        let (_, model) = installed();
        LlamaServer::start_with(&["-md", &model, "--spec-type", "draft-simple"])
    }

    /// As [`LlamaServer::start`], with extra llama-server flags.
    pub(crate) fn start_with(extra: &[&str]) -> LlamaServer {
        let (server, model) = installed();
        let mut child = Command::new("timeout")
            .args([
                "--signal=KILL",
                "1800",
                &server,
                "-m",
                &model,
                "--host",
                "127.0.0.1",
            ])
            .args([
                "--port",
                "0",
                "-np",
                "4",
                "-c",
                "4096",
                "--metrics",
                "-t",
                "2",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start llama-server");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(at) = line.find("listening on http://") {
                        let url = line[at + "listening on ".len()..].trim().to_owned();
                        let _ = tx.send(url);
                        sent = true;
                    }
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("llama-server did not say where it listens within 120 s");
        let server = LlamaServer { child, url };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let ok = Command::new("curl")
                .args(["-sf", &format!("{}/health", self.url)])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama-server at {} never became healthy", self.url);
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Ends a process started under `timeout`: SIGTERM, which `timeout` passes on to its command
/// (SIGKILL to `timeout` alone would leave the command running as an orphan), then waits for it
/// for at most 20 s. A command still running then is killed, and `timeout` with it: llama-server
/// can deadlock in its own SIGTERM handler (the handler takes its task queue's lock, which the
/// thread it interrupted may hold), and a test must not wait on it for ever.
fn stop(child: &mut Child) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for command in children.split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", command]).status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// What a start script (`scripts/start-vllm.sh`, `scripts/start-litellm.sh`) printed: its
/// `NAME=value` lines.
pub(crate) struct Started(String);

impl Started {
    /// Runs `command`, a start script, and checks that it succeeded.
    pub(crate) fn run(command: &mut Command) -> Started {
        let output = command.output().expect("run the start script");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{} failed: {}\n{stdout}",
            command.get_program().to_string_lossy(),
            String::from_utf8_lossy(&output.stderr)
        );
        Started(stdout)
    }

    /// The value printed as `name=value` (`name` without the `=`).
    pub(crate) fn get(&self, name: &str) -> String {
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .map_or_else(|| panic!("no {name}= in {}", self.0), str::to_owned)
    }
}

/// The outcome of one `llmload` invocation.
pub(crate) struct Invocation {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs the llmload binary with `args`.
pub(crate) fn llmload(args: &[&str]) -> Invocation {
    llmload_with_env(args, &[])
}

/// Runs the llmload binary with `args` and the environment variables `env` set.
pub(crate) fn llmload_with_env(args: &[&str], env: &[(&str, &str)]) -> Invocation {
    let output = Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run llmload");
    Invocation {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Starts the llmload binary with `args`, its output discarded: for a run a test stops itself.
pub(crate) fn spawn_quiet<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Child {
    Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llmload")
}

/// `llmload run --url URL --out OUT --name NAME --telemetry off EXTRA…`; returns the invocation
/// and the attempt folder it made.
pub(crate) fn run_against(
    out: &Path,
    name: &str,
    url: &str,
    extra: &[&str],
) -> (Invocation, PathBuf) {
    against("run", out, name, url, extra)
}

/// `llmload sweep --url URL --out OUT --name NAME --telemetry off EXTRA…`; returns the
/// invocation and the attempt folder it made.
pub(crate) fn sweep_against(
    out: &Path,
    name: &str,
    url: &str,
    extra: &[&str],
) -> (Invocation, PathBuf) {
    against("sweep", out, name, url, extra)
}

fn against(
    command: &str,
    out: &Path,
    name: &str,
    url: &str,
    extra: &[&str],
) -> (Invocation, PathBuf) {
    let mut args = vec![
        command,
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        name,
        "--telemetry",
        "off",
    ];
    args.extend_from_slice(extra);
    let result = llmload(&args);
    let dir = attempt_dir(out, name);
    (result, dir)
}

/// The single attempt folder under `out/name/`.
pub(crate) fn attempt_dir(out: &Path, name: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out.join(name))
        .expect("campaign folder exists")
        .map(|e| e.expect("dir entry").path())
        .collect();
    assert_eq!(dirs.len(), 1, "one attempt folder expected: {dirs:?}");
    dirs.into_iter().next().expect("one folder")
}

/// Waits (until `deadline`) for the attempt folder under `out/name/` whose `requests.jsonl` has a
/// line holding `text`; panics past the deadline.
pub(crate) fn until_recorded(out: &Path, name: &str, text: &str, deadline: Instant) -> PathBuf {
    loop {
        assert!(Instant::now() < deadline, "no record holding {text}");
        std::thread::sleep(Duration::from_millis(100));
        let Some(dir) = attempt_so_far(out, name) else {
            continue;
        };
        let records = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default();
        if records.lines().any(|l| l.contains(text)) {
            return dir;
        }
    }
}

/// Sends `signal` (`-INT`, `-TERM`) to `child` and waits (until `deadline`) for its exit code;
/// kills it and panics past the deadline.
pub(crate) fn signal_and_wait(child: &mut Child, signal: &str, deadline: Instant) -> Option<i32> {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("llmload did not stop after {signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The attempt folder under `out/name/` once the run has made it (the first one listed).
pub(crate) fn attempt_so_far(out: &Path, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(out.join(name))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok)
        .map(|e| e.path())
}

/// Reads a JSON file.
pub(crate) fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file exists")).expect("valid JSON")
}

/// Reads a JSON-lines file.
pub(crate) fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("file exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// The measured records of an attempt folder.
pub(crate) fn measured(dir: &Path) -> Vec<Value> {
    json_lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .collect()
}

/// A count in a record, or a failed test that shows the value.
pub(crate) fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count: {v}"))
}

/// A vLLM server started by `scripts/start-vllm.sh FLAGS…` (or given by the environment
/// variable named, and left running), stopped with SIGTERM (the whole server) when dropped.
pub(crate) struct VllmServer {
    /// Base URL.
    pub url: String,
    pid: Option<String>,
}

impl VllmServer {
    /// The server at `$given`, else one started with `flags`.
    pub(crate) fn start(given: &str, flags: &[&str]) -> VllmServer {
        if let Ok(url) = std::env::var(given) {
            return VllmServer { url, pid: None };
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/start-vllm.sh");
        let started = Started::run(
            Command::new(script)
                .args(flags)
                .env("LLMLOAD_VLLM_LIFETIME", "1800"),
        );
        VllmServer {
            url: started.get("VLLM_URL"),
            pid: Some(started.get("VLLM_PID")),
        }
    }
}

impl Drop for VllmServer {
    fn drop(&mut self) {
        if let Some(pid) = &self.pid {
            let _ = Command::new("kill").args(["-TERM", pid]).status();
        }
    }
}

/// `llmload run ARGS…` is a usage error (exit code 2) of one line that says `said`.
pub(crate) fn assert_refused(flags: &[&str], said: &str) {
    assert_command_refused(&["run"], flags, said);
}

/// `llmload COMMAND… ARGS…` (`command`: the subcommand and what it needs before the flags) is a
/// usage error (exit code 2) of one line that says `said`.
pub(crate) fn assert_command_refused(command: &[&str], flags: &[&str], said: &str) {
    let mut argv = command.to_vec();
    argv.extend_from_slice(flags);
    let run = llmload(&argv);
    assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
    assert!(run.stderr.contains(said), "{flags:?}: {}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
}

/// A `llmload sim` process on a free loopback port, killed when dropped.
pub(crate) struct Simulator {
    child: Child,
    /// Base URL.
    pub url: String,
}

impl Simulator {
    /// Starts `llmload sim --port 0` with `extra` arguments.
    pub(crate) fn start(extra: &[&str]) -> Simulator {
        let mut args = vec!["--port", "0"];
        args.extend_from_slice(extra);
        Simulator::spawn(&args)
    }

    /// Starts `llmload sim` with no `--port`: it picks a free port itself.
    pub(crate) fn start_bare() -> Simulator {
        Simulator::spawn(&[])
    }

    fn spawn(args: &[&str]) -> Simulator {
        let mut words = vec!["sim"];
        words.extend_from_slice(args);
        let (child, url) = listening(&words, "600");
        Simulator { child, url }
    }
}

/// Starts `llmload ARGS…` (under `timeout --signal=KILL SECONDS`), a server that prints
/// `listening on URL` first: the child and its URL.
pub(crate) fn listening(args: &[&str], seconds: &str) -> (Child, String) {
    let mut child = Command::new("timeout")
        .args(["--signal=KILL", seconds, env!("CARGO_BIN_EXE_llmload")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start llmload {args:?}: {e}"));
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("read the first line");
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    (child, url)
}

impl Drop for Simulator {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Checks an attempt's `records` for their ids and the server's timings: every record has a
/// `request_id`, no two the same; every `ok` one has a `server` object from `source` whose TTFT
/// (where given) is no longer than the client's and not flagged, with its prefill and decode.
/// Returns how many `ok` records carry the server's TTFT.
pub(crate) fn assert_ids_and_server_timings(records: &[Value], source: &str) -> usize {
    let ids: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| {
            r["request_id"]
                .as_str()
                .unwrap_or_else(|| panic!("a request id: {r}"))
        })
        .collect();
    assert_eq!(ids.len(), records.len(), "request ids are unique");
    let mut with_ttft = 0;
    for r in records.iter().filter(|r| r["status"] == "ok") {
        let server = &r["server"];
        assert_eq!(server["source"], source, "{r}");
        assert!(server.get("ttft_exceeds_client").is_none(), "{r}");
        for figure in ["prefill_ms", "decode_ms"] {
            let ms = server[figure]
                .as_f64()
                .unwrap_or_else(|| panic!("{figure}: {r}"));
            assert!(ms >= 0.0, "{r}");
        }
        if let Some(server_ttft) = server["ttft_ms"].as_f64() {
            let client = r["ttft_ms"]
                .as_f64()
                .unwrap_or_else(|| panic!("a TTFT: {r}"));
            assert!(server_ttft <= client, "server TTFT past the client's: {r}");
            with_ttft += 1;
        }
    }
    with_ttft
}

/// Checks a completed record's phases and returns whether it went on a kept-alive connection:
/// the marks in the order every response passes them (0 ≤ head ≤ first event ≤ first token ≤
/// final event, all from `sent`; the last token no later than the final event, to the
/// microsecond `event_ms` is rounded to); the request written after `sent` (but not always
/// before the head: it is taken when the write returns, and a fast server's head can be stamped
/// by the kernel before that); a new connection's setup present, and its TLS handshake exactly
/// when `tls`; a kept-alive one with no setup.
pub(crate) fn assert_phases(record: &Value, tls: bool) -> bool {
    let phases = &record["phases"];
    let at = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("a number: {record}"));
    let last_token = record["event_ms"]
        .as_array()
        .and_then(|events| events.last())
        .unwrap_or_else(|| panic!("token events: {record}"));
    assert!(at(&phases["write_ms"]) >= 0.0, "{record}");
    let marks = [
        0.0,
        at(&phases["head_ms"]),
        at(&phases["first_event_ms"]),
        at(&record["ttft_ms"]),
        at(&record["e2e_ms"]),
    ];
    assert!(
        marks.windows(2).all(|w| w[0] <= w[1]),
        "{marks:?}: {record}"
    );
    assert!(at(last_token) <= marks[4] + 1e-3, "{record}");
    let reused = phases["reused"]
        .as_bool()
        .unwrap_or_else(|| panic!("reused: {record}"));
    assert_eq!(phases["connect_ms"].is_f64(), !reused, "{record}");
    assert_eq!(phases["tls_ms"].is_f64(), !reused && tls, "{record}");
    reused
}

/// A word-level tokenizer (each whitespace-separated word one token), as the simulator's
/// generated text is tokenized.
pub(crate) const WORDS_TOKENIZER: &str = r#"{"version":"1.0","truncation":null,"padding":null,
    "added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},
    "post_processor":null,"decoder":null,
    "model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;
