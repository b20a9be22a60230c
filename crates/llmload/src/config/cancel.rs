//! `--cancel-after N|DURATION` and `--cancel-share SHARE`: measured streams the client abandons
//! on purpose, read and checked.

use super::parse::bad;
use super::Config;
use crate::error::ConfigError;
use crate::record::CancelAfter;
use crate::workload::shape::Cancel;

/// The abandonment the flags ask for; `None` without `--cancel-after`.
pub(super) fn resolve(
    after: Option<&str>,
    share: Option<f64>,
) -> Result<Option<Cancel>, ConfigError> {
    let Some(text) = after else {
        if share.is_some() {
            return bad("--cancel-share needs --cancel-after (where a stream is abandoned)");
        }
        return Ok(None);
    };
    let text = text.trim();
    let after = if let Ok(n) = text.parse::<u32>() {
        if n == 0 {
            return bad("--cancel-after 0: abandon after at least 1 token (or a time, e.g. 800ms)");
        }
        CancelAfter::Tokens(n)
    } else {
        let d = crate::num::duration(text).or_else(|e| {
            bad(format!(
                "--cancel-after {text:?}: neither a token count nor a time ({e}); e.g. 16 or 800ms"
            ))
        })?;
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return bad(format!("--cancel-after {text:?}: at least 1ms"));
        }
        CancelAfter::Ms(ms)
    };
    let share = share.unwrap_or(1.0);
    if !(share.is_finite() && share > 0.0 && share <= 1.0) {
        return bad(format!(
            "--cancel-share {share}: a share above 0 and at most 1, e.g. 0.2"
        ));
    }
    Ok(Some(Cancel { after, share }))
}

/// Refuses an abandonment no request could meet, or one the load cannot take.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    let Some(cancel) = config.load.cancel else {
        return Ok(());
    };
    if config.load.session.is_some() {
        return bad(
            "--cancel-after does not go with --turns: an abandoned turn leaves its session \
             without the answer the next turn's history holds",
        );
    }
    if let CancelAfter::Tokens(n) = cancel.after {
        let longest = config
            .output_tokens
            .iter()
            .map(crate::workload::length::Length::max_tokens)
            .max()
            .unwrap_or(0);
        let from_data = config
            .dataset
            .as_ref()
            .is_some_and(|d| d.output == crate::workload::dataset::Output::FromDataset)
            || config.load.trace.is_some();
        if !from_data && n >= longest {
            return bad(format!(
                "--cancel-after {n}: no request asks for more than {longest} output tokens, so \
                 none would be abandoned; give fewer tokens or a time"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_tokens_and_anything_else_a_time() {
        let cancel = |text: &str| resolve(Some(text), None).map(|c| c.map(|c| c.after));
        assert_eq!(cancel("16").ok(), Some(Some(CancelAfter::Tokens(16))));
        assert_eq!(cancel("800ms").ok(), Some(Some(CancelAfter::Ms(800))));
        assert_eq!(cancel("2s").ok(), Some(Some(CancelAfter::Ms(2000))));
        assert!(cancel("0").is_err() && cancel("-3").is_err() && cancel("500us").is_err());
        assert_eq!(resolve(None, None).ok(), Some(None));
    }

    #[test]
    fn the_draw_keeps_its_share_and_is_the_same_for_a_seed() {
        let cancel = Cancel {
            after: CancelAfter::Tokens(4),
            share: 0.2,
        };
        let drawn = |seed: u64| -> Vec<u64> {
            (0..10_000)
                .filter(|&serial| cancel.picks(seed, serial))
                .collect()
        };
        let a = drawn(7);
        assert!((1_800..=2_200).contains(&a.len()), "{} of 10000", a.len());
        assert_eq!(a, drawn(7), "the same seed draws the same requests");
        assert_ne!(a, drawn(8), "another seed draws others");
        let all = Cancel {
            share: 1.0,
            ..cancel
        };
        assert!((0..100).all(|serial| all.picks(3, serial)));
    }
}
