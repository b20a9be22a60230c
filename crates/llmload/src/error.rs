//! The library's one error type. Its variants say what went wrong; [`Error::is_usage`] decides
//! the exit code (2 for a bad flag or campaign file, 1 otherwise). Each message is one line:
//! what was being done, then why, from the outermost step in.

use std::fmt::Display;

/// A bad flag or campaign file: reported in one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Why a command could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad flag or campaign file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file that should hold llmload's JSON does not.
    #[error("{what}: {source}")]
    Json {
        /// What was being read.
        what: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A request to the target failed before it could be measured.
    #[error("{what}: {cause}")]
    Http {
        /// The request.
        what: String,
        /// The innermost cause, in words.
        cause: String,
    },
    /// The target is not what the run needs (unreachable, unauthorised, no model, no tokenizer,
    /// an answer that cannot be used).
    #[error("{0}")]
    Target(String),
    /// A signal stopped the command before it had anything to write.
    #[error("{0}")]
    Stopped(String),
    /// Something llmload runs itself failed (a task, the pacer thread, the simulator).
    #[error("{0}")]
    Internal(String),
    /// A step that failed, and what was being done.
    #[error("{what}: {source}")]
    Context {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Whether a signal stopped the command (exit code 4, as for a stopped run).
    pub fn is_stop(&self) -> bool {
        match self {
            Error::Stopped(_) => true,
            Error::Context { source, .. } => source.is_stop(),
            _ => false,
        }
    }

    /// Whether the error is the user's input (exit code 2) rather than the run's.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Config(_) => true,
            Error::Context { source, .. } => source.is_usage(),
            _ => false,
        }
    }
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Says what was being done when an operation failed, turning its error into an [`Error`].
pub trait Context<T> {
    /// With `what` as the step.
    ///
    /// # Errors
    /// The error, in context.
    fn context(self, what: impl Display) -> Result<T>;

    /// With the step computed only on failure.
    ///
    /// # Errors
    /// The error, in context.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

/// Wraps each error type the library meets.
trait Wrap {
    fn wrap(self, what: String) -> Error;
}

impl Wrap for std::io::Error {
    fn wrap(self, what: String) -> Error {
        Error::Io { what, source: self }
    }
}

impl Wrap for serde_json::Error {
    fn wrap(self, what: String) -> Error {
        Error::Json { what, source: self }
    }
}

impl Wrap for tokio::task::JoinError {
    fn wrap(self, what: String) -> Error {
        Error::Internal(format!("{what}: {self}"))
    }
}

impl Wrap for Error {
    fn wrap(self, what: String) -> Error {
        Error::Context {
            what,
            source: Box::new(self),
        }
    }
}

impl<T, E: Wrap> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| e.wrap(what.to_string()))
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| e.wrap(what().to_string()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.ok_or_else(|| Error::Target(what.to_string()))
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| Error::Target(what().to_string()))
    }
}

/// The innermost cause of `error`, in words (a connection refused, not "error sending request").
pub fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_reads_outermost_first_and_keeps_usage_errors_usage() {
        let io: std::io::Result<()> = Err(std::io::Error::other("disk full"));
        let e = io
            .context("writing a.json")
            .context("case c1")
            .expect_err("failed");
        assert_eq!(e.to_string(), "case c1: writing a.json: disk full");
        assert!(!e.is_usage());
        let usage: Result<()> = Err(ConfigError("--rate must be above 0".into()).into());
        let e = usage.context("sweep").expect_err("failed");
        assert!(e.is_usage());
        assert_eq!(
            None::<u8>
                .context("no model")
                .expect_err("none")
                .to_string(),
            "no model"
        );
    }
}
