//! Number and time formatting shared by the tables, the terminal and the reports.

use std::time::Duration;

/// A time in seconds as the results tables write it ("0.19 s"); short times in milliseconds.
pub fn seconds(ms: Option<f64>) -> String {
    match ms {
        None => "–".into(),
        Some(ms) if ms < 100.0 => format!("{ms:.1} ms"),
        Some(ms) => format!("{:.2} s", ms / 1e3),
    }
}

/// A count with thousands separators, as the results tables write it ("8,192").
pub fn thousands(n: impl Into<u64>) -> String {
    let digits = n.into().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Significant digits a measured or derived number is written with ([`number`]).
const SIGNIFICANT: f64 = 4.0;

/// A number as text for people: four significant digits, at least the whole integer part, no
/// trailing zeros ("0.45" for 0.44999999999999996, "5.994", "12", "12346"). Rates, loads and
/// levels are written with it wherever they are printed, so no float is shown raw.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor();
    let decimals = crate::num::to_usize((SIGNIFICANT - 1.0 - magnitude).clamp(0.0, 12.0));
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text.as_str()
    };
    match text {
        "-0" => "0".into(),
        t => t.to_owned(),
    }
}

/// A span of seconds in words ("5m", "1h 30m"), to the millisecond.
pub fn span(s: f64) -> String {
    humantime::format_duration(Duration::from_millis(crate::num::to_u64((s * 1e3).round())))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits_and_no_float_noise() {
        assert_eq!(number(0.449_999_999_999_999_96), "0.45");
        assert_eq!(number(5.993_690_851_735_016), "5.994");
        assert_eq!(number(4.0), "4");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(123_456.7), "123457");
        assert_eq!(number(0.000_001), "0.000001");
        assert_eq!(number(9.999_96), "10");
        assert_eq!(number(-0.000_000_000_000_1), "0");
        assert_eq!(number(-2.5), "-2.5");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(f64::INFINITY), "inf");
    }
}
