//! Unit tests of `config/mod.rs`.

use super::sizes::open_files_limit;
use super::*;

fn args() -> Settings {
    let mut settings = Settings::default();
    settings.target.url = Some(vec!["http://127.0.0.1:8080/".into()]);
    settings
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
    a.rounds.rounds = Some(2);
    let config =
        Config::resolve(a.combine(Settings::read(&path).expect("readable"))).expect("valid");
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
        (
            Box::new(|a| a.target.url = Some(vec!["ftp://x".into()])),
            "scheme",
        ),
        (
            Box::new(|a| a.target.url = Some(vec!["not a url".into()])),
            "--url",
        ),
        (
            Box::new(|a| a.load.concurrency = Some(vec![0])),
            "--concurrency",
        ),
        (Box::new(|a| a.rounds.rounds = Some(0)), "--rounds"),
        (
            Box::new(|a| a.target.headers = vec!["novalue".into()]),
            "NAME:VALUE",
        ),
        (
            Box::new(|a| a.target.timeout = Some("soon".into())),
            "--timeout",
        ),
        (
            Box::new(|a| a.target.setup_timeout = Some("0ms".into())),
            "--setup-timeout must be longer than 0",
        ),
        (Box::new(|a| a.outputs.name = Some("../x".into())), "--name"),
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
fn a_stagger_needs_a_window_longer_than_one_think_time() {
    let staggered = |duration: &str| {
        let mut a = args();
        a.sessions.turns = Some(3);
        a.sessions.think_time = Some("4s".into());
        a.sessions.stagger = Some(true);
        a.load.duration = Some(duration.into());
        Config::resolve(a)
    };
    let e = staggered("4s").expect_err("refused").to_string();
    assert!(
        e.contains("--stagger") && e.contains("4s") && !e.contains('\n'),
        "{e}"
    );
    let e = staggered("2s").expect_err("refused").to_string();
    assert!(e.contains("--duration longer"), "{e}");
    assert!(staggered("5s").is_ok());
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
fn only_a_series_window_asks_for_a_soak_series() {
    let length = |duration: &str, warmup: Option<&str>, explicit: Option<&str>| {
        let mut args = Settings::default();
        args.load.arrival = Some(crate::workload::shape::Arrival::ClosedContinuous);
        args.load.duration = Some(duration.into());
        args.load.warmup_time = warmup.map(str::to_owned);
        args.outputs.series_window = explicit.map(str::to_owned);
        Config::resolve(args)
            .expect("valid")
            .series_window_length()
            .map(|d| d.as_secs())
    };
    assert_eq!(length("15s", None, None), None, "a 15 s loop is no soak");
    assert_eq!(
        length("4h", Some("10s"), None),
        None,
        "nor is a long one not asked"
    );
    assert_eq!(length("4h", None, Some("1m")), Some(60));
    assert_eq!(length("15s", None, Some("3s")), Some(3));
    let rounds = Config::resolve(Settings::default()).expect("valid");
    assert_eq!(
        rounds.series_window_length(),
        None,
        "closed rounds have no series"
    );
}

#[test]
fn a_campaign_file_stages_table_is_one_case_per_stage() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.toml");
    let text = "input_tokens = 64\noutput_tokens = 8\narrival = \"gamma\"\nburstiness = 2.0\n\
                [[stages]]\nduration = \"10s\"\nrate = 2\n\
                [[stages]]\nduration = \"30s\"\nrate = 8\nramp = true\n";
    std::fs::write(&path, text).expect("write");
    let config =
        Config::resolve(args().combine(Settings::read(&path).expect("readable"))).expect("valid");
    let plans = config.plans();
    let ids: Vec<&str> = plans.iter().map(|p| p.case.id.as_str()).collect();
    assert_eq!(
        ids,
        ["stage1-gamma-r2-in64-out8", "stage2-gamma-r2to8-in64-out8"]
    );
    let label = plans[1].stage.as_ref().expect("a stage");
    assert!(label.ramp && label.from == 2.0 && label.to == 8.0);
    assert_eq!(label.start_s, 10.0);
    assert!(matches!(
        plans[1].shape,
        crate::workload::shape::Shape::Open { rate_rps, .. } if rate_rps == 5.0
    ));
    let bad = "[[stages]]\nduration = \"10s\"\nrate = 2\nconcurrency = 3\n";
    std::fs::write(&path, bad).expect("write");
    let settings = Settings::read(&path).expect("readable");
    assert!(Config::resolve(args().combine(settings)).is_err());
}

#[test]
fn stages_refuse_the_settings_they_replace() {
    let staged = |text: &str| {
        let mut a = args();
        a.load.stages = Some(StagesSetting::Text(text.into()));
        a
    };
    let ok = Config::resolve(staged("5s:concurrency=2,5s:ramp:concurrency=6")).expect("valid");
    assert_eq!(ok.concurrency, [6]);
    assert!(!ok.is_open());
    assert_eq!(ok.plans()[1].case.id, "stage2-cc2to6-in2048-out256");
    let refused: [fn(&mut Settings); 7] = [
        |a| a.load.rate = Some(vec![2.0]),
        |a| a.load.concurrency = Some(vec![2]),
        |a| a.load.duration = Some("10s".into()),
        |a| a.load.requests = Some(10),
        |a| a.load.arrival = Some(crate::workload::shape::Arrival::Rounds),
        |a| a.load.warmup_time = Some("5s".into()),
        |a| a.workload.output_tokens = Some(vec![LengthItem::Spec("8,16".into())]),
    ];
    for (i, change) in refused.iter().enumerate() {
        let mut a = staged("5s:rate=2");
        a.workload.input_tokens = Some(vec![LengthItem::Spec("64".into())]);
        change(&mut a);
        let error = Config::resolve(a).expect_err(&format!("refusal {i}"));
        assert!(!error.0.contains('\n'), "{}", error.0);
    }
    let mut closed = staged("5s:concurrency=2");
    closed.load.max_in_flight = Some(4);
    assert!(Config::resolve(closed).is_err());
}

#[test]
fn a_shard_is_bounded_by_its_share_of_the_in_flight_cap() {
    let Some(limit) = open_files_limit().and_then(|l| u32::try_from(l).ok()) else {
        return; // no limit on open files: nothing to exceed
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        format!(
            "arrival = \"poisson\"\nrate = [10.0]\ninput_tokens = [16]\noutput_tokens = [4]\n\
             max_in_flight = {limit}\n"
        ),
    )
    .expect("write");
    let file = || Settings::read(&path).expect("readable");
    // One process would need a socket per place: more than it may open.
    let e = Config::resolve(args().combine(file()))
        .expect_err("over the limit")
        .to_string();
    assert!(e.contains("sockets") && !e.contains('\n'), "{e}");
    // The numbers it quotes agree: what is needed is more than the limit it names.
    let needed = u64::from(limit) + 64;
    assert!(
        e.contains(&format!("needs {needed} open files")) && e.contains(&format!("the {limit} ")),
        "{e}"
    );
    // Shard 0 of 1,000 holds a thousandth of them.
    let mut sharded = args();
    sharded.sharding.shard = Some("0/1000".into());
    sharded.sharding.attempt_id = Some("bounds".into());
    sharded.sharding.start_at = Some("+1m".into());
    let config = Config::resolve(sharded.combine(file())).expect("a shard's share fits");
    assert_eq!(config.load.max_in_flight, Some(limit));
}

#[test]
fn a_campaign_file_sets_sessions_and_their_cases_name_them() {
    use crate::workload::schedule::Bound;
    use crate::workload::session::{History, Think};
    use crate::workload::shape::Shape;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        "turns = 4\nturn_input = 64\nthink_time = \"uniform:1s..3s\"\nhistory = \"placeholder\"\n\
         sessions = 6\nstagger = true\ninput_tokens = [256]\nconcurrency = [2]\noutput_tokens = [32]\n",
    )
    .expect("write");
    let config =
        Config::resolve(args().combine(Settings::read(&path).expect("readable"))).expect("valid");
    let plans = config.plans();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].case.id, "in256-sessions-c2x4-out32");
    let Shape::Sessions {
        bound,
        spec,
        process,
        ..
    } = &plans[0].shape
    else {
        panic!("a case of sessions: {:?}", plans[0].shape);
    };
    assert_eq!(*bound, Bound::Requests(6));
    assert!(process.is_none());
    assert_eq!(spec.turns, 4);
    assert_eq!(spec.turn_input, Some(64));
    assert_eq!(spec.history, History::Placeholder);
    assert!(spec.stagger);
    assert_eq!(
        spec.think,
        Think::Uniform(Duration::from_secs(1), Duration::from_secs(3))
    );
    // The last turn holds three earlier turns' messages and answers.
    assert_eq!(plans[0].longest(), (256 + 3 * (64 + 32), 32));
    let mut open = args();
    open.sessions.turns = Some(2);
    open.load.arrival = Some(crate::workload::shape::Arrival::Poisson);
    open.load.rate = Some(vec![0.5]);
    let plans = Config::resolve(open).expect("valid").plans();
    assert_eq!(plans[0].case.id, "in2048-sessions-poisson-r0.5x2-out256");
    assert!(matches!(
        plans[0].shape,
        Shape::Sessions { bound: Bound::Requests(10), rate_rps: Some(r), .. } if r == 0.5
    ));
}

#[test]
fn a_url_has_one_form_and_its_api_root_is_taken_off() {
    let url = |given: &str| {
        let mut settings = Settings::default();
        settings.target.url = Some(vec![given.into()]);
        Config::resolve(settings).map(|c| (c.url.unwrap_or_default(), c.notes))
    };
    // Schemes and hosts are case-insensitive; a path is percent-encoded once, here.
    assert_eq!(
        url("HTTP://GPU-Box:8000/my models/").expect("valid").0,
        "http://gpu-box:8000/my%20models"
    );
    // The API root OpenAI's clients are given works, and is said once.
    let (base, notes) = url("https://gateway.example/team/v1/").expect("valid");
    assert_eq!(base, "https://gateway.example/team");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("/v1 taken off"), "{notes:?}");
    assert!(url("http://h:8080").expect("valid").1.is_empty());
    // A query or a fragment would be glued in front of every path: refused, and never echoed.
    for bad in ["http://h/m?key=SECRET", "http://h/m#frag"] {
        let e = url(bad).expect_err("refused").to_string();
        assert!(
            e.contains("no query or fragment") && !e.contains("SECRET"),
            "{e}"
        );
    }
    // No scheme: say which to give.
    let e = url("127.0.0.1:8080").expect_err("refused").to_string();
    assert!(
        e.contains("give the scheme, e.g. http://127.0.0.1:8080"),
        "{e}"
    );
    let e = url("localhost:8080").expect_err("refused").to_string();
    assert!(e.contains("give the scheme"), "{e}");
}

#[test]
fn framing_headers_cannot_be_given() {
    for header in [
        "Host: other",
        "content-length: 0",
        "Transfer-Encoding: chunked",
        "Connection: close",
    ] {
        let mut settings = args();
        settings.target.headers = vec![header.into()];
        let e = Config::resolve(settings).expect_err("refused").to_string();
        assert!(e.contains("llmload sets this field itself"), "{e}");
    }
}

#[test]
fn a_warmup_as_long_as_the_loop_is_refused() {
    let mut settings = args();
    settings.load.arrival = Some(crate::workload::shape::Arrival::ClosedContinuous);
    settings.load.duration = Some("10s".into());
    settings.load.warmup_time = Some("10s".into());
    let e = Config::resolve(settings).expect_err("refused").to_string();
    assert!(e.contains("nothing would be measured"), "{e}");
}
