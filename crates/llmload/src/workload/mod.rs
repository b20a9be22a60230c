//! Workload: what each request asks for — its exact-length prompt, its input and output lengths
//! (fixed or drawn from a distribution) — and when open-loop requests arrive.
//!
//! Prompts come from a public-domain text bundled with llmload (or `--corpus FILE`), tokenized by
//! the target itself so that the lengths are exact in the server's own vocabulary.

pub mod dataset;
pub mod graph;
pub mod image;
pub mod length;
pub mod mix;
pub mod prompt;
pub mod schedule;
pub mod session;
pub mod shape;
pub mod shard;
pub mod source;
pub mod stages;
pub mod trace;

/// The text bundled with llmload: the Declaration of Independence and the Gettysburg Address.
pub const BUNDLED_CORPUS: &str = include_str!("../../corpus/declaration.txt");

/// The text prompts are built from: the file at `path` (`--corpus`), else the bundled text.
pub fn read_corpus(path: Option<&std::path::Path>) -> crate::error::Result<String> {
    use crate::error::Context;
    match path {
        Some(path) => crate::files::read_text(path)
            .with_context(|| format!("reading --corpus {}", path.display())),
        None => Ok(BUNDLED_CORPUS.to_owned()),
    }
}

/// The text of an input file (`what`: "a trace", "a dataset") of at most `max` bytes, or why
/// not, in words that name the file.
pub fn read_bounded(path: &std::path::Path, max: u64, what: &str) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let Some(bytes) = crate::files::read_at_most(path, max).map_err(cannot)? else {
        return Err(format!(
            "{}: more than {what}'s {max} bytes",
            path.display()
        ));
    };
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}
