//! The attempt directory `<out>/<campaign>/<attempt-id>/` and what describes it (`campaign.json`).
//! Every attempt gets its own id and folder; nothing ever merges two attempts.

pub mod campaign;
pub(crate) mod closing;
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
                return Err(exists_already(&dir))
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
        self.write_pieces(file, |emit| emit(text))
    }

    /// Writes to `file` in the attempt folder (atomically) the pieces `write` passes to its
    /// `emit`, each scrubbed of every secret sent and written as it comes: a page is never held
    /// whole. A piece must be whole text (a secret is looked for within a piece, not across two).
    pub fn write_pieces(
        &self,
        file: &str,
        write: impl FnOnce(&mut dyn FnMut(&str) -> std::io::Result<()>) -> std::io::Result<()>,
    ) -> crate::error::Result<()> {
        use std::io::Write;
        let path = self.dir.join(file);
        let temp = self.dir.join(format!(".{file}.tmp"));
        // A failed write (a full disk) leaves no temporary file behind, and the message names
        // the file that was being written.
        // A stop signal meanwhile removes it too ([`crate::files::remove_scratch_for_exit`]).
        crate::files::scratch(&temp);
        let written = std::fs::File::create(&temp)
            .and_then(|f| {
                let mut out = std::io::BufWriter::new(f);
                write(&mut |piece| out.write_all(crate::secrets::scrub(piece).as_bytes()))?;
                out.flush()
            })
            .and_then(|()| std::fs::rename(&temp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        crate::files::done_with(&temp);
        written.with_context(|| format!("writing {}", path.display()))
    }

    /// Creates the attempt `out/name/id` as [`Attempt::create_named`] does, but written in a
    /// hidden folder beside it (`out/name/.id.partial`) until [`Attempt::publish`] moves it into
    /// place whole: a command stopped half-way leaves no folder that looks like a real attempt.
    /// A hidden folder left by such a stop is this attempt's own leftover: it is replaced.
    pub fn create_staged(out: &Path, name: &str, id: &str) -> crate::error::Result<Attempt> {
        let parent = out.join(name);
        let placed = parent.join(id);
        if placed.exists() {
            return Err(exists_already(&placed));
        }
        let staged = parent.join(format!(".{id}.partial"));
        if staged.exists() {
            std::fs::remove_dir_all(&staged)
                .with_context(|| format!("replacing the leftover {}", staged.display()))?;
        }
        std::fs::create_dir_all(&staged)
            .with_context(|| format!("creating {}", staged.display()))?;
        crate::files::scratch(&staged);
        Ok(Attempt {
            id: id.to_owned(),
            dir: staged,
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        })
    }

    /// Moves a staged attempt ([`Attempt::create_staged`]) into its place, in one rename.
    pub fn publish(self) -> crate::error::Result<Attempt> {
        let placed = self.dir.with_file_name(&self.id);
        let moved = std::fs::rename(&self.dir, &placed);
        crate::files::done_with(&self.dir);
        if placed.exists() && moved.is_err() {
            return Err(exists_already(&placed));
        }
        moved.with_context(|| format!("moving the attempt into {}", placed.display()))?;
        Ok(Attempt {
            dir: placed,
            ..self
        })
    }
}

/// The refusal of an attempt folder that exists already.
fn exists_already(dir: &Path) -> Error {
    crate::config::ConfigError(format!(
        "{} exists already: an attempt with this id was written there; give another \
         --attempt-id or --out",
        dir.display()
    ))
    .into()
}

/// Refuses a file that a newer llmload wrote (`schema_version` above [`SCHEMA_VERSION`]), before
/// anything in it is read: its fields may mean what this one cannot know. A file without the
/// field, or that is not JSON, is left to its full read.
pub fn check_schema(path: &Path, text: &str) -> crate::error::Result<()> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        schema_version: Option<serde_json::Value>,
    }
    let Ok(Versioned {
        schema_version: Some(version),
    }) = serde_json::from_str::<Versioned>(text)
    else {
        return Ok(());
    };
    match version.as_u64() {
        Some(n) if n <= u64::from(SCHEMA_VERSION) => Ok(()),
        Some(n) => Err(Error::Target(format!(
            "{}: written by a newer llmload (schema {n}, this one reads ≤ {SCHEMA_VERSION})",
            path.display()
        ))),
        None => Err(Error::Target(format!(
            "{}: its schema_version {version} is no version (a whole number from 1)",
            path.display()
        ))),
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
    let text = crate::files::read_text(&dir.join(START_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::{check_schema, Attempt};

    #[test]
    fn a_file_from_a_newer_llmload_is_refused_in_one_line() {
        let path = std::path::Path::new("summary.json");
        assert!(check_schema(path, r#"{"schema_version": 1, "cases": []}"#).is_ok());
        assert!(
            check_schema(path, r#"{"cases": []}"#).is_ok(),
            "no version: left alone"
        );
        let newer =
            check_schema(path, r#"{"cases": "whatever", "schema_version": 7}"#).expect_err("newer");
        assert_eq!(
            newer.to_string(),
            "summary.json: written by a newer llmload (schema 7, this one reads ≤ 1)"
        );
        let absurd = check_schema(path, r#"{"schema_version": -3}"#).expect_err("not a version");
        assert!(absurd.to_string().contains("no version"), "{absurd}");
    }

    #[test]
    fn a_staged_attempt_appears_whole_and_replaces_its_own_leftover() {
        let out = tempfile::tempdir().expect("temp dir");
        let parent = out.path().join("merged");
        // What a merge stopped half-way left: a hidden folder, half its files.
        let leftover = parent.join(".A1.partial");
        std::fs::create_dir_all(&leftover).expect("mkdir");
        std::fs::write(leftover.join("requests.jsonl"), "{\"half\":").expect("write");
        let staged = Attempt::create_staged(out.path(), "merged", "A1").expect("replaces it");
        assert!(
            !staged.dir.join("requests.jsonl").exists(),
            "the leftover is gone"
        );
        staged.write_text("summary.json", "{}").expect("write");
        assert!(
            !parent.join("A1").exists(),
            "nothing in place before it is whole"
        );
        let placed = staged.publish().expect("moved into place");
        assert_eq!(placed.dir, parent.join("A1"));
        assert!(placed.dir.join("summary.json").is_file() && !leftover.exists());
        // Once in place, the same id is refused, as any attempt's.
        let again = Attempt::create_staged(out.path(), "merged", "A1").expect_err("exists");
        assert!(again.to_string().contains("exists already"), "{again}");
    }
}
