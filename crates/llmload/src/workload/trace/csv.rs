//! Workload: trace replay from a CSV file, in one of two layouts, told apart by the header:
//!
//! ```text
//! TIMESTAMP,ContextTokens,GeneratedTokens
//! 2023-11-16 18:15:46.6805900,374,44
//! ```
//!
//! the public Azure LLM inference traces (wall-clock timestamps, any number of fractional
//! digits up to nine), and
//!
//! ```text
//! timestamp,input_length,output_length,hash_ids
//! 180,754,8,1 2
//! ```
//!
//! the Mooncake fields (timestamp in milliseconds; `hash_ids` optional, its ids separated by
//! spaces or `;` inside the field). Column names are matched without regard to case, in any
//! order. Fields are plain: a quote anywhere is refused rather than half understood, as no
//! field of either layout needs one.
//!
//! Offsets are counted in whole nanoseconds from the earliest row, so that a wall-clock
//! timestamp's offset is exact however far from 1970 it lies.

use super::{checked, TraceEntry, TraceError};

/// Whether a trace file is CSV: its name ends in `.csv`, or its first line opens with one of
/// the layouts' column names (a JSONL trace opens with `{`).
pub(super) fn detect(path: &std::path::Path, text: &str) -> bool {
    let by_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let first = text
        .trim_start_matches('\u{feff}')
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let column = first.split(',').next().unwrap_or("").trim();
    by_name || KNOWN.iter().any(|k| column.eq_ignore_ascii_case(k))
}

/// The column names of both layouts, in lower case.
const KNOWN: [&str; 6] = [
    "timestamp",
    "contexttokens",
    "generatedtokens",
    "input_length",
    "output_length",
    "hash_ids",
];

/// The columns of a layout, by their place in a row.
#[derive(Debug)]
struct Columns {
    /// Wall-clock timestamps (Azure) rather than milliseconds.
    wall_clock: bool,
    timestamp: usize,
    input: usize,
    output: usize,
    hash_ids: Option<usize>,
    /// Fields a row must have.
    count: usize,
}

const LAYOUTS: &str =
    "a CSV trace's header is TIMESTAMP,ContextTokens,GeneratedTokens or timestamp,input_length,\
     output_length[,hash_ids]";

/// The entries of a CSV trace's text, in file order, with offsets from the earliest row; errors
/// start with `:LINE: `.
pub(super) fn parse(text: &str, block_tokens: u32) -> Result<Vec<TraceEntry>, TraceError> {
    let mut lines = text
        .trim_start_matches('\u{feff}')
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((header_at, header)) = lines.next() else {
        return Ok(Vec::new());
    };
    let at = |i: usize, why: String| TraceError(format!(":{}: {why}", i + 1));
    let columns = columns(header).map_err(|why| at(header_at, why))?;
    let mut rows = Vec::new();
    for (i, line) in lines {
        let (ns, entry) = row(line, &columns, block_tokens).map_err(|why| at(i, why))?;
        rows.push((ns, entry));
    }
    let first = rows.iter().map(|(ns, _)| *ns).min().unwrap_or(0);
    Ok(rows
        .into_iter()
        .map(|(ns, mut entry)| {
            entry.offset_s = (ns - first) as f64 / 1e9;
            entry
        })
        .collect())
}

/// The layout a header names, or why it names none.
fn columns(header: &str) -> Result<Columns, String> {
    if header.contains('"') {
        return Err(format!("quoted fields are not read; {LAYOUTS}"));
    }
    let names: Vec<String> = header
        .split(',')
        .map(|n| n.trim().to_ascii_lowercase())
        .collect();
    let place = |name: &str| names.iter().position(|n| n == name);
    for (i, name) in names.iter().enumerate() {
        if !KNOWN.contains(&name.as_str()) || place(name) != Some(i) {
            return Err(format!("column `{name}` is unknown or repeated; {LAYOUTS}"));
        }
    }
    let timestamp = place("timestamp");
    let azure = (place("contexttokens"), place("generatedtokens"));
    let mooncake = (place("input_length"), place("output_length"));
    let (wall_clock, input, output) = match (timestamp, azure, mooncake) {
        (Some(_), (Some(i), Some(o)), (None, None)) if place("hash_ids").is_none() => (true, i, o),
        (Some(_), (None, None), (Some(i), Some(o))) => (false, i, o),
        _ => return Err(format!("the header is `{}`; {LAYOUTS}", header.trim())),
    };
    Ok(Columns {
        wall_clock,
        timestamp: timestamp.unwrap_or(0),
        input,
        output,
        hash_ids: place("hash_ids"),
        count: names.len(),
    })
}

/// One row's timestamp (nanoseconds) and entry (its offset not yet set), or why it is none.
fn row(line: &str, columns: &Columns, block_tokens: u32) -> Result<(i128, TraceEntry), String> {
    if line.contains('"') {
        return Err(
            "quoted fields are not read: write each field plainly (hash_ids separated \
                    by spaces or ;)"
                .into(),
        );
    }
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != columns.count {
        return Err(format!(
            "{} fields, the header names {}",
            fields.len(),
            columns.count
        ));
    }
    let stamp = fields[columns.timestamp];
    let ns = if columns.wall_clock {
        wall_clock_ns(stamp).ok_or_else(|| {
            format!("timestamp `{stamp}` is not a date and time such as 2023-11-16 18:15:46.68059")
        })?
    } else {
        milliseconds_ns(stamp)
            .ok_or_else(|| format!("timestamp `{stamp}` is not milliseconds, such as 250.5"))?
    };
    let count = |i: usize| {
        fields[i]
            .parse::<u32>()
            .map_err(|_| format!("`{}` is not a token count", fields[i]))
    };
    let blocks = match columns.hash_ids {
        Some(i) => fields[i]
            .split(|c: char| c == ';' || c.is_whitespace())
            .filter(|id| !id.is_empty())
            .map(|id| {
                id.parse::<u64>()
                    .map_err(|_| format!("hash_ids `{}` holds `{id}`, not an id", fields[i]))
            })
            .collect::<Result<Vec<u64>, String>>()?,
        None => Vec::new(),
    };
    let entry = checked(
        0.0,
        count(columns.input)?,
        count(columns.output)?,
        blocks,
        block_tokens,
    )?;
    Ok((ns, entry))
}

/// Nanoseconds in a millisecond count written in decimal (`250`, `250.5`; at most six
/// fractional digits: whole nanoseconds).
fn milliseconds_ns(text: &str) -> Option<i128> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let ms = digits(whole, 1, 15)?;
    Some(ms * 1_000_000 + fraction_ns(fraction, 6)?)
}

/// The fractional digits of a count as units of 10^-`places`, or `None` past `places` digits
/// or for a non-digit.
fn fraction_ns(fraction: &str, places: u32) -> Option<i128> {
    if fraction.is_empty() {
        return Some(0);
    }
    let width = u32::try_from(fraction.len())
        .ok()
        .filter(|&w| w <= places)?;
    Some(digits(fraction, 1, places as usize)? * 10_i128.pow(places - width))
}

/// A run of `min..=max` ASCII digits as a number.
fn digits(text: &str, min: usize, max: usize) -> Option<i128> {
    if !(min..=max).contains(&text.len()) || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Nanoseconds since 1970-01-01 00:00:00 of a wall-clock time `YYYY-MM-DD HH:MM:SS[.fraction]`
/// (or with `T` between date and time; no time zone: every row is read in the same one).
fn wall_clock_ns(text: &str) -> Option<i128> {
    let (date, time) = text.split_once([' ', 'T'])?;
    let [year, month, day] = three(date, '-', 4)?;
    if !(1..=12).contains(&month) || day < 1 {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
    let [hour, minute, second] = three(clock, ':', 2)?;
    if day > month_days || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(seconds * 1_000_000_000 + fraction_ns(fraction, 9)?)
}

/// Exactly three numbers separated by `separator`, the first of `first` digits, the others of
/// two (`2023-11-16`, `18:15:46`).
fn three(text: &str, separator: char, first: usize) -> Option<[i128; 3]> {
    let mut parts = text.split(separator);
    let numbers = [
        digits(parts.next()?, first, first)?,
        digits(parts.next()?, 2, 2)?,
        digits(parts.next()?, 2, 2)?,
    ];
    parts.next().is_none().then_some(numbers)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries' offsets in whole nanoseconds.
    fn nanoseconds(entries: &[TraceEntry]) -> Vec<u64> {
        entries
            .iter()
            .map(|e| crate::num::to_u64((e.offset_s * 1e9).round()))
            .collect()
    }

    const AZURE: &str = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
                         2023-11-16 18:15:46.6805900,374,44\n\
                         2023-11-16 18:15:50.9951370,396,109\n\
                         2023-11-16 18:15:46.6805901,879,1\n";

    #[test]
    fn azure_rows_are_offsets_from_the_earliest_exact_to_the_nanosecond() {
        let entries = parse(AZURE, 512).expect("valid");
        let lengths: Vec<(u32, u32)> = entries
            .iter()
            .map(|e| (e.input_tokens, e.output_tokens))
            .collect();
        assert_eq!(lengths, vec![(374, 44), (396, 109), (879, 1)]);
        // 50.9951370 − 46.6805900 = 4.3145470 s; the third row is 100 ns after the first.
        assert_eq!(nanoseconds(&entries), vec![0, 4_314_547_000, 100]);
        assert!(entries.iter().all(|e| e.blocks.is_empty()));
    }

    #[test]
    fn wall_clock_times_cross_days_months_and_leap_years() {
        let at = |t: &str| wall_clock_ns(t).expect(t);
        assert_eq!(at("1970-01-01 00:00:00"), 0);
        assert_eq!(
            at("2000-03-01T00:00:00") - at("2000-02-28 23:59:59.5"),
            86_400_500_000_000
        );
        assert_eq!(
            at("2024-01-01 00:00:00.000001") - at("2023-12-31 23:59:59"),
            1_000_001_000
        );
        assert_eq!(
            at("2023-11-16 18:15:46.123456789") % 1_000_000_000,
            123_456_789
        );
        for bad in [
            "2023-02-29 00:00:00",
            "2023-13-01 00:00:00",
            "2023-11-16 24:00:00",
            "2023-11-16 18:15:46.1234567890",
            "2023-11-16",
            "2023-11-16 18:15",
            "16/11/2023 18:15:46",
            "2023-11-16 18:15:4x",
        ] {
            assert_eq!(wall_clock_ns(bad), None, "{bad}");
        }
    }

    #[test]
    fn mooncake_rows_read_milliseconds_and_hash_ids_in_any_column_order() {
        let text = "output_length, Timestamp ,input_length,hash_ids\n\
                    8,1180,754,1 2\n\
                    \n\
                    4,1000.25,1100,1;2;3\n\
                    2,1500,30,\n";
        let entries = parse(text, 512).expect("valid");
        assert_eq!(nanoseconds(&entries), vec![179_750_000, 0, 499_750_000]);
        assert_eq!(entries[0].blocks, vec![1, 2]);
        assert_eq!(entries[1].blocks, vec![1, 2, 3]);
        assert!(entries[2].blocks.is_empty());
        assert_eq!(
            (entries[1].input_tokens, entries[1].output_tokens),
            (1100, 4)
        );
        assert_eq!(milliseconds_ns("0.000001"), Some(1));
        assert_eq!(milliseconds_ns("1.0000001"), None);
        assert_eq!(milliseconds_ns("-5"), None);
    }

    #[test]
    fn bad_rows_and_headers_are_named_by_line() {
        let error = |text: &str| parse(text, 4).expect_err(text).to_string();
        let cases = [
            (
                "timestamp,ContextTokens,output_length\n",
                ":1: the header is",
            ),
            (
                "TIMESTAMP,ContextTokens,GeneratedTokens,hash_ids\n",
                ":1: the header is",
            ),
            (
                "timestamp,input_length,output_length,id\n",
                ":1: column `id`",
            ),
            (
                "timestamp,timestamp,input_length,output_length\n",
                ":1: column `timestamp`",
            ),
            (
                "\"timestamp\",input_length,output_length\n",
                ":1: quoted fields",
            ),
            (
                "timestamp,input_length,output_length\n0,8,2\n\n5,8\n",
                ":4: 2 fields",
            ),
            (
                "timestamp,input_length,output_length\n0,8,\"2\"\n",
                ":2: quoted fields",
            ),
            (
                "timestamp,input_length,output_length\n0,8,x\n",
                ":2: `x` is not a token",
            ),
            (
                "timestamp,input_length,output_length\n0,0,2\n",
                ":2: the offset must be",
            ),
            (
                "timestamp,input_length,output_length\n1e3,8,2\n",
                ":2: timestamp `1e3`",
            ),
            (
                "timestamp,input_length,output_length,hash_ids\n0,8,2,1 2 3\n",
                ":2: 3 hash_ids",
            ),
            (
                "timestamp,input_length,output_length,hash_ids\n0,8,2,[1]\n",
                ":2: hash_ids `[1]`",
            ),
            (
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,8,2\n\
                 1700158546680,8,2\n",
                ":3: timestamp `1700158546680` is not a date",
            ),
        ];
        for (text, start) in cases {
            let e = error(text);
            assert!(e.starts_with(start), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn csv_is_told_by_name_or_header() {
        let path = std::path::Path::new;
        assert!(detect(path("t.CSV"), "{}"));
        assert!(detect(
            path("t.txt"),
            "\u{feff}\nTIMESTAMP,ContextTokens,GeneratedTokens\n"
        ));
        assert!(detect(
            path("t.jsonl"),
            "timestamp,input_length,output_length\n"
        ));
        assert!(detect(
            path("t"),
            " Input_Length ,output_length,timestamp\n"
        ));
        assert!(!detect(path("t"), "offset_s,input_tokens\n"));
        assert!(!detect(path("t.jsonl"), "{\"timestamp\": 0}\n"));
        assert!(!detect(path("t.jsonl"), ""));
    }
}
