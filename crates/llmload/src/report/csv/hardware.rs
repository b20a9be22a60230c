//! What the hardware did and cost in `cases.csv`: each case's energy over its measurement
//! window, and its cost with `--gpu-cost-per-hour`.

/// `--gpu-cost-per-hour`: the price, the GPUs, the window's cost, the tokens it bought and
/// the cost per million of them with its interval.
pub(super) const COST_COLUMNS: [&str; 8] = [
    "gpu_cost_per_hour",
    "gpus",
    "window_cost",
    "cost_tokens",
    "cost_tokens_kind",
    "cost_per_million_tokens",
    "cost_per_million_tokens_low",
    "cost_per_million_tokens_high",
];

/// A case's cost cells; empty without a price.
pub(super) fn cost_cells(c: Option<&crate::summary::cost::Cost>) -> [String; 8] {
    let Some(c) = c else {
        return Default::default();
    };
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    [
        c.gpu_cost_per_hour.to_string(),
        c.gpus.to_string(),
        c.window_cost.to_string(),
        c.tokens.to_string(),
        c.tokens_kind.clone(),
        figure(c.per_million_tokens),
        figure(c.interval.map(|i| i[0])),
        figure(c.interval.map(|i| i[1])),
    ]
}

/// The window, the total energy, the readings it rests on and the output tokens per joule;
/// empty without power readings, and all but the window empty when the energy is unavailable.
pub(super) fn energy_cells(e: Option<&crate::summary::energy::Energy>) -> [String; 5] {
    let Some(e) = e else {
        return Default::default();
    };
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let readings: u32 = e.gpus.iter().map(|g| g.readings).sum();
    [
        e.window_s.to_string(),
        figure(e.total_j),
        if e.total_j.is_some() {
            readings.to_string()
        } else {
            String::new()
        },
        figure(e.output_tokens_per_joule),
        figure(e.joules_per_request),
    ]
}
