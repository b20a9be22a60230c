//! Unit tests of `bursts.rs`: streams token by token, flushed every 200 ms, all at once, and
//! clumps of a server that sends a few tokens at a time; a proxy flushing on a 200 ms timer in
//! front of a slow and a fast server, against a busy client reading late at random points.

use super::*;
use crate::record::ok_record;

/// Events every `gap` ms from `ttft`, `n` in all.
fn steady(ttft: f64, gap: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| ttft + gap * i as f64).collect()
}

/// The events of `steady` held back and released at each multiple of `every` ms (and at the
/// end), each release's events a microsecond apart.
fn flushed(events: &[f64], every: f64) -> Vec<f64> {
    let end = events.last().copied().unwrap_or(0.0);
    let mut out = Vec::new();
    let mut k = 0usize;
    for &t in events {
        let release = ((t / every).ceil() * every).min(end.max(every));
        if out.last().is_some_and(|&l: &f64| (l - release).abs() < 0.5) {
            k += 1;
        } else {
            k = 0;
        }
        out.push(release + 0.001 * k as f64);
    }
    out
}

#[test]
fn a_stream_token_by_token_is_not_buffered() {
    assert_eq!(
        buffered(&ok_record(0.0, None, steady(260.0, 12.0, 64))),
        None
    );
    // A busy client that read two events at once now and then still streams.
    let mut events = steady(100.0, 2.0, 40);
    for i in (1..40).step_by(5) {
        events[i] = events[i - 1];
    }
    assert_eq!(buffered(&ok_record(0.0, None, events)), None);
    // A busy client that paused now and then and read 4 events at once: small clumps.
    let mut events = steady(100.0, 1.0, 12);
    for i in [1, 2, 3, 5, 6, 7, 9, 10, 11] {
        events[i] = events[i - 1];
    }
    assert_eq!(buffered(&ok_record(0.0, None, events)), None);
    // Three events are too few to tell.
    assert_eq!(buffered(&ok_record(0.0, None, vec![5.0, 5.0, 5.0])), None);
}

#[test]
fn a_stream_flushed_every_200_ms_is_buffered_in_bursts_and_keeps_ttft_as_a_bound() {
    let sent = steady(262.0, 12.4, 100);
    let d = buffered(&ok_record(0.0, None, flushed(&sent, 200.0))).expect("buffered");
    // 262 + 12.4 × 99 = 1,489.6 ms: releases at 400, 600, …, 1,400 and the end.
    assert_eq!(d.bursts, 7, "{d:?}");
    assert_eq!(d.events, 100);
    assert!(d.joined_share > 0.9, "{d:?}");
    let interval = d.interval_ms.expect("bursts apart");
    assert!((interval - 200.0).abs() < 1.0, "{interval}");
    assert!(
        d.keeps_ttft(),
        "the first burst holds {} of 100",
        d.first_share
    );
}

#[test]
fn a_body_delivered_at_once_is_one_burst_without_a_ttft() {
    let events: Vec<f64> = (0..16).map(|i| 475.0 + 0.002 * f64::from(i)).collect();
    let d = buffered(&ok_record(0.0, None, events)).expect("buffered");
    assert_eq!((d.bursts, d.events_in_bursts, d.interval_ms), (1, 16, None));
    assert!(!d.keeps_ttft());
    // Exactly equal stamps (one read) are joined too.
    let d = buffered(&ok_record(0.0, None, vec![80.0; 8])).expect("buffered");
    assert_eq!(d.bursts, 1);
}

#[test]
fn a_case_counts_its_buffered_responses_and_says_so_with_the_evidence() {
    let mut figures = BurstFigures::default();
    let sent = steady(262.0, 12.4, 100);
    for _ in 0..4 {
        assert!(figures
            .add(&ok_record(0.0, None, flushed(&sent, 200.0)))
            .is_some());
    }
    assert!(figures.add(&ok_record(0.0, None, sent.clone())).is_none());
    assert!(!figures.streams(), "4 of 5: the path buffers");
    let b = figures.finish().expect("buffered responses");
    assert_eq!((b.examined, b.buffered, b.ttft_withheld), (5, 4, 0));
    assert!(b.held_out() && !b.kept);
    assert!((b.bursts_median - 7.0).abs() < 1e-9, "{b:?}");
    assert!(!b.all());
    let line = b.sentence("c1");
    assert!(line.starts_with("c1: 4 of 5 responses arrived in a median of 7 bursts of ~14 token events, ~200 ms apart"), "{line}");
    assert!(line.contains("`X-Accel-Buffering: no`"), "{line}");
    assert!(line.contains("HAProxy: `option http-no-delay`"), "{line}");
    assert!(line.contains("upper bound"), "{line}");
    assert!(BurstFigures::default().finish().is_none());
}

/// A case of `n` ok responses streamed 12.4 ms apart, the first `clumped` of them arrived at
/// once (as a stalled machine would deliver them).
fn case_of(n: usize, clumped: usize) -> crate::summary::CaseSummary {
    let records: Vec<crate::record::Record> = (0..n)
        .map(|i| {
            let events = if i < clumped {
                vec![400.0; 16]
            } else {
                steady(100.0, 12.4, 16)
            };
            ok_record(0.0, None, events)
        })
        .collect();
    let case = crate::fixture::campaign().cases[0].case();
    crate::summary::CaseSummary::new(&case, 0, &records)
}

#[test]
fn a_few_responses_clumped_on_a_path_that_streams_stay_in_every_figure() {
    // 2 of 10 arrived at once: too few for a path that buffers.
    let s = case_of(10, 2);
    let b = s.bursts.as_ref().expect("the clumps are told");
    assert_eq!((b.examined, b.buffered), (10, 2));
    assert!(b.kept && !b.held_out() && !b.all());
    let n = |d: &Option<crate::stats::Distribution>| d.as_ref().map_or(0, |d| d.n);
    assert_eq!(n(&s.ttft_ms), 10, "every TTFT, the clumped ones' too");
    assert_eq!(n(&s.tpot_ms), 10);
    assert_eq!(n(&s.itl_ms), 10 * 15, "every gap");
    let line = b.sentence("c1");
    assert!(
        line.starts_with(
            "c1: 2 of 10 responses arrived all at once, too few for a path that buffers"
        ),
        "{line}"
    );
    assert!(line.contains("kept in every figure"), "{line}");
    // 8 of 10: the path buffers, and their per-token figures leave.
    let s = case_of(10, 8);
    let b = s.bursts.as_ref().expect("buffered");
    assert!(b.held_out() && !b.kept);
    assert_eq!((n(&s.ttft_ms), n(&s.tpot_ms), n(&s.itl_ms)), (2, 2, 2 * 15));
    assert_eq!(b.ttft_withheld, 8);
}

/// The events of `steady` behind the kernel's cork under `HAProxy`'s `MSG_MORE`: the first event
/// held starts a timer of `hold` ms, when everything held goes at once, a microsecond apart.
fn corked(events: &[f64], hold: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let release = events[i] + hold;
        let mut k = 0.0;
        while i < events.len() && events[i] <= release {
            out.push(release + 0.001 * k);
            k += 1.0;
            i += 1;
        }
    }
    out
}

/// A small generator for the tests' random points (`SplitMix64`), in [0, 1).
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64
    }
}

/// The events of `steady` as a busy client stamps them: at each read, with chance `chance`, it
/// comes up to `max_lag` ms late, and every event that arrived by then comes in that one read,
/// stamped (as the kernel does) with the arrival of the last.
fn read_late(events: &[f64], draws: &mut Draws, chance: f64, max_lag: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let lag = if draws.next() < chance {
            draws.next() * max_lag
        } else {
            0.0
        };
        let read_at = events[i] + lag;
        let mut j = i;
        while j + 1 < events.len() && events[j + 1] <= read_at {
            j += 1;
        }
        out.extend(std::iter::repeat_n(events[j], j + 1 - i));
        i = j + 1;
    }
    out
}

/// An ok record of `events` whose server said it spent `decode_ms` from its first token to its
/// last (llama-server's `predicted_ms`).
fn timed(events: Vec<f64>, decode_ms: f64) -> Record {
    let mut r = ok_record(0.0, None, events);
    let mut server = crate::record::ServerTimings::new(crate::record::TimingSource::LlamaServer);
    server.decode_ms = Some(decode_ms);
    r.server = Some(server);
    r
}

#[test]
fn a_proxy_flushing_every_200_ms_is_told_at_a_slow_rate_as_at_a_fast_one() {
    // 9 and 70 tokens/s, 64 tokens after a prefill of 80 ms; the kernel's cork and a timer.
    for per_token in [1000.0 / 9.0, 1000.0 / 70.0] {
        let sent = steady(80.0, per_token, 64);
        for (how, events) in [
            ("corked", corked(&sent, 200.0)),
            ("timer", flushed(&sent, 200.0)),
        ] {
            let d = buffered(&ok_record(0.0, None, events.clone()))
                .unwrap_or_else(|| panic!("{per_token} ms/token, {how}: not told"));
            let held = d.held_ms.expect("a span to go by");
            assert!(held >= MIN_HOLD_MS, "{per_token} {how}: {d:?}");
            assert!(d.bursts >= 5, "{per_token} {how}: {d:?}");
            // The server's own timing says the same.
            let decode = per_token * 63.0;
            assert!(
                buffered(&timed(events, decode)).is_some(),
                "{per_token} {how} timed"
            );
        }
    }
    // At 9 tokens/s the cork's bursts hold 2 events: no more than a busy client's clumps, but
    // each held back a token's time of the server, 111 ms.
    let d = buffered(&ok_record(
        0.0,
        None,
        corked(&steady(80.0, 111.1, 64), 200.0),
    ))
    .expect("buffered");
    assert!((d.events_in_bursts, d.bursts) == (64, 32), "{d:?}");
    assert!(d.joined_share < 0.6, "{d:?}");
}

#[test]
fn a_busy_client_reading_late_at_random_points_is_not_told_as_a_proxy() {
    for per_token in [1.0, 40.0] {
        for seed in 0..200 {
            let mut draws = Draws(seed);
            let sent = steady(30.0, per_token, 64);
            for chance in [0.1, 0.3, 1.0] {
                let events = read_late(&sent, &mut draws, chance, 20.0);
                assert_eq!(
                    buffered(&ok_record(0.0, None, events.clone())),
                    None,
                    "{per_token} ms/token, seed {seed}, late at {chance} of reads: {events:?}"
                );
                let decode = per_token * 63.0;
                assert_eq!(buffered(&timed(events, decode)), None, "{per_token} timed");
            }
        }
    }
    // Clumps there were, at 1 ms per token: it is their size in time that is small.
    let mut draws = Draws(7);
    let events = read_late(&steady(30.0, 1.0, 64), &mut draws, 1.0, 20.0);
    let joined = events.windows(2).filter(|w| w[1] == w[0]).count();
    assert!(joined > 32, "{events:?}");
}

#[test]
fn a_short_stream_at_once_is_told_by_the_servers_own_timing_where_it_has_one() {
    // 16 tokens the server produced in 15 ms, read in one go: a pause of the machine.
    let at_once = vec![40.0; 16];
    assert_eq!(buffered(&timed(at_once.clone(), 15.0)), None);
    // The same, where the server spent 1.5 s on them: held back.
    let d = buffered(&timed(at_once.clone(), 1500.0)).expect("held");
    assert_eq!(d.bursts, 1);
    assert!((d.held_ms.expect("timed") - 1500.0).abs() < 1e-9, "{d:?}");
    // Without the server's timing nothing says how long: at once is buffered, and the case
    // (80 % of its responses) tells a path from a moment's pause.
    let d = buffered(&ok_record(0.0, None, at_once)).expect("at once");
    assert_eq!(d.held_ms, None);
}
