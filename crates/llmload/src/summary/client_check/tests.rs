//! Unit tests of `summary/client_check.rs`.

use super::*;

fn samples(cpu_cores: f64, wait: f64, lag_ms: f64, n: usize) -> Vec<Sample> {
    vec![
        Sample {
            cpu_cores: Some(cpu_cores),
            run_queue_wait: Some(wait),
            timer_lag_ms: lag_ms,
            read_lag: LagTally::default(),
        };
        n
    ]
}

fn judge(samples: &[Sample], cores: u32, send_lag: Option<f64>) -> ClientCheck {
    assess(samples, cores, send_lag, &Bounds::default())
}

#[test]
fn an_idle_client_is_ok() {
    let check = judge(&samples(0.3, 0.0, 0.6, 10), 2, Some(0.4));
    assert_eq!(check.verdict, ClientVerdict::Ok);
    assert!(check.reasons.is_empty() && check.warning().is_none());
    assert_eq!(check.cpu_share_max, Some(0.15));
    assert!(check.line().contains("kept up"), "{}", check.line());
}

#[test]
fn each_bound_is_a_reason_with_its_figures() {
    let busy = judge(&samples(1.96, 0.0, 0.5, 8), 2, None);
    assert_eq!(busy.verdict, ClientVerdict::ClientMayHaveDistorted);
    assert!(
        busy.reasons[0].contains("8 of 8 samples"),
        "{:?}",
        busy.reasons
    );
    assert!(
        busy.reasons[0].contains("at most 98 %"),
        "{:?}",
        busy.reasons
    );
    let crowded = judge(&samples(0.5, 0.45, 0.5, 8), 1, None);
    assert!(crowded.reasons[0].contains("up to 450 ms per second"));
    let late = judge(&samples(0.2, 0.0, 12.0, 4), 2, None);
    assert!(
        late.reasons[0].contains("p99 12.0 ms"),
        "{:?}",
        late.reasons
    );
    let lagging = judge(&samples(0.2, 0.0, 0.5, 4), 2, Some(25.0));
    assert!(lagging.reasons[0].contains("send lag p99 25.0 ms"));
    let warning = busy.warning().expect("flagged");
    assert!(warning.starts_with("The client may have distorted this measurement"));
    assert!(busy.line().starts_with("Client self-check: WARNING."));
}

#[test]
fn one_busy_moment_is_not_a_verdict() {
    let mut mixed = samples(0.2, 0.0, 0.5, 20);
    mixed[0].cpu_cores = Some(2.0);
    mixed[1].timer_lag_ms = 40.0;
    assert_eq!(judge(&mixed, 2, None).verdict, ClientVerdict::Ok);
    mixed[2].cpu_cores = Some(2.0);
    assert_eq!(
        judge(&mixed, 2, None).verdict,
        ClientVerdict::ClientMayHaveDistorted
    );
    assert_eq!(judge(&mixed[..1], 2, None).verdict, ClientVerdict::TooShort);
    let without_proc = vec![
        Sample {
            cpu_cores: None,
            run_queue_wait: None,
            timer_lag_ms: 0.5,
            read_lag: LagTally::default(),
        };
        3
    ];
    let check = judge(&without_proc, 2, None);
    assert_eq!(
        (check.verdict, check.cpu_share_mean),
        (ClientVerdict::Ok, None)
    );
    assert_eq!(check.read_lag, None, "no stamped read, no read lag");
}

#[test]
fn read_lag_is_weighted_by_reads_and_shown_without_a_verdict() {
    let mut s = samples(0.2, 0.0, 0.5, 3);
    s[0].read_lag = LagTally {
        reads: 100,
        mean_ms: 0.1,
        max_ms: 0.5,
        over_1ms: 0,
    };
    s[2].read_lag = LagTally {
        reads: 300,
        mean_ms: 0.5,
        max_ms: 3.0,
        over_1ms: 40,
    };
    let check = judge(&s, 2, None);
    let lag = check.read_lag.expect("stamped reads");
    assert_eq!(lag.reads, 400);
    assert!((lag.mean_ms - 0.4).abs() < 1e-12, "{lag:?}");
    assert_eq!((lag.max_ms, lag.over_1ms_share), (3.0, 0.1));
    assert_eq!(check.verdict, ClientVerdict::Ok);
    assert!(check
        .line()
        .contains("at most 3.0 ms, 10.0 % over 1 ms (n = 400 reads"));
}
