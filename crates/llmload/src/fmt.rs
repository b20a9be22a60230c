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
pub fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A span of seconds in words ("5m", "1h 30m"), to the millisecond.
pub fn span(s: f64) -> String {
    humantime::format_duration(Duration::from_millis(crate::num::to_u64((s * 1e3).round())))
        .to_string()
}
