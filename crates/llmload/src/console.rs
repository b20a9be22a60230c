//! The terminal's two streams, written so that neither can stop llmload: stdout may be a pipe
//! whose reader has gone (`llmload run … | head -1`) or a full disk, stderr may be closed. The
//! results are on disk before anything is printed, so a failed write never loses a measurement;
//! it must not turn the command's exit code into a panic either.

use std::fmt::Display;
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout. A reader that has gone (a closed pipe) is not an error: what it
/// wanted has been read, and the command keeps its exit code. Any other failure (a full disk) is.
pub fn out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// Writes one line to stderr; a stderr that cannot be written is left alone.
pub fn note(line: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
