//! `--api embeddings` and `--api rerank`, and `--batch-size`: requests of several inputs,
//! answered once, with nothing generated. What does not apply to them is refused in one line.

use super::parse::bad;
use super::{Config, Settings};
use crate::api::Api;
use crate::error::ConfigError;

/// The most inputs one request may carry.
pub(super) const MAX_BATCH: u32 = 65_536;

/// The inputs per request of each case: `--batch-size` (1 by default) for a pooling API, none
/// for generation, where the flag is refused.
pub(super) fn batch_sizes(
    api: Option<Api>,
    given: Option<Vec<u32>>,
) -> Result<Vec<u32>, ConfigError> {
    let pooling = api.is_some_and(Api::is_pooling);
    match (pooling, given) {
        (false, None) => Ok(Vec::new()),
        (false, Some(_)) => bad("--batch-size applies to --api embeddings and --api rerank"),
        (true, None) => Ok(vec![1]),
        (true, Some(sizes)) => {
            if sizes.is_empty() || sizes.iter().any(|&b| b == 0 || b > MAX_BATCH) {
                return bad(format!(
                    "--batch-size takes one or more counts from 1 to {MAX_BATCH}"
                ));
            }
            Ok(sizes)
        }
    }
}

/// Whether `s` asks for a pooling API; then `--output-tokens` is refused (nothing is generated)
/// before any default is laid over it.
pub(super) fn check_settings(s: &Settings) -> Result<bool, ConfigError> {
    let Some(api) = s.target.api.filter(|a| a.is_pooling()) else {
        return Ok(false);
    };
    let name = api.name();
    if s.workload.output_tokens.is_some() {
        return bad(format!(
            "--output-tokens does not apply to --api {name}: nothing is generated (--batch-size \
             sets the inputs per request)"
        ));
    }
    Ok(true)
}

/// Refuses what a pooling API cannot do: there is no stream to abandon, no conversation, no
/// answer to fit, and no shared prefix a server reports serving from its cache.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    let Some(api) = config.api.filter(|a| a.is_pooling()) else {
        return Ok(());
    };
    let name = api.name();
    let refused = [
        (
            config.load.cancel.is_some(),
            "--cancel-after: nothing is streamed",
        ),
        (
            config.load.session.is_some(),
            "--turns: there is no conversation",
        ),
        (
            config.load.system_prompt_tokens > 0,
            "--system-prompt-tokens: these servers report no cached tokens to check it by",
        ),
        (
            config.dataset.is_some(),
            "--dataset: inputs are built to exact lengths",
        ),
        (
            config.load.trace.is_some(),
            "--trace: a trace's requests are generations",
        ),
    ];
    if let Some((_, why)) = refused.iter().find(|(given, _)| *given) {
        return bad(format!("--api {name} does not take {why}"));
    }
    if config.load.stages.is_some() && config.batch_size.len() > 1 {
        return bad("a staged run takes one --batch-size");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_belong_to_the_pooling_apis() {
        let sizes = |api, batch| batch_sizes(api, batch).ok();
        assert_eq!(sizes(None, None), Some(Vec::new()));
        assert_eq!(sizes(Some(Api::Chat), Some(vec![4])), None);
        assert_eq!(sizes(Some(Api::Embeddings), None), Some(vec![1]));
        assert_eq!(sizes(Some(Api::Rerank), Some(vec![1, 8])), Some(vec![1, 8]));
        assert_eq!(sizes(Some(Api::Rerank), Some(vec![0])), None);
        let mut s = Settings::default();
        s.target.api = Some(Api::Embeddings);
        assert!(check_settings(&s).expect("valid"));
        s.workload.output_tokens = Some(vec![crate::config::LengthItem::Tokens(4)]);
        let e = check_settings(&s).expect_err("refused");
        assert!(e.0.contains("--output-tokens does not apply"), "{e}");
    }
}
