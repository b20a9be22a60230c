//! `report.html`: one self-contained page that opens offline — no script, no stylesheet, font or
//! image from elsewhere; the charts are inline SVG. It holds the reference table (complete cases
//! only, incomplete ones listed apart with their errors), the outcome, the five charts with
//! captions, and a banner when the target was the built-in simulator. Every string that came
//! from the records or the server is escaped. The tables come from the table model
//! ([`super::table`]) and its builders, the sentences shared with the other formats from
//! [`super::text`]; this file only writes them.

use super::plot::Figure;
use super::table::Table;
use super::text::{
    case_notes, counting_lines, has_rounds, histogram_note, incomplete_line, outcome_counts,
    telemetry_line, unverified_note,
};
use super::{
    charts, energy, gpu, models, phases, repeats, saturation, server_side, sessions, shards,
    timeline,
};
use super::{Report, FAILED_SHOWN};
use crate::record::{ErrorKind, Status};
use crate::summary::{CaseSummary, Summary};
use charts::lengths::Lengths;
use std::collections::BTreeSet;
use std::fmt::Write;

mod tables;

pub use super::markup::escape;

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\
.meta{color:#555}\
.banner{background:#fff3cd;border:2px solid #d39e00;padding:.8em 1em;font-weight:600;margin:1em 0}\
.outcome{padding:.6em 1em;border-left:6px solid #888;background:#f6f6f6}\
.outcome.completed{border-color:#2ca02c}.outcome.failed{border-color:#d62728}.outcome.stopped{border-color:#ff7f0e}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}\
.wide{overflow-x:auto}@media (max-width:1000px){table{font-size:.8em}th,td{padding:.25em .35em}}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}\
figure{margin:1.5em 0}figure svg{max-width:100%;border:1px solid #eee}figure svg:not(.fluid){height:auto}\
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.3em 1.2em;padding:0;margin:.4em 0;font-size:.92em}\
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}\
figcaption{color:#444;font-size:.92em;margin-top:.4em}\
.note{color:#555;font-size:.92em}code{background:#f3f3f3;padding:0 .2em}";

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    let summary = &report.summary;
    let lengths = Lengths::of(report);
    let mut out = String::new();
    let title = format!("llmload report: {}", summary.attempt_id);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    header(&mut out, report);
    outcome(&mut out, summary);
    results(&mut out, report, &lengths);
    let counting = counting_lines(summary);
    if !counting.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(counting.trim()));
    }
    let unverified = unverified_note(summary);
    if !unverified.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(unverified.trim()));
    }
    for line in case_notes(summary).lines().filter(|l| !l.is_empty()) {
        let _ = writeln!(out, "<p class=\"note case\">{}</p>", escape(line));
    }
    let binned = histogram_note(summary);
    if !binned.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(binned.trim()));
    }
    models_section(&mut out, summary);
    repeats_section(&mut out, summary);
    sweep(&mut out, summary);
    shards_section(&mut out, summary);
    phases_section(&mut out, summary);
    ttft_parts_section(&mut out, summary);
    sessions_section(&mut out, summary);
    out.push_str("<h2 id=\"charts\">Charts</h2>\n");
    let mut figures = Vec::new();
    if only_pooling(summary) {
        out.push_str(
            "<p class=\"note\" id=\"no-generation-charts\">The latency and throughput charts \
             plot generation cases (TTFT, output tokens); this attempt's cases are embeddings or \
             rerank, whose figures are in their table above.</p>\n",
        );
    } else {
        figures.extend([
            charts::latency(summary, &lengths),
            charts::throughput(summary, &lengths),
            charts::latency_throughput(summary, &lengths),
        ]);
    }
    figures.push(timeline::timeline(report, &lengths));
    for figure in &figures {
        push_figure(&mut out, figure);
    }
    match gpu::telemetry(report) {
        Some(figure) => push_figure(&mut out, &figure),
        None => {
            let _ = writeln!(
                out,
                "<h3>{}</h3>\n<p class=\"note\" id=\"no-telemetry\">{}</p>",
                gpu::TITLE,
                escape(&gpu::absent(report).unwrap_or_default())
            );
        }
    }
    let _ = write!(
        out,
        "<footer class=\"note\"><p>Made by llmload {} from <code>requests.jsonl</code>; \
         <code>llmload report DIR</code> rebuilds it. Every distribution of every case, with its \
         sample size, is in <code>cases.csv</code> beside this file.</p></footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
    );
    out
}

fn header(out: &mut String, report: &Report) {
    let s = &report.summary;
    let _ = write!(
        out,
        "<h1>llmload report</h1>\n<p class=\"meta\">Attempt <code>{}</code>{} · target <code>{}</code> · API {} · model {}</p>\n",
        escape(&s.attempt_id),
        report
            .started_at
            .as_ref()
            .map_or(String::new(), |t| format!(", started {}", escape(t))),
        escape(&s.target_url),
        escape(&s.api),
        escape(s.model.as_deref().unwrap_or("(not named)")),
    );
    if s.simulated {
        out.push_str(
            "<div class=\"banner\" id=\"simulated\">SIMULATED target: every figure on this page \
             comes from llmload's built-in engine simulator, not from a real inference server.</div>\n",
        );
    }
}

fn outcome(out: &mut String, summary: &Summary) {
    let o = &summary.outcome;
    let status = format!("{:?}", o.status);
    let _ = write!(
        out,
        "<h2 id=\"outcome\">Outcome</h2>\n<p class=\"outcome {}\"><strong>{status}</strong>: {}{}</p>\n",
        status.to_lowercase(),
        outcome_counts(summary),
        o.reason
            .as_ref()
            .map_or(String::new(), |r| format!(" — {}", escape(r))),
    );
    if let Some(sample) = &o.stop_sample {
        let _ = writeln!(
            out,
            "<p class=\"note\">The reading that stopped the run: {}</p>",
            escape(&describe_sample(sample))
        );
    }
    if let Some(t) = &summary.telemetry {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&telemetry_line(t)));
    }
}

fn results(out: &mut String, report: &Report, lengths: &Lengths) {
    out.push_str("<h2 id=\"results\">Results</h2>\n");
    if has_rounds(&report.summary) && !only_pooling(&report.summary) {
        push_table(out, &tables::reference(&report.summary, lengths));
        out.push_str(
            "<p class=\"note\">Complete cases only. TTFT: request sent → first event \
             carrying a generated token. Complete response: sent → final event. Both are medians \
             over the n responses. Throughput: mean over rounds of Σ output tokens ÷ (last \
             completion − first send). Input tokens: the lengths the requests sent, a mix by \
             its lengths (64/128) or their range.</p>\n",
        );
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(tables::NOTE));
    }
    load_table(out, &report.summary);
    let pooled = super::pooling::table(&report.summary);
    table(out, "pooling", "Embeddings and rerank cases", &pooled);
    if !pooled.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            escape(super::pooling::NOTE)
        );
    }
    energy_table(out, &report.summary);
    let incomplete: Vec<&CaseSummary> = report
        .summary
        .cases
        .iter()
        .filter(|c| !c.complete)
        .collect();
    if incomplete.is_empty() {
        return;
    }
    out.push_str("<h3 id=\"incomplete\">Incomplete cases (not in the table above)</h3>\n<ul>\n");
    for case in incomplete {
        let _ = write!(out, "<li>{}", escape(&incomplete_line(case)));
        let errors = errors(report, &case.id);
        if !errors.is_empty() {
            out.push_str("<ul>");
            for e in errors {
                let _ = write!(out, "<li><code>{}</code></li>", escape(&e));
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

/// Whether every case is an embeddings or rerank case (then the generation table is left out).
fn only_pooling(summary: &Summary) -> bool {
    !summary.cases.is_empty() && !summary.cases.iter().any(CaseSummary::generates)
}

/// Continuous and open-loop cases: figures over the measurement window.
fn load_table(out: &mut String, summary: &Summary) {
    let window = tables::window(summary);
    table(
        out,
        "window",
        "Continuous and open-loop cases (figures over the measurement window)",
        &window,
    );
    if !window.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(tables::NOTE));
    }
}

/// The energy of each case's measurement window, where there were power readings.
fn energy_table(out: &mut String, summary: &Summary) {
    let energy = energy::table(summary);
    if energy.is_empty() {
        return;
    }
    let title = "Energy over each case's measurement window";
    table(out, "energy", title, &energy);
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(energy::NOTE));
}

/// A table under a heading with `id`; nothing without rows.
fn table(out: &mut String, id: &str, title: &str, table: &Table) {
    if table.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h3 id=\"{id}\">{}</h3>", escape(title));
    push_table(out, table);
}

/// A sweep's curve and its findings, each with how it was found.
fn sweep(out: &mut String, summary: &Summary) {
    let Some(sweep) = &summary.sweep else {
        return;
    };
    let a = &sweep.analysis;
    out.push_str("<h2 id=\"sweep\">Sweep: saturation analysis</h2>\n");
    push_table(out, &saturation::page_curve(a, sweep.axis));
    out.push_str("<ul>\n");
    for (name, f) in saturation::findings(a) {
        let _ = writeln!(
            out,
            "<li><strong>{name}: {}</strong> — {}</li>",
            escape(&saturation::value(f)),
            escape(&f.method)
        );
    }
    out.push_str("</ul>\n");
    if let Some(dips) = saturation::dips(a) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&dips));
    }
    for line in saturation::ending(sweep) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&line));
    }
}

/// A table in a box of the column's width that scrolls across, should the table be wider.
fn push_table(out: &mut String, table: &Table) {
    let _ = writeln!(out, "<div class=\"wide\">\n{}</div>", table.html());
}

/// The distinct errors of a case's first failed requests (up to `FAILED_SHOWN`), at most five.
fn errors(report: &Report, id: &str) -> Vec<String> {
    let distinct: BTreeSet<String> = report
        .measured(id)
        .into_iter()
        .filter(|r| !matches!(r.status, Status::Ok | Status::Abandoned))
        .take(FAILED_SHOWN)
        .map(|r| {
            format!(
                "{}: {}",
                r.error_kind.map_or("?", ErrorKind::as_str),
                r.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    distinct.into_iter().take(5).collect()
}

/// A mix of models: the per-model table and how it is computed; nothing without a mix.
fn models_section(out: &mut String, summary: &Summary) {
    let table = models::table(summary);
    if table.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"models\">Per model</h2>\n");
    push_table(out, &table);
    let _ = writeln!(
        out,
        "<p class=\"note\">{}</p>",
        escape(models::note(summary).trim())
    );
}

/// A series of repeats: the counts, the incomplete repeats with why, the variation between the
/// complete ones.
fn repeats_section(out: &mut String, summary: &Summary) {
    let Some((lines, table)) = repeats::section(summary) else {
        return;
    };
    out.push_str("<h2 id=\"repeats\">Repeats</h2>\n");
    for line in lines {
        let _ = writeln!(out, "<p>{}</p>", escape(&line));
    }
    if !table.is_empty() {
        push_table(out, &table);
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(repeats::NOTE));
    }
}

fn shards_section(out: &mut String, summary: &Summary) {
    if let Some(run) = &summary.shard {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            escape(&shards::part_of(run))
        );
    }
    let Some(section) = &summary.shards else {
        return;
    };
    out.push_str("<h2 id=\"shards\">Shards</h2>\n");
    push_table(out, &shards::table(section));
    for line in shards::sentences(section) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&line));
    }
}

/// Where the time goes: a stacked bar per case; nothing when no case's records carry phases.
fn phases_section(out: &mut String, summary: &Summary) {
    let Some(svg) = phases::bars(summary) else {
        return;
    };
    let _ = write!(
        out,
        "<h2 id=\"phases\">Where the time goes</h2>\n<figure id=\"phases-bars\">\n{}\n{svg}\n\
         <figcaption>Per case, the medians of the ok responses: left of the line, a new \
         connection's setup (connect, then the TLS handshake; medians over the new connections), \
         done before the request is sent and never part of TTFT; right of it, from the send: \
         the response head, the first event, the first token (TTFT) and the last token. \
         Hover over a segment for its length; <code>report.md</code> and \
         <code>summary.json</code> give the figures with their sample sizes.</figcaption>\n\
         </figure>\n",
        phases::legend()
    );
}

/// The TTFT part by part: a stacked bar per case whose server reported its timings; nothing
/// when none did.
fn ttft_parts_section(out: &mut String, summary: &Summary) {
    let Some(svg) = server_side::parts_bars(summary) else {
        return;
    };
    let _ = write!(
        out,
        "<h2 id=\"ttft-parts\">The TTFT part by part</h2>\n<figure id=\"ttft-parts-bars\">\n\
         {svg}\n<figcaption>Per case, the means over the ok responses whose server reported its \
         timings, end to end: the connection and the request's write (the client's stamps), the \
         server's queue and prefill (the server's clock), and the residual, the client's TTFT \
         less those (the server's time before it counts, and the first token's way back). \
         Together they make the client's mean TTFT. A part the server does not report is \
         absent and its time is in the residual; <code>report.md</code> says which.\
         </figcaption>\n</figure>\n"
    );
    for note in server_side::parts_notes(summary) {
        let _ = writeln!(out, "<p class=\"note\">Unavailable: {}</p>", escape(&note));
    }
}

/// Multi-turn sessions: the chart by turn; nothing when no case ran any.
fn sessions_section(out: &mut String, summary: &Summary) {
    if let Some(figure) = sessions::chart(summary) {
        out.push_str("<h2 id=\"sessions\">Multi-turn sessions</h2>\n");
        push_figure(out, &figure);
    }
}

/// A figure: its heading, its chart (or why there is none) and its caption.
fn push_figure(out: &mut String, figure: &Figure) {
    let _ = write!(out, "<figure>\n<h3>{}</h3>\n", escape(&figure.title));
    match &figure.svg {
        Ok(svg) => out.push_str(svg),
        Err(e) => {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(&e.to_string()));
        }
    }
    let _ = write!(
        out,
        "\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(&figure.caption)
    );
}

/// A stop's GPU reading in words: which GPU and when, then each figure it holds.
fn describe_sample(sample: &serde_json::Value) -> String {
    let number = |key: &str| sample.get(key).and_then(serde_json::Value::as_f64);
    let mut parts = Vec::new();
    if let Some(t) = number("temperature_c") {
        parts.push(format!("{t:.0} °C"));
    }
    parts.push(match number("margin_c") {
        Some(m) => format!("T.Limit margin {m:.0} °C"),
        None => "T.Limit margin not reported".into(),
    });
    match (number("power_w"), number("power_limit_w")) {
        (Some(p), Some(l)) => parts.push(format!("{p:.0} W of a {l:.0} W limit")),
        (Some(p), None) => parts.push(format!("{p:.0} W")),
        _ => {}
    }
    for (key, name) in [
        ("sw_thermal_slowdown", "SW thermal slowdown"),
        ("hw_thermal_slowdown", "HW thermal slowdown"),
        ("sw_power_cap", "SW power cap"),
    ] {
        if let Some(active) = sample.get(key).and_then(serde_json::Value::as_bool) {
            parts.push(format!(
                "{name} {}",
                if active { "active" } else { "inactive" }
            ));
        }
    }
    let gpu = sample.get("gpu").and_then(serde_json::Value::as_u64);
    let at = number("t_s");
    let head = match (gpu, at) {
        (Some(g), Some(t)) => format!("GPU {g} at {t:.1} s: "),
        (Some(g), None) => format!("GPU {g}: "),
        _ => String::new(),
    };
    format!("{head}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_page_is_self_contained_with_one_svg_per_chart() {
        let html = render(&fixture::report());
        // Four charts, the bars of where the time goes, and no GPU chart without readings.
        assert_eq!(html.matches("<svg").count(), 5);
        assert_eq!(html.matches("<g class=\"phase-bar\">").count(), 4);
        assert_eq!(html.matches("<figure>").count(), 4);
        assert!(html.contains("<h3>GPU telemetry over time</h3>\n<p class=\"note\" id=\"no-telemetry\">No GPU telemetry"));
        assert!(!html.contains("<script"));
        assert!(!html.contains("<link"));
        assert!(!html.contains("src="));
        assert!(!html.contains("url("));
        assert!(!html.contains("@import"));
        // The only address on the page is the target's, in text.
        let rest = html.replace("http://127.0.0.1:9/&lt;sim&gt;", "");
        assert!(!rest.contains("http://") && !rest.contains("https://"));
    }

    #[test]
    fn strings_from_the_records_are_escaped() {
        let html = render(&fixture::report());
        assert!(!html.contains("<b>"));
        assert!(html.contains("&lt;b&gt;&quot;slow&quot;, really&lt;/b&gt; &amp; gone"));
        assert!(html.contains("tiny &amp; &quot;quoted&quot;"));
        assert!(html.contains("id=\"simulated\""));
    }

    #[test]
    fn only_complete_cases_enter_the_table() {
        let html = render(&fixture::report());
        let table =
            &html[html.find("<table>").expect("table")..html.find("</table>").expect("end")];
        assert_eq!(table.matches("<tr>").count(), 1 + 3);
        assert!(html.contains("Incomplete cases"));
    }

    #[test]
    fn a_stop_reading_is_told_in_words() {
        let sample = serde_json::json!({"t_s": 8.5, "gpu": 1, "temperature_c": 90.0,
            "power_w": 292.5, "power_limit_w": 400.0, "hw_thermal_slowdown": false});
        assert_eq!(
            describe_sample(&sample),
            "GPU 1 at 8.5 s: 90 °C, T.Limit margin not reported, 292 W of a 400 W limit, \
             HW thermal slowdown inactive"
        );
    }

    #[test]
    fn without_phases_there_is_no_section() {
        let mut summary = fixture::report().summary;
        for case in &mut summary.cases {
            case.phases = None;
        }
        let mut out = String::new();
        phases_section(&mut out, &summary);
        assert_eq!(out, "");
    }
}
