//! `llmload capacity`'s answer: the largest load that meets every objective and the first that
//! does not, each with its verdict per objective (a share, its interval and the blocks and
//! requests behind it), the saturation point and the cap, the throughput and cost there, and
//! one line a reader can act on. The same object is `--json`'s output and `summary.json`'s
//! `capacity`.

use serde::{Deserialize, Serialize};

/// What the search's load is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadUnit {
    /// Requests kept in flight (closed-continuous).
    Concurrency,
    /// Closed users, each a session of turns with think time between them.
    Users,
    /// Arrivals per second (an open loop).
    RateRps,
}

impl LoadUnit {
    /// The load `value` in words: "8 concurrent generations", "40 users", "2.5 requests/s".
    pub fn words(self, value: f64) -> String {
        let value = crate::fmt::number(value);
        match self {
            LoadUnit::Concurrency => format!("{value} concurrent generations"),
            LoadUnit::Users => format!("{value} users"),
            LoadUnit::RateRps => format!("{value} requests/s"),
        }
    }
}

/// An objective's verdict at one load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloVerdict {
    /// Decided: the load meets the objective.
    Meets,
    /// Decided: the load does not.
    Fails,
    /// Not decided within the probe's cap.
    Undecided,
}

impl SloVerdict {
    /// The verdict in one word.
    pub fn word(self) -> &'static str {
        match self {
            SloVerdict::Meets => "meets",
            SloVerdict::Fails => "fails",
            SloVerdict::Undecided => "undecided",
        }
    }
}

/// One objective judged at one load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleVerdict {
    /// The objective as given, e.g. `ttft_p90<500ms`.
    pub rule: String,
    /// The verdict at the confidence of the look that decided it (or of the last look).
    pub verdict: SloVerdict,
    /// What the interval is of, in words (e.g. "share of blocks whose p90 TTFT is within
    /// 500 ms").
    pub statistic: String,
    /// The estimate: the share of blocks (or of requests, for `errors`) that met the objective.
    pub estimate: f64,
    /// The interval's lower end (a share, 0–1).
    pub low: f64,
    /// The interval's upper end (a share, 0–1).
    pub high: f64,
    /// The share the objective needs (blocks: more than 0.5; errors: the bound).
    pub threshold: f64,
    /// The blocks judged.
    pub blocks: usize,
    /// The values judged: responses (for ITL, the gaps between tokens).
    pub requests: usize,
    /// The measured value over every request at this load (the percentile in ms, the share
    /// within the bound, or the error share), for reading, not deciding.
    pub pooled: Option<f64>,
}

/// One load the search measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadAnswer {
    /// The load as the search set it (concurrency, users, or requests/s).
    pub load: f64,
    /// Requests in flight on average (requests/s × mean response time, Little's law).
    pub concurrency: f64,
    /// Completed requests per second over the blocks' windows.
    pub rate_rps: f64,
    /// With think time: the users (closed sessions) of this load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<f64>,
    /// With think time: users by Little's law, requests/s × (mean think time + mean response
    /// time), to set beside `users`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_littles_law: Option<f64>,
    /// Output tokens per second over the blocks' windows.
    pub output_tps: f64,
    /// Mean complete-response time, ms.
    pub response_ms: f64,
    /// With `--gpu-cost-per-hour`: what a million output tokens cost at this load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_million_output_tokens: Option<f64>,
    /// With GPU power readings for every block's window: output tokens per joule at this load
    /// (Σ output tokens over Σ joules of its blocks' windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_joule: Option<f64>,
    /// The verdict of every objective.
    pub verdicts: Vec<RuleVerdict>,
    /// Every objective met (decided), some failed (decided), or not decided.
    pub verdict: SloVerdict,
    /// The blocks measured at this load, reused ones included.
    pub blocks: usize,
    /// Blocks taken from the attempt given to `--resume`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused_blocks: usize,
    /// Left undecided before the probe's cap: an open loop's segments straddled the bound too
    /// widely for the cap's blocks to decide it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_reach: bool,
    /// The bracket's ends only, once the search decided them: this load measured again, its
    /// blocks interleaved with the other end's, and judged on them alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasured: Option<Remeasurement>,
}

/// A load of the bracket measured again beside the other end, judged on those blocks alone at
/// the first look's error: a verdict the other way takes the answer's decision back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remeasurement {
    /// The verdict over the re-measured blocks.
    pub verdict: SloVerdict,
    /// Every objective's verdict over them.
    pub verdicts: Vec<RuleVerdict>,
    /// The blocks re-measured.
    pub blocks: usize,
    /// Of them, blocks taken from the attempt given to `--resume`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused_blocks: usize,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `llmload capacity`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// What the load is counted in.
    pub unit: LoadUnit,
    /// The confidence every verdict is decided at (0–1).
    pub confidence: f64,
    /// The objectives, as given.
    pub slo: Vec<String>,
    /// Whether the bracket is decided to the resolution.
    pub decided: bool,
    /// One line a reader can act on.
    pub answer: String,
    /// The largest load that meets every objective.
    pub max_passing: Option<LoadAnswer>,
    /// The smallest load above it that fails one.
    pub first_failing: Option<LoadAnswer>,
    /// Every load measured, in load order.
    pub probes: Vec<LoadAnswer>,
    /// The saturating load (`C_sat`) fitted to the probes' throughput, where the search
    /// crossed it.
    pub saturation: Option<f64>,
    /// The range of `C_sat`: every breakpoint whose fit is within noise of the best.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_range: Option<[f64; 2]>,
    /// The recommended cap: 0.7 × `C_sat`, where there is one (the sweep's rule: rounded,
    /// and kept below 0.8 × the low end of `C_sat`'s range).
    pub recommended_cap: Option<f64>,
    /// How the cap was set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cap_method: String,
    /// How the saturation point was found, or why there is none.
    pub saturation_method: String,
    /// Why the search stopped.
    pub stopped_because: String,
    /// When undecided: the command that would go on, reusing what was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_with: Option<String>,
    /// How the verdicts were reached, in sentences.
    pub method: Vec<String>,
}

impl Capacity {
    /// Whether an end of the bracket was re-measured the other way: the passing load now fails,
    /// or the failing load now meets (the boundary moved while it was measured).
    pub fn moved(&self) -> bool {
        let again = |end: &Option<LoadAnswer>| {
            end.as_ref()
                .and_then(|a| a.remeasured.as_ref())
                .map(|r| r.verdict)
        };
        again(&self.max_passing) == Some(SloVerdict::Fails)
            || again(&self.first_failing) == Some(SloVerdict::Meets)
    }
}
