//! Conversions between counts, indices and measured values. Each saturates where a value cannot
//! fit (a count past `u32::MAX` reads as `u32::MAX`, a negative or NaN float as 0), so that no
//! conversion wraps silently.

/// The longest duration any option takes: a year and a day. A longer one is no plan anyone
/// runs, and past it an instant plus the duration may not be representable.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 24 * 3600);

/// The slowest and fastest rates an open loop or a stage takes, per second: slower, one gap is
/// longer than [`MAX_DURATION`]; faster, no client keeps up.
pub const RATES: std::ops::RangeInclusive<f64> = 1e-6..=1e6;

/// A duration as the options write it (`90s`, `10m`, `1h 30m`), at most [`MAX_DURATION`].
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| e.to_string())?;
    if d > MAX_DURATION {
        return Err(format!(
            "longer than the {} days an option may take",
            MAX_DURATION.as_secs() / 86_400
        ));
    }
    Ok(d)
}

/// The longest time, ms, that a value read back from a file may be: [`MAX_DURATION`].
pub const MAX_MS: f64 = MAX_DURATION.as_secs() as f64 * 1e3;

/// The most tokens, requests or tokens per second that a value read back from a file may count.
pub const MAX_COUNT: f64 = 1e12;

/// Checks `value`, read back from a file (a record, another tool's result) as `what`: a
/// measurement is finite, not negative and at most `max`. Else why not, in words that name it,
/// so that it is refused rather than made a figure.
pub fn plausible(what: &str, value: f64, max: f64) -> Result<(), String> {
    if value.is_finite() && (0.0..=max).contains(&value) {
        return Ok(());
    }
    let why = if !value.is_finite() {
        "not a finite number"
    } else if value < 0.0 {
        "negative"
    } else {
        "past anything measured"
    };
    Err(format!(
        "{what} is {value} ({why}): edited or damaged, no figure is made of it"
    ))
}

/// A length or count as the `u32` the records and summaries use.
pub fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A `u64` as an index.
pub fn index(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A count as drawing coordinates.
pub fn pixels(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A float, already rounded as the caller wants, as a `u32`.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-integer casts saturate (NaN reads as 0): this is the conversion wanted"
)]
pub fn to_u32(x: f64) -> u32 {
    x as u32
}

/// A float, already rounded as the caller wants, as a `u64`.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-integer casts saturate (NaN reads as 0): this is the conversion wanted"
)]
pub fn to_u64(x: f64) -> u64 {
    x as u64
}

/// A float, already rounded as the caller wants, as an index.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-integer casts saturate (NaN reads as 0): this is the conversion wanted"
)]
pub fn to_usize(x: f64) -> usize {
    x as usize
}

/// Whether two loads (concurrencies, or rates as given in decimals) are the same load: equal to
/// a millionth.
pub fn same_load(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_saturate_instead_of_wrapping() {
        assert_eq!(count(usize::MAX), u32::MAX);
        assert_eq!(count(7), 7);
        assert_eq!(to_u32(-3.0), 0);
        assert_eq!(to_u32(f64::NAN), 0);
        assert_eq!(to_u32(1e12), u32::MAX);
        assert_eq!(to_usize(2.0), 2);
        assert_eq!(pixels(usize::MAX), i32::MAX);
    }
}
