//! Reading a campaign file into [`Settings`]: its keys are the options' (the flag names with `_`
//! for `-`); any other is refused with its line and the nearest key. The read itself is bounded,
//! so that a device or a pipe (`/dev/zero`, `<(cmd)`) is refused as soon as it passes the bound.

use super::options::Settings;
use super::parse::bad;
use crate::error::ConfigError;
use std::path::Path;

impl Settings {
    /// Reads a campaign file: its keys are the options' (the flag names with `_` for `-`);
    /// any other key is refused with its line.
    pub fn read(path: &Path) -> Result<Settings, ConfigError> {
        read_file(path)
    }
}

/// The largest campaign file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_file(path: &Path) -> Result<Settings, ConfigError> {
    let text = read_bounded(path)?;
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
            "{}:{line}: {}{message} (in `{content}`)",
            path.display(),
            what_it_takes(&message, &content)
        ))
    })
}

/// Before a type error of the TOML reader ("invalid type: string \"4\", expected u32"), what
/// the key takes with an example ("`rounds` takes a whole number, e.g. `rounds = 3`: "); else
/// nothing.
fn what_it_takes(message: &str, content: &str) -> String {
    let key = content.split('=').next().unwrap_or("").trim();
    let taken = [
        ("expected u", "a whole number", "3"),
        ("expected i", "a whole number", "3"),
        ("expected f", "a number", "0.5"),
        ("expected a boolean", "true or false", "true"),
        ("expected a sequence", "a list", "[1, 2]"),
        ("expected a string", "text in quotes", "\"…\""),
    ]
    .into_iter()
    .find(|(said, _, _)| message.contains(said));
    match taken {
        Some((_, what, example)) if !key.is_empty() => {
            format!("`{key}` takes {what}, e.g. `{key} = {example}`: ")
        }
        _ => String::new(),
    }
}

/// The file's text, read up to one byte past the bound whatever its size says.
fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    let cannot = |e: std::io::Error| ConfigError(format!("cannot read {}: {e}", path.display()));
    let Some(bytes) = crate::files::read_at_most(path, MAX_FILE_BYTES).map_err(cannot)? else {
        return bad(format!(
            "{}: more than a campaign file's {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    };
    String::from_utf8(bytes).or_else(|_| bad(format!("{}: not UTF-8 text", path.display())))
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
