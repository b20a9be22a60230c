//! `llmload ab`'s flags: the two URLs, every flag of `run`, the blocks, what differs in the
//! candidate's requests, and the gate's rules; turned into each arm's `Config` and `AbOptions`.

use super::{FailOn, RunArgs};
use crate::ab::AbOptions;
use crate::config::{Config, ConfigError};
use clap::Args;
use std::path::PathBuf;

/// `llmload ab`: two targets measured interleaved in one attempt, and the paired gate.
#[derive(Debug, Args)]
pub struct AbArgs {
    /// The base: arm A's server URL (or its replicas' URLs, comma-separated).
    #[arg(value_name = "BASE_URL")]
    pub base_url: String,
    /// The candidate: arm B's server URL (the base's own, with --b-model or --b-extra-body, to
    /// compare two models, adapters or request fields on one server; or replicas' URLs,
    /// comma-separated).
    #[arg(value_name = "CANDIDATE_URL")]
    pub candidate_url: String,
    /// Every option of the run (the same for both arms), under its heading.
    #[command(flatten)]
    pub run: RunArgs,
    /// Measured rounds per block [default: 1]
    ///
    /// Each case's --rounds (12 by default for `ab`) are cut into blocks of this many rounds;
    /// the blocks go to A and B in pairs, in a random balanced order (ABBA or BAAB). Shorter
    /// blocks share the machine's drift more closely; a block needs enough responses for a p90
    /// or p99 rule (10 for a p90, 100 for a p99), and a rule needs 6 pairs at 95 %.
    #[arg(long, value_name = "N", help_heading = "A/B")]
    pub block_rounds: Option<u32>,
    /// The length of a block of a continuous or open loop [default: 5s]
    ///
    /// A loop of a --duration is cut into time slices of this long (the first one longer by
    /// --warmup-time), given to A and B in pairs as blocks of rounds are.
    #[arg(long, value_name = "DURATION", help_heading = "A/B")]
    pub block_time: Option<String>,
    /// The model (or adapter) arm B's requests name, in place of --model.
    #[arg(long = "b-model", value_name = "NAME", help_heading = "A/B")]
    pub b_model: Option<String>,
    /// Fields merged into arm B's request bodies over --extra-body, a JSON object.
    #[arg(long = "b-extra-body", value_name = "JSON", help_heading = "A/B")]
    pub b_extra_body: Option<String>,
    /// A regression rule on B against A, as `compare --fail-if` takes it (`ttft_p50 > +10%`,
    /// `throughput < -5%`), judged on the pairs of blocks; exit code 5 when one breaks. May be
    /// repeated.
    #[arg(long = "fail-if", value_name = "EXPR", help_heading = "A/B")]
    pub fail_if: Vec<String>,
    /// A TOML file of rules: `fail_if = ["ttft_p50 > +10%", …]`, added to --fail-if.
    #[arg(long, value_name = "FILE", help_heading = "A/B")]
    pub thresholds: Option<PathBuf>,
    /// Which verdicts fail the gate (exit 5) [default: regressed]
    ///
    /// `regressed`: only a change beyond a rule's bound with the stated confidence.
    /// `inconclusive`: also one whose interval straddles the bound, or too few pairs to tell.
    #[arg(
        long = "fail-on",
        value_enum,
        value_name = "VERDICT",
        help_heading = "A/B"
    )]
    pub fail_on: Option<FailOn>,
}

/// `llmload ab`'s measured rounds per case when `--rounds` is not given.
const AB_ROUNDS: u32 = 12;

impl AbArgs {
    /// Each arm's configuration (A's, then B's: the same options, B's prompts from the next
    /// seed, their own URL, and B's own model and extra body where given) and what the
    /// comparison takes besides.
    pub fn resolve(&self) -> Result<([Config; 2], AbOptions), ConfigError> {
        let mut settings = self.run.settings()?;
        // Enough pairs for the gate's interval at 95 % with room (the sign test's of 12 pairs
        // is their 3rd and 10th values), where run's 3 rounds would give none.
        settings.rounds.rounds.get_or_insert(AB_ROUNDS);
        if settings.target.url.is_some() {
            return Err(ConfigError(
                "llmload ab takes its two URLs as BASE_URL and CANDIDATE_URL, not --url".into(),
            ));
        }
        let mut a = settings.clone();
        // An arm of several replicas: its URLs comma-separated, spread by --balance.
        let urls = |given: &str| given.split(',').map(|u| u.trim().to_owned()).collect();
        a.target.url = Some(urls(&self.base_url));
        let config_a = Config::resolve(a)?;
        let mut b = settings;
        b.target.url = Some(urls(&self.candidate_url));
        // The next seed: prompts of the same lengths in other words, so that no prompt of one
        // arm is in the other's prefix cache on a shared server.
        b.workload.seed = Some(config_a.seed.wrapping_add(1));
        let mut differs = Vec::new();
        if let Some(model) = &self.b_model {
            b.target.model = Some(model.clone());
            differs.push(format!("model {model}"));
        }
        if let Some(text) = &self.b_extra_body {
            let extra: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| ConfigError(format!("--b-extra-body: not JSON ({e})")))?;
            let serde_json::Value::Object(fields) = extra else {
                return Err(ConfigError(
                    "--b-extra-body must be a JSON object, e.g. '{\"temperature\": 0}'".into(),
                ));
            };
            let mut body = b
                .target
                .extra_body
                .take()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            let keys: Vec<String> = fields.keys().cloned().collect();
            body.extend(fields);
            b.target.extra_body = Some(serde_json::Value::Object(body));
            differs.push(format!("extra body fields {}", keys.join(", ")));
        }
        let config_b = Config::resolve(b)?;
        let rules = self.rules()?;
        let options = AbOptions {
            block_rounds: self.block_rounds.unwrap_or(1),
            block_time: crate::config::parse_duration(
                "block-time",
                self.block_time.as_deref().unwrap_or("5s"),
            )?,
            rules,
            fail_on_inconclusive: self.fail_on == Some(FailOn::Inconclusive),
            candidate_differs: differs,
        };
        Ok(([config_a, config_b], options))
    }

    /// The gate's rules: `--fail-if`, then the `--thresholds` file's.
    fn rules(&self) -> Result<Vec<crate::compare::gate::Rule>, ConfigError> {
        let file = match &self.thresholds {
            Some(path) => Some((
                path.display().to_string(),
                crate::files::read_text(path).map_err(|e| {
                    ConfigError(format!(
                        "cannot read thresholds file {}: {e}",
                        path.display()
                    ))
                })?,
            )),
            None => None,
        };
        let file = file.as_ref().map(|(p, t)| (p.as_str(), t.as_str()));
        crate::compare::gate::rules(&self.fail_if, file)
    }
}
