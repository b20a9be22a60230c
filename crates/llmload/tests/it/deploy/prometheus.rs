//! The dashboard against a real Prometheus: a Prometheus server (Debian's `prometheus`, which
//! `scripts/test.sh` installs) scrapes a running open loop's `/metrics` every second, and every
//! query of every panel, its Grafana variables filled in as Grafana would, returns series from
//! it (but those that are empty by design on a run without failures or stops).

use super::dashboard::{dashboard, exprs};
use super::local::listening_port;
use crate::common::Simulator;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `query` against the Prometheus at `port`: its result's series.
fn query(port: u16, query: &str) -> Vec<serde_json::Value> {
    let output = Command::new("curl")
        .args(["-s", "--max-time", "10", "--get", "--data-urlencode"])
        .arg(format!("query={query}"))
        .arg(format!("http://127.0.0.1:{port}/api/v1/query"))
        .output()
        .expect("curl runs");
    let answer: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    assert_eq!(answer["status"], "success", "{query}: {answer}");
    answer["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// GPU readings for the guard to show: hot, near its margin, power-capped.
fn readings(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for t in 0..120 {
        let _ = writeln!(
            text,
            "{{\"t_s\": {t}, \"gpu\": 0, \"temperature_c\": 70.0, \"margin_c\": 15.0, \
             \"power_w\": 240.0, \"power_limit_w\": 300.0, \"sw_power_cap\": true}}"
        );
    }
    let path = dir.join("gpu.jsonl");
    std::fs::write(&path, text).expect("write readings");
    format!("replay:{}", path.display())
}

/// Starts an open loop of 15 s against `sim`, serving `/metrics` on a port of its own, with GPU
/// readings and both temperature rules; it and the address of its `/metrics`.
fn start_run(sim: &Simulator, dir: &std::path::Path) -> (Running, String) {
    let telemetry = readings(dir);
    let run = Running(
        Command::new(env!("CARGO_BIN_EXE_llmload"))
            .args([
                "run",
                "--url",
                &sim.url,
                "--arrival",
                "poisson",
                "--rate",
                "20",
            ])
            .args([
                "--duration",
                "15s",
                "--input-tokens",
                "32",
                "--output-tokens",
                "8",
            ])
            .args([
                "--telemetry",
                &telemetry,
                "--stop-temp",
                "90",
                "--stop-margin",
                "5",
            ])
            .args(["--metrics-listen", "0", "--metrics-linger", "3m", "--quiet"])
            .arg("--out")
            .arg(dir.join("out"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llmload"),
    );
    let listen = format!("127.0.0.1:{}", listening_port(run.0.id()));
    (run, listen)
}

/// Starts a Prometheus server scraping `listen` every second; it and its port, once ready.
fn start_prometheus(dir: &std::path::Path, listen: &str) -> (Running, u16) {
    let config = dir.join("prometheus.yml");
    let scrape = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: llmload\n    \
         static_configs:\n      - targets: ['{listen}']\n"
    );
    std::fs::write(&config, scrape).expect("write the configuration");
    let mut server = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prometheus runs (Debian's prometheus package; scripts/test.sh installs it)");
    let log = BufReader::new(server.stderr.take().expect("stderr"));
    std::thread::spawn(move || log.lines().for_each(drop));
    let server = Running(server);
    let port = listening_port(server.0.id());
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = format!("http://127.0.0.1:{port}/-/ready");
    while !Command::new("curl")
        .args(["-sf", "--max-time", "2", &ready])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(Instant::now() < deadline, "Prometheus never became ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, port)
}

/// Waits until Prometheus has scraped the run's final figures; the run's attempt id.
fn final_figures(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        if !query(port, "llmload_run_finished == 1").is_empty() {
            let info = query(port, "llmload_info");
            // A few more scrapes of the final figures, so that each rate has them twice.
            std::thread::sleep(Duration::from_secs(3));
            return info[0]["metric"]["attempt_id"]
                .as_str()
                .expect("an attempt id")
                .to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw the run end"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn every_panel_query_returns_series_from_a_prometheus_scraping_a_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "16"]);
    let (_run, listen) = start_run(&sim, tmp.path());
    let (_server, port) = start_prometheus(tmp.path(), &listen);
    let attempt = final_figures(port);
    let board = dashboard();
    let titles: std::collections::BTreeMap<u64, String> = board["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .map(|p| {
            (
                p["id"].as_u64().expect("id"),
                p["title"].as_str().expect("title").to_owned(),
            )
        })
        .collect();
    // Empty by design here: no request failed, and no rule stopped the run.
    let empty = [
        "Failures per second, by kind",
        "Guard: rule that stopped the run",
    ];
    let mut answered = 0;
    for (id, expr) in exprs(&board) {
        let filled = expr
            .replace("$__rate_interval", "1m")
            .replace("$instance", ".+")
            .replace("$attempt", &attempt);
        let series = query(port, &filled);
        let title = &titles[&id];
        if empty.contains(&title.as_str()) {
            assert!(series.is_empty(), "{title}: {filled} → {series:?}");
        } else {
            assert!(!series.is_empty(), "{title}: {filled} returned nothing");
            answered += 1;
        }
    }
    assert!(answered >= 25, "{answered} queries answered");
}
