//! `run -q` on terminals of 80, 100 and 120 columns: every header word whole, the columns of
//! each table aligned, and where they cannot fit, a case at a time with every column named.

use super::terminal::Pane;

/// The characters that draw a table's grid.
const GRID: &[char] = &[
    '│', '┆', '┼', '┬', '┴', '├', '┤', '┌', '┐', '└', '┘', '╪', '╞', '╡', '═',
];

#[test]
fn quiet_results_keep_header_words_whole_and_columns_aligned() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let args = [
        "run",
        "-q",
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
        "--concurrency",
        "1",
        "--rounds",
        "1",
        "--telemetry",
        "off",
        "--out",
        out,
    ];
    for width in [80u16, 100, 120] {
        let text = Pane::start(&args, width, &format!("tables-{width}")).exited();
        assert!(text.contains("EXITED 0"), "{width}: {text}");
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || GRID.contains(&c))
            .map(|w| w.trim_end_matches(':'))
            .filter(|w| !w.is_empty())
            .collect();
        // Whole header words, in a grid or a case at a time.
        for column in llmload::report::results::REFERENCE_COLUMNS {
            for word in column.split_whitespace() {
                assert!(words.contains(&word), "{width}: {word:?} split: {text}");
            }
        }
        for line in text.lines() {
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line}"
            );
        }
        // Each grid's rows put their borders in the same columns.
        let mut grid: Vec<Vec<usize>> = Vec::new();
        for line in text.lines().chain([""]) {
            if line.starts_with(GRID) {
                grid.push(
                    line.chars()
                        .enumerate()
                        .filter(|(_, c)| GRID.contains(c) && *c != '═')
                        .map(|(i, _)| i)
                        .collect(),
                );
            } else if !grid.is_empty() {
                assert!(
                    grid.iter().all(|b| *b == grid[0]),
                    "{width}: misaligned {grid:?}: {text}"
                );
                grid.clear();
            }
        }
        if width == 120 {
            assert!(
                text.contains("│ Input"),
                "120 columns hold the table: {text}"
            );
        } else {
            assert!(
                text.contains("Concurrent requests: 1"),
                "{width}: a case at a time: {text}"
            );
        }
    }
}
