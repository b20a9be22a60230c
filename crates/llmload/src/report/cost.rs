//! Each case's cost (`--gpu-cost-per-hour`) as a table, shared by every view: the GPUs' price
//! over the measurement window, the tokens it bought, and the cost per million of them with
//! the interval the throughput's gives.

use super::table::Table;
use crate::fmt::number as money;
use crate::summary::cost::Cost;
use crate::summary::Summary;

/// The table's columns.
pub const COLUMNS: [&str; 6] = [
    "Case",
    "GPUs × price per hour",
    "Window",
    "Window cost",
    "Tokens",
    "Cost per million tokens",
];

/// What the table's figures are, in one paragraph.
pub const NOTE: &str = "Cost: the price of one GPU for an hour (--gpu-cost-per-hour, in the \
    currency it was given in) × the GPUs (--gpus) × the case's measurement window (closed \
    rounds: the sum of each round's span, first send → last ok completion; loops: the \
    measurement window), over the tokens of the ok responses in that window, × 10⁶: output \
    tokens, or the input tokens the server processed for embeddings and rerank. It assumes the \
    GPUs are paid for the window and serve nothing else. The range is the throughput's \
    interval turned over (the cost per token is the price per second ÷ the throughput); \
    without one, the figure has no range.";

/// The table: one row per case with a cost, in run order.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in &summary.cases {
        if let Some(cost) = &case.cost {
            table.push(row(&case.id, cost));
        }
    }
    table
}

/// The cost per million tokens with its range, or why there is none.
pub fn per_million(cost: &Cost) -> String {
    let Some(figure) = cost.per_million_tokens else {
        return "– (no tokens)".to_owned();
    };
    let range = match (cost.interval, cost.level) {
        (Some([low, high]), Some(level)) => {
            format!(" [{}, {}] {:.0} %", money(low), money(high), level * 100.0)
        }
        _ => String::new(),
    };
    let unverified = if cost.tokens_verified {
        ""
    } else {
        ", some unverified"
    };
    format!(
        "{}{range} ({} tokens{unverified})",
        money(figure),
        cost.tokens_kind
    )
}

fn row(id: &str, cost: &Cost) -> [String; 6] {
    [
        id.to_owned(),
        format!("{} × {}", cost.gpus, money(cost.gpu_cost_per_hour)),
        format!("{:.2} s", cost.window_s),
        money(cost.window_cost),
        cost.tokens.to_string(),
        per_million(cost),
    ]
}

/// The page's cost section: the table and its note; none when no case has a cost.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section = super::page::Section::new("cost", "Cost per million tokens");
    section.push(super::page::Block::Table(table));
    section.note(NOTE);
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(interval: Option<[f64; 2]>, verified: bool) -> Cost {
        Cost {
            gpu_cost_per_hour: 2.5,
            gpus: 2,
            window_s: 36.0,
            window_cost: 0.25,
            tokens: 500_000,
            tokens_kind: "output".into(),
            tokens_verified: verified,
            per_million_tokens: Some(0.5),
            interval,
            level: interval.map(|_| 0.95),
        }
    }

    #[test]
    fn a_row_says_the_price_the_window_and_the_figure_with_its_range() {
        let row = row("in64-c4-out16", &cost(Some([0.4, 0.625]), true));
        assert_eq!(row[1], "2 × 2.5");
        assert_eq!(row[2], "36.00 s");
        assert_eq!(row[3], "0.25");
        assert_eq!(row[4], "500000");
        assert_eq!(row[5], "0.5 [0.4, 0.625] 95 % (output tokens)");
        let unverified = row_of_unverified();
        assert!(
            unverified.ends_with("(output tokens, some unverified)"),
            "{unverified}"
        );
    }

    fn row_of_unverified() -> String {
        per_million(&cost(None, false))
    }
}
