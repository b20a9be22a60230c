//! What a block of a probe measured: its tally of every objective and its figures, from the
//! records of the case that ran it; an open loop's case cut into its consecutive segments.

use super::sequential::Block;
use super::slo::{judged, Rule, Tally};
use crate::record::{Record, Status};
use std::borrow::Borrow;

/// What one block measured besides its tallies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// Responses judged.
    pub requests: u64,
    /// Responses that completed.
    pub ok: u64,
    /// Output tokens of the completed responses.
    pub output_tokens: u64,
    /// From the first send to the last response, seconds.
    pub window_s: f64,
    /// The completed responses' complete-response times added up, ms.
    pub response_ms: f64,
}

impl Figures {
    /// Adds another block's.
    pub fn add(&mut self, other: Figures) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.output_tokens += other.output_tokens;
        self.window_s += other.window_s;
        self.response_ms += other.response_ms;
    }
}

/// One block: its tally of every rule and its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockRun {
    /// A tally per rule, in the rules' order.
    pub tallies: Block,
    /// What it measured.
    pub figures: Figures,
}

/// The block of `records` (one case's), judged by `rules`. With `users` closed users, the
/// first turn of each user's first session is left out of the latency objectives: those open
/// the load (over one think time, the users staggered), a ramp no steady load of users sends
/// (unless nothing else is left, as when every session failed at its first turn).
pub fn block_of<R: Borrow<Record>>(
    records: &[R],
    rules: &[(Rule, String)],
    users: u64,
) -> BlockRun {
    let records = records.iter().map(Borrow::borrow);
    let first_session = records.clone().filter_map(|r| r.session).min().unwrap_or(0);
    let opening =
        |r: &Record| r.turn == Some(1) && r.session.is_some_and(|s| s < first_session + users);
    let measured: Vec<&Record> = records.filter(|r| judged(r)).collect();
    let steady: Vec<&Record> = measured.iter().copied().filter(|r| !opening(r)).collect();
    let tally = |rule: &Rule, over: &[&Record]| {
        over.iter().fold(Tally::default(), |mut t, r| {
            t.add(rule.tally(r));
            t
        })
    };
    let tallies = rules
        .iter()
        .map(|(rule, _)| match rule {
            Rule::Latency { .. } if !steady.is_empty() => tally(rule, &steady),
            _ => tally(rule, &measured),
        })
        .collect();
    BlockRun {
        tallies,
        figures: if users > 0 {
            let all_in = measured
                .iter()
                .filter(|r| opening(r))
                .map(|r| r.sent_s)
                .fold(f64::NEG_INFINITY, f64::max);
            steady_figures(&measured, all_in)
        } else {
            figures(&measured)
        },
    }
}

/// What closed users measured while all of them were in the load: from `all_in`, the last
/// user's first send (the users start staggered), or the first send, to the last session's
/// start (after it, users whose sessions end start no more, and the block drains), over the
/// responses that ended in that stretch; the whole block where that stretch is empty.
fn steady_figures(records: &[&Record], all_in: f64) -> Figures {
    let first = records
        .iter()
        .map(|r| r.sent_s)
        .fold(f64::INFINITY, f64::min)
        .max(all_in);
    let last_start = records
        .iter()
        .filter(|r| r.turn == Some(1))
        .map(|r| r.sent_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let within: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.last_seen() > first && r.last_seen() <= last_start)
        .collect();
    if within.is_empty() || last_start <= first {
        return figures(records);
    }
    Figures {
        window_s: last_start - first,
        ..figures(&within)
    }
}

/// What `records` measured: the requests, the completed ones, their output tokens and
/// response times, and the window from the first send to the last response.
fn figures(records: &[&Record]) -> Figures {
    let first = records
        .iter()
        .map(|r| r.sent_s)
        .fold(f64::INFINITY, f64::min);
    let last = records.iter().map(|r| r.last_seen()).fold(0.0, f64::max);
    let ok: Vec<&&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
    Figures {
        requests: records.len() as u64,
        ok: ok.len() as u64,
        output_tokens: ok.iter().map(|r| u64::from(r.generated_tokens())).sum(),
        window_s: if last > first { last - first } else { 0.0 },
        response_ms: ok.iter().filter_map(|r| r.e2e_ms).sum(),
    }
}

/// The `parts` consecutive segments of one open-loop case's `records`: the measured responses
/// in the order they were scheduled, cut into equal parts (their sizes differ by one at most),
/// each judged as a block; the case's window is shared among them by their requests, so that
/// their figures add up to the case's.
pub fn segments_of(records: &[Record], rules: &[(Rule, String)], parts: usize) -> Vec<BlockRun> {
    let mut measured: Vec<&Record> = records.iter().filter(|r| judged(r)).collect();
    measured.sort_by(|a, b| {
        let at = |r: &Record| r.scheduled_s.unwrap_or(r.sent_s);
        at(a).total_cmp(&at(b)).then(a.index.cmp(&b.index))
    });
    let window = figures(&measured).window_s;
    let n = measured.len();
    (0..parts)
        .map(|i| {
            let part = &measured[i * n / parts..(i + 1) * n / parts];
            let mut block = block_of(part, rules, 0);
            block.figures.window_s = if n == 0 {
                0.0
            } else {
                window * part.len() as f64 / n as f64
            };
            block
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(texts: &[&str]) -> Vec<(Rule, String)> {
        texts
            .iter()
            .map(|t| (t.parse().expect("rule"), (*t).to_owned()))
            .collect()
    }

    /// The fixture's `in256-c2-out4`: measured TTFTs 45, 75 and 46 ms, and one timed out.
    fn block_records() -> Vec<Record> {
        crate::fixture::records()
            .into_iter()
            .filter(|r| r.case == "in256-c2-out4")
            .collect()
    }

    #[test]
    fn a_block_counts_measured_responses_and_a_failure_misses_every_bound() {
        let block = block_of(
            &block_records(),
            &rules(&["ttft_p50<50ms", "errors<50%"]),
            0,
        );
        assert_eq!(block.tallies[0], Tally { met: 2, judged: 4 });
        assert_eq!(block.tallies[1], Tally { met: 3, judged: 4 });
        assert_eq!(block.figures.requests, 4);
        assert_eq!(block.figures.ok, 3);
        assert_eq!(block.figures.output_tokens, 12);
    }

    #[test]
    fn the_first_turn_of_each_users_first_session_is_left_out_of_latency_only() {
        let mut records = block_records();
        // Two users: sessions 10 and 11 open the block, session 12 follows.
        for (r, (session, turn)) in records.iter_mut().filter(|r| r.round.is_some()).zip([
            (10, 1),
            (11, 1),
            (10, 2),
            (12, 1),
        ]) {
            r.session = Some(session);
            r.turn = Some(turn);
        }
        let block = block_of(&records, &rules(&["ttft_p50<50ms", "errors<50%"]), 2);
        // Left out: 45 ms and 75 ms; kept: 46 ms and the timed-out request.
        assert_eq!(block.tallies[0], Tally { met: 1, judged: 2 });
        assert_eq!(block.tallies[1], Tally { met: 3, judged: 4 });
        // The users' steady stretch ends at session 12's start (3.0 s): two responses ended by
        // then, over 0.9 s from the first send.
        assert_eq!(block.figures.requests, 2, "{:?}", block.figures);
        assert!(
            (block.figures.window_s - 0.9).abs() < 1e-9,
            "{:?}",
            block.figures
        );
    }

    #[test]
    fn a_case_is_cut_into_equal_consecutive_segments_in_the_order_scheduled() {
        // The fixture's 4 measured responses, scheduled in reverse of their order in the file.
        let mut records = block_records();
        let count = records.iter().filter(|r| judged(r)).count();
        assert_eq!(count, 4);
        for (k, r) in records.iter_mut().enumerate() {
            r.scheduled_s = Some(100.0 - k as f64);
        }
        let rules = rules(&["errors<50%"]);
        let parts = segments_of(&records, &rules, 2);
        assert_eq!(parts.len(), 2);
        let whole = block_of(&records, &rules, 0);
        // Each part holds 2 responses; together they are the case's, window included.
        let mut sum = Figures::default();
        let mut tally = Tally::default();
        for p in &parts {
            assert_eq!(p.figures.requests, 2);
            sum.add(p.figures);
            tally.add(p.tallies[0]);
        }
        assert_eq!(tally, whole.tallies[0]);
        assert_eq!(
            (sum.requests, sum.ok),
            (whole.figures.requests, whole.figures.ok)
        );
        assert!((sum.window_s - whole.figures.window_s).abs() < 1e-9);
        // The last scheduled first: the first part holds the file's last two measured.
        let last_two: Vec<&Record> = records.iter().filter(|r| judged(r)).skip(2).collect();
        let first = block_of(&last_two, &rules, 0);
        assert_eq!(parts[0].tallies, first.tallies);
        assert_eq!(parts[0].figures.ok, first.figures.ok);
    }
}
