//! Workload: prompts from a dataset file (`--dataset`), read once from a local path, never
//! fetched. One format per line, detected from its key:
//!
//! ```text
//! {"prompt": "Why is the sky blue?", "answer": "Because…"}
//! {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}
//! {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]}
//! ```
//!
//! A file that opens with `[` is one JSON array of such objects (`ShareGPT`'s own layout). A
//! `messages` entry whose last message is the assistant's keeps it as the answer; a
//! `conversations` entry is its first human turn and the turn that answers it.

use serde::Deserialize;
use std::path::Path;

/// A dataset that cannot be used, in words (file and line, or entry).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DatasetError(String);

/// The largest dataset file read.
pub const MAX_DATASET_BYTES: u64 = 1 << 30;

pub use crate::api::Message;

/// What an entry asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    /// One text.
    Text(String),
    /// A conversation, sent as messages on the chat API.
    Messages(Vec<Message>),
}

impl Ask {
    /// The entry's text as one string: a conversation's messages joined by blank lines.
    pub fn text(&self) -> String {
        match self {
            Ask::Text(text) => text.clone(),
            Ask::Messages(messages) => crate::api::joined(messages),
        }
    }
}

/// One dataset entry: the prompt, and the dataset's own answer when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What is sent.
    pub ask: Ask,
    /// The dataset's answer (its token count may set the requested output length).
    pub answer: Option<String>,
}

/// How a dataset's prompts are sized (`--dataset-lengths`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Lengths {
    /// Cut or repeated to exactly the case's input tokens, after a nonce: verified exactly.
    #[default]
    Fit,
    /// Sent as the dataset has it: the server's count is the request's input length.
    AsIs,
}

impl Lengths {
    /// The mode's name, as the flag and `campaign.json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Lengths::Fit => "fit",
            Lengths::AsIs => "as-is",
        }
    }
}

/// Where a dataset run's requested output lengths come from (`--dataset-output`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Output {
    /// The case's `--output-tokens`.
    #[default]
    Fixed,
    /// The entry's answer, counted with the server's tokenizer.
    FromDataset,
}

impl Output {
    /// The mode's name, as the flag and `campaign.json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Output::Fixed => "fixed",
            Output::FromDataset => "from-dataset",
        }
    }
}

/// A line (or array element) as written: exactly one of the three shapes; other keys ignored.
#[derive(Deserialize)]
struct Line {
    prompt: Option<String>,
    answer: Option<String>,
    messages: Option<Vec<Message>>,
    conversations: Option<Vec<Turn>>,
}

/// A `ShareGPT` turn.
#[derive(Deserialize)]
struct Turn {
    from: String,
    value: String,
}

/// The dataset's entries, in file order.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Every entry.
    pub entries: Vec<Entry>,
    /// The file's length, bytes.
    pub bytes: u64,
    /// The FNV-1a 64-bit digest of the file's bytes, 16 hex digits: which version of a file of
    /// that name the prompts came from.
    pub digest: String,
}

/// A dataset's name in case ids: its file's stem, letters, digits, `.`, `_` and `-` kept (any
/// other character as `_`), at most 32 characters.
pub fn id_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map_or_else(|| "dataset".into(), |s| s.to_string_lossy().into_owned());
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect()
}

/// The FNV-1a 64-bit digest of `bytes`, 16 hex digits.
pub fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

impl Dataset {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Dataset, DatasetError> {
        let text =
            super::read_bounded(path, MAX_DATASET_BYTES, "a dataset").map_err(DatasetError)?;
        Dataset::parse(&text).map_err(|e| DatasetError(format!("{}{e}", path.display())))
    }

    /// Parses a dataset's text; errors start with `:LINE: ` or ` entry N: ` to follow the path.
    pub fn parse(text: &str) -> Result<Dataset, DatasetError> {
        let entries = if text.trim_start().starts_with('[') {
            let lines: Vec<serde_json::Value> = serde_json::from_str(text)
                .map_err(|e| DatasetError(format!(": not a JSON array of entries: {e}")))?;
            lines
                .into_iter()
                .enumerate()
                .map(|(i, value)| {
                    serde_json::from_value::<Line>(value)
                        .map_err(|e| e.to_string())
                        .and_then(entry)
                        .map_err(|e| DatasetError(format!(" entry {}: {e}", i + 1)))
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, line)| {
                    serde_json::from_str::<Line>(line)
                        .map_err(|e| e.to_string())
                        .and_then(entry)
                        .map_err(|e| DatasetError(format!(":{}: {e}", i + 1)))
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        if entries.is_empty() {
            return Err(DatasetError(": holds no prompts".into()));
        }
        Ok(Dataset {
            entries,
            bytes: text.len() as u64,
            digest: digest(text.as_bytes()),
        })
    }

    /// The entry the `serial`-th request gets: consecutive serials take distinct entries over a
    /// whole pass of the dataset (so concurrent requests never share one while it lasts), in an
    /// order that `seed` picks. Returns the entry's index (0-based, in file order).
    pub fn pick(&self, serial: u64, seed: u64) -> usize {
        super::prompt::offset(serial, super::prompt::splitmix64(seed), self.entries.len())
    }
}

/// The entry of a line, or why it is none.
fn entry(line: Line) -> Result<Entry, String> {
    let entry = match (line.prompt, line.messages, line.conversations) {
        (Some(prompt), None, None) => Entry {
            ask: Ask::Text(prompt),
            answer: line.answer,
        },
        (None, Some(mut messages), None) => {
            let answer = match messages.last() {
                Some(last) if last.role == "assistant" && messages.len() > 1 => {
                    messages.pop().map(|m| m.content)
                }
                _ => line.answer,
            };
            if messages.is_empty() {
                return Err("\"messages\" is empty".into());
            }
            Entry {
                ask: Ask::Messages(messages),
                answer,
            }
        }
        (None, None, Some(turns)) => {
            let asked = turns
                .iter()
                .position(|t| matches!(t.from.as_str(), "human" | "user"))
                .ok_or("no \"human\" turn in \"conversations\"")?;
            Entry {
                ask: Ask::Text(turns[asked].value.clone()),
                answer: turns.get(asked + 1).map(|t| t.value.clone()),
            }
        }
        _ => {
            return Err(
                "each entry needs exactly one of \"prompt\", \"messages\" or \"conversations\""
                    .into(),
            )
        }
    };
    if entry.ask.text().trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_shape_is_read() {
        let text = "{\"prompt\": \"a b\", \"answer\": \"c\", \"id\": 7}\n\n\
             {\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, \
              {\"role\": \"user\", \"content\": \"u\"}, {\"role\": \"assistant\", \"content\": \"x\"}]}\n\
             {\"conversations\": [{\"from\": \"system\", \"value\": \"s\"}, \
              {\"from\": \"human\", \"value\": \"h\"}, {\"from\": \"gpt\", \"value\": \"g\"}]}\n\
             {\"messages\": [{\"role\": \"user\", \"content\": \"only\"}]}\n";
        let d = Dataset::parse(text).expect("valid");
        assert_eq!(d.entries.len(), 4);
        assert_eq!(d.entries[0].ask, Ask::Text("a b".into()));
        assert_eq!(d.entries[0].answer.as_deref(), Some("c"));
        let Ask::Messages(m) = &d.entries[1].ask else {
            panic!("messages")
        };
        assert_eq!(m.len(), 2);
        assert_eq!(d.entries[1].answer.as_deref(), Some("x"));
        assert_eq!(d.entries[1].ask.text(), "s\n\nu");
        assert_eq!(d.entries[2].ask, Ask::Text("h".into()));
        assert_eq!(d.entries[2].answer.as_deref(), Some("g"));
        assert_eq!(d.entries[3].answer, None);
    }

    #[test]
    fn a_sharegpt_array_is_read_and_its_bad_entry_named() {
        let good = "[{\"id\": \"x\", \"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, \
                    {\"from\": \"gpt\", \"value\": \"a\"}]}]";
        let d = Dataset::parse(good).expect("valid");
        assert_eq!(d.entries[0].answer.as_deref(), Some("a"));
        let bad = "[{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}, \
                   {\"conversations\": [{\"from\": \"gpt\", \"value\": \"a\"}]}]";
        let e = Dataset::parse(bad).expect_err("no human turn").to_string();
        assert!(e.starts_with(" entry 2: no \"human\" turn"), "{e}");
    }

    #[test]
    fn bad_lines_are_named() {
        let cases = [
            ("{\"prompt\": \"a\"}\n{\"prompt\": 3}\n", ":2: "),
            (
                "{\"prompt\": \"a\"}\n\n{\"text\": \"a\"}\n",
                ":3: each entry needs",
            ),
            (
                "{\"prompt\": \"a\", \"messages\": []}\n",
                ":1: each entry needs",
            ),
            ("{\"prompt\": \"  \"}\n", ":1: the prompt is empty"),
            ("{\"messages\": []}\n", ":1: \"messages\" is empty"),
            ("not json\n", ":1: "),
            ("\n\n", ": holds no prompts"),
        ];
        for (text, expected) in cases {
            let e = Dataset::parse(text).expect_err(text).to_string();
            assert!(e.starts_with(expected), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_dataset_is_named_by_its_file_and_its_digest() {
        let text = "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n";
        let d = Dataset::parse(text).expect("two prompts");
        assert_eq!(d.bytes, text.len() as u64);
        assert_eq!(d.digest.len(), 16);
        // Another version of the file (one byte changed) has another digest.
        let other = Dataset::parse(&text.replace('b', "c")).expect("two prompts");
        assert_ne!(d.digest, other.digest);
        // The FNV-1a 64 of nothing is its offset basis.
        assert_eq!(digest(b""), "cbf29ce484222325");
        assert_eq!(
            id_name(Path::new("/data/my prompts (v2).jsonl")),
            "my_prompts__v2_"
        );
    }

    #[test]
    fn picks_are_deterministic_and_never_repeat_within_a_pass() {
        let entries = (0..10)
            .map(|i| Entry {
                ask: Ask::Text(format!("p{i}")),
                answer: None,
            })
            .collect();
        let d = Dataset {
            entries,
            bytes: 0,
            digest: digest(b""),
        };
        let picks: Vec<usize> = (0..10).map(|s| d.pick(s, 42)).collect();
        assert_eq!(picks, (0..10).map(|s| d.pick(s, 42)).collect::<Vec<_>>());
        let mut distinct = picks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 10, "{picks:?}");
        assert!((0..100).all(|s| d.pick(s, 42) != d.pick(s + 1, 42)));
        assert_ne!(picks, (0..10).map(|s| d.pick(s, 43)).collect::<Vec<_>>());
    }
}
