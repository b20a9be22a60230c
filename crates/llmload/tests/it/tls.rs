//! llmload over `https://`: a TLS front (a certificate made here, signed by no known authority)
//! before the simulator. With `--ca-cert` every response is measured and verified on kept-alive
//! TLS connections; without it setup fails on the certificate in one line; `--insecure` runs and
//! says so; a bad `--ca-cert` file is a usage error before anything is sent; a stalled handshake
//! fails naming the request and `--setup-timeout`.
#![expect(clippy::expect_used, reason = "tests fail loudly")]

use crate::common;

use common::{assert_phases, json, json_lines, llmload, run_against, Invocation, Simulator};
use rustls::pki_types::PrivateKeyDer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// The first bytes of a generation request (never a setup request).
const GENERATION: [&[u8]; 3] = [
    b"POST /completion ",
    b"POST /v1/completions ",
    b"POST /v1/chat/completions ",
];

/// What the front saw.
#[derive(Debug, Default)]
struct Counts {
    /// TCP connections accepted.
    accepted: AtomicUsize,
    /// TLS handshakes completed.
    handshakes: AtomicUsize,
    /// Connections whose first request was a generation: the streams' own connections.
    streams: AtomicUsize,
}

/// A TLS-terminating front on a free loopback port, forwarding each connection to the
/// simulator; stopped when dropped.
struct TlsFront {
    /// `https://127.0.0.1:PORT`.
    url: String,
    /// The PEM file of the front's certificate (self-signed, for 127.0.0.1).
    ca_cert: PathBuf,
    counts: Arc<Counts>,
    runtime: Option<tokio::runtime::Runtime>,
    _simulator: Simulator,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    fn start() -> TlsFront {
        let simulator = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
        let upstream = simulator
            .url
            .strip_prefix("http://")
            .expect("the simulator speaks http")
            .to_owned();
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).expect("cert");
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_cert = dir.path().join("ca.pem");
        std::fs::write(&ca_cert, made.cert.pem()).expect("write the certificate");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![made.cert.der().clone()],
            PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into()),
        )
        .expect("server configuration");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the front");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind a loopback port");
        let url = format!("https://{}", listener.local_addr().expect("address"));
        let counts = Arc::new(Counts::default());
        let acceptor = TlsAcceptor::from(Arc::new(config));
        runtime.spawn(serve(listener, acceptor, upstream, counts.clone()));
        TlsFront {
            url,
            ca_cert,
            counts,
            runtime: Some(runtime),
            _simulator: simulator,
            _dir: dir,
        }
    }

    fn count(&self, which: fn(&Counts) -> &AtomicUsize) -> usize {
        which(&self.counts).load(Ordering::SeqCst)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    upstream: String,
    counts: Arc<Counts>,
) {
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(forward(
            tcp,
            acceptor.clone(),
            upstream.clone(),
            counts.clone(),
        ));
    }
}

/// One connection: the handshake, then every byte both ways; the first request classifies it.
async fn forward(tcp: TcpStream, acceptor: TlsAcceptor, upstream: String, counts: Arc<Counts>) {
    counts.accepted.fetch_add(1, Ordering::SeqCst);
    let Ok(mut client) = acceptor.accept(tcp).await else {
        return;
    };
    counts.handshakes.fetch_add(1, Ordering::SeqCst);
    let mut first = vec![0u8; 4096];
    let n = match client.read(&mut first).await {
        Ok(n) if n > 0 => n,
        _ => return,
    };
    if GENERATION.iter().any(|p| first[..n].starts_with(p)) {
        counts.streams.fetch_add(1, Ordering::SeqCst);
    }
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    if server.write_all(&first[..n]).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn shown(run: &Invocation) -> String {
    format!(
        "exit {}\nstdout: {}\nstderr: {}",
        run.code, run.stdout, run.stderr
    )
}

/// A small campaign: 64 prompt tokens, 8 output, concurrency 2, one warmup, 3 rounds.
const SMALL: [&str; 10] = [
    "--input-tokens",
    "64",
    "--output-tokens",
    "8",
    "--concurrency",
    "2",
    "--rounds",
    "3",
    "--warmup",
    "1",
];

/// The records of a run that exited 0: 1 warmup and 3 × 2 measured, every measured one ok and
/// verified.
fn all_verified(run: &Invocation, dir: &Path) -> Vec<Value> {
    assert_eq!(run.code, 0, "{}", shown(run));
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 7, "{records:?}");
    let measured: Vec<&Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert_eq!(measured.len(), 6, "{records:?}");
    for r in &measured {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["streamed_tokens"], 8, "{r}");
    }
    records
}

/// Whether `out` holds nothing (or does not exist).
fn nothing_in(out: &Path) -> bool {
    std::fs::read_dir(out).map_or(true, |mut entries| entries.next().is_none())
}

#[test]
fn https_with_ca_cert_is_measured_and_verified_on_kept_alive_connections() {
    let front = TlsFront::start();
    let out = tempfile::tempdir().expect("temp dir");
    let mut extra = vec!["--ca-cert", utf8(&front.ca_cert), "-q"];
    extra.extend(SMALL);
    let (run, dir) = run_against(out.path(), "tls", &front.url, &extra);
    let records = all_verified(&run, &dir);
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["config"]["ca_cert"], utf8(&front.ca_cert));
    assert_eq!(campaign["config"]["insecure"], false);
    assert_eq!(campaign["target"]["url"], front.url.as_str());
    // Two streams at once need two connections; a third only for a request sent again because
    // the server had closed its kept-alive connection. Without keep-alive over TLS every
    // generation (the warmup and the 6 measured) would have a connection of its own.
    let retried = records
        .iter()
        .filter(|r| r["notes"].to_string().contains("sent twice"))
        .count();
    let streams = front.count(|c| &c.streams);
    assert!(
        (2..=2 + retried).contains(&streams),
        "{streams} stream connections, {retried} retried"
    );
    assert!(front.count(|c| &c.handshakes) >= streams);
    assert_eq!(
        front.count(|c| &c.handshakes),
        front.count(|c| &c.accepted),
        "every connection completed its handshake"
    );
    // Each stream connection the front saw is one record's new connection, with its TLS
    // handshake timed apart; every other record went on a kept-alive one.
    let new = records.iter().filter(|r| !assert_phases(r, true)).count();
    assert_eq!(new, streams, "{records:?}");
    let phases = &json(&dir.join("summary.json"))["cases"][0]["phases"];
    let measured_new = records
        .iter()
        .filter(|r| r["phase"] == "measured" && r["phases"]["reused"] == false)
        .count();
    assert_eq!(phases["new_connections"], measured_new, "{phases}");
    assert_eq!(phases["tls_ms"]["n"], phases["new_connections"], "{phases}");
}

#[test]
fn https_without_ca_cert_fails_at_setup_on_the_certificate() {
    let front = TlsFront::start();
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = llmload(&[
        "run",
        "--url",
        &front.url,
        "--out",
        utf8(&out),
        "--telemetry",
        "off",
    ]);
    assert_eq!(run.code, 1, "{}", shown(&run));
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{}", shown(&run));
    let line = lines[0];
    assert!(
        line.starts_with(&format!("error: cannot reach {}: ", front.url)),
        "{line}"
    );
    assert!(line.contains("invalid peer certificate"), "{line}");
    assert!(line.contains("UnknownIssuer"), "{line}");
    assert!(line.contains("--ca-cert FILE, or --insecure"), "{line}");
    assert!(nothing_in(&out), "no attempt folder");
    assert_eq!(front.count(|c| &c.handshakes), 0);
    assert_eq!(front.count(|c| &c.streams), 0);
}

#[test]
fn insecure_from_the_campaign_file_runs_unchecked_and_says_so() {
    let front = TlsFront::start();
    let out = tempfile::tempdir().expect("temp dir");
    let file = out.path().join("campaign.toml");
    std::fs::write(&file, "insecure = true\n").expect("write the campaign file");
    let mut extra = vec!["--config", utf8(&file)];
    extra.extend(SMALL);
    let (run, dir) = run_against(out.path(), "insecure", &front.url, &extra);
    all_verified(&run, &dir);
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "warning: --insecure: the server's certificate is not checked"),
        "{}",
        shown(&run)
    );
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["config"]["insecure"], true);
    assert_eq!(campaign["config"]["ca_cert"], Value::Null);
}

#[test]
fn a_bad_ca_cert_file_is_a_usage_error_before_anything_is_sent() {
    let front = TlsFront::start();
    let tmp = tempfile::tempdir().expect("temp dir");
    let not_pem = tmp.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").expect("write");
    let missing = tmp.path().join("missing.pem");
    for (file, why) in [(&not_pem, "no PEM certificate"), (&missing, "No such file")] {
        let out = tmp.path().join("out");
        let run = llmload(&[
            "run",
            "--url",
            &front.url,
            "--ca-cert",
            utf8(file),
            "--out",
            utf8(&out),
            "--telemetry",
            "off",
        ]);
        assert_eq!(run.code, 2, "{}", shown(&run));
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 1, "{}", shown(&run));
        assert!(
            lines[0].starts_with(&format!("error: --ca-cert {}: ", file.display())),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains(why), "{}", lines[0]);
        assert!(nothing_in(&out), "no attempt folder");
    }
    assert_eq!(front.count(|c| &c.accepted), 0, "nothing was sent");
}

#[test]
fn a_stalled_tls_handshake_names_the_request_and_the_setup_timeout() {
    // A server that accepts connections, reads the ClientHello and never answers it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let url = format!("https://{}", listener.local_addr().expect("local address"));
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in listener.incoming().take(2) {
            kept.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(5));
    });
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = llmload(&[
        "run",
        "--url",
        &url,
        "--out",
        utf8(&out),
        "--telemetry",
        "off",
        "--setup-timeout",
        "1s",
    ]);
    assert_eq!(run.code, 1, "{}", shown(&run));
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{}", shown(&run));
    assert!(
        lines[0].contains(&format!("GET {url}/health")),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("within 1s (--setup-timeout)"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("TLS handshake"), "{}", lines[0]);
    assert!(nothing_in(&out), "no attempt folder");
    drop(held);
}
