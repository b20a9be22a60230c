//! `--slo-ttft`, `--slo-tpot` and `--slo-e2e`: the goodput objectives, for every request
//! (`500ms`) and, in a mix of models, for one model's requests (`adapter-a=300ms`), in one
//! comma-separated value: `500ms,adapter-a=300ms`. A model's objectives are the run's with its
//! own in their place.

use super::parse::{bad, parse_duration};
use crate::error::ConfigError;
use crate::workload::shape::Slo;
use std::collections::BTreeMap;
use std::time::Duration;

/// The objectives of every request, and each model's where it has its own.
pub(super) type Objectives = (Slo, BTreeMap<String, Slo>);

/// One flag's value: the objective of every request, and each model's.
type Parsed = (Option<Duration>, BTreeMap<String, Duration>);

/// Reads one `--slo-*` flag (`what` names it): `DURATION`, `MODEL=DURATION` entries, or both.
fn parse(what: &str, text: Option<&str>) -> Result<Parsed, ConfigError> {
    let mut all = None;
    let mut models = BTreeMap::new();
    let Some(text) = text else {
        return Ok((all, models));
    };
    for entry in text.split(',').map(str::trim) {
        match entry.split_once('=') {
            None => {
                if all.is_some() {
                    return bad(format!(
                        "--{what} {text:?}: one objective for every request, and MODEL=DURATION \
                         for a model's own"
                    ));
                }
                all = Some(parse_duration(what, entry)?);
            }
            Some((model, value)) => {
                let model = model.trim();
                if model.is_empty() {
                    return bad(format!("--{what} {text:?}: {entry:?} names no model"));
                }
                let value = parse_duration(what, value.trim())?;
                if models.insert(model.to_owned(), value).is_some() {
                    return bad(format!("--{what} {text:?}: {model:?} is given twice"));
                }
            }
        }
    }
    Ok((all, models))
}

/// The three flags' objectives: every request's, and each named model's (the run's objectives
/// with the model's own in their place).
pub(super) fn resolve(
    ttft: Option<&str>,
    tpot: Option<&str>,
    e2e: Option<&str>,
) -> Result<Objectives, ConfigError> {
    let (ttft, ttft_models) = parse("slo-ttft", ttft)?;
    let (tpot, tpot_models) = parse("slo-tpot", tpot)?;
    let (e2e, e2e_models) = parse("slo-e2e", e2e)?;
    let all = Slo { ttft, tpot, e2e };
    let mut models: BTreeMap<String, Slo> = BTreeMap::new();
    for name in ttft_models
        .keys()
        .chain(tpot_models.keys())
        .chain(e2e_models.keys())
    {
        models.insert(
            name.clone(),
            Slo {
                ttft: ttft_models.get(name).copied().or(all.ttft),
                tpot: tpot_models.get(name).copied().or(all.tpot),
                e2e: e2e_models.get(name).copied().or(all.e2e),
            },
        );
    }
    Ok((all, models))
}

/// Refuses objectives of a model that is not in the mix (`mix`: its names; none without one).
pub(super) fn check(models: &BTreeMap<String, Slo>, mix: &[String]) -> Result<(), ConfigError> {
    let Some(unknown) = models.keys().find(|m| !mix.contains(m)) else {
        return Ok(());
    };
    if mix.is_empty() {
        return bad(format!(
            "--slo-*: {unknown:?} has objectives of its own, but there is no mix of models \
             (--model NAME:WEIGHT,…)"
        ));
    }
    bad(format!(
        "--slo-*: {unknown:?} has objectives of its own but is not a model of the mix ({})",
        mix.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_models_objectives_are_the_runs_with_its_own_in_their_place() {
        let (all, models) = resolve(
            Some("500ms, adapter-a=300ms"),
            Some("adapter-b=40ms"),
            Some("10s"),
        )
        .expect("valid");
        assert_eq!(
            (all.ttft, all.tpot, all.e2e),
            (Some(ms(500)), None, Some(ms(10_000)))
        );
        let a = models["adapter-a"];
        assert_eq!(
            (a.ttft, a.tpot, a.e2e),
            (Some(ms(300)), None, Some(ms(10_000)))
        );
        let b = models["adapter-b"];
        assert_eq!(
            (b.ttft, b.tpot, b.e2e),
            (Some(ms(500)), Some(ms(40)), Some(ms(10_000)))
        );
        assert_eq!(models.len(), 2);
        assert_eq!(resolve(None, None, None).expect("none").1.len(), 0);
    }

    #[test]
    fn bad_objectives_are_refused_in_one_line() {
        for (text, says) in [
            ("500ms,300ms", "one objective for every request"),
            ("=300ms", "names no model"),
            ("a=1s,a=2s", "is given twice"),
            ("a=soon", "e.g. 90s"),
        ] {
            let e = resolve(Some(text), None, None).expect_err(text).to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
        let (_, models) = resolve(Some("adapter-z=1s"), None, None).expect("valid");
        let mix = ["base".to_owned(), "adapter-a".to_owned()];
        let e = check(&models, &mix)
            .expect_err("not in the mix")
            .to_string();
        assert!(
            e.contains("not a model of the mix (base, adapter-a)"),
            "{e}"
        );
        let e = check(&models, &[]).expect_err("no mix").to_string();
        assert!(e.contains("there is no mix"), "{e}");
    }
}
