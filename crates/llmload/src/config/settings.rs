//! The option types that the flags and the campaign file write differently: lengths (`512`,
//! `"choice:32,256"` or a list) and stages (the flag's text or `[[stages]]` tables). The options
//! themselves are declared in [`super::options`].

use super::parse::bad;
use crate::error::ConfigError;
use crate::workload::length::{self, Length};
use crate::workload::stages::{self, LevelKind, Stage};
use serde::{Deserialize, Deserializer};

/// `--stages`: the flag's text (`10s:rate=2,30s:ramp:rate=8`) or the campaign file's
/// `[[stages]]` tables.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum StagesSetting {
    /// As the flag writes it.
    Text(String),
    /// One table per stage.
    Tables(Vec<StageTable>),
}

/// One `[[stages]]` table: `duration`, one of `rate` and `concurrency`, and `ramp`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageTable {
    /// How long the stage lasts (`30s`).
    pub duration: String,
    /// Open loop: arrivals per second held, or reached at the end of a ramp.
    pub rate: Option<f64>,
    /// Closed-continuous: requests in flight held, or reached at the end of a ramp.
    pub concurrency: Option<u32>,
    /// A linear change from the previous stage's level over this stage.
    #[serde(default)]
    pub ramp: bool,
}

impl StagesSetting {
    /// The stages, not yet validated.
    pub fn stages(&self) -> Result<Vec<Stage>, ConfigError> {
        let tables = match self {
            StagesSetting::Text(text) => {
                return stages::parse(text).map_err(|e| ConfigError(format!("--stages {e}")));
            }
            StagesSetting::Tables(tables) => tables,
        };
        tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = i + 1;
                let duration = crate::num::duration(&t.duration).map_err(|e| {
                    ConfigError(format!("stage {n}: duration {:?}: {e}", t.duration))
                })?;
                let (kind, level) = match (t.rate, t.concurrency) {
                    (Some(r), None) => (LevelKind::Rate, r),
                    (None, Some(c)) => (LevelKind::Concurrency, f64::from(c)),
                    _ => return bad(format!("stage {n}: give one of rate and concurrency")),
                };
                Ok(Stage {
                    duration,
                    kind,
                    level,
                    ramp: t.ramp,
                })
            })
            .collect()
    }
}

/// One item of [`Lengths`]: a token count or a length's text (`512`, `choice:32,256`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum LengthItem {
    /// A fixed length.
    Tokens(u32),
    /// A list or distribution, as the flags write it.
    Spec(String),
}

impl std::str::FromStr for LengthItem {
    type Err = std::convert::Infallible;

    /// A flag's text, checked when the lengths are resolved.
    fn from_str(text: &str) -> Result<LengthItem, Self::Err> {
        Ok(LengthItem::Spec(text.to_owned()))
    }
}

impl std::str::FromStr for StagesSetting {
    type Err = std::convert::Infallible;

    /// The flag's text, checked when the stages are resolved.
    fn from_str(text: &str) -> Result<StagesSetting, Self::Err> {
        Ok(StagesSetting::Text(text.to_owned()))
    }
}

/// Lengths in the campaign file: one (`512`, `"choice:32,256"`) or a list mixing both.
pub(super) fn one_or_many<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<LengthItem>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(LengthItem),
        Many(Vec<LengthItem>),
    }
    Ok(Some(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(item) => vec![item],
        OneOrMany::Many(items) => items,
    }))
}

pub(super) fn lengths(
    what: &str,
    given: Option<Vec<LengthItem>>,
    default: &str,
) -> Result<Vec<Length>, ConfigError> {
    let texts: Vec<String> = given.map_or_else(
        || vec![default.to_owned()],
        |items| {
            items
                .into_iter()
                .map(|item| match item {
                    LengthItem::Tokens(n) => n.to_string(),
                    LengthItem::Spec(s) => s,
                })
                .collect()
        },
    );
    let mut out = Vec::new();
    for text in &texts {
        out.extend(length::parse_list(text).map_err(|e| ConfigError(format!("--{what} {e}")))?);
    }
    if out.is_empty() {
        return bad(format!("--{what} needs one or more values above 0"));
    }
    Ok(out)
}
