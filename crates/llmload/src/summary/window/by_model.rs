//! A mix of models: each model's part of a window, counted as the window's own figures are.

use super::meets::Meets;
use crate::summary::load::LoadSummary;
use crate::summary::models::ModelSummary;
use std::collections::BTreeMap;

/// Each model's part of a window, by name.
pub type ModelWindows = BTreeMap<String, ModelWindow>;

/// One model's part of a window: what the window's own figures count, for its requests alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelWindow {
    /// Output tokens received inside the window.
    pub tokens: f64,
    /// Measured `ok` responses completed inside it.
    pub completed: u32,
    /// Of those, the ones that met every objective where the path streams and where it
    /// buffers.
    pub met: Meets<u32>,
}

/// Sets each model's window figures (`windows`, by name) on `models`, as `load`'s own were
/// computed (its window's length, with objectives where it has goodput), the path streaming
/// when `streams`.
pub fn attach_window(
    models: Option<&mut Vec<ModelSummary>>,
    load: &LoadSummary,
    windows: &BTreeMap<String, ModelWindow>,
    streams: bool,
) {
    let Some(models) = models else {
        return;
    };
    let length_s = (load.window_s[1] - load.window_s[0]).max(1e-9);
    let slo_set = load.goodput_rps.is_some();
    for m in models {
        let w = windows.get(&m.model).cloned().unwrap_or_default();
        let met = w.met.pick(streams);
        m.output_tps = Some(w.tokens / length_s);
        m.completed_rps = Some(f64::from(w.completed) / length_s);
        m.goodput_rps = slo_set.then(|| f64::from(met) / length_s);
        m.slo_met_share =
            (slo_set && w.completed > 0).then(|| f64::from(met) / f64::from(w.completed));
    }
}
