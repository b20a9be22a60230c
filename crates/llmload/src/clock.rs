//! This process's clock against the target server's, for a shard: the server's `Date` header
//! (whole seconds) polled until its second changes. The change happened, on the server, after
//! it answered the poll before and before it answered the poll after, so within
//! [send of the one before, receipt of the one after] on this clock: the offset is the new
//! second minus that stretch's middle, within half its length (about the poll interval plus a
//! round trip). Without a `Date` header, or without a tick before the deadline, there is no
//! estimate, and the section says why.

use crate::api::client::Endpoint;
use crate::api::fetch::FetchError;
use crate::api::http1::Method;
use crate::summary::shards::ClockOffset;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Time between polls.
const POLL: Duration = Duration::from_millis(20);

/// The longest the estimate may take: a second for the tick and some for the round trips.
const DEADLINE: Duration = Duration::from_millis(2500);

/// The largest answer to a poll read (only its `Date` is wanted).
const POLL_BODY: usize = 1 << 20;

/// One poll: when it was sent and answered on this clock, and the server's `Date`, all in
/// seconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Poll {
    /// Sent, this clock.
    pub sent_s: f64,
    /// Answered (the response head), this clock.
    pub received_s: f64,
    /// The server's `Date`, whole seconds; `None` without the header.
    pub date_s: Option<i64>,
}

/// (server − this clock, uncertainty), seconds, from the narrowest second change among
/// consecutive `polls`; `None` when the second never changed.
pub fn from_tick(polls: &[Poll]) -> Option<(f64, f64)> {
    polls
        .windows(2)
        .filter_map(|w| {
            let (before, after) = (w[0], w[1]);
            let (Some(d0), Some(d1)) = (before.date_s, after.date_s) else {
                return None;
            };
            (d1 > d0).then(|| {
                let middle = f64::midpoint(before.sent_s, after.received_s);
                let half = (after.received_s - before.sent_s) / 2.0;
                (d1 as f64 - middle, half)
            })
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Estimates the offset of this clock from the server of `endpoint`, within [`DEADLINE`]: polls
/// every [`POLL`] until the server's second changes, then, from that first estimate, polls back
/// to back around the next change for a narrower one.
pub async fn estimate(endpoint: &Endpoint) -> ClockOffset {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut coarse = Vec::new();
    let mut failure = poll_until_tick(endpoint, &mut coarse, POLL, deadline)
        .await
        .err();
    let mut fine = Vec::new();
    if let (Some((offset_s, half_s)), Some(last)) = (from_tick(&coarse), coarse.last()) {
        let next_tick_s = last.date_s.map_or(0.0, |d| (d + 1) as f64) - offset_s;
        let early_s = next_tick_s - half_s - 0.005 - unix_now();
        if early_s > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(early_s.min(1.0))).await;
        }
        failure = poll_until_tick(endpoint, &mut fine, Duration::ZERO, deadline)
            .await
            .err();
    }
    let polls = crate::num::count(coarse.len() + fine.len());
    let best = [from_tick(&coarse), from_tick(&fine)]
        .into_iter()
        .flatten()
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((offset_s, uncertainty_s)) => ClockOffset {
            method: "http-date-tick".into(),
            offset_ms: Some(offset_s * 1e3),
            uncertainty_ms: Some(uncertainty_s * 1e3),
            polls,
            note: None,
        },
        None => ClockOffset {
            method: "none".into(),
            offset_ms: None,
            uncertainty_ms: None,
            polls,
            note: Some(failure.unwrap_or_else(|| {
                "the server's Date did not change second within the deadline".into()
            })),
        },
    }
}

/// Polls `endpoint`, `gap` apart, into `polls` until the server's second changes or the
/// `deadline`; why it could not, if it could not.
async fn poll_until_tick(
    endpoint: &Endpoint,
    polls: &mut Vec<Poll>,
    gap: Duration,
    deadline: tokio::time::Instant,
) -> Result<(), String> {
    while tokio::time::Instant::now() < deadline {
        let sent_s = unix_now();
        let answer = endpoint
            .setup
            .fetch(Method::Get, "/", None, POLL_BODY, deadline)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(FetchError::Deadline(_)) => return Ok(()),
            Err(e) => return Err(format!("the server did not answer: {e}")),
        };
        let date_s = answer.date.as_deref().and_then(parse_http_date);
        polls.push(Poll {
            sent_s,
            received_s: unix_now(),
            date_s,
        });
        if date_s.is_none() {
            return Err("the server sends no Date header".into());
        }
        if from_tick(polls).is_some() {
            return Ok(());
        }
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
    }
    Ok(())
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, the only form servers must send) as seconds
/// since the Unix epoch.
pub fn parse_http_date(text: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = i64::try_from(MONTHS.iter().position(|m| m == month)? + 1).ok()?;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(str::parse::<i64>);
    let (h, m, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[expect(
        clippy::cast_possible_truncation,
        reason = "the fake server's whole seconds are small"
    )]
    /// Polls every `interval_s` from `t0_s` on a fake clock, each taking `rtt_s` and answered by
    /// the server halfway, its clock `offset_s` ahead; until the server's second changes.
    fn fake_polls(t0_s: f64, offset_s: f64, interval_s: f64, rtt_s: f64) -> Vec<Poll> {
        let mut polls = Vec::new();
        let mut t = t0_s;
        loop {
            let server = t + rtt_s / 2.0 + offset_s;
            polls.push(Poll {
                sent_s: t,
                received_s: t + rtt_s,
                date_s: Some(server.floor() as i64),
            });
            if from_tick(&polls).is_some() || polls.len() > 500 {
                return polls;
            }
            t += rtt_s + interval_s;
        }
    }

    #[test]
    fn the_offset_is_found_within_its_stated_uncertainty() {
        for (t0, offset, interval, rtt) in [
            (1_000.0, 0.3737, 0.020, 0.004),
            (5_000.25, -2.9, 0.020, 0.0005),
            (77.9, 0.0, 0.050, 0.030),
            (12.01, 1234.567, 0.010, 0.001),
        ] {
            let polls = fake_polls(t0, offset, interval, rtt);
            let (estimate, uncertainty) = from_tick(&polls).expect("a tick within a second");
            assert!(
                (estimate - offset).abs() <= uncertainty + 1e-9,
                "{estimate} vs {offset} ± {uncertainty}"
            );
            // Half of one interval and two round trips at most.
            assert!(
                uncertainty <= f64::midpoint(interval, 2.0 * rtt) + 1e-9,
                "{uncertainty}"
            );
            assert!(polls.len() as f64 <= 1.0 / (interval + rtt) + 2.0);
        }
    }

    #[test]
    fn no_tick_and_no_date_give_no_estimate() {
        let poll = |t: f64, date: Option<i64>| Poll {
            sent_s: t,
            received_s: t + 0.001,
            date_s: date,
        };
        assert_eq!(from_tick(&[poll(1.0, Some(7)), poll(1.1, Some(7))]), None);
        assert_eq!(from_tick(&[poll(1.0, None), poll(1.1, Some(8))]), None);
        assert_eq!(from_tick(&[]), None);
        // The narrowest of two changes wins.
        let polls = [
            poll(0.0, Some(1)),
            poll(2.0, Some(3)),
            poll(2.9, Some(3)),
            poll(3.0, Some(4)),
        ];
        let (offset, half) = from_tick(&polls).expect("a tick");
        assert!((half - 0.0505).abs() < 1e-9 && (offset - (4.0 - 2.9505)).abs() < 1e-9);
    }

    #[test]
    fn http_dates_are_read() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Mon, 30 Nov 2026 21:36:58 GMT"),
            humantime::parse_rfc3339("2026-11-30T21:36:58Z")
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .and_then(|d| i64::try_from(d.as_secs()).ok())
        );
        for bad in [
            "",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }
}
