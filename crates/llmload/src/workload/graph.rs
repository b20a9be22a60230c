//! Workload: session graphs (`--dag FILE`), the calls of agents. A JSONL file, one call a line:
//!
//! ```text
//! {"session": "s1", "call": "plan", "new_tokens": 200, "output_tokens": 40}
//! {"session": "s1", "call": "search", "after": ["plan"], "wait_ms": 100, "new_tokens": 80, "output_tokens": 30}
//! {"session": "s1", "call": "answer", "after": ["search"], "wait_ms": 200, "context": "plan", "new_tokens": 60, "output_tokens": 50}
//! ```
//!
//! A call starts when every call it is `after` has ended, plus its `wait_ms` (the tool or think
//! time) after the last of them; calls whose parents end together start together (fan-out). Its
//! prompt extends its `context` call's (that call's prompt and its answer, then `new_tokens` of
//! its own: the history a prefix cache may serve), or opens a fresh context (`context` absent
//! or null: a subagent with its own prompt). The context must be a call it waits for, directly or
//! through others. A session's final answer is the call marked `"final": true`, else its last
//! call (in the file's order) that no other waits for.

mod foreign;
pub mod synth;

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// A graph that cannot be replayed, in words (file and line).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GraphError(String);

/// The largest graph file read.
pub const MAX_GRAPH_BYTES: u64 = 256 << 20;
/// The most calls of one session (as `--turns`).
pub const MAX_CALLS: usize = 1000;
/// The longest session or call id.
const MAX_ID: usize = 128;
/// The longest `wait_ms`: a day.
const MAX_WAIT_MS: f64 = 86_400_000.0;

/// The sessions of a graph file, in the order of their first call.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Its sessions.
    pub sessions: Vec<GraphSession>,
}

/// One session: its calls in the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphSession {
    /// Its id in the file.
    pub name: String,
    /// Its calls.
    pub calls: Vec<GraphCall>,
    /// The index of its final answer's call.
    pub final_call: usize,
}

/// One call of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphCall {
    /// Its id in the file.
    pub name: String,
    /// The calls (indices in the session) that must end before it starts.
    pub after: Vec<usize>,
    /// After the last of them, before it starts.
    pub wait: Duration,
    /// The call whose prompt and answer its prompt extends; `None`: a fresh context.
    pub context: Option<usize>,
    /// Tokens its prompt adds (the whole prompt, for a fresh context).
    pub new_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
    /// Whether another call extends its context (its answer is then kept for it).
    pub extended: bool,
}

/// An id as written: a string or a whole number.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Id {
    Text(String),
    Number(u64),
}

impl Id {
    fn text(self) -> String {
        match self {
            Id::Text(t) => t,
            Id::Number(n) => n.to_string(),
        }
    }
}

/// A line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    session: Id,
    call: Id,
    #[serde(default)]
    after: Vec<Id>,
    #[serde(default)]
    wait_ms: f64,
    #[serde(default)]
    context: Option<Id>,
    new_tokens: u32,
    output_tokens: u32,
    #[serde(default, rename = "final")]
    is_final: bool,
}

/// Reads and checks a graph file.
/// A folder's files are read in name order, each a graph of its own sessions (the KV-cache
/// tester keeps one conversation a file), within [`MAX_GRAPH_BYTES`] together.
pub fn load(path: &Path) -> Result<Graph, GraphError> {
    let files = if path.is_dir() {
        let cannot = |e: std::io::Error| GraphError(format!("cannot read {}: {e}", path.display()));
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(cannot)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(cannot)?;
        files.retain(|f| f.is_file());
        files.sort();
        if files.is_empty() {
            return Err(GraphError(format!(
                "{}: no file in the folder",
                path.display()
            )));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut sessions = Vec::new();
    let mut left = MAX_GRAPH_BYTES;
    for file in &files {
        let text = super::read_bounded(file, left, "a session graph").map_err(GraphError)?;
        left = left.saturating_sub(text.len() as u64);
        let graph = parse(&text).map_err(|e| GraphError(format!("{}: {e}", file.display())))?;
        sessions.extend(graph.sessions);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = sessions.iter().find(|s| !seen.insert(s.name.as_str())) {
        return Err(GraphError(format!(
            "{}: session {:?} appears in two files",
            path.display(),
            twice.name
        )));
    }
    Ok(Graph { sessions })
}

/// A call as read, before its names are resolved.
struct Read {
    line: usize,
    name: String,
    after: Vec<String>,
    wait: Duration,
    context: Option<String>,
    new_tokens: u32,
    output_tokens: u32,
    is_final: bool,
}

/// Parses a graph: each line a call, blank lines skipped; or another tool's layout
/// ([`foreign`]).
pub fn parse(text: &str) -> Result<Graph, String> {
    let lines = match foreign::lines(text)? {
        Some(lines) => lines,
        None => text
            .lines()
            .enumerate()
            .filter(|(_, raw)| !raw.trim().is_empty())
            .map(|(k, raw)| {
                serde_json::from_str(raw)
                    .map(|l| (k + 1, l))
                    .map_err(|e| format!("line {}: {e}", k + 1))
            })
            .collect::<Result<_, _>>()?,
    };
    build(lines)
}

/// The graph of calls read (each with the line it came from).
fn build(lines: Vec<(usize, Line)>) -> Result<Graph, String> {
    let mut order: Vec<String> = Vec::new();
    let mut sessions: HashMap<String, Vec<Read>> = HashMap::new();
    for (line, l) in lines {
        let id = |what: &str, id: Id| {
            let t = id.text();
            if t.is_empty() || t.len() > MAX_ID || t.chars().any(char::is_control) {
                Err(format!(
                    "line {line}: a {what} id must be 1 to {MAX_ID} printable characters"
                ))
            } else {
                Ok(t)
            }
        };
        let session = id("session", l.session)?;
        let name = id("call", l.call)?;
        if l.new_tokens == 0 || l.output_tokens == 0 {
            return Err(format!(
                "line {line}: new_tokens and output_tokens must be above 0"
            ));
        }
        if !(0.0..=MAX_WAIT_MS).contains(&l.wait_ms) {
            return Err(format!(
                "line {line}: wait_ms must be from 0 to {MAX_WAIT_MS} (a day)"
            ));
        }
        let calls = sessions.entry(session.clone()).or_insert_with(|| {
            order.push(session.clone());
            Vec::new()
        });
        if let Some(first) = calls.iter().find(|c| c.name == name) {
            return Err(format!(
                "line {line}: call {name:?} of session {session:?} appears twice (first on line \
                 {})",
                first.line
            ));
        }
        if calls.len() == MAX_CALLS {
            return Err(format!(
                "line {line}: session {session:?} has more than {MAX_CALLS} calls"
            ));
        }
        calls.push(Read {
            line,
            name,
            after: l.after.into_iter().map(Id::text).collect(),
            wait: Duration::from_secs_f64(l.wait_ms / 1e3),
            context: l.context.map(Id::text),
            new_tokens: l.new_tokens,
            output_tokens: l.output_tokens,
            is_final: l.is_final,
        });
    }
    if order.is_empty() {
        return Err("no call in the file".into());
    }
    let sessions = order
        .into_iter()
        .map(|name| {
            let calls = sessions.remove(&name).unwrap_or_default();
            resolve(name, &calls)
        })
        .collect::<Result<_, _>>()?;
    Ok(Graph { sessions })
}

/// A session's names resolved to indices, checked for cycles and for contexts that could not
/// have ended before the call.
fn resolve(name: String, read: &[Read]) -> Result<GraphSession, String> {
    let index: HashMap<&str, usize> = read
        .iter()
        .enumerate()
        .map(|(k, c)| (c.name.as_str(), k))
        .collect();
    let find = |c: &Read, what: &str, id: &str| {
        index.get(id).copied().ok_or_else(|| {
            format!(
                "line {}: call {:?} names {id:?} in {what}, not a call of session {name:?}",
                c.line, c.name
            )
        })
    };
    let mut calls = Vec::with_capacity(read.len());
    for c in read {
        let mut after = c
            .after
            .iter()
            .map(|id| find(c, "after", id))
            .collect::<Result<Vec<_>, _>>()?;
        after.sort_unstable();
        after.dedup();
        let context = c
            .context
            .as_deref()
            .map(|id| find(c, "context", id))
            .transpose()?;
        calls.push(GraphCall {
            name: c.name.clone(),
            after,
            wait: c.wait,
            context,
            new_tokens: c.new_tokens,
            output_tokens: c.output_tokens,
            extended: false,
        });
    }
    acyclic(&calls).map_err(|k| {
        format!(
            "session {name:?}: call {:?} (line {}) waits for itself through its after",
            calls[k].name, read[k].line
        )
    })?;
    for (k, c) in calls.iter().enumerate() {
        if let Some(p) = c.context {
            if !ancestors(&calls, k).contains(&p) {
                return Err(format!(
                    "line {}: call {:?}'s context {:?} is not a call it waits for (in its \
                     after, or theirs): its answer might not be there",
                    read[k].line, c.name, calls[p].name
                ));
            }
        }
    }
    for k in 0..calls.len() {
        if let Some(p) = calls[k].context {
            calls[p].extended = true;
        }
    }
    let marked: Vec<usize> = (0..read.len()).filter(|&k| read[k].is_final).collect();
    let final_call = match marked.as_slice() {
        [one] => *one,
        [] => {
            let waited: Vec<bool> = (0..calls.len())
                .map(|k| calls.iter().any(|c| c.after.contains(&k)))
                .collect();
            (0..calls.len())
                .rev()
                .find(|&k| !waited[k])
                .unwrap_or(calls.len() - 1)
        }
        [_, second, ..] => {
            return Err(format!(
                "line {}: session {name:?} has a second call marked final",
                read[*second].line
            ))
        }
    };
    Ok(GraphSession {
        name,
        calls,
        final_call,
    })
}

/// Whether the calls can be placed in an order where each comes after all it waits for; else
/// the index of a call that waits for itself through others.
fn acyclic(calls: &[GraphCall]) -> Result<(), usize> {
    // Kahn's algorithm: a call is placed once all it waits for are.
    let mut waiting: Vec<usize> = calls.iter().map(|c| c.after.len()).collect();
    let mut ready: Vec<usize> = (0..calls.len()).filter(|&k| waiting[k] == 0).collect();
    let mut placed = 0;
    while let Some(k) = ready.pop() {
        placed += 1;
        for (j, c) in calls.iter().enumerate() {
            if c.after.contains(&k) {
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    if placed == calls.len() {
        Ok(())
    } else {
        Err((0..calls.len()).find(|&k| waiting[k] > 0).unwrap_or(0))
    }
}

/// Call `k`'s prompt tokens, its context's first (memoized in `prompt`; contexts form chains
/// without cycles, each a call's ancestor).
fn prompt_of(s: &GraphSession, k: usize, prompt: &mut [Option<u32>]) -> u32 {
    if let Some(p) = prompt[k] {
        return p;
    }
    let call = &s.calls[k];
    let before = call.context.map_or(0, |c| {
        prompt_of(s, c, prompt).saturating_add(s.calls[c].output_tokens)
    });
    let p = before.saturating_add(call.new_tokens);
    prompt[k] = Some(p);
    p
}

/// The calls `k` waits for, directly or through others.
fn ancestors(calls: &[GraphCall], k: usize) -> Vec<usize> {
    let mut seen = vec![false; calls.len()];
    let mut stack = calls[k].after.clone();
    while let Some(p) = stack.pop() {
        if !std::mem::replace(&mut seen[p], true) {
            stack.extend_from_slice(&calls[p].after);
        }
    }
    (0..calls.len()).filter(|&p| seen[p]).collect()
}

/// A graph as a run replays it: the file, its sessions, and how its waits are scaled.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphReplay {
    /// The file.
    pub file: std::path::PathBuf,
    /// Its sessions.
    #[serde(skip)]
    pub graph: Graph,
    /// Sessions in the file.
    pub sessions: usize,
    /// Calls in the file.
    pub calls: usize,
    /// Every wait is multiplied by this (`--dag-time-scale`).
    pub time_scale: f64,
    /// Then capped at this (`--dag-max-wait`), ms; absent: not capped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<f64>,
}

/// Writes a shared replay as the replay itself.
pub fn serialize_shared<S: serde::Serializer>(
    replay: &Option<std::sync::Arc<GraphReplay>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    replay.as_deref().serialize(s)
}

impl GraphReplay {
    /// Reads `file`, its waits scaled by `time_scale` then capped at `max_wait`.
    pub fn load(
        file: &Path,
        time_scale: f64,
        max_wait: Option<Duration>,
    ) -> Result<GraphReplay, GraphError> {
        let graph = load(file)?;
        Ok(GraphReplay {
            file: file.to_path_buf(),
            sessions: graph.sessions.len(),
            calls: graph.calls(),
            graph,
            time_scale,
            max_wait_ms: max_wait.map(|d| d.as_secs_f64() * 1e3),
        })
    }

    /// The calls `n` sessions send: the file's sessions in turn, from the first.
    pub fn calls_of(&self, n: u64) -> u64 {
        let sessions = &self.graph.sessions;
        let per = |k: usize| sessions[k].calls.len() as u64;
        let len = sessions.len() as u64;
        if len == 0 {
            return 0;
        }
        let rest: u64 = (0..crate::num::index(n % len)).map(per).sum();
        (n / len) * self.calls as u64 + rest
    }

    /// The wait before `call`, scaled and capped.
    pub fn wait(&self, call: &GraphCall) -> Duration {
        let scaled = call.wait.mul_f64(self.time_scale);
        match self.max_wait_ms {
            Some(cap) => scaled.min(Duration::from_secs_f64(cap / 1e3)),
            None => scaled,
        }
    }
}

impl Graph {
    /// The prompt and output tokens of the longest call: a call's prompt holds its context's
    /// prompt and answer, then its own new tokens (before the tokens a chat template adds).
    pub fn longest(&self) -> (u32, u32) {
        let mut longest = (0, 0);
        for s in &self.sessions {
            let mut prompt: Vec<Option<u32>> = vec![None; s.calls.len()];
            for k in 0..s.calls.len() {
                let p = prompt_of(s, k, &mut prompt);
                let o = s.calls[k].output_tokens;
                if u64::from(p) + u64::from(o) > u64::from(longest.0) + u64::from(longest.1) {
                    longest = (p, o);
                }
            }
        }
        longest
    }

    /// The most calls of a session.
    pub fn most_calls(&self) -> u32 {
        let most = self.sessions.iter().map(|s| s.calls.len()).max();
        crate::num::count(most.unwrap_or(0))
    }

    /// Every call of every session.
    pub fn calls(&self) -> usize {
        self.sessions.iter().map(|s| s.calls.len()).sum()
    }
}

#[cfg(test)]
mod tests;
