//! Reading a campaign file into [`Settings`], and the option types that the flags and the file
//! write differently: lengths (`512`, `"choice:32,256"` or a list) and stages (the flag's text
//! or `[[stages]]` tables). The options themselves are declared in [`super::options`].

use super::options::Settings;
use super::{bad, ConfigError};
use crate::workload::length::{self, Length};
use crate::workload::stages::{self, LevelKind, Stage};
use serde::{Deserialize, Deserializer};
use std::path::Path;

impl Settings {
    /// Reads a campaign file: its keys are the options' (the flag names with `_` for `-`);
    /// any other key is refused with its line.
    pub fn read(path: &Path) -> Result<Settings, ConfigError> {
        read_file(path)
    }
}

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
                let duration = humantime::parse_duration(t.duration.trim()).map_err(|e| {
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

/// The largest campaign file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_file(path: &Path) -> Result<Settings, ConfigError> {
    let size = std::fs::metadata(path)
        .or_else(|e| bad(format!("cannot read {}: {e}", path.display())))?
        .len();
    if size > MAX_FILE_BYTES {
        return bad(format!(
            "{}: {size} bytes, more than a campaign file's {MAX_FILE_BYTES}",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .or_else(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    check_keys(path, &text)?;
    Settings::from_toml(&text).or_else(|e| {
        let message: String = e.message().trim().chars().take(300).collect();
        let Some(span) = e.span() else {
            return bad(format!("{}: {message}", path.display()));
        };
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        let content: String = text
            .lines()
            .nth(line - 1)
            .unwrap_or("")
            .trim()
            .chars()
            .take(120)
            .collect();
        bad(format!(
            "{}:{line}: {message} (in `{content}`)",
            path.display()
        ))
    })
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

/// Refuses a key that is no option's, naming its line and the nearest option's key.
fn check_keys(path: &Path, text: &str) -> Result<(), ConfigError> {
    // A file that does not parse is left to the full read, which says where.
    let Ok(table) = toml::de::DeTable::parse(text) else {
        return Ok(());
    };
    let known = Settings::keys();
    let Some(key) = table
        .get_ref()
        .keys()
        .find(|k| !known.iter().any(|n| n == k.get_ref().as_ref()))
    else {
        return Ok(());
    };
    let name: String = key
        .get_ref()
        .chars()
        .take(60)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let line = text[..key.span().start.min(text.len())]
        .matches('\n')
        .count()
        + 1;
    let nearest = known
        .iter()
        .map(|k| (edit_distance(k, key.get_ref()), k))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map_or_else(String::new, |(_, k)| format!("; did you mean `{k}`?"));
    bad(format!(
        "{}:{line}: unknown key `{name}` (a campaign file's keys are run's flag names with `_` \
         for `-`){nearest}",
        path.display()
    ))
}

/// Levenshtein distance, for suggesting a key.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}
