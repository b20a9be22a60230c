//! The gap between another tool's latency figure and llmload's, cut into shares in ms that sum
//! to it exactly: the **definition** (llmload's records under the other definition, less
//! llmload's own), the **workload** (the prompt and output tokens the other run sent beyond
//! llmload's, at the server's own pace), the **server's pace** (how much slower or faster the
//! server went during the other run, applied to the server's own part of the figure), the
//! **cold requests** (the other run's first requests against the rest: a run without warm-up
//! pays for its cold start in its figure), and the **remainder** (the other client's own
//! stamping and the variation between runs). llmload's own stamping, how far its TTFT sits from
//! the server's own time, is said beside them.

use super::shape::OtherRun;
use super::{statistic, Group, MetricRow, Own};
use crate::record::Record;
use crate::stats::interval::Stat;
use serde::Serialize;

/// One share of a gap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Share {
    /// `definition`, `workload`, `server pace`, `cold requests`, `remainder`.
    pub cause: &'static str,
    /// Its size, ms (other − llmload's part of the gap).
    pub ms: f64,
    /// What it is, in words.
    pub text: String,
}

/// What the shares of every row draw on: the other run, llmload's records and what they say of
/// the server, and the pace of each run.
pub(super) struct Context<'a> {
    /// The other run.
    pub run: &'a OtherRun,
    /// llmload's measured ok records.
    pub records: &'a [&'a Record],
    /// The other run's server pace over llmload's (above 1: slower in the other run), and how
    /// it was found.
    pub pace: Option<(f64, String)>,
}

/// The mean of the values that are there; `None` without any.
fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The server's own part of a figure of kind `own` in llmload's records, ms, and its server
/// pace per prompt and per generated token; `None` where the records carry no server timings.
fn server_part(records: &[&Record], own: Own) -> Option<f64> {
    let timed = || records.iter().filter_map(|r| r.server.as_ref());
    match own {
        Own::Ttft => mean(timed().filter_map(|s| s.ttft_ms)),
        Own::E2e => mean(timed().filter_map(|s| Some(s.ttft_ms? + s.decode_ms?))),
        Own::Tpot | Own::Itl => mean(records.iter().filter_map(|r| {
            let s = r.server.as_ref()?;
            crate::summary::pace::of_response(r, s).1
        })),
        Own::Nothing => None,
    }
}

/// The server's medians per prompt token and per generated token in `records`.
fn pace_per_token(records: &[&Record]) -> (Option<f64>, Option<f64>) {
    let (mut prefill, mut decode): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for r in records {
        if let Some(s) = &r.server {
            let (p, d) = crate::summary::pace::of_response(r, s);
            prefill.extend(p);
            decode.extend(d);
        }
    }
    (super::median(&prefill), super::median(&decode))
}

/// The other run's first requests (its concurrency, at least one), where its file holds enough
/// requests after them to tell.
fn first(run: &OtherRun) -> Option<usize> {
    let k = usize::try_from(run.concurrency.unwrap_or(1).max(1)).ok()?;
    (run.responses.len() >= 2 * k + 2).then_some(k)
}

/// The other run's pace over llmload's: its warm requests' median time per token (after its
/// first ones) over llmload's under the same definition; else its output throughput under
/// llmload's over the same kind of span.
pub(super) fn pace_ratio(
    run: &OtherRun,
    tpot: &str,
    as_other_tpot: Option<f64>,
    ours_tps: Option<f64>,
) -> Option<(f64, String)> {
    let skip = first(run).unwrap_or(0);
    let warm: Vec<f64> = run
        .responses
        .iter()
        .skip(skip)
        .flat_map(|r| r.values.iter().filter(|v| v.figure == tpot))
        .flat_map(|v| v.values.iter().copied())
        .collect();
    if let (Some(other), Some(ours)) = (super::median(&warm), as_other_tpot.filter(|v| *v > 0.0)) {
        return Some((
            other / ours,
            format!(
                "its median time per token after its first {skip} requests, {other:.3} ms, \
                 against llmload's {ours:.3} ms under the same definition"
            ),
        ));
    }
    let (other, ours) = (run.output_throughput?, ours_tps?);
    (other > 0.0).then(|| {
        (
            ours / other,
            format!(
                "its output throughput, {other:.2} tokens/s, against llmload's {ours:.2} over the \
                 same kind of span"
            ),
        )
    })
}

/// The shares of `row`'s gap (figure `figure` of the other tool, statistic `stat`, llmload's
/// own figure of kind `own`); empty where either side has no figure.
pub(super) fn shares(
    row: &MetricRow,
    figure: &str,
    stat: Stat,
    own: Own,
    ctx: &Context,
) -> Vec<Share> {
    let (Some(other), Some(ours)) = (row.other, row.llmload) else {
        return Vec::new();
    };
    let as_other = row.llmload_as_other.unwrap_or(ours);
    let mut out = vec![Share {
        cause: "definition",
        ms: as_other - ours,
        text: "llmload's records under the other tool's definition, less llmload's own figure"
            .into(),
    }];
    if let Some(share) = workload(ctx, own) {
        out.push(share);
    }
    if let Some(share) = pace(ctx, own, as_other) {
        out.push(share);
    }
    if let Some(share) = cold(ctx.run, figure, stat) {
        out.push(share);
    }
    let explained: f64 = out.iter().map(|s| s.ms).sum();
    let stamping = (own != Own::Nothing)
        .then(|| {
            mean(
                ctx.records
                    .iter()
                    .filter_map(|r| Some(r.ttft_ms? - r.server.as_ref()?.ttft_ms?)),
            )
        })
        .flatten()
        .map_or_else(
            || "llmload's records carry no server timings to place its own stamping".to_owned(),
            |d| format!("llmload's TTFT sits {d:.1} ms after the server's own (mean)"),
        );
    out.push(Share {
        cause: "remainder",
        ms: other - ours - explained,
        text: format!(
            "the other client's own stamping (its file holds no server time to place it; \
             {stamping}) and the variation between runs"
        ),
    });
    out
}

/// The tokens the other run sent beyond llmload's, at the server's own pace.
fn workload(ctx: &Context, own: Own) -> Option<Share> {
    let (prompts, outputs) = ctx.run.lengths();
    let ours_prompt: Vec<f64> = ctx
        .records
        .iter()
        .map(|r| f64::from(r.prompt_tokens.unwrap_or(r.input_tokens)))
        .collect();
    let ours_output: Vec<f64> = ctx
        .records
        .iter()
        .map(|r| f64::from(r.generated_tokens()))
        .collect();
    let more_prompt = super::median(&prompts)? - super::median(&ours_prompt)?;
    let more_output = super::median(&outputs)
        .zip(super::median(&ours_output))
        .map_or(0.0, |(a, b)| a - b);
    let (prefill, decode) = pace_per_token(ctx.records);
    let ms = match own {
        Own::Ttft => more_prompt * prefill?,
        Own::E2e => more_prompt * prefill? + (more_output * decode?),
        _ => return None,
    };
    (ms != 0.0).then(|| Share {
        cause: "workload",
        ms,
        text: format!(
            "the other run's median prompt {more_prompt:+.0} and output {more_output:+.0} tokens \
             against llmload's, at the server's own pace in llmload's records"
        ),
    })
}

/// The server's pace during the other run applied to the server's own part of the figure.
fn pace(ctx: &Context, own: Own, as_other: f64) -> Option<Share> {
    let (ratio, how) = ctx.pace.as_ref()?;
    let (part, whose) = match server_part(ctx.records, own) {
        Some(part) => (part, "the server's own part of llmload's figure"),
        None if own != Own::Nothing => (
            as_other,
            "llmload's figure taken whole as the server's (its records carry no server timings)",
        ),
        None => return None,
    };
    Some(Share {
        cause: "server pace",
        ms: part * (ratio - 1.0),
        text: format!(
            "the server went {:.0} % {} during the other run ({how}), applied to {whose}, \
             {part:.1} ms",
            (ratio - 1.0).abs() * 100.0,
            if *ratio >= 1.0 { "slower" } else { "faster" }
        ),
    })
}

/// The other run's first requests against the rest, where its file lists them in order.
fn cold(run: &OtherRun, figure: &str, stat: Stat) -> Option<Share> {
    let k = first(run)?;
    let groups: Vec<Group> = run
        .responses
        .iter()
        .map(|r| {
            let values = r.values.iter().filter(|v| v.figure == figure);
            let weight = values.clone().next().map_or(1.0, |v| v.weight);
            (
                values.flat_map(|v| v.values.iter().copied()).collect(),
                weight,
            )
        })
        .collect();
    let all = statistic(stat, &groups)?.0;
    let rest = statistic(stat, &groups[k..])?.0;
    let first_mean = mean(groups[..k].iter().flat_map(|g| g.0.iter().copied()))?;
    let warmup = match run.warmup_requests {
        Some(0) => "its file says it sent no warm-up".to_owned(),
        Some(n) => format!("after {n} warm-up requests, as its file says"),
        None => "its file does not say whether it warmed up".to_owned(),
    };
    Some(Share {
        cause: "cold requests",
        ms: all - rest,
        text: format!(
            "its first {k} requests ({warmup}) averaged {first_mean:.1} ms against {rest:.1} ms \
             for the rest"
        ),
    })
}
