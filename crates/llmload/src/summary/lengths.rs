//! The lengths a case sent, where a dataset set them (`--dataset-lengths as-is`,
//! `--dataset-output from-dataset`): the case is then named and shown by what went out (the
//! prompt tokens the server counted, the output tokens asked for), never by a flag's value that
//! did not apply.

use crate::record::{Record, Status};
use crate::stats::{Distribution, Samples};
use crate::workload::shape::Case;
use serde::{Deserialize, Serialize};

/// The lengths sent, as distributions over the case's `ok` responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    /// Prompt tokens, as the server counted them (present when the dataset set them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<Distribution>,
    /// Output tokens asked for (present when the dataset's answers set them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<Distribution>,
}

/// Gathers the lengths of a case's `ok` responses.
#[derive(Clone, Debug, Default)]
pub struct SentLengths {
    input: Samples,
    output: Samples,
}

impl SentLengths {
    /// Adds a measured record.
    pub fn add(&mut self, r: &Record) {
        if r.status != Status::Ok {
            return;
        }
        if let Some(n) = r.prompt_tokens {
            self.input.push(f64::from(n));
        }
        self.output.push(f64::from(r.requested_output_tokens));
    }

    /// The case's input and output tokens to show (the medians sent where a dataset set them,
    /// else the case's), and the distributions behind them.
    pub fn finish(self, case: &Case) -> (u32, u32, Option<Sent>) {
        let median = |d: &Option<Distribution>| {
            d.as_ref()
                .map_or(0, |d| crate::num::to_u32(d.median.round().max(0.0)))
        };
        let input = (case.input_tokens == 0)
            .then(|| self.input.distribution())
            .flatten();
        let output = (case.output_tokens == 0)
            .then(|| self.output.distribution())
            .flatten();
        let shown = (
            if case.input_tokens == 0 {
                median(&input)
            } else {
                case.input_tokens
            },
            if case.output_tokens == 0 {
                median(&output)
            } else {
                case.output_tokens
            },
        );
        let sent = (input.is_some() || output.is_some()).then_some(Sent {
            input_tokens: input,
            output_tokens: output,
        });
        (shown.0, shown.1, sent)
    }
}
