//! Every file a run writes besides its records: `campaign.json`, `summary.json`, `report.md`,
//! `cases.csv` and `report.html`, written after every case and at the end, and rewritten from
//! the records alone by `llmload report`.

use crate::attempt::campaign::{read_campaign, Campaign, CampaignTarget};
use crate::attempt::load::{self, read_telemetry, records_for_html};
use crate::attempt::Attempt;
use crate::config::Config;
use crate::report::{csv, html, markdown, Report};
use crate::summary::Summary;
use crate::target::Target;
use crate::workload::shape::CasePlan;
use std::path::Path;

/// Writes `campaign.json`: what was asked (the config, secrets left out), the cases planned so
/// far, the target as it answered, and the host.
pub fn campaign(
    attempt: &Attempt,
    config: &Config,
    target: &Target,
    simulated: bool,
    plans: &[CasePlan],
) -> crate::error::Result<()> {
    let target = CampaignTarget::of(target, simulated);
    Campaign::new(config, attempt, target, plans, fingerprint(config))?.write(attempt)
}

/// Writes `summary.json`, `report.md` and `cases.csv`: after every case, so that a run stopped
/// at any point leaves views of what it measured.
pub fn write(attempt: &Attempt, summary: &Summary) -> crate::error::Result<()> {
    attempt.write_json("summary.json", summary)?;
    attempt.write_text("report.md", &markdown_file(summary))?;
    attempt.write_text("cases.csv", &csv::render(summary))
}

/// `llmload report DIR`: recomputes the attempt in `dir` from its records and rewrites
/// `report.md`, `cases.csv` and `report.html` (never `summary.json`, which stays as the run left
/// it).
pub fn regenerate(dir: &Path) -> crate::error::Result<Report> {
    if let Some(summary) = comparison(dir)? {
        // An `llmload ab` folder: each arm from its records, then the comparison's views from
        // its summary (the paired figures were computed from the blocks as they ran).
        for arm in ["A", "B"] {
            regenerate(&dir.join(arm))?;
        }
        let attempt = Attempt {
            id: summary.attempt_id.clone(),
            dir: dir.to_path_buf(),
            started_at: String::new(),
        };
        write_comparison(&attempt, &summary)?;
        return Ok(Report::of(&summary));
    }
    let report = load::read(dir)?;
    let attempt = Attempt {
        id: report.summary.attempt_id.clone(),
        dir: dir.to_path_buf(),
        started_at: report.started_at.clone().unwrap_or_default(),
    };
    attempt.write_text("report.md", &markdown_file(&report.summary))?;
    attempt.write_text("cases.csv", &csv::render(&report.summary))?;
    attempt.write_pieces("report.html", |emit| html::render_into(&report, emit))?;
    Ok(report)
}

/// The summary of an `llmload ab` comparison folder (no `campaign.json` of its own, a
/// `summary.json` with an `ab` section); `None` for any other folder.
fn comparison(dir: &Path) -> crate::error::Result<Option<Summary>> {
    if dir.join("campaign.json").exists() {
        return Ok(None);
    }
    let path = dir.join("summary.json");
    let Ok(text) = crate::files::read_text(&path) else {
        return Ok(None);
    };
    crate::attempt::check_schema(&path, &text)?;
    let summary: Summary =
        serde_json::from_str(&text).map_err(|source| crate::error::Error::Json {
            what: format!("reading {}", path.display()),
            source,
        })?;
    Ok(summary.ab.is_some().then_some(summary))
}

/// The views of an `llmload ab` comparison: `summary.json`, `report.md`, `report.html` and
/// `cases.csv` (one row per case and figure, both arms and the paired change).
pub fn write_comparison(attempt: &Attempt, summary: &Summary) -> crate::error::Result<()> {
    attempt.write_json("summary.json", summary)?;
    attempt.write_text("report.md", &markdown_file(summary))?;
    if let Some(section) = &summary.ab {
        attempt.write_text("cases.csv", &csv::ab::render(section))?;
    }
    let report = Report::of(summary);
    attempt.write_pieces("report.html", |emit| html::render_into(&report, emit))
}

/// Writes `report.html` at the end of a run, from its `summary` and the records it wrote. The
/// records are read one at a time and only those the page draws are kept (see
/// [`records_for_html`]), so that a long run's file is never held whole.
pub fn write_html(attempt: &Attempt, summary: &Summary) -> crate::error::Result<()> {
    let (records, last_activity_s) =
        records_for_html(&attempt.dir.join("requests.jsonl"), &summary.cases)?;
    let report = Report {
        summary: summary.clone(),
        records,
        last_activity_s,
        started_at: Some(attempt.started_at.clone()),
        telemetry: read_telemetry(&attempt.dir)?,
        limits: read_campaign(&attempt.dir)
            .map(|c| c.config.limits.thresholds())
            .unwrap_or_default(),
    };
    attempt.write_pieces("report.html", |emit| html::render_into(&report, emit))
}

/// Writes `summary` as `summary.json` and every view of it into the attempt folder `dir` (after
/// a run has added to its summary, as a sweep does with its analysis).
pub fn rewrite(dir: &Path, summary: &Summary) -> crate::error::Result<()> {
    let campaign = read_campaign(dir)?;
    let attempt = Attempt {
        id: summary.attempt_id.clone(),
        dir: dir.to_path_buf(),
        started_at: campaign.started_at.clone().unwrap_or_default(),
    };
    attempt.write_json("summary.json", summary)?;
    attempt.write_text("report.md", &markdown_file(summary))?;
    attempt.write_text("cases.csv", &csv::render(summary))?;
    write_html(&attempt, summary)
}

/// The fingerprint of what every shard of one attempt must share: the config without the
/// shard's own settings (`sharding`), its output folder, `--quiet` and the seed (checked on its
/// own), as 16 hex digits of a 64-bit FNV-1a hash of its JSON.
pub fn fingerprint(config: &Config) -> String {
    let mut value = serde_json::to_value(config).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        for key in ["sharding", "out", "quiet", "seed"] {
            fields.remove(key);
        }
    }
    let hash = value
        .to_string()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

/// `report.md`: the Markdown report with every control character of server text written out
/// (a viewer or a `cat` on a terminal would act on it).
fn markdown_file(summary: &crate::summary::Summary) -> String {
    crate::console::printable(&markdown::render(summary)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_written_attempt_reads_back_to_the_same_summary() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fixture = fixture::report();
        let campaign = serde_json::json!({
            "schema_version": 1,
            "attempt_id": fixture.summary.attempt_id,
            "started_at": fixture.started_at,
            "config": {"rounds": 2, "seed": 7},
            "cases": fixture::campaign().cases.iter().map(|c| serde_json::json!({
                "id": c.id, "input_tokens": c.input_tokens,
                "concurrency": c.concurrency, "output_tokens": c.output_tokens,
            })).collect::<Vec<_>>(),
            "target": {"url": fixture.summary.target_url, "api": "llamacpp",
                       "model": fixture.summary.model, "simulated": true, "server": {}},
        });
        let write = |name: &str, text: String| {
            std::fs::write(dir.path().join(name), text).expect("write");
        };
        write("campaign.json", campaign.to_string());
        let lines: Vec<String> = fixture
            .records
            .iter()
            .map(|r| serde_json::to_string(r).expect("record"))
            .collect();
        write("requests.jsonl", lines.join("\n") + "\n");
        let report = regenerate(dir.path()).expect("regenerated");
        assert_eq!(report.summary.cases, fixture.summary.cases);
        // Without a summary.json the run ended without its last one (killed): the outcome
        // says so, and how far the records go.
        let outcome = &report.summary.outcome;
        assert_eq!(outcome.status, crate::summary::OutcomeStatus::Failed);
        let reason = outcome.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("without its final summary")
                && reason.contains("4 of 4 cases have records")
                && reason.contains("12 measured requests recorded"),
            "{reason}"
        );
        assert!(!dir.path().join("summary.json").exists());
        for file in ["report.md", "cases.csv", "report.html"] {
            assert!(dir.path().join(file).is_file(), "{file}");
        }
    }
}
