//! The attempt directory `<out>/<campaign>/<attempt-id>/` and what describes it (`campaign.json`).
//! Every attempt gets its own id and folder; nothing ever merges two attempts.

pub mod campaign;
pub(crate) mod closing;
pub mod keys;
pub mod load;
pub mod rebuild;
pub mod records;
pub mod series;

use crate::error::{Context, Error};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Layout version of `campaign.json`, `requests.jsonl` and `summary.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// An attempt's identity and folder.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// `YYYYMMDDTHHMMSSZ-xxxx`.
    pub id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Wall-clock start, RFC 3339.
    pub started_at: String,
}

impl Attempt {
    /// Creates a new attempt folder under `out/name/`.
    pub fn create(out: &Path, name: &str) -> crate::error::Result<Attempt> {
        let now = SystemTime::now();
        let started_at = humantime::format_rfc3339_seconds(now).to_string();
        let stamp: String = started_at
            .chars()
            .filter(|c| !matches!(c, '-' | ':'))
            .collect();
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let parent = out.join(name);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        for n in 0..64u32 {
            let suffix = (nanos ^ std::process::id().rotate_left(16)).wrapping_add(n) & 0xffff;
            let id = format!("{stamp}-{suffix:04x}");
            let dir = parent.join(&id);
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    return Ok(Attempt {
                        id,
                        dir,
                        started_at,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
            }
        }
        Err(Error::Internal(format!(
            "could not create a fresh attempt folder under {}",
            parent.display()
        )))
    }

    /// Creates the attempt folder `out/name/id` for an id given (`--attempt-id`, a shard's
    /// folder, a merge); refuses one that exists, so that no two runs share a folder.
    pub fn create_named(out: &Path, name: &str, id: &str) -> crate::error::Result<Attempt> {
        let parent = out.join(name);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let dir = parent.join(id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(crate::config::ConfigError(format!(
                    "{} exists already: an attempt with this id was written there; give another \
                     --attempt-id or --out",
                    dir.display()
                ))
                .into())
            }
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
        Ok(Attempt {
            id: id.to_owned(),
            dir,
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        })
    }

    /// Writes `value` as pretty JSON to `file` in the attempt folder (atomically: temp + rename).
    pub fn write_json(&self, file: &str, value: &impl Serialize) -> crate::error::Result<()> {
        let text =
            serde_json::to_string_pretty(value).with_context(|| format!("writing {file}"))?;
        self.write_text(file, &text)
    }

    /// Writes `text` to `file` in the attempt folder (atomically), every secret sent scrubbed
    /// from it (a server may have echoed one).
    pub fn write_text(&self, file: &str, text: &str) -> crate::error::Result<()> {
        let text = crate::secrets::scrub(text);
        let text = text.as_ref();
        let path = self.dir.join(file);
        let temp = self.dir.join(format!(".{file}.tmp"));
        // A failed write (a full disk) leaves no temporary file behind, and the message names
        // the file that was being written.
        let written = std::fs::write(&temp, text).and_then(|()| std::fs::rename(&temp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.with_context(|| format!("writing {}", path.display()))
    }
}

/// A shard's `start.json`: when its load began, written the moment it did.
pub const START_FILE: &str = "start.json";

/// Writes `start` to `path` (atomically: temp + rename).
pub fn write_start(
    path: &Path,
    start: &crate::summary::shards::LoadStart,
) -> crate::error::Result<()> {
    let text = serde_json::to_string_pretty(start).context("writing start.json")?;
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .with_context(|| format!("writing {}", path.display()))
}

/// A shard's `start.json` in `dir`, when it wrote one.
pub fn read_start(dir: &Path) -> Option<crate::summary::shards::LoadStart> {
    let text = std::fs::read_to_string(dir.join(START_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}
