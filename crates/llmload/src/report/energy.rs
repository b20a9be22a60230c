//! The energy of each case's measurement window as a table, shared by the Markdown and HTML
//! views: total and per GPU, mean power, output tokens per joule, the readings it rests on and
//! how it was taken, or why there is no figure.

use super::table::Table;
use crate::summary::energy::Energy;
use crate::summary::Summary;

/// The table's columns.
pub const COLUMNS: [&str; 8] = [
    "Case",
    "Window",
    "Energy",
    "Mean power",
    "Tokens per joule",
    "Joules per request",
    "Readings",
    "Method",
];

/// What the table's figures are, in one paragraph.
pub const NOTE: &str = "Energy: per GPU, ∫ power dt over the case's measurement window by the \
    trapezoidal rule over its readings, the power at each edge of the window interpolated \
    linearly between the readings around it; summed over the GPUs. Closed rounds: over the span \
    of each round (first send → last ok completion), the spans of the round throughput. Output \
    tokens per joule: the throughput's output tokens of the ok responses in the window ÷ the \
    energy (embeddings and rerank: the prompt tokens the server processed, their throughput's). Joules per request: the energy ÷ the ok responses in the window. No figure where the readings are too sparse (see the reason).";

/// The table: one row per case with an energy (none without power readings), in run order.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in &summary.cases {
        if let Some(e) = &case.energy {
            table.push(row(&case.id, e, case.generates()));
        }
    }
    table
}

/// The row of case `id`, whose tokens are output tokens when it `generates` (else the prompt
/// tokens of embeddings or rerank).
fn row(id: &str, e: &Energy, generates: bool) -> [String; 8] {
    let window = format!("{:.2} s", e.window_s);
    let (Some(total), None) = (e.total_j, &e.unavailable) else {
        let why = e.unavailable.as_deref().unwrap_or("no figure");
        let none = || "–".to_owned();
        return [
            id.to_owned(),
            window,
            none(),
            none(),
            none(),
            none(),
            none(),
            format!("unavailable: {why}"),
        ];
    };
    let energy = if e.gpus.len() > 1 {
        let per_gpu: Vec<String> = e
            .gpus
            .iter()
            .map(|g| format!("GPU {} {}", g.gpu, joules(g.joules)))
            .collect();
        format!("{} ({})", joules(total), per_gpu.join(", "))
    } else {
        joules(total)
    };
    let per_joule = e.output_tokens_per_joule.map_or_else(
        || "–".to_owned(),
        |t| {
            let unverified = if e.tokens_verified {
                ""
            } else {
                ", some unverified"
            };
            let kind = if generates { "output" } else { "input" };
            format!("{t:.3} ({} {kind} tokens{unverified})", e.output_tokens)
        },
    );
    [
        id.to_owned(),
        window,
        energy,
        e.mean_power_w
            .map_or_else(|| "–".to_owned(), |w| format!("{w:.1} W")),
        per_joule,
        e.joules_per_request.map_or_else(
            || "–".to_owned(),
            |j| format!("{} ({} responses)", joules(j), e.responses),
        ),
        e.gpus.iter().map(|g| g.readings).sum::<u32>().to_string(),
        e.method.clone().unwrap_or_default(),
    ]
}

fn joules(j: f64) -> String {
    if j >= 1e4 {
        format!("{:.2} kJ", j / 1e3)
    } else {
        format!("{j:.1} J")
    }
}

/// The page's energy section: the table and its note; none when no case has an energy.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section =
        super::page::Section::new("energy", "Energy over each case's measurement window");
    section.push(super::page::Block::Table(table));
    section.note(NOTE);
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::energy::GpuEnergy;

    fn energy() -> Energy {
        Energy {
            window_s: 2.0,
            output_tokens: 600,
            tokens_verified: true,
            gpus: vec![
                GpuEnergy {
                    gpu: 0,
                    joules: 400.0,
                    readings: 21,
                },
                GpuEnergy {
                    gpu: 1,
                    joules: 200.0,
                    readings: 21,
                },
            ],
            total_j: Some(600.0),
            mean_power_w: Some(300.0),
            output_tokens_per_joule: Some(1.0),
            responses: 24,
            joules_per_request: Some(25.0),
            method: Some("trapezoid over 42 readings of 2 GPUs, edges interpolated".into()),
            unavailable: None,
        }
    }

    #[test]
    fn a_row_gives_the_total_each_gpu_and_the_readings_or_the_reason() {
        let row = row("c", &energy(), true);
        assert_eq!(row[2], "600.0 J (GPU 0 400.0 J, GPU 1 200.0 J)");
        assert_eq!(row[3], "300.0 W");
        assert_eq!(row[4], "1.000 (600 output tokens)");
        assert_eq!(row[5], "25.0 J (24 responses)");
        assert_eq!(row[6], "42");
        let sparse = Energy {
            gpus: Vec::new(),
            total_j: None,
            mean_power_w: None,
            output_tokens_per_joule: None,
            joules_per_request: None,
            method: None,
            unavailable: Some("GPU 0: a gap".into()),
            ..energy()
        };
        let row = super::row("c", &sparse, true);
        assert_eq!(row[2], "–");
        assert_eq!(row[5], "–");
        assert_eq!(row[7], "unavailable: GPU 0: a gap");
    }
}
