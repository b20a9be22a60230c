//! Real reverse proxies between llmload and a real llama-server (Gemma 3 270M): Debian's nginx,
//! Caddy and `HAProxy`, each started by `scripts/start-proxy.sh` on a loopback port with a config
//! of its own (`scripts/proxies/`). Through a proxy that passes the stream on as it comes (nginx
//! with `proxy_buffering off`, Caddy with `flush_interval -1`) every figure is kept and no burst
//! is seen; through one that holds each response (`HAProxy`'s `http-response wait-for-body`) every
//! response is still ok and verified, but each is seen to arrive at once: ITL, TPOT, the decode
//! rate and TTFT are withheld, with the reason on the terminal and in every report, and
//! `compare` says it cannot tell rather than pass them. Through `HAProxy` in its default
//! configuration (the kernel holding what it sends for up to 200 ms) every response is seen to
//! arrive in bursts, however few tokens each holds. Nothing here compares two times: how
//! close the figures through a proxy come to the server's own is what `scripts/bench-proxies.sh`
//! prints.
//!
//! `scripts/test.sh` installs the three proxies (`scripts/setup-proxies.sh`); without them these
//! tests fail, saying so.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{assert_ids_and_server_timings, json, llmload, measured, run_against, Started};
use common::{Invocation, LlamaServer, SERIAL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// A proxy started by `scripts/start-proxy.sh` in a folder of its own; stopped when dropped.
struct Proxy {
    url: String,
    pid: String,
    access_log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// Starts proxy `kind` (a config of `scripts/proxies/`) in front of `upstream`.
    fn start(kind: &str, upstream: &str) -> Proxy {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/start-proxy.sh");
        let started = Started::run(
            Command::new(script)
                .args([kind, upstream])
                .env("LLMLOAD_PROXY_DIR", dir.path())
                .env("LLMLOAD_PROXY_LIFETIME", "900"),
        );
        Proxy {
            url: started.get("PROXY_URL"),
            pid: started.get("PROXY_PID"),
            access_log: PathBuf::from(started.get("PROXY_ACCESS_LOG")),
            _dir: dir,
        }
    }

    /// The `POST`s of `path` the proxy's access log holds once it holds `expected` of them (or
    /// after 10 s, however many there are): nginx's and `HAProxy`'s lines hold the request line,
    /// Caddy's the JSON of the request.
    fn posts(&self, path: &str, expected: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log = std::fs::read_to_string(&self.access_log).unwrap_or_default();
            let n = log
                .lines()
                .filter(|l| {
                    l.contains(&format!("\"POST {path} HTTP/1.1\""))
                        || (l.contains("\"method\":\"POST\"")
                            && l.contains(&format!("\"uri\":\"{path}\"")))
                })
                .count();
            if n >= expected || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid]).status();
    }
}

/// One round of 2 concurrent requests, 32 prompt and 32 output tokens, no warmup, through `url`
/// with `extra` flags: the run (which must succeed) and its only case.
fn small_case(out: &Path, name: &str, url: &str, extra: &[&str]) -> (Invocation, PathBuf, Value) {
    case_of(out, name, url, ("2", "1"), extra)
}

/// As [`small_case`], `load`'s (concurrency, rounds).
fn case_of(
    out: &Path,
    name: &str,
    url: &str,
    load: (&str, &str),
    extra: &[&str],
) -> (Invocation, PathBuf, Value) {
    let mut args = vec![
        "--input-tokens",
        "32",
        "--output-tokens",
        "32",
        "--concurrency",
        load.0,
        "--rounds",
        load.1,
        "--warmup",
        "0",
        "--timeout",
        "3m",
    ];
    args.extend_from_slice(extra);
    let (run, dir) = run_against(out, name, url, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    assert_eq!(
        summary["cases"].as_array().map(Vec::len),
        Some(1),
        "{summary}"
    );
    let case = summary["cases"][0].clone();
    (run, dir, case)
}

/// Every response of `case` ok and verified, 2 of them.
fn assert_all_verified(case: &Value) {
    assert_eq!(case["counts"]["ok"], 2, "{case}");
    assert_eq!(case["counts"]["unverified"], 0, "{case}");
    assert_eq!(case["e2e_ms"]["n"], 2, "{case}");
}

/// Through nginx (`proxy_buffering off`) on llama.cpp's native API and Caddy (`flush_interval
/// -1`) on the chat API, the stream passes token by token: no burst, every per-token figure
/// kept, the server's own timings on every response; each proxy's log holds the generations.
#[test]
fn through_a_proxy_that_streams_every_figure_is_kept() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    // The chat API's setup sends one one-token generation (its template's opening measured).
    for (kind, api, path, setup) in [
        ("nginx", "llamacpp", "/completion", 0),
        ("caddy", "chat", "/v1/chat/completions", 1),
    ] {
        let proxy = Proxy::start(kind, &server.url);
        let (run, dir, case) = small_case(out.path(), kind, &proxy.url, &["--api", api]);
        assert_all_verified(&case);
        assert!(case["bursts"].is_null(), "{kind}: {case}");
        assert!(!run.stdout.contains("bursts"), "{kind}: {}", run.stdout);
        for figure in ["ttft_ms", "tpot_ms", "decode_rate_tps"] {
            assert_eq!(case[figure]["n"], 2, "{kind} {figure}: {case}");
        }
        let itl = case["itl_ms"]["n"].as_u64().unwrap_or(0);
        if api == "llamacpp" {
            // One token per event, each named: 31 gaps per response.
            assert_eq!(itl, 2 * 31, "{kind}: {case}");
        } else {
            assert!(itl > 0, "{kind}: {case}");
        }
        let records = measured(&dir);
        let timed = assert_ids_and_server_timings(&records, "llama-server timings");
        assert_eq!(
            timed, 2,
            "{kind}: the server's timings came through: {records:?}"
        );
        assert_eq!(
            proxy.posts(path, 2 + setup),
            2 + setup,
            "{kind} passed the generations on"
        );
    }
}

/// `HAProxy` holding each whole response (`http-response wait-for-body`) in front of llama-server:
/// every response ok and verified, each seen to arrive at once, so TTFT, ITL, TPOT and the
/// decode rate are withheld, with the evidence on the terminal, in summary.json and report.md;
/// the same case through nginx passing the stream on keeps them, and `compare` of the two says
/// it cannot tell the withheld figures rather than pass them.
#[test]
fn through_a_proxy_that_holds_each_response_the_per_token_figures_are_withheld() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let streaming = Proxy::start("nginx", &server.url);
    let (_, streamed, case) = small_case(out.path(), "streamed", &streaming.url, &[]);
    assert!(case["bursts"].is_null(), "{case}");
    assert_eq!(case["itl_ms"]["n"], 2 * 31, "{case}");

    let holding = Proxy::start("haproxy-hold", &server.url);
    let (run, held, case) = small_case(out.path(), "held", &holding.url, &[]);
    assert_eq!(holding.posts("/completion", 2), 2, "HAProxy passed them on");
    assert_all_verified(&case);
    let bursts = &case["bursts"];
    assert_eq!(bursts["examined"], 2, "{case}");
    assert_eq!(bursts["buffered"], 2, "{case}");
    assert_eq!(bursts["ttft_withheld"], 2, "{case}");
    assert!(bursts["interval_ms"].is_null(), "at once: {case}");
    for figure in [
        "ttft_ms",
        "itl_ms",
        "tpot_ms",
        "decode_rate_tps",
        "chunk_gap_ms",
    ] {
        assert!(case[figure].is_null(), "{figure}: {case}");
    }
    let said = "in32-c2-out32: 2 of 2 responses arrived all at once: something between llmload \
                and the server buffers the stream";
    assert!(run.stdout.contains(said), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("ITL, TPOT and the decode rate cannot be measured"),
        "{}",
        run.stdout
    );
    let report = std::fs::read_to_string(held.join("report.md")).expect("report.md");
    assert!(report.contains(said), "{report}");

    let compare = llmload(&[
        "compare",
        streamed.to_str().expect("UTF-8 path"),
        held.to_str().expect("UTF-8 path"),
        "--fail-if",
        "itl_p50 > +50%",
        "--fail-if",
        "tpot_p50 > +50%",
        "--fail-if",
        "ttft_p50 > +50%",
    ]);
    let text = &compare.stdout;
    assert_eq!(
        text.matches("not measurable in NEW: its tokens arrived in bursts")
            .count(),
        3,
        "{text}\n{}",
        compare.stderr
    );
    assert!(
        text.contains("Gate cannot tell: none of the 3 checks"),
        "{text}"
    );
    assert!(!text.contains("Gate passed"), "{text}");
}

/// `HAProxy` in its default configuration in front of llama-server: it sends the stream on with
/// `MSG_MORE`, and the kernel holds each piece up to 200 ms, so the tokens of a server that
/// streams faster than that arrive in bursts (2 or 3 tokens at a time behind a slow server, a
/// dozen behind a fast one). Every response is seen so, whatever its server's pace: ITL, TPOT
/// and the decode rate are withheld with the sentence, and the server's own timings came through.
#[test]
fn through_haproxy_in_its_default_configuration_every_response_arrives_in_bursts() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let proxy = Proxy::start("haproxy", &server.url);
    // One at a time: the server's own pace (about 40 ms a token on 2 cores), 5 times faster
    // than the 200 ms a slower server would need to escape the bursts.
    let (run, dir, case) = case_of(out.path(), "haproxy", &proxy.url, ("1", "3"), &[]);
    assert_eq!(proxy.posts("/completion", 3), 3, "HAProxy passed them on");
    let records = measured(&dir);
    let paces: Vec<f64> = records
        .iter()
        .map(|r| r["server"]["decode_ms"].as_f64().unwrap_or(f64::NAN) / 31.0)
        .collect();
    assert_eq!(case["counts"]["ok"], 3, "{case}");
    assert_eq!(case["counts"]["unverified"], 0, "{case}");
    let bursts = &case["bursts"];
    // A response whose server paced its tokens well inside HAProxy's 200 ms hold (under a
    // third of it) arrives in bursts; one paced slower than the hold (a heavily loaded machine
    // decodes at up to 2 s a token) cannot, and nothing can be said of one between.
    let fast = paces.iter().filter(|&&p| p < 65.0).count();
    let not_slow = paces.iter().filter(|&&p| p < 300.0).count();
    // No `bursts` where no response came in bursts.
    let buffered = if bursts.is_null() {
        0
    } else {
        assert_eq!(bursts["examined"], 3, "{case}");
        bursts["buffered"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .expect("a count")
    };
    assert!(
        (fast..=not_slow).contains(&buffered),
        "{buffered} in bursts; the server's ms per token: {paces:?}: {case}"
    );
    if buffered == 3 {
        assert!(bursts["kept"].is_null(), "the path buffers: {case}");
        for figure in ["itl_ms", "tpot_ms", "decode_rate_tps", "chunk_gap_ms"] {
            assert!(case[figure].is_null(), "{figure}: {case}");
        }
        let said = "in32-c1-out32: 3 of 3 responses arrived in a median of";
        assert!(run.stdout.contains(said), "{}", run.stdout);
        assert!(
            run.stdout.contains("HAProxy: `option http-no-delay`"),
            "{}",
            run.stdout
        );
    }
    let timed = assert_ids_and_server_timings(&records, "llama-server timings");
    assert_eq!(timed, 3, "the server's timings came through: {records:?}");
}
