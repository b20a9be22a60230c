//! Comparing attempts: `llmload compare` and the gate of `llmload ab`. What makes two attempts'
//! cases the same case ([`identity`]), each case's key read from an attempt's `campaign.json`
//! ([`keys`]), the regression gate of `compare --fail-if` on two attempts' figures ([`gate`]),
//! the paired gate of `llmload ab` on interleaved blocks ([`paired`]), and what `compare` prints
//! ([`output`]: the attempts side by side, the gate's table, `--json`).
//!
//! It sits above the attempt folder (the keys read `campaign.json` and `summary.json` back) and
//! the report (its tables write figures as the report does); the results it adds to a summary,
//! the A/B section, are `summary::ab`'s.

pub mod gate;
pub mod identity;
pub mod keys;
pub mod output;
pub mod paired;

pub use output::{render, render_gate, to_json};
