//! The terminal's two streams, written so that neither can stop llmload: stdout may be a pipe
//! whose reader has gone (`llmload run … | head -1`) or a full disk, stderr may be closed. The
//! results are on disk before anything is printed, so a failed write never loses a measurement;
//! it must not turn the command's exit code into a panic either.
//!
//! Both streams also carry text that came from a server (a model id, an error body): a control
//! character in it could move the cursor, clear the screen, retitle the window or forge lines, so
//! everything written here is passed through [`printable`] first, and through the secrets'
//! scrubber (a server may echo the key it was sent).

use std::borrow::Cow;
use std::fmt::Display;
use std::fmt::Write as _;
use std::io::{ErrorKind, IsTerminal as _, Write};

/// Writes `text` to stdout. A reader that has gone (a closed pipe) is not an error: what it
/// wanted has been read, and the command keeps its exit code. Any other failure (a full disk) is.
pub fn out(text: &str) -> std::io::Result<()> {
    let text = crate::secrets::scrub(text);
    let text = printable(&text);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// Where [`note`] sends its lines instead of stderr, while something else holds the terminal.
type Divert = Box<dyn Fn(&str) + Send>;

static DIVERTED: std::sync::Mutex<Option<Divert>> = std::sync::Mutex::new(None);

/// Sends every [`note`] to `to` (the live view, which shows the line and writes it after it has
/// given the screen back) until called with `None`.
pub fn divert(to: Option<Divert>) {
    *DIVERTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = to;
}

/// Writes one line to stderr (or where it is diverted to); a stderr that cannot be written is
/// left alone.
pub fn note(line: impl Display) {
    let line = line.to_string();
    let line = crate::secrets::scrub(&line);
    let line = printable(&line);
    if let Some(to) = DIVERTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        to(&line);
        return;
    }
    // On a terminal a long line wraps at spaces to its width; elsewhere it stays one line.
    if std::io::stderr().is_terminal() {
        let mut wrapped = String::new();
        for part in line.lines() {
            wrap(part, usize::from(width()), &mut wrapped);
        }
        let _ = write!(std::io::stderr().lock(), "{wrapped}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// The width a table is fitted to without a `COLUMNS` that says otherwise.
const DEFAULT_WIDTH: u16 = 100;

/// The terminal's width: `COLUMNS` where the shell exports it, else the width of the terminal
/// that stdout or stderr is, else [`DEFAULT_WIDTH`]; never under 40.
pub fn width() -> u16 {
    let given = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok());
    let terminal = || {
        terminal_size::terminal_size_of(std::io::stdout())
            .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
            .map(|(w, _)| w.0)
    };
    given.or_else(terminal).unwrap_or(DEFAULT_WIDTH).max(40)
}

/// `text` wrapped at spaces into lines of at most `width` characters, onto `out`.
pub fn wrap(text: &str, width: usize, out: &mut String) {
    let indent: String = text.chars().take_while(|c| *c == ' ').collect();
    let mut line = indent.clone();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let taken = line.chars().count();
        if taken > indent.len() && taken + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line.clone_from(&indent);
            // A continuation is indented: under a list item's text, not its dash; under a
            // message's first word.
            line.push_str("  ");
        }
        if line.chars().count() > indent.len() && !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// `text` with every character that a terminal could act on written out as an escape
/// (`\u{1b}`): the C0 and C1 controls and DEL (line ends and tabs aside), and the Unicode
/// controls that reorder or hide text (bidirectional overrides and isolates, zero-width marks).
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts_on_terminal(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn a_diverted_note_goes_where_it_is_sent_made_printable_until_the_diversion_ends() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        super::divert(Some(Box::new(move |line| {
            sink.lock().expect("lock").push(line.to_owned());
        })));
        super::note("warning: a diverted note \u{1b}[2J");
        super::divert(None);
        super::note("warning: not diverted");
        let seen = seen.lock().expect("lock");
        assert!(
            seen.contains(&"warning: a diverted note \\u{1b}[2J".to_owned()),
            "{seen:?}"
        );
        assert!(!seen.iter().any(|l| l.contains("not diverted")), "{seen:?}");
    }

    #[test]
    fn controls_are_written_out_and_plain_text_is_left_alone() {
        assert_eq!(printable("model qwen3\tok\n"), "model qwen3\tok\n");
        assert_eq!(
            printable("a\x1b]0;owned\x07b\r\x1b[2Jc"),
            "a\\u{1b}]0;owned\\u{7}b\\u{d}\\u{1b}[2Jc"
        );
        // C1 (8-bit CSI), DEL and a bidirectional override are escaped too.
        assert_eq!(
            printable("\u{9b}31m\u{7f}\u{202e}x"),
            "\\u{9b}31m\\u{7f}\\u{202e}x"
        );
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
    }
}
