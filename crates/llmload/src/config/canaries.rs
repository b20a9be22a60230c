//! `--canaries N` and `--canary-fail SHARE`: output canaries beside closed rounds, read and
//! checked.

use super::parse::bad;
use super::Config;
use crate::api::Api;
use crate::error::ConfigError;
use crate::workload::shape::Arrival;
use serde::{Deserialize, Serialize};

/// The most canary prompts.
pub const MAX_CANARIES: u32 = 100;
/// Tokens of a canary prompt.
pub const INPUT_TOKENS: u32 = 64;
/// Tokens a canary asks for.
pub const OUTPUT_TOKENS: u32 = 32;

/// The canaries a run sends, and the divergence it fails at.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Canaries {
    /// Canary prompts.
    pub count: u32,
    /// Tokens of each prompt.
    pub input_tokens: u32,
    /// Tokens each asks for.
    pub output_tokens: u32,
    /// `--canary-fail`: a case whose canaries diverged in a larger share fails the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_above: Option<f64>,
}

/// The canaries the flags ask for; `None` without `--canaries`.
pub(super) fn resolve(
    count: Option<u32>,
    fail_above: Option<f64>,
) -> Result<Option<Canaries>, ConfigError> {
    let Some(count) = count else {
        if fail_above.is_some() {
            return bad("--canary-fail needs --canaries (the canaries whose divergence it bounds)");
        }
        return Ok(None);
    };
    if count == 0 || count > MAX_CANARIES {
        return bad(format!(
            "--canaries {count}: 1 to {MAX_CANARIES} canary prompts"
        ));
    }
    if let Some(share) = fail_above {
        if !(share.is_finite() && (0.0..1.0).contains(&share)) {
            return bad(format!(
                "--canary-fail {share}: a share from 0 (any divergence fails) up to, not \
                 including, 1"
            ));
        }
    }
    Ok(Some(Canaries {
        count,
        input_tokens: INPUT_TOKENS,
        output_tokens: OUTPUT_TOKENS,
        fail_above,
    }))
}

/// Refuses canaries the run cannot send: they go with closed rounds and continuous loops of a
/// generation API.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    if config.canaries.is_none() {
        return Ok(());
    }
    if matches!(config.api, Some(Api::Embeddings | Api::Rerank)) {
        return bad(
            "--canaries compares generated text: an embeddings or rerank API generates none",
        );
    }
    let load = &config.load;
    let closed = matches!(load.arrival, Arrival::Rounds | Arrival::ClosedContinuous);
    if !closed || load.session.is_some() || load.stages.is_some() {
        return bad(
            "--canaries go with closed rounds and continuous loops (canary rounds at each \
             case's concurrency after its load); open loops, sessions and stages have no one \
             concurrency",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_shares_are_checked() {
        assert_eq!(resolve(None, None).expect("none"), None);
        let c = resolve(Some(4), Some(0.0)).expect("valid").expect("some");
        assert_eq!((c.count, c.fail_above), (4, Some(0.0)));
        for (count, share) in [
            (Some(0), None),
            (Some(101), None),
            (None, Some(0.1)),
            (Some(2), Some(1.0)),
            (Some(2), Some(-0.1)),
            (Some(2), Some(f64::NAN)),
        ] {
            let e = resolve(count, share).expect_err("refused");
            assert!(e.0.starts_with("--canar"), "{}", e.0);
        }
    }
}
