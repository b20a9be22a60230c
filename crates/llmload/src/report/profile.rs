//! `--profile-server`: when the server's profiler ran, what started it, and where the profile
//! is, as a paragraph per profiled case in every view.

use super::page::{Block, Section};
use crate::record::{ServerCall, ServerProfile};

/// What a call did, in words.
fn call(c: &ServerCall) -> String {
    match &c.refused {
        None => format!("{} (done)", c.how),
        Some(why) => format!("{} (refused: {why})", c.how),
    }
}

/// The paragraph of one profiled case.
pub fn sentence(case: &str, p: &ServerProfile) -> String {
    let Some(start) = &p.start else {
        return format!(
            "{case}, round {}: the server never said {} requests were running during the \
             round; no profile was started.",
            p.round, p.at
        );
    };
    let trigger = match (&p.gauge, p.running) {
        (Some(gauge), Some(running)) => format!("once {gauge} read {running} (≥ {})", p.at),
        _ => "as the round's requests were sent (its /metrics has no gauge of running \
              requests)"
            .to_owned(),
    };
    let at = p
        .started_s
        .map_or_else(String::new, |t| format!(" at {t:.3} s"));
    let stop = match (&p.stop, p.stopped_s) {
        (Some(stop), Some(t)) => format!("; at the round's end, {t:.3} s: {}", call(stop)),
        _ => String::new(),
    };
    let location = if start.done && p.stop.as_ref().is_some_and(|s| s.done) {
        format!(" The profile is {}.", p.location)
    } else {
        String::new()
    };
    format!(
        "{case}, round {}: {trigger}{at}, {}{stop}.{location}",
        p.round,
        call(start)
    )
}

/// The page's section: one paragraph per profiled case; none without a profile.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let lines: Vec<String> = report
        .summary
        .cases
        .iter()
        .filter_map(|c| c.server_profile.as_ref().map(|p| sentence(&c.id, p)))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut section = Section::new("server-profile", "Server profile");
    for line in lines {
        section.push(Block::Paragraph(line));
    }
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(start: Option<ServerCall>) -> ServerProfile {
        ServerProfile {
            round: 1,
            at: 4,
            gauge: Some("vllm:num_requests_running".into()),
            running: Some(4.0),
            started_s: Some(1.25),
            stop: start.as_ref().map(|_| ServerCall {
                how: "POST /stop_profile".into(),
                done: true,
                refused: None,
            }),
            stopped_s: Some(2.5),
            start,
            location: "on the server's machine".into(),
        }
    }

    #[test]
    fn sentences_say_what_started_it_and_where_the_profile_is() {
        let done = ServerCall {
            how: "POST /start_profile".into(),
            done: true,
            refused: None,
        };
        assert_eq!(
            sentence("c4", &profile(Some(done))),
            "c4, round 1: once vllm:num_requests_running read 4 (≥ 4) at 1.250 s, POST \
             /start_profile (done); at the round's end, 2.500 s: POST /stop_profile (done). The \
             profile is on the server's machine."
        );
        let refused = ServerCall {
            how: "POST /start_profile".into(),
            done: false,
            refused: Some("404 Not Found".into()),
        };
        let mut p = profile(Some(refused));
        p.stop = None;
        let s = sentence("c4", &p);
        assert!(
            s.contains("(refused: 404 Not Found)") && !s.contains("The profile is"),
            "{s}"
        );
        assert!(sentence("c4", &profile(None)).contains("never said 4 requests"));
    }
}
