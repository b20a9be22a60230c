//! Session graphs written by other tools, read into llmload's own calls (`Line`): the
//! agentic coding traces of the KV-cache tester (one conversation a JSON object, sub-agents
//! nested in it) and AIPerf's trace rows with a `session_id`. Both give lengths, not text, so a
//! call's prompt is rebuilt from them:
//!
//! - A call extends its agent's previous call (its prompt and answer, then tokens of its own)
//!   where its input holds at least that call's prompt and answer; otherwise its prompt is fresh
//!   (the history was cut, or another context began).
//! - A sub-agent starts after the call before it, with a fresh context; sub-agents spawned
//!   together run together, and the agent's next call waits for all of them (fan-in).
//! - Waits: the tester's `think_time` (seconds), AIPerf's `delay` (milliseconds). Recorded
//!   arrival times (`t`, `timestamp`) are not replayed: a session's calls follow each other as
//!   the server answers, and sessions start as the load's concurrency allows.

use super::{Id, Line, MAX_WAIT_MS};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// The calls of `text` where it is in another tool's layout; `None` for llmload's own (or for
/// something no layout reads, which llmload's own parser then names).
pub(super) fn lines(text: &str) -> Result<Option<Vec<(usize, Line)>>, String> {
    let Some((k, first)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        return Ok(None);
    };
    match serde_json::from_str::<Value>(first) {
        Ok(Value::Object(o)) if o.contains_key("requests") => {
            let mut out = Vec::new();
            for (k, raw) in text.lines().enumerate() {
                if !raw.trim().is_empty() {
                    let conversation =
                        serde_json::from_str(raw).map_err(|e| format!("line {}: {e}", k + 1))?;
                    tester(k + 1, conversation, &mut out)?;
                }
            }
            Ok(Some(out))
        }
        Ok(Value::Object(o)) if o.contains_key("turns") && !o.contains_key("call") => Err(format!(
            "line {}: AIPerf's multi_turn rows carry text; llmload replays lengths: write the \
             session as trace rows (session_id, input_length, output_length, delay)",
            k + 1
        )),
        Ok(Value::Object(o)) if o.contains_key("input_length") && !o.contains_key("call") => {
            aiperf(text).map(Some)
        }
        Ok(_) => Ok(None),
        // A conversation written over several lines: the whole file is one object.
        Err(_) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) if o.contains_key("requests") => {
                let conversation =
                    serde_json::from_value(Value::Object(o)).map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                tester(k + 1, conversation, &mut out)?;
                Ok(Some(out))
            }
            _ => Ok(None),
        },
    }
}

/// A conversation of the KV-cache tester's traces.
#[derive(Deserialize)]
struct Conversation {
    id: Id,
    requests: Vec<Entry>,
}

/// A request of a conversation, or a sub-agent (`"type": "subagent"` with requests of its own).
#[derive(Deserialize)]
struct Entry {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, rename = "in")]
    input: Option<u64>,
    #[serde(default)]
    out: Option<u64>,
    #[serde(default)]
    think_time: Option<f64>,
    #[serde(default)]
    requests: Option<Vec<Entry>>,
}

/// The deepest nesting of sub-agents read.
const MAX_DEPTH: usize = 16;

/// A call of an agent as it goes: its name, prompt and answer tokens.
struct Previous {
    name: String,
    input: u64,
    output: u64,
}

/// One agent's calls: what its first waits for and where its names start.
struct Agent<'a> {
    session: &'a str,
    line: usize,
    prefix: String,
    spawned_after: Vec<String>,
    depth: usize,
}

/// Reads one conversation (on `line` of the file) into `out`.
fn tester(line: usize, c: Conversation, out: &mut Vec<(usize, Line)>) -> Result<(), String> {
    let session = c.id.text();
    let agent = Agent {
        session: &session,
        line,
        prefix: String::new(),
        spawned_after: Vec::new(),
        depth: 0,
    };
    let last = agent.calls(&c.requests, out)?;
    if last.is_empty() {
        return Err(format!(
            "line {line}: conversation {session:?} has no request"
        ));
    }
    Ok(())
}

impl Agent<'_> {
    /// Its requests as calls, in order, into `out`; the calls that end it (its last, and any
    /// sub-agent still running after it).
    fn calls(
        &self,
        entries: &[Entry],
        out: &mut Vec<(usize, Line)>,
    ) -> Result<Vec<String>, String> {
        let line = self.line;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "line {line}: sub-agents nested more than {MAX_DEPTH} deep"
            ));
        }
        let mut previous: Option<Previous> = None;
        let mut joins: Vec<String> = Vec::new();
        let (mut requests, mut agents) = (0, 0);
        for entry in entries {
            if entry.kind.as_deref() == Some("subagent") {
                agents += 1;
                let sub = Agent {
                    session: self.session,
                    line,
                    prefix: format!("{}sa{agents}/", self.prefix),
                    spawned_after: previous
                        .as_ref()
                        .map_or_else(|| self.spawned_after.clone(), |p| vec![p.name.clone()]),
                    depth: self.depth + 1,
                };
                joins.extend(sub.calls(entry.requests.as_deref().unwrap_or_default(), out)?);
                continue;
            }
            requests += 1;
            let name = format!("{}r{requests}", self.prefix);
            let (Some(input), Some(output)) = (entry.input, entry.out) else {
                return Err(format!(
                    "line {line}: request {name} of conversation {:?} needs \"in\" and \"out\"",
                    self.session
                ));
            };
            let mut after: Vec<String> = previous
                .as_ref()
                .map_or_else(|| self.spawned_after.clone(), |p| vec![p.name.clone()]);
            after.append(&mut joins);
            let wait_ms = entry.think_time.unwrap_or(0.0) * 1e3;
            out.push((
                line,
                call(
                    self.session,
                    &name,
                    after,
                    wait_ms,
                    previous.as_ref(),
                    input,
                    output,
                ),
            ));
            previous = Some(Previous {
                name,
                input,
                output,
            });
        }
        joins.extend(previous.map(|p| p.name));
        Ok(joins)
    }
}

/// A call `name` of `session` after `after`, `wait_ms` after the last of them, of `input` prompt
/// and `output` answer tokens as recorded: extending `previous` where its input holds that
/// call's prompt and answer. Lengths beyond what llmload sends are capped, and 0 becomes 1.
fn call(
    session: &str,
    name: &str,
    after: Vec<String>,
    wait_ms: f64,
    previous: Option<&Previous>,
    input: u64,
    output: u64,
) -> Line {
    let context = previous.filter(|p| input >= p.input.saturating_add(p.output));
    let new = context.map_or(input, |p| input - p.input - p.output);
    let tokens = |n: u64| u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    Line {
        session: Id::Text(session.to_owned()),
        call: Id::Text(name.to_owned()),
        after: after.into_iter().map(Id::Text).collect(),
        wait_ms: wait_ms.clamp(-1.0, MAX_WAIT_MS + 1.0),
        context: context.map(|p| Id::Text(p.name.clone())),
        new_tokens: tokens(new),
        output_tokens: tokens(output),
        is_final: false,
    }
}

/// A row of AIPerf's `mooncake_trace` layout, as llmload reads it.
#[derive(Deserialize)]
struct Row {
    #[serde(default)]
    session_id: Option<Id>,
    input_length: Option<u64>,
    output_length: Option<u64>,
    #[serde(default)]
    delay: Option<f64>,
}

/// AIPerf's trace rows: those of one `session_id` are its turns, in the file's order, each
/// after the one before and its `delay`; a row without one is a session of its own.
fn aiperf(text: &str) -> Result<Vec<(usize, Line)>, String> {
    let mut out = Vec::new();
    let mut previous: HashMap<String, (usize, Previous)> = HashMap::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let row: Row = serde_json::from_str(raw).map_err(|e| format!("line {line}: {e}"))?;
        let (Some(input), Some(output)) = (row.input_length, row.output_length) else {
            return Err(format!(
                "line {line}: llmload replays lengths: a row needs input_length and \
                 output_length (text_input, messages and payload rows are not read)"
            ));
        };
        let session = row
            .session_id
            .map_or_else(|| format!("row-{line}"), Id::text);
        let (turns, before) = match previous.remove(&session) {
            Some((turns, p)) => (turns + 1, Some(p)),
            None => (1, None),
        };
        let name = format!("turn-{turns}");
        let after = before.iter().map(|p| p.name.clone()).collect();
        let wait_ms = row.delay.unwrap_or(0.0);
        let made = call(
            &session,
            &name,
            after,
            wait_ms,
            before.as_ref(),
            input,
            output,
        );
        out.push((line, made));
        previous.insert(
            session,
            (
                turns,
                Previous {
                    name,
                    input,
                    output,
                },
            ),
        );
    }
    Ok(out)
}
