//! The search's probes as `summary.json`'s `capacity`: each load's throughput, its Little's-law
//! figures and cost, the bracket, the saturation point fitted to the probes' throughput and
//! the cap, and the one line that answers.

use super::blocks::Figures;
use super::search::bracket;
use super::source::{CapacitySource, Probe};
use super::CapacityOptions;
use crate::fmt::number;
use crate::summary::capacity::{Capacity, LoadAnswer, LoadUnit, Remeasurement};
use crate::summary::saturation::{self, Point, Shape, CAP_SHARE};
use std::fmt::Write as _;
use std::path::Path;

/// What the answer needs besides the probes.
pub struct Context<'a> {
    /// The capacity options.
    pub options: &'a CapacityOptions,
    /// The confidence.
    pub confidence: f64,
    /// Mean think time between a user's turns, seconds (sessions only).
    pub think_s: Option<f64>,
    /// The attempt folder, for the command that continues.
    pub dir: &'a Path,
    /// The attempt's cases as summarised at its end (each block's energy is set there, once the
    /// last GPU reading after it is in).
    pub cases: &'a [crate::summary::CaseSummary],
}

/// The answer of `source`'s search.
pub fn answer(source: &CapacitySource, context: &Context<'_>) -> Capacity {
    let mut probes: Vec<&Probe> = source.probes.iter().filter(|p| p.done).collect();
    probes.sort_by(|a, b| a.load.total_cmp(&b.load));
    let answers: Vec<LoadAnswer> = probes
        .iter()
        .map(|p| load_answer(p, source, context))
        .collect();
    let (passing, failing) = bracket(&source.verdicts());
    let find = |load: Option<f64>| {
        load.and_then(|l| answers.iter().find(|a| (a.load - l).abs() < 1e-9).cloned())
    };
    let (decided, stopped_because) = source
        .stop
        .clone()
        .unwrap_or((false, "the run stopped before the search ended".to_owned()));
    let fit = (source.unit != LoadUnit::Users).then(|| fit(&probes, source.unit));
    let saturation = fit.as_ref().and_then(|f| f.saturation.placed());
    let saturation_method = fit.as_ref().map_or_else(
        || {
            "not fitted for users: the saturation model is one of requests in flight or arrivals \
             per second"
                .to_owned()
        },
        |f| f.saturation.method.clone(),
    );
    let mut capacity = Capacity {
        unit: source.unit,
        confidence: context.confidence,
        slo: source.rules.iter().map(|(_, text)| text.clone()).collect(),
        decided,
        answer: String::new(),
        max_passing: find(passing),
        first_failing: find(failing),
        probes: answers,
        saturation,
        saturation_range: fit
            .as_ref()
            .and_then(|f| f.saturation.low.zip(f.saturation.high))
            .filter(|_| saturation.is_some())
            .map(|(low, high)| [low, high]),
        recommended_cap: saturation.and(fit.as_ref().and_then(|f| f.recommended_cap.value)),
        cap_method: fit
            .as_ref()
            .filter(|_| saturation.is_some())
            .map_or_else(String::new, |f| f.recommended_cap.method.clone()),
        saturation_method,
        stopped_because,
        continue_with: None,
        method: method(source),
    };
    // The boundary moved: going on from these blocks would read them again.
    if !decided && !capacity.moved() {
        capacity.continue_with = Some(continue_with(context));
    }
    capacity.answer = headline(&capacity, source, context.think_s);
    capacity
}

/// One probe's figures: its rate, throughput and mean response over its blocks' windows, the
/// requests in flight and (with think time) the users by Little's law, and the cost.
fn load_answer(probe: &Probe, source: &CapacitySource, context: &Context<'_>) -> LoadAnswer {
    let mut total = Figures::default();
    for block in &probe.blocks {
        total.add(block.figures);
    }
    let per_second = |x: f64| {
        if total.window_s > 0.0 {
            x / total.window_s
        } else {
            0.0
        }
    };
    let rate_rps = per_second(total.ok as f64);
    let output_tps = per_second(total.output_tokens as f64);
    let response_ms = if total.ok > 0 {
        total.response_ms / total.ok as f64
    } else {
        0.0
    };
    let concurrency = match source.unit {
        LoadUnit::Concurrency => probe.load,
        _ => rate_rps * response_ms / 1e3,
    };
    let users = (source.unit == LoadUnit::Users).then_some(probe.load);
    // A session's first turn follows no think time: the mean per request is (K − 1)/K of it.
    let think_per_request_s = context
        .think_s
        .map(|t| t * f64::from(source.turns.saturating_sub(1)) / f64::from(source.turns.max(1)));
    let cost = context.options.gpu_cost_per_hour.and_then(|price| {
        (output_tps > 0.0)
            .then(|| price * f64::from(context.options.gpus.max(1)) / (output_tps * 3600.0) * 1e6)
    });
    LoadAnswer {
        load: probe.load,
        concurrency,
        rate_rps,
        users,
        users_littles_law: users
            .and(think_per_request_s)
            .map(|think| rate_rps * (think + response_ms / 1e3)),
        output_tps,
        response_ms,
        cost_per_million_output_tokens: cost,
        output_tokens_per_joule: tokens_per_joule(probe, context.cases),
        verdicts: probe.verdicts.clone(),
        verdict: probe.verdict,
        blocks: probe.blocks.len(),
        reused_blocks: probe.reused,
        out_of_reach: probe.out_of_reach,
        remeasured: probe.remeasured.as_ref().and_then(|r| {
            Some(Remeasurement {
                verdict: r.verdict?,
                verdicts: r.verdicts.clone(),
                blocks: r.blocks.len(),
                reused_blocks: r.reused,
            })
        }),
    }
}

/// Output tokens per joule over a probe's blocks (Σ tokens over Σ joules of their cases'
/// windows), where every block ran in this attempt and has an energy figure.
fn tokens_per_joule(probe: &Probe, cases: &[crate::summary::CaseSummary]) -> Option<f64> {
    if probe.reused > 0 || probe.case_ids.is_empty() {
        return None;
    }
    let (mut tokens, mut joules) = (0u64, 0.0);
    for id in &probe.case_ids {
        let energy = cases.iter().find(|c| &c.id == id)?.energy.as_ref()?;
        tokens += energy.output_tokens;
        joules += energy.total_j?;
    }
    (joules > 0.0).then(|| tokens as f64 / joules)
}

/// The saturation analysis of the probes' throughput: one point per probe, its throughput the
/// mean of its blocks' (output tokens over each block's window, reused blocks included) and
/// their spread.
fn fit(probes: &[&Probe], unit: LoadUnit) -> saturation::Analysis {
    let points: Vec<Point> = probes
        .iter()
        .filter_map(|probe| {
            let values: Vec<f64> = probe
                .blocks
                .iter()
                .filter(|b| b.figures.window_s > 0.0)
                .map(|b| b.figures.output_tokens as f64 / b.figures.window_s)
                .collect();
            let spread = crate::stats::Spread::of(&values)?;
            let mut total = Figures::default();
            for block in &probe.blocks {
                total.add(block.figures);
            }
            Some(Point {
                load: probe.load,
                throughput_tps: spread.mean,
                throughput_sd_tps: Some(spread.sd),
                throughput_rounds: Some(values.len()),
                ttft_p50_ms: None,
                ttft_p99_ms: None,
                tpot_p99_ms: None,
                ttft_n: None,
                tpot_n: None,
                e2e_p99_ms: None,
                e2e_p50_ms: None,
                e2e_n: None,
                error_share: if total.requests > 0 {
                    (total.requests - total.ok) as f64 / total.requests as f64
                } else {
                    0.0
                },
                achieved_concurrency_mean: None,
                achieved_concurrency_peak: None,
            })
        })
        .collect();
    let shape = if unit == LoadUnit::RateRps {
        Shape::Open
    } else {
        Shape::Continuous
    };
    saturation::analyse(&points, &crate::workload::shape::Slo::default(), shape)
}

/// The command that goes on from this attempt: the one given, with `--resume` this folder.
fn continue_with(context: &Context<'_>) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut skip = false;
    for word in &context.options.command {
        if skip {
            skip = false;
            continue;
        }
        if word == "--resume" {
            skip = true;
            continue;
        }
        if word.starts_with("--resume=") {
            continue;
        }
        words.push(shell_word(word));
    }
    words.push("--resume".to_owned());
    words.push(shell_word(&context.dir.display().to_string()));
    words.join(" ")
}

/// A word quoted for a POSIX shell where it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The objectives in words, joined.
fn objectives(source: &CapacitySource) -> String {
    let texts: Vec<String> = source.rules.iter().map(|(r, _)| r.to_string()).collect();
    texts.join(" and ")
}

/// The one line: what meets, what does not, at what confidence, and the cap.
fn headline(capacity: &Capacity, source: &CapacitySource, think_s: Option<f64>) -> String {
    let unit = capacity.unit;
    let level = format!("{} %", number(capacity.confidence * 100.0));
    let rules = objectives(source);
    let passing_words = |a: &LoadAnswer| match (unit, think_s) {
        (LoadUnit::Users, Some(think)) => format!(
            "about {} users (thinking ~{} s between turns; {} requests in flight on average)",
            number(a.load),
            number(think),
            number(a.concurrency)
        ),
        _ => unit.words(a.load),
    };
    let again = |p: &LoadAnswer, f: &LoadAnswer| {
        let (pa, fa) = (p.remeasured.as_ref()?, f.remeasured.as_ref()?);
        Some(format!(
            "re-measured side by side, {} {} and {} {}",
            number(p.load),
            pa.verdict.word(),
            number(f.load),
            fa.verdict.word()
        ))
    };
    let mut line = match (&capacity.max_passing, &capacity.first_failing) {
        (Some(p), Some(f)) if capacity.decided => format!(
            "Answer: {} meet {rules}; {} do not (decided at {level}{}).",
            passing_words(p),
            number(f.load),
            again(p, f).map_or_else(String::new, |text| format!("; {text}"))
        ),
        (Some(p), Some(f)) if capacity.moved() => format!(
            "Not decided: the boundary moved while it was measured. In the search {} met {rules} \
             and {} did not (each decided at {level}); {}.",
            passing_words(p),
            number(f.load),
            again(p, f).unwrap_or_default()
        ),
        (Some(p), Some(f)) => format!(
            "Not decided to the resolution: {} meet {rules} and {} do not (each decided at \
             {level}); the search stopped: {}.",
            passing_words(p),
            number(f.load),
            capacity.stopped_because
        ),
        (Some(p), None) => format!(
            "Answer: {} meet {rules}, the most tried ({}).",
            passing_words(p),
            capacity.stopped_because
        ),
        (None, Some(f)) if capacity.decided => format!(
            "Answer: even {} do not meet {rules} (decided at {level}).",
            unit.words(f.load)
        ),
        (None, Some(f)) => format!(
            "Not decided: {} do not meet {rules} (decided at {level}), and no smaller load was \
             decided to meet them ({}).",
            unit.words(f.load),
            capacity.stopped_because
        ),
        (None, None) => format!(
            "No answer: no load was decided ({}).",
            capacity.stopped_because
        ),
    };
    if let (Some(cap), Some(sat)) = (capacity.recommended_cap, capacity.saturation) {
        let lowered = match capacity.saturation_range {
            Some([low, high]) if cap < (CAP_SHARE * sat).round() => format!(
                ", lowered to stay below C_sat's range, {}–{}",
                number(low),
                number(high)
            ),
            _ => String::new(),
        };
        let _ = write!(
            line,
            " Recommended cap: {} ({} × the saturation point, C_sat ≈ {}{lowered}).",
            number(cap),
            number(CAP_SHARE),
            number(sat)
        );
    }
    line
}

/// How the verdicts were reached.
fn method(source: &CapacitySource) -> Vec<String> {
    let looks = source.looks;
    let consecutive = matches!(source.kind(), super::sequential::Blocks::Consecutive { .. });
    let mut lines = vec![format!(
        "Each load is measured in blocks ({}) and read at {} preset looks, after \
         {}, {}, {} and {} blocks; look l spends α·2^-(l+1) of α = {} (less than α in all), so a \
         verdict holds at its level wherever the probe stopped.",
        if consecutive {
            "each look one arrival process: a warmup, then its blocks as consecutive segments"
        } else {
            "each its own case"
        },
        super::sequential::LOOKS,
        looks.first,
        looks.first * 2,
        looks.first * 3,
        looks.first * 4,
        number(looks.alpha)
    )];
    if source
        .rules
        .iter()
        .any(|(r, _)| matches!(r, super::Rule::Latency { .. }))
        && consecutive
    {
        lines.push(
            "A latency objective is judged on the share of all the load's responses within the \
             bound: the segments' mean share with a Student-t interval (batch means), never \
             narrower than the responses' binomial one; a load meets only over two looks (two \
             arrival processes), and one whose segments straddle the bound too widely for the \
             last look to decide stops undecided (out of reach); a failed response misses every \
             latency bound."
                .to_owned(),
        );
    } else if source
        .rules
        .iter()
        .any(|(r, _)| matches!(r, super::Rule::Latency { .. }))
    {
        lines.push(
            "A latency objective is judged per block (did the block's share within the bound \
             reach the share wanted?), and a load meets it when the exact binomial interval of \
             the share of blocks that do lies above one half; a failed response misses every \
             latency bound."
                .to_owned(),
        );
    }
    if source
        .rules
        .iter()
        .any(|(r, _)| matches!(r, super::Rule::Errors { .. }))
    {
        lines.push(
            "An error bound is judged on the responses (an exact binomial interval of the error \
             share), which takes failures to be independent: failures in bursts make it too \
             narrow."
                .to_owned(),
        );
    }
    lines.push(format!(
        "Once the search decides, the bracket's two loads are measured again side by side ({}), \
         each judged on those blocks alone at the first look's error: a verdict the other way \
         takes the decision back (the boundary moved while it was measured). The check never \
         makes a decision, so it spends none of α.",
        if consecutive {
            "one arrival process of each in turn, two each"
        } else {
            "one block of each in turn"
        }
    ));
    if source.unit == LoadUnit::Users {
        lines.push(
            "Users are closed sessions of turns with think time between them; Little's law, \
             users = requests/s × (think time + response time), is set beside each load (the \
             think time per request is (K − 1)/K of a turn's, a session's first turn following \
             none)."
                .to_owned(),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_that_goes_on_replaces_any_resume_and_quotes_what_a_shell_would_read() {
        let options = CapacityOptions {
            command: [
                "llmload",
                "capacity",
                "--slo",
                "ttft_p90<30ms",
                "--resume",
                "old",
            ]
            .map(str::to_owned)
            .to_vec(),
            ..CapacityOptions::default()
        };
        let context = Context {
            options: &options,
            confidence: 0.95,
            think_s: None,
            dir: Path::new("out/c/it's"),
            cases: &[],
        };
        assert_eq!(
            continue_with(&context),
            r"llmload capacity --slo 'ttft_p90<30ms' --resume 'out/c/it'\''s'"
        );
    }
}
