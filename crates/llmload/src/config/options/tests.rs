//! Unit tests of `options.rs`: every flag is in the manual, has a heading, a one-line help, its
//! file key, and the default its help states.

use super::Settings;
use clap::Args;

fn command() -> clap::Command {
    <Settings as Args>::augment_args(clap::Command::new("llmload"))
}

#[test]
fn the_manual_names_every_flag_and_each_has_a_heading() {
    let manual = include_str!("../../../../../docs/usage.md");
    for arg in command().get_arguments() {
        let long = arg.get_long().expect("every option is a long flag");
        assert!(
            manual.contains(&format!("`--{long}")),
            "docs/usage.md does not name --{long}"
        );
        assert!(arg.get_help_heading().is_some(), "--{long} has no heading");
    }
}

#[test]
fn a_file_key_is_the_flag_name() {
    for arg in command().get_arguments() {
        let long = arg.get_long().expect("long flag");
        let key = arg.get_id().as_str();
        // The two list flags keep their plural keys in the file.
        let expected = match long {
            "header" => "headers",
            "show-header" => "show_headers",
            other => &other.replace('-', "_"),
        };
        assert_eq!(key, expected, "--{long}");
    }
}

#[test]
fn every_flag_has_a_one_line_help() {
    for arg in command().get_arguments() {
        let help = arg.get_help().expect("every flag has help").to_string();
        assert!(!help.contains('\n'), "--{:?}: {help}", arg.get_long());
        assert!(
            help.len() <= 100,
            "--{:?}: {} chars",
            arg.get_long(),
            help.len()
        );
    }
}

/// The value a one-line help gives as `[default: V]`, where V is a value (not words).
fn stated_default(arg: &clap::Arg) -> Option<String> {
    let help = arg.get_help()?.to_string();
    let value = help
        .split("[default: ")
        .nth(1)?
        .split(']')
        .next()?
        .to_owned();
    (!value.contains(' ')).then_some(value)
}

#[test]
fn every_stated_default_is_the_one_resolve_applies() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");
    // Options that apply only beside another, and what they need.
    let companions = |long: &str| -> Vec<String> {
        match long {
            "trace-block-tokens" => {
                vec!["--trace".into(), format!("{samples}/mooncake-trace.jsonl")]
            }
            "dataset-lengths" | "dataset-output" => {
                vec!["--dataset".into(), format!("{samples}/prompts.jsonl")]
            }
            "history" | "think-time" => vec!["--turns".into(), "2".into()],
            "dag-time-scale" => vec![
                "--dag".into(),
                format!("{samples}/../../../docs/examples/agents.jsonl"),
            ],
            "burstiness" => vec![
                "--arrival".into(),
                "gamma".into(),
                "--rate".into(),
                "1".into(),
            ],
            "warmup-time" => vec!["--arrival".into(), "closed-continuous".into()],
            "cancel-share" => vec!["--cancel-after".into(), "4".into()],
            "metrics-linger" => vec!["--metrics-listen".into(), "0".into()],
            "batch-size" => vec!["--api".into(), "embeddings".into()],
            "gpus" => vec!["--gpu-cost-per-hour".into(), "2".into()],
            "images" => vec!["--api".into(), "chat".into()],
            "image-size" => vec!["--api".into(), "chat".into(), "--images".into(), "1".into()],
            _ => vec![],
        }
    };
    let resolve = |extra: &[String]| {
        let base = ["llmload", "--url", "http://127.0.0.1:9", "--seed", "7"];
        let argv = base
            .iter()
            .map(|s| (*s).to_owned())
            .chain(extra.iter().cloned());
        let matches = command().try_get_matches_from(argv).expect("flags parse");
        let settings =
            <Settings as clap::FromArgMatches>::from_arg_matches(&matches).expect("settings");
        let config = super::super::Config::resolve(settings).expect("resolves");
        serde_json::to_value(&config).expect("JSON")
    };
    let mut checked = Vec::new();
    let options = command();
    for arg in options.get_arguments() {
        let long = arg.get_long().expect("long flag");
        let Some(value) = stated_default(arg) else {
            continue;
        };
        // --requests' default is the loop's bound, applied where the plan is built.
        if long == "requests" {
            continue;
        }
        let with = companions(long);
        let mut given = with.clone();
        given.extend([format!("--{long}"), value.clone()]);
        assert_eq!(resolve(&with), resolve(&given), "--{long} {value}");
        checked.push(long);
    }
    assert!(checked.len() >= 15, "only {checked:?}");
}
