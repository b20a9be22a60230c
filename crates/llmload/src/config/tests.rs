//! Unit tests of `config/mod.rs`.

use super::*;

fn args() -> Settings {
    Settings {
        url: Some("http://127.0.0.1:8080/".into()),
        ..Settings::default()
    }
}

#[test]
fn defaults_are_the_reference_campaign() {
    let config = Config::resolve(args()).expect("valid");
    assert_eq!(config.url.as_deref(), Some("http://127.0.0.1:8080"));
    let ids: Vec<_> = config.cases().into_iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "in2048-c1-out256",
            "in2048-c4-out256",
            "in8192-c1-out256",
            "in8192-c4-out256"
        ]
    );
    assert_eq!((config.rounds, config.warmup), (3, 1));
}

#[test]
fn flags_override_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        "api = \"chat\"\nrounds = 5\ninput_tokens = [128]\nconcurrency = [2]\n",
    )
    .expect("write");
    let mut a = args();
    a.rounds = Some(2);
    let config = Config::resolve(a.over(Settings::read(&path).expect("readable"))).expect("valid");
    assert_eq!(config.api, Some(Api::Chat));
    assert_eq!(
        (config.rounds, config.input_tokens.clone()),
        (2, vec![Length::Fixed(128)])
    );
    assert_eq!(config.concurrency, vec![2]);
}

#[test]
fn bad_values_are_one_line_errors() {
    type Change = Box<dyn Fn(&mut Settings)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|a| a.url = Some("ftp://x".into())), "scheme"),
        (Box::new(|a| a.url = Some("not a url".into())), "--url"),
        (Box::new(|a| a.concurrency = Some(vec![0])), "--concurrency"),
        (Box::new(|a| a.rounds = Some(0)), "--rounds"),
        (
            Box::new(|a| a.headers = vec!["novalue".into()]),
            "NAME:VALUE",
        ),
        (Box::new(|a| a.timeout = Some("soon".into())), "--timeout"),
        (Box::new(|a| a.name = Some("../x".into())), "--name"),
    ];
    for (change, expected) in cases {
        let mut a = args();
        change(&mut a);
        let e = Config::resolve(a)
            .expect_err("must be rejected")
            .to_string();
        assert!(e.contains(expected) && !e.contains('\n'), "{e}");
    }
}

#[test]
fn unknown_file_keys_are_rejected() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.toml");
    std::fs::write(&path, "concurency = [2]\n").expect("write");
    let e = Settings::read(&path)
        .expect_err("typo must be rejected")
        .to_string();
    assert!(e.contains("concurency"), "{e}");
}

#[test]
fn the_default_window_is_a_twentieth_of_the_measurement_window_within_bounds() {
    let length = |duration: &str, warmup: Option<&str>, explicit: Option<&str>| {
        let args = Settings {
            arrival: Some(crate::workload::shape::Arrival::ClosedContinuous),
            duration: Some(duration.into()),
            warmup_time: warmup.map(str::to_owned),
            series_window: explicit.map(str::to_owned),
            ..Settings::default()
        };
        Config::resolve(args)
            .expect("valid")
            .series_window_length()
            .map(|d| d.as_secs())
    };
    assert_eq!(length("4h", None, None), Some(300));
    assert_eq!(length("60s", None, None), Some(3));
    assert_eq!(length("70s", Some("10s"), None), Some(3));
    assert_eq!(length("6s", None, None), Some(1));
    assert_eq!(length("4h", None, Some("1m")), Some(60));
    let rounds = Config::resolve(Settings::default()).expect("valid");
    assert_eq!(
        rounds.series_window_length(),
        None,
        "closed rounds have no series"
    );
}
