//! Unit tests of `attempt/campaign.rs` and `attempt/campaign/case.rs`.

use super::*;
use crate::workload::schedule::Process;
use crate::workload::shape::ShapeKind;
use serde_json::json;

/// The config of a campaign file's `text`, against a server at a fixed URL.
fn config(text: &str) -> Config {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("campaign.toml");
    std::fs::write(&path, format!("url = \"http://127.0.0.1:8080\"\n{text}")).expect("write");
    let settings = crate::config::Settings::read(&path).expect("a campaign file");
    Config::resolve(settings).expect("a valid config")
}

/// A sample file of the crate.
fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
        .display()
        .to_string()
}

/// Campaign files of every shape: closed rounds, closed continuous, open loops (with length
/// distributions), stages, sessions, a trace, a dataset and a shard.
fn shapes(trace: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "rounds",
            "input_tokens = [64, 256]\noutput_tokens = 4\nconcurrency = [1, 2]\nrounds = 2\n"
                .into(),
        ),
        (
            "closed-continuous",
            "arrival = \"closed-continuous\"\nconcurrency = [3]\nrequests = 10\n\
             input_tokens = 24\noutput_tokens = 4\nwarmup_time = \"200ms\"\n"
                .into(),
        ),
        (
            "poisson",
            "arrival = \"poisson\"\nrate = [20.0]\nrequests = 12\n\
             input_tokens = \"choice:16@1,48@2\"\noutput_tokens = 4\nslo_ttft = \"500ms\"\n"
                .into(),
        ),
        (
            "gamma",
            "arrival = \"gamma\"\nburstiness = 2.0\nrate = [30.0]\nduration = \"1s\"\n\
             max_in_flight = 4\ninput_tokens = 24\noutput_tokens = \"uniform:2,6\"\n\
             stop_temp = 90.0\n"
                .into(),
        ),
        (
            "stages",
            "arrival = \"constant\"\ninput_tokens = 24\noutput_tokens = 4\nwarmup = 0\n\
             stages = \"1s:rate=5,1s:ramp:rate=10\"\n"
                .into(),
        ),
        (
            "sessions",
            "turns = 3\nthink_time = \"exp:20ms\"\ninput_tokens = 32\nturn_input = 8\n\
             output_tokens = 4\nconcurrency = [2]\n"
                .into(),
        ),
        (
            "open sessions",
            "turns = 2\narrival = \"poisson\"\nrate = [4.0]\nsessions = 4\n\
             history = \"placeholder\"\ninput_tokens = 32\noutput_tokens = 4\n"
                .into(),
        ),
        (
            "trace",
            format!(
                "arrival = \"trace\"\ntrace = {:?}\nmax_in_flight = 4\n",
                trace.display().to_string()
            ),
        ),
        (
            "dataset",
            format!(
                "dataset = {:?}\ndataset_lengths = \"as-is\"\n\
                 output_tokens = 4\nconcurrency = [2]\nrounds = 1\n",
                sample("prompts.jsonl")
            ),
        ),
        (
            "sharded",
            "arrival = \"poisson\"\nrate = [15.0]\nrequests = 18\ninput_tokens = 24\n\
             output_tokens = 4\nshard = \"1/3\"\nattempt_id = \"shared\"\nstart_at = \"+5s\"\n"
                .into(),
        ),
    ]
}

/// The campaign of a run of `config`, as the run writes it.
fn campaign_of(config: &Config) -> Campaign {
    let attempt = Attempt {
        id: "20250101T000000Z-abcd".into(),
        dir: PathBuf::from("attempt"),
        started_at: "2025-01-01T00:00:00Z".into(),
    };
    let target = CampaignTarget {
        url: "http://127.0.0.1:8080".into(),
        api: Api::Completions,
        model: Some("m".into()),
        simulated: false,
        server: json!({"kind": "vllm", "props": {"n_ctx": 4096}}),
        dropped_fields: Vec::new(),
        replicas: Vec::new(),
    };
    let fingerprint = crate::views::fingerprint(config);
    Campaign::new(config, &attempt, target, &config.plans(), fingerprint).expect("a campaign")
}

/// Each shape's config and campaign, with the trace file they replay.
fn campaigns() -> Vec<(&'static str, Config, Campaign)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("trace.jsonl");
    let lines: Vec<String> = (0..12)
        .map(|i| {
            json!({"offset_s": f64::from(i) * 0.03, "input_tokens": 16 + i * 8,
                   "output_tokens": 2 + i % 5})
            .to_string()
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).expect("write trace");
    shapes(&trace)
        .into_iter()
        .map(|(name, text)| {
            let config = config(&text);
            let campaign = campaign_of(&config);
            (name, config, campaign)
        })
        .collect()
}

/// The file's text, as [`Campaign::write`] lays it out.
fn text(campaign: &Campaign) -> String {
    serde_json::to_string_pretty(&serde_json::to_value(campaign).expect("a value")).expect("text")
}

#[test]
fn a_campaign_written_and_read_back_writes_the_same_file() {
    for (name, _, campaign) in campaigns() {
        let written = text(&campaign);
        let read: Campaign = serde_json::from_str(&written).expect(name);
        assert_eq!(read, campaign, "{name}");
        assert_eq!(text(&read), written, "{name}");
    }
}

#[test]
fn the_file_holds_the_config_and_the_plans_as_they_serialise() {
    // The layout `campaign.json` has always had: the options model's config and the runner's
    // plans, each as its own type serialises, with the run's identity, the target and the host.
    for (name, config, campaign) in campaigns() {
        let plans = config.plans();
        let host = serde_json::to_value(campaign.host.as_ref()).expect("host");
        let expected = json!({
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "llmload", "version": env!("CARGO_PKG_VERSION")},
            "attempt_id": "20250101T000000Z-abcd",
            "started_at": "2025-01-01T00:00:00Z",
            "time_origin": TIME_ORIGIN,
            "config": &config,
            "config_fingerprint": crate::views::fingerprint(&config),
            "cases": plans,
            "target": {
                "url": "http://127.0.0.1:8080",
                "api": "completions",
                "model": "m",
                "simulated": false,
                "server": {"kind": "vllm", "props": {"n_ctx": 4096}},
            },
            "host": host,
        });
        let written = serde_json::to_value(&campaign).expect("a value");
        assert_eq!(written, expected, "{name}");
    }
}

#[test]
fn each_shape_reads_back_as_its_own_load() {
    let kinds: Vec<(&str, ShapeKind)> = campaigns()
        .iter()
        .map(|(name, _, c)| (*name, c.cases[0].kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("rounds", ShapeKind::Rounds),
            ("closed-continuous", ShapeKind::ClosedContinuous),
            ("poisson", ShapeKind::Open),
            ("gamma", ShapeKind::Open),
            ("stages", ShapeKind::Open),
            ("sessions", ShapeKind::Sessions),
            ("open sessions", ShapeKind::Sessions),
            ("trace", ShapeKind::Replay),
            ("dataset", ShapeKind::Rounds),
            ("sharded", ShapeKind::Open),
        ]
    );
    let all = campaigns();
    let find = |name: &str| &all.iter().find(|(n, _, _)| *n == name).expect(name).2;
    let gamma = &find("gamma").cases[0];
    assert_eq!(gamma.process(), Some(&Process::Gamma { cv: 2.0 }));
    assert_eq!(gamma.bound(), Some(CaseBound::Duration(1.0)));
    assert_eq!(gamma.max_in_flight(), Some(4));
    assert_eq!(
        gamma.output_length,
        Some(LengthSpec::Distribution("uniform:2,6".into()))
    );
    assert_eq!(
        find("gamma").config.limits.thresholds().stop_temp_c,
        Some(90.0)
    );
    let poisson = find("poisson");
    assert_eq!(poisson.cases[0].bound(), Some(CaseBound::Requests(12)));
    assert_eq!(poisson.config.slo.ttft_ms, Some(500.0));
    assert_eq!(
        find("stages").cases[1].stage.as_ref().map(|s| s.number),
        Some(2)
    );
    let sessions = find("open sessions");
    assert_eq!(sessions.cases[0].rate_rps(), Some(4.0));
    let Some(CaseLoad::Sessions { spec, .. }) = &sessions.cases[0].load else {
        panic!("sessions");
    };
    assert_eq!(spec.history, crate::workload::session::History::Placeholder);
    let dataset = find("dataset").config.dataset.as_ref().expect("a dataset");
    assert_eq!(dataset.lengths, Lengths::AsIs);
    assert!(dataset.describe().ends_with(", as-is, output fixed"));
    let sharding = find("sharded").config.sharding.as_ref().expect("sharding");
    assert_eq!((sharding.shard.index, sharding.shard.count), (1, 3));
    assert_eq!(sharding.attempt_id.as_deref(), Some("shared"));
    assert!(sharding.start_at.is_some());
    assert_eq!(find("rounds").config.name.as_deref(), Some("campaign"));
}

#[test]
fn a_merged_campaign_has_no_sharding_and_names_its_shards() {
    let all = campaigns();
    let mut merged = all
        .into_iter()
        .find(|(n, _, _)| *n == "sharded")
        .expect("sharded")
        .2;
    merged.config.sharding = None;
    merged.merged_from = Some(MergedFrom {
        attempt_id: "shared".into(),
        shards: 3,
        dirs: vec!["a".into(), "b".into(), "c".into()],
    });
    let written = text(&merged);
    assert!(!written.contains("\"sharding\""), "{written}");
    assert!(written.contains(
        "\"merged_from\": {\n    \"attempt_id\": \"shared\",\n    \"dirs\": [\n      \"a\","
    ));
    let read: Campaign = serde_json::from_str(&written).expect("readable");
    assert_eq!(read, merged);
    assert_eq!(text(&read), written);
}

#[test]
fn a_campaign_of_few_fields_reads_with_its_defaults() {
    // As a test or an early version writes it: no tool, host or fingerprint, cases without
    // shapes or lengths.
    let campaign: Campaign = serde_json::from_value(json!({
        "schema_version": 1,
        "attempt_id": "a",
        "config": {"rounds": 2, "seed": 7},
        "cases": [{"id": "in64-c2-out4", "input_tokens": 64, "concurrency": 2,
                   "output_tokens": 4}],
        "target": {"url": "http://127.0.0.1:9", "api": "llamacpp"},
    }))
    .expect("readable");
    assert_eq!(campaign.started_at, None);
    assert_eq!((campaign.config.rounds, campaign.config.warmup), (2, 1));
    assert_eq!(campaign.config.telemetry_interval_s, 1.0);
    assert_eq!(campaign.config.sharding, None);
    let case = &campaign.cases[0];
    assert_eq!(case.load, None);
    assert_eq!(case.kind(), ShapeKind::Rounds);
    assert_eq!(case.rounds(campaign.config.rounds), 2);
    assert_eq!(case.input_length, None);
    assert!(!campaign.target.simulated);
}

#[test]
fn a_damaged_shape_is_an_error_never_closed_rounds() {
    let case = |load: &str| {
        let text = format!(
            r#"{{"id": "x", "input_tokens": 1, "concurrency": 1, "output_tokens": 1, {load}}}"#
        );
        serde_json::from_str::<CampaignCase>(&text)
    };
    assert!(case(r#""shape": "spiral""#).is_err());
    assert!(case(r#""shape": "open", "process": {"kind": "poisson"}"#).is_err());
    assert!(case(r#""shape": "rounds""#).is_err());
    let open = case(
        r#""shape": "open", "process": {"kind": "poisson"}, "rate_rps": 2.0,
           "bound": {"duration_s": 3.0}, "max_in_flight": null"#,
    )
    .expect("an open loop");
    assert_eq!(open.rate_rps(), Some(2.0));
    assert_eq!(open.bound().and_then(CaseBound::duration_s), Some(3.0));
}
