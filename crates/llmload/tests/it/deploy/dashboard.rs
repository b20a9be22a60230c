//! The Grafana dashboard of `deploy/grafana/`: valid against Grafana's own schema (the types of
//! `@grafana/schema`, applied by the TypeScript compiler in `scripts/check-dashboard.sh`), its
//! queries valid `PromQL` (`promtool check rules`), over metrics llmload serves, laid out on the
//! grid without overlap, and its variables defined.

use super::{read, repo};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::Command;

const DASHBOARD: &str = "deploy/grafana/llmload-live.json";

pub(super) fn dashboard() -> Value {
    serde_json::from_str(&read(DASHBOARD)).expect("the dashboard is JSON")
}

/// `scripts/check-dashboard.sh FILE`: its output, and whether it passed.
fn check(file: &std::path::Path) -> (bool, String) {
    let output = Command::new("timeout")
        .args(["--signal=KILL", "600"])
        .arg(repo().join("scripts/check-dashboard.sh"))
        .arg(file)
        .current_dir(repo())
        .output()
        .expect("check-dashboard.sh runs");
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), said)
}

#[test]
fn the_dashboard_matches_grafanas_schema_and_a_broken_one_does_not() {
    let (ok, said) = check(&repo().join(DASHBOARD));
    assert!(ok, "{said}");
    assert!(said.contains("valid against @grafana/schema"), "{said}");
    // The check can fail: a stat panel's colour mode outside its enum, and an unknown field.
    let tmp = tempfile::tempdir().expect("temp dir");
    let text = read(DASHBOARD);
    for (from, to) in [
        (r#""colorMode": "value""#, r#""colorMode": "rainbow""#),
        (
            r#""schemaVersion": 39"#,
            r#""schemaVersion": 39, "panelz": []"#,
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let broken = tmp.path().join("broken.json");
        std::fs::write(&broken, text.replacen(from, to, 1)).expect("write");
        let (ok, said) = check(&broken);
        assert!(!ok, "{to} passed: {said}");
        assert!(said.contains("error TS"), "{said}");
    }
}

/// Every panel with its queries.
fn panels(d: &Value) -> &Vec<Value> {
    d["panels"].as_array().expect("panels")
}

pub(super) fn exprs(d: &Value) -> Vec<(u64, String)> {
    let mut all = Vec::new();
    for panel in panels(d) {
        let id = panel["id"].as_u64().expect("an id");
        for target in panel["targets"].as_array().expect("targets") {
            assert!(target["refId"].is_string(), "panel {id}: a refId");
            all.push((id, target["expr"].as_str().expect("an expr").to_owned()));
        }
    }
    all
}

/// The metric names docs/outputs.md lists in its section on the live metrics.
fn documented() -> BTreeSet<String> {
    let outputs = read("docs/outputs.md");
    let at = outputs.find("## Live metrics").expect("the section");
    let section = &outputs[at..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    section
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("llmload_"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_query_is_promql_over_metrics_llmload_serves() {
    let d = dashboard();
    let names = documented();
    assert!(names.len() >= 25, "{names:?}");
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (n, (id, expr)) in exprs(&d).into_iter().enumerate() {
        let used: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("llmload_"))
            .collect();
        assert!(!used.is_empty(), "panel {id}: {expr}");
        for name in used {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            assert!(names.contains(family), "panel {id}: {name} is not served");
        }
        // Grafana's variables as Prometheus would get them once Grafana has filled them in.
        let filled = expr
            .replace("$__rate_interval", "2m")
            .replace("$instance", ".+")
            .replace("$attempt", "an-attempt");
        assert!(!filled.contains('$') && !filled.contains('\''), "{filled}");
        let _ = writeln!(
            rules,
            "      - record: llmload_dashboard:query{n}\n        expr: '{filled}'"
        );
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("queries.yml");
    std::fs::write(&file, &rules).expect("write");
    let output = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .expect("promtool runs (Debian's prometheus package; scripts/test.sh installs it)");
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}\n{rules}");
    assert!(said.contains("SUCCESS"), "{said}");
}

#[test]
fn the_panels_fit_the_grid_and_the_variables_are_defined() {
    let board = dashboard();
    let mut ids = BTreeSet::new();
    let mut cells = BTreeSet::new();
    for panel in panels(&board) {
        let id = panel["id"].as_u64().expect("an id");
        assert!(ids.insert(id), "panel id {id} twice");
        assert!(
            panel["title"].as_str().is_some_and(|t| !t.is_empty()),
            "panel {id}"
        );
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "panel {id}");
        let at = |k: &str| panel["gridPos"][k].as_u64().expect("gridPos");
        let (left, top) = (at("x"), at("y"));
        let (right, bottom) = (left + at("w"), top + at("h"));
        assert!(right <= 24, "panel {id} past the 24 columns");
        for cell in (left..right).flat_map(|x| (top..bottom).map(move |y| (x, y))) {
            assert!(
                cells.insert(cell),
                "panel {id} overlaps another at {cell:?}"
            );
        }
    }
    let variables: BTreeSet<&str> = board["templating"]["list"]
        .as_array()
        .expect("variables")
        .iter()
        .map(|v| v["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        variables,
        BTreeSet::from(["datasource", "attempt", "instance"])
    );
    for (id, expr) in exprs(&board) {
        for var in expr.split('$').skip(1) {
            let name: String = var
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(
                name.starts_with("__") || variables.contains(name.as_str()),
                "panel {id}: ${name} is not defined"
            );
        }
        assert!(
            expr.contains("$instance") || expr.contains("$attempt"),
            "panel {id}: one attempt only: {expr}"
        );
    }
}
