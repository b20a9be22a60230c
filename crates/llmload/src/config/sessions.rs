//! Config: the sessions of `--turns` and of `--dag`, read and checked.

use super::parse::{bad, optional_duration};
use super::SessionOptions;
use crate::error::ConfigError;
use crate::workload::graph::synth::Spec;
use crate::workload::graph::GraphReplay;
use crate::workload::session::{SessionSpec, Think};

/// `--dag` read, with its scale and cap; `None` without it, and an error for a companion given
/// without it.
pub(super) fn graph_replay(options: &SessionOptions) -> Result<Option<GraphReplay>, ConfigError> {
    if options.dag.is_some() && options.dag_synth.is_some() {
        return bad("--dag FILE and --dag-synth SPEC: give one graph or the other");
    }
    if options.dag.is_none() && options.dag_synth.is_none() {
        if options.dag_time_scale.is_some() || options.dag_max_wait.is_some() {
            return bad("--dag-time-scale and --dag-max-wait need --dag FILE or --dag-synth");
        }
        return Ok(None);
    }
    if options.turns.is_some() || options.turn_input.is_some() || options.think_time.is_some() {
        return bad(
            "--dag sets each call's length and wait: --turns, --turn-input and --think-time do \
             not apply",
        );
    }
    if options.stagger.is_some() {
        return bad("--stagger spreads sessions over a think time: --dag has none to spread over");
    }
    let scale = options.dag_time_scale.unwrap_or(1.0);
    if !(0.0..=1000.0).contains(&scale) {
        return bad("--dag-time-scale must be from 0 to 1000");
    }
    let cap = optional_duration("dag-max-wait", options.dag_max_wait.clone())?;
    if let Some(spec) = &options.dag_synth {
        let spec: Spec = spec
            .parse()
            .map_err(|e| ConfigError(format!("--dag-synth {e}")))?;
        return GraphReplay::synth(&spec, scale, cap)
            .map(Some)
            .map_err(|e| ConfigError(format!("--dag-synth made a graph it cannot read: {e}")));
    }
    let file = options.dag.as_deref().unwrap_or(std::path::Path::new(""));
    GraphReplay::load(file, scale, cap)
        .map(Some)
        .map_err(|e| ConfigError(format!("--dag {e}")))
}

/// The sessions of `--turns` (or `--dag`'s) and their companions; `None` without either, and an
/// error for a companion given without them.
pub(super) fn session_spec(
    options: SessionOptions,
    graph: Option<&GraphReplay>,
) -> Result<Option<SessionSpec>, ConfigError> {
    let SessionOptions {
        turns,
        turn_input,
        think_time,
        history,
        sessions: _,
        stagger,
        dag: _,
        dag_synth: _,
        dag_time_scale: _,
        dag_max_wait: _,
    } = options;
    if let Some(graph) = graph {
        return Ok(Some(SessionSpec {
            turns: graph.graph.most_calls(),
            turn_input: None,
            think: Think::default(),
            history: history.unwrap_or_default(),
            stagger: stagger.unwrap_or(false),
        }));
    }
    let Some(turns) = turns else {
        if turn_input.is_some() || think_time.is_some() || history.is_some() || stagger.is_some() {
            return bad("--turn-input, --think-time, --history and --stagger need --turns K");
        }
        return Ok(None);
    };
    if turns < 2 {
        return bad("--turns must be at least 2 (a session of one turn is a plain request)");
    }
    if turns > 1000 {
        return bad("--turns must be at most 1000");
    }
    if turn_input == Some(0) {
        return bad("--turn-input must be above 0");
    }
    let think = match &think_time {
        Some(text) => text
            .parse::<Think>()
            .map_err(|e| ConfigError(format!("--think-time: {e}")))?,
        None => Think::default(),
    };
    Ok(Some(SessionSpec {
        turns,
        turn_input,
        think,
        history: history.unwrap_or_default(),
        stagger: stagger.unwrap_or(false),
    }))
}
