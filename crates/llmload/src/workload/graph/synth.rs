//! `--dag-synth SPEC`: session graphs of agents made up from a few numbers, seeded, instead of
//! read from a file. Each session is an agent: a first call (its system prompt and the task),
//! then a tool loop (each call extends the one before with a tool's result, after the tool's
//! time), fan-outs to sub-agents (fresh contexts of their own, each a short loop, all started
//! together; the agent's next call waits for every one and takes their answers as its tool
//! result), context compaction (every so many calls the agent starts a fresh context holding its
//! system prompt and a summary), and a final answer after a think time. The graph is written as
//! the JSON Lines of `--dag` and read back by the same parser, so every check of a file holds.

use crate::workload::prompt::splitmix64;
use crate::workload::session::Think;
use std::fmt::Write as _;
use std::time::Duration;

/// The most sessions, loop calls, sub-agents or tokens a spec may ask for.
const MOST: u32 = 10_000;

/// A whole number drawn uniformly from `lo..=hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// The smallest.
    pub lo: u32,
    /// The largest.
    pub hi: u32,
}

impl Range {
    fn one(n: u32) -> Range {
        Range { lo: n, hi: n }
    }

    fn parse(key: &str, text: &str) -> Result<Range, String> {
        let number = |t: &str| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= MOST)
                .ok_or_else(|| {
                    format!("{key}={text}: a whole number from 0 to {MOST}, or LOW-HIGH")
                })
        };
        let range = match text.split_once('-') {
            Some((lo, hi)) => Range {
                lo: number(lo)?,
                hi: number(hi)?,
            },
            None => Range::one(number(text)?),
        };
        if range.hi < range.lo {
            return Err(format!("{key}={text}: the high end is below the low end"));
        }
        Ok(range)
    }
}

/// What `--dag-synth` makes.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Sessions (agents) made.
    pub sessions: u32,
    /// Tool-loop calls of each agent after its first.
    pub loops: Range,
    /// Every this many loop calls, the agent fans out (0: never).
    pub fanout_every: u32,
    /// Sub-agents of a fan-out.
    pub fanout: Range,
    /// Calls of each sub-agent.
    pub sub_loops: Range,
    /// Tokens of each fresh context's system prompt.
    pub system: u32,
    /// Tokens of the task, after the system prompt of each fresh context.
    pub task: u32,
    /// Tokens a tool's result adds.
    pub tool_tokens: Range,
    /// Output tokens of each call.
    pub output: Range,
    /// The tool's time before each loop call.
    pub tool: Think,
    /// The think time before the final answer.
    pub think: Think,
    /// Every this many calls of the agent, a fresh context (0: never).
    pub compact: u32,
    /// Tokens of the summary a compacted context starts from, after the system prompt.
    pub summary: u32,
    /// The graph's own seed.
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            sessions: 8,
            loops: Range { lo: 2, hi: 6 },
            fanout_every: 3,
            fanout: Range { lo: 2, hi: 3 },
            sub_loops: Range { lo: 1, hi: 2 },
            system: 256,
            task: 64,
            tool_tokens: Range { lo: 32, hi: 128 },
            output: Range { lo: 16, hi: 48 },
            tool: Think::Exponential(Duration::from_millis(200)),
            think: Think::Fixed(Duration::ZERO),
            compact: 0,
            summary: 128,
            seed: 1,
        }
    }
}

impl std::str::FromStr for Spec {
    type Err = String;

    /// `KEY=VALUE,…` over the defaults, e.g. `sessions=16,loops=3-8,fanout=2-4,tool=exp:500ms`.
    fn from_str(text: &str) -> Result<Spec, String> {
        let mut spec = Spec::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item}: write KEY=VALUE"))?;
            let (key, value) = (key.trim(), value.trim());
            let whole = |v: &str| {
                v.parse::<u32>()
                    .ok()
                    .filter(|&n| n <= MOST)
                    .ok_or_else(|| format!("{key}={v}: a whole number from 0 to {MOST}"))
            };
            let time = |v: &str| v.parse::<Think>().map_err(|e| format!("{key}={v}: {e}"));
            match key {
                "sessions" => spec.sessions = whole(value)?.max(1),
                "loops" => spec.loops = Range::parse(key, value)?,
                "fanout_every" => spec.fanout_every = whole(value)?,
                "fanout" => spec.fanout = Range::parse(key, value)?,
                "sub_loops" => spec.sub_loops = Range::parse(key, value)?,
                "system" => spec.system = whole(value)?,
                "task" => spec.task = whole(value)?,
                "tool_tokens" => spec.tool_tokens = Range::parse(key, value)?,
                "output" => spec.output = Range::parse(key, value)?,
                "tool" => spec.tool = time(value)?,
                "think" => spec.think = time(value)?,
                "compact" => spec.compact = whole(value)?,
                "summary" => spec.summary = whole(value)?,
                "seed" => {
                    spec.seed = value
                        .parse()
                        .map_err(|_| format!("seed={value}: a whole number"))?;
                }
                _ => {
                    return Err(format!(
                        "{key}: not a key of --dag-synth (sessions, loops, fanout_every, fanout, \
                         sub_loops, system, task, tool_tokens, output, tool, think, compact, \
                         summary, seed)"
                    ))
                }
            }
        }
        if spec.output.lo == 0 || spec.system + spec.task == 0 || spec.tool_tokens.lo == 0 {
            return Err("output, tool_tokens and system + task must be at least 1".into());
        }
        if spec.sub_loops.lo == 0 {
            return Err("sub_loops: each sub-agent makes at least 1 call".into());
        }
        Ok(spec)
    }
}

/// The draws of one session: a function of the graph's seed and the session alone.
struct Draws {
    state: u64,
    session: u64,
    seed: u64,
    times: u32,
}

impl Draws {
    fn new(seed: u64, session: u64) -> Draws {
        Draws {
            state: splitmix64(seed ^ splitmix64(session.wrapping_add(1))),
            session,
            seed,
            times: 0,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix64(self.state)
    }

    fn whole(&mut self, r: Range) -> u32 {
        let span = u64::from(r.hi - r.lo) + 1;
        r.lo + u32::try_from(self.next() % span).unwrap_or(0)
    }

    fn time(&mut self, t: Think) -> Duration {
        self.times += 1;
        t.sample(
            self.seed ^ self.session.rotate_left(17),
            self.session,
            self.times,
        )
    }
}

/// One session's calls as JSON Lines.
struct Writer<'a> {
    session: String,
    out: &'a mut String,
}

impl Writer<'_> {
    fn call(
        &mut self,
        call: &str,
        after: &[String],
        wait: Duration,
        context: Option<&str>,
        new: u32,
        output: u32,
    ) {
        let after: Vec<String> = after.iter().map(|a| format!("\"{a}\"")).collect();
        let context = context.map_or_else(|| "null".to_owned(), |c| format!("\"{c}\""));
        let _ = writeln!(
            self.out,
            "{{\"session\": \"{}\", \"call\": \"{call}\", \"after\": [{}], \"wait_ms\": {:.3}, \
             \"context\": {context}, \"new_tokens\": {new}, \"output_tokens\": {output}}}",
            self.session,
            after.join(", "),
            wait.as_secs_f64() * 1e3,
        );
    }
}

/// The graph `spec` makes, as the JSON Lines `--dag` reads.
pub fn lines(spec: &Spec) -> String {
    let mut out = String::new();
    for s in 0..spec.sessions {
        let mut d = Draws::new(spec.seed, u64::from(s));
        let mut w = Writer {
            session: format!("agent-{}", s + 1),
            out: &mut out,
        };
        let fresh = spec.system + spec.task;
        let mut prev = "m1".to_owned();
        let first_output = d.whole(spec.output);
        w.call(&prev, &[], Duration::ZERO, None, fresh, first_output);
        let mut since_fresh = 1;
        let loops = d.whole(spec.loops);
        for k in 1..=loops {
            let name = format!("m{}", k + 1);
            let fans = spec.fanout_every > 0 && spec.fanout.hi > 0 && k % spec.fanout_every == 0;
            let (after, wait, new) = if fans {
                // Each sub-agent's last answer comes back to the agent as its tool result.
                let mut ends = Vec::new();
                let mut answers = 0;
                for j in 1..=d.whole(spec.fanout) {
                    let mut last: Option<(String, u32)> = None;
                    for l in 1..=d.whole(spec.sub_loops) {
                        let sub = format!("{name}/s{j}/c{l}");
                        let output = d.whole(spec.output);
                        match &last {
                            None => {
                                let after = std::slice::from_ref(&prev);
                                w.call(&sub, after, Duration::ZERO, None, fresh, output);
                            }
                            Some((p, _)) => {
                                let wait = d.time(spec.tool);
                                let new = d.whole(spec.tool_tokens);
                                w.call(&sub, std::slice::from_ref(p), wait, Some(p), new, output);
                            }
                        }
                        last = Some((sub, output));
                    }
                    if let Some((sub, output)) = last {
                        ends.push(sub);
                        answers += output;
                    }
                }
                (ends, Duration::ZERO, answers.max(1))
            } else {
                (
                    vec![prev.clone()],
                    d.time(spec.tool),
                    d.whole(spec.tool_tokens),
                )
            };
            let output = d.whole(spec.output);
            if spec.compact > 0 && since_fresh >= spec.compact {
                w.call(
                    &name,
                    &after,
                    wait,
                    None,
                    spec.system + spec.summary.max(1),
                    output,
                );
                since_fresh = 0;
            } else {
                w.call(&name, &after, wait, Some(&prev), new, output);
            }
            since_fresh += 1;
            prev = name;
        }
        let wait = d.time(spec.think);
        let new = d.whole(spec.tool_tokens);
        let output = d.whole(spec.output);
        w.call("answer", &[prev.clone()], wait, Some(&prev), new, output);
    }
    out
}

impl super::GraphReplay {
    /// The graph `spec` makes (`--dag-synth`), its waits scaled and capped as a file's; named
    /// `synth` in case ids.
    pub fn synth(
        spec: &Spec,
        time_scale: f64,
        max_wait: Option<Duration>,
    ) -> Result<super::GraphReplay, super::GraphError> {
        let graph = super::parse(&lines(spec)).map_err(super::GraphError)?;
        Ok(super::GraphReplay {
            file: std::path::PathBuf::from("synth"),
            sessions: graph.sessions.len(),
            calls: graph.calls(),
            graph,
            time_scale,
            max_wait_ms: max_wait.map(|d| d.as_secs_f64() * 1e3),
        })
    }
}

#[cfg(test)]
mod tests;
