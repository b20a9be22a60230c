//! Errors at the simulator's seams: configuration (profiles, fault specs, options). Accept
//! errors are retried, not returned. Request-level failures are HTTP answers, not `SimError`s (see `server::reply`).

use std::path::PathBuf;

/// Everything that can stop the simulator from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A profile file could not be read.
    #[error("cannot read profile {path}: {source}")]
    ProfileRead {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A profile is not valid TOML or does not have the expected fields.
    #[error("cannot parse profile {origin}: {message}")]
    ProfileParse {
        /// Where the profile came from (a path or `built-in NAME`).
        origin: String,
        /// The parser's message, on one line.
        message: String,
    },
    /// A profile parsed but one of its values is out of range.
    #[error("invalid profile `{name}`: {reason}")]
    InvalidProfile {
        /// The profile's name.
        name: String,
        /// Which value is wrong and why.
        reason: String,
    },
    /// No built-in profile has this name.
    #[error("unknown built-in profile `{name}` (built-ins: {known})")]
    UnknownProfile {
        /// The name that was asked for.
        name: String,
        /// The built-in names, comma separated.
        known: String,
    },
    /// A `--fault` specification does not follow the grammar.
    #[error("invalid fault spec `{spec}`: {reason}")]
    InvalidFault {
        /// The specification as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A simulator option (slots, time scale, …) is out of range.
    #[error("invalid simulator option: {0}")]
    InvalidOption(String),
}
