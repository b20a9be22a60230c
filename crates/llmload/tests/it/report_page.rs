//! `report.html` as a reader sees it: attempts on the built-in simulator, rendered offline in
//! headless Chromium at 1,400 and 800 px wide, with a script (`report_page.js`, injected into a
//! copy: the page itself has none) that measures the laid-out boxes. Every segment of *Where
//! the time goes* has a legend entry and no entry overlaps another; every case id is written
//! whole inside its chart; chart text renders at 12 px or more; no GPU readings take one short
//! line; captions count in the unit that applies; a `choice:` mix is named by the lengths it
//! sent; ITL and TPOT are in the distributions table with their n.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
use crate::common::chromium;

use common::{attempt_dir, json, json_lines, llmload};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const MEASURE: &str = include_str!("report_page.js");

/// The window widths the page is read at, px.
const WIDTHS: [u32; 2] = [1400, 800];

/// Runs `llmload` with `args` on the built-in simulator into `out`; returns the attempt.
fn run(out: &Path, name: &str, args: &[&str]) -> PathBuf {
    let mut all = vec!["run", "--name", name, "--seed", "7", "-q", "--out"];
    all.push(out.to_str().expect("UTF-8 path"));
    all.extend(args);
    let run = llmload(&all);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, name)
}

/// The facts `report_page.js` measured on the attempt's page in a window `width` px wide.
fn measure(dir: &Path, width: u32) -> Value {
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let copy = dir.join(format!("measured-{width}.html"));
    let script = format!("<script>{MEASURE}</script>\n</body>");
    std::fs::write(&copy, html.replacen("</body>", &script, 1)).expect("write the copy");
    let size = format!("--window-size={width},2000");
    let (dom, urls) = chromium::run(&copy, dir, &["--hide-scrollbars", &size, "--dump-dom"]);
    assert!(urls.is_empty(), "the page requested {urls:?}");
    // The last: the script's own text names the element too.
    let start = dom
        .rfind("<pre id=\"facts\">")
        .expect("the script wrote its facts")
        + 16;
    let end = start + dom[start..].find("</pre>").expect("the end of the facts");
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("facts as JSON: {e}: {text}"))
}

/// The distinct prompt lengths of each case's measured requests.
fn sent_lengths(dir: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let mut sent: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for r in json_lines(&dir.join("requests.jsonl")) {
        if r["phase"] == "measured" {
            let case = r["case"].as_str().expect("a case id").to_owned();
            let tokens = r["input_tokens"].as_u64().expect("tokens");
            sent.entry(case).or_default().insert(tokens);
        }
    }
    sent
}

/// The figcaption that follows the heading `title`.
fn caption<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html.find(&format!("<h3>{title}</h3>")).expect("the chart");
    let start = at + html[at..].find("<figcaption>").expect("its caption");
    &html[start..start + html[start..].find("</figcaption>").expect("the end")]
}

/// The checks of the layout that hold at every width, on the facts of one.
fn assert_reads_whole(facts: &Value, ids: &[String]) {
    let width = &facts["width"];
    let names = |key: &str| -> BTreeSet<String> {
        let values = facts[key].as_array().expect("a list");
        values
            .iter()
            .map(|v| v.as_str().expect("a name").to_owned())
            .collect()
    };
    assert_eq!(names("segments").len(), 6, "{width}: {facts}");
    assert_eq!(
        names("legend_entries"),
        names("segments"),
        "{width}: an entry per segment"
    );
    assert_eq!(
        facts["legend_overlaps"], 0,
        "{width}: no entry overlaps another: {facts}"
    );
    assert_eq!(
        facts["legend_outside"], 0,
        "{width}: every entry inside the figure"
    );
    assert_eq!(
        names("case_ids"),
        ids.iter().cloned().collect(),
        "{width}: ids whole"
    );
    assert_eq!(
        facts["case_ids_outside"], 0,
        "{width}: ids inside their chart: {facts}"
    );
    let chart_px = facts["chart_text_px"].as_f64().expect("a size");
    assert!(
        chart_px >= 12.0,
        "{width}: chart text at {chart_px} px: {facts}"
    );
    let page_px = facts["page_text_px"].as_f64().expect("a size");
    assert!(
        page_px >= 12.0,
        "{width}: table and caption text at {page_px} px"
    );
    assert_eq!(
        facts["page_overflow"], 0,
        "{width}: nothing wider than the window"
    );
}

#[test]
fn a_closed_campaign_of_mixed_lengths_reads_whole_at_1400_and_800_px() {
    chromium::assert_installed();
    let out = tempfile::tempdir().expect("temp dir");
    // Twelve prompt and nine output lengths give case ids of 89 characters.
    let inputs = "choice:32,48,64,80,96,112,128,144,160,176,192,208";
    let outputs = "choice:8,9,10,11,12,13,14,15,16";
    let matrix = ["--input-tokens", inputs, "--output-tokens", outputs];
    let dir = run(
        out.path(),
        "mixed",
        &[&matrix[..], &["--concurrency", "1,4", "--rounds", "2"]].concat(),
    );
    let summary = json(&dir.join("summary.json"));
    let cases = summary["cases"].as_array().expect("cases");
    let ids: Vec<String> = cases
        .iter()
        .map(|c| c["id"].as_str().expect("id").into())
        .collect();
    assert!(ids.iter().all(|id| id.chars().count() > 80), "{ids:?}");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");

    // A mix is named by the lengths each case sent, never by their mean.
    let sent = sent_lengths(&dir);
    let table = &html[html.find("<table>").expect("table")..html.find("</table>").expect("end")];
    for case in cases {
        let lengths = &sent[case["id"].as_str().expect("id")];
        assert!(
            lengths.len() > 1,
            "the seed gives each case several lengths: {lengths:?}"
        );
        let mean = case["input_tokens"].as_u64().expect("mean");
        let range = format!(
            "<tr><td>{}–{}</td>",
            lengths.first().expect("a length"),
            lengths.last().expect("a length")
        );
        let named: Vec<String> = lengths.iter().map(u64::to_string).collect();
        let listed = format!("<tr><td>{}</td>", named.join("/"));
        assert!(
            table.contains(&range) || table.contains(&listed),
            "{lengths:?}\n{table}"
        );
        assert!(
            !table.contains(&format!("<tr><td>{mean}</td>")),
            "the mean {mean}"
        );
    }
    // ITL and TPOT with their n, in the rows of each case under Distributions.
    let at = html
        .find("<h3>Distributions</h3>")
        .expect("the distributions");
    let details = &html[at..at + html[at..].find("</table>").expect("its end")];
    for case in cases {
        let id = case["id"].as_str().expect("id");
        for (metric, name) in [("itl_ms", "ITL"), ("tpot_ms", "TPOT")] {
            let n = case[metric]["n"].as_u64().expect("n");
            let row = format!("<tr><td>{id}</td><td>{name}</td><td>{n}</td>");
            assert!(details.contains(&row), "{metric} n = {n}: {details}");
        }
    }
    // Closed rounds count in rounds, and in the number that applies.
    let rounds = caption(&html, "Aggregate throughput against concurrency");
    assert!(rounds.contains("Per point: n = 2 rounds."), "{rounds}");
    // No GPU readings: one line that says why, where the summary says.
    let source = summary["telemetry"]["source"].as_str().unwrap_or("");
    let why = if source == "off" {
        "telemetry was off"
    } else {
        "no GPU source answered"
    };
    assert!(
        html.contains(&format!("id=\"no-telemetry\">No GPU telemetry: {why}")),
        "{source}"
    );

    for width in WIDTHS {
        let facts = measure(&dir, width);
        assert_reads_whole(&facts, &ids);
        let line = facts["no_telemetry_px"].as_f64().expect("the line");
        assert!(line < 60.0, "{width}: no telemetry takes {line} px");
        assert_eq!(facts["gpu_svg"], false, "{width}: no empty chart");
        assert_eq!(
            facts["tables_scrolling"], 0,
            "{width}: the results table fits"
        );
    }
}

/// A replay trace of one GPU, a reading every 0.25 s for 30 s; returns the `--telemetry` value.
fn replay(dir: &Path) -> String {
    let path = dir.join("trace.jsonl");
    let mut text = String::new();
    for step in 0..120u32 {
        let t = f64::from(step) / 4.0;
        let _ = writeln!(
            text,
            "{{\"t_s\":{t},\"gpu\":0,\"temperature_c\":{},\"power_w\":{}}}",
            60.0 + t,
            200.0 + t
        );
    }
    std::fs::write(&path, text).expect("write trace");
    format!("replay:{}", path.display())
}

#[test]
fn an_open_loop_with_gpu_readings_counts_responses_and_reads_whole_at_1400_and_800_px() {
    chromium::assert_installed();
    let out = tempfile::tempdir().expect("temp dir");
    let trace = replay(out.path());
    let load = ["--arrival", "poisson", "--rate", "20", "--requests", "24"];
    let lengths = ["--input-tokens", "64", "--output-tokens", "16"];
    let dir = run(
        out.path(),
        "open",
        &[&load[..], &lengths, &["--telemetry", &trace]].concat(),
    );
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let ok = case["counts"]["ok"].as_u64().expect("ok");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for title in [
        "Aggregate throughput against arrival rate",
        "Latency against throughput",
    ] {
        let text = caption(&html, title);
        assert!(
            !text.contains("round"),
            "an open loop has no rounds: {text}"
        );
        assert!(
            text.contains(&format!("one measurement window (n = {ok} responses)")),
            "{text}"
        );
    }
    let ids = vec![case["id"].as_str().expect("id").to_owned()];
    for width in WIDTHS {
        let facts = measure(&dir, width);
        assert_reads_whole(&facts, &ids);
        assert_eq!(
            facts["gpu_svg"], true,
            "{width}: the telemetry chart is drawn"
        );
        assert_eq!(facts["no_telemetry_px"], Value::Null);
    }
}
