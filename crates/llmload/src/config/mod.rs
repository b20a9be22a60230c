//! Args and TOML → a validated `Config`: every value checked once here, with a one-line error,
//! so that the rest of the pipeline never sees a string standing in for an enum or a zero
//! standing in for "unset".

use crate::api::Api;
use crate::guard::Limits;
use crate::telemetry::Source;
use crate::workload::length::Length;
use crate::workload::shape::{CasePlan, LoadPoint, ShapeTemplate};
use crate::workload::trace::TraceEntry;
pub use load::LoadConfig;

mod load;
mod settings;
use serde::Serialize;
use settings::lengths;
pub use settings::{LengthItem, Lengths, Settings};
use std::path::PathBuf;
use std::time::Duration;

pub use crate::error::ConfigError;

fn bad<T>(message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(message.into()))
}

/// Soak runs: the default series window is this share of the measurement window…
const DEFAULT_WINDOWS: u32 = 20;
/// …in whole seconds, at least this…
const MIN_WINDOW: Duration = Duration::from_secs(1);
/// …and at most this.
const MAX_WINDOW: Duration = Duration::from_secs(300);

/// A validated campaign.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Campaign name (a folder name).
    pub name: String,
    /// Server base URL without trailing slash; `None` = the built-in simulator.
    pub url: Option<String>,
    /// API to drive.
    pub api: Api,
    /// Model for `OpenAI` APIs.
    pub model: Option<String>,
    /// Bearer token (never written to disk).
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Whether a bearer token was given.
    pub api_key_set: bool,
    /// Extra headers (name, value).
    pub headers: Vec<(String, String)>,
    /// Per-request limit.
    #[serde(rename = "timeout_s", serialize_with = "as_seconds")]
    pub timeout: Duration,
    /// Prompt lengths: one case each.
    pub input_tokens: Vec<Length>,
    /// Simultaneous requests per round, or kept in flight.
    pub concurrency: Vec<u32>,
    /// Generated tokens per request: one case each.
    pub output_tokens: Vec<Length>,
    /// How requests are launched, and the objectives for goodput.
    #[serde(flatten)]
    pub load: LoadConfig,
    /// Measured rounds per case.
    pub rounds: u32,
    /// Warmup requests per case.
    pub warmup: u32,
    /// Seed for prompt offsets.
    pub seed: u64,
    /// Results folder.
    pub out: PathBuf,
    /// Corpus file, if not the bundled text.
    pub corpus: Option<PathBuf>,
    /// Only the table on stdout, nothing on stderr but errors.
    pub quiet: bool,
    /// Where GPU readings come from.
    pub telemetry: Source,
    /// Time between live readings.
    #[serde(rename = "telemetry_interval_s", serialize_with = "as_seconds")]
    pub telemetry_interval: Duration,
    /// The guard's stop rules.
    pub limits: Limits,
    /// Soak runs: the window length given (else derived from the duration, see
    /// [`Config::series_window_length`]).
    #[serde(rename = "series_window_s", serialize_with = "as_optional_seconds")]
    pub series_window: Option<Duration>,
    /// Between cases, wait until every GPU is below this temperature, °C.
    pub cool_down_below_c: Option<f64>,
    /// The longest a cool-down waits.
    #[serde(rename = "cool_down_timeout_s", serialize_with = "as_seconds")]
    pub cool_down_timeout: Duration,
}

/// The case matrix (input lengths, concurrencies, output lengths): the given values over the
/// defaults.
type Matrix = (Vec<Length>, Vec<u32>, Vec<Length>);

fn matrix(s: &mut Settings) -> Result<Matrix, ConfigError> {
    let input = lengths("input-tokens", s.input_tokens.take(), "2048,8192")?;
    let concurrency = s.concurrency.take().unwrap_or_else(|| vec![1, 4]);
    let output = lengths("output-tokens", s.output_tokens.take(), "256")?;
    Ok((input, concurrency, output))
}

/// The guard's stop rules.
fn limits(s: &Settings) -> Result<Limits, ConfigError> {
    Ok(Limits {
        stop_temp_c: s.stop_temp,
        stop_margin_c: s.stop_margin,
        max_duration: optional_duration("max-duration", s.max_duration.clone())?,
        max_errors: s.max_errors,
        max_error_rate: s.max_error_rate,
    })
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn as_optional_seconds<S: serde::Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl Config {
    /// Validates `settings` (flags already laid over the campaign file) and fills in the
    /// defaults.
    pub fn resolve(mut settings: Settings) -> Result<Config, ConfigError> {
        let load = LoadConfig::resolve(&settings)?;
        let (input_tokens, concurrency, output_tokens) = matrix(&mut settings)?;
        let limits = limits(&settings)?;
        let s = settings;
        let duration = |flag: &str, given: Option<String>, default: &str| {
            parse_duration(flag, given.as_deref().unwrap_or(default))
        };
        let config = Config {
            load,
            headers: s
                .headers
                .iter()
                .map(|h| parse_header(h))
                .collect::<Result<_, _>>()?,
            timeout: duration("timeout", s.timeout, "10m")?,
            name: s.name.unwrap_or_else(|| "campaign".into()),
            url: s.url.map(|u| validate_url(&u)).transpose()?,
            api: s.api.unwrap_or(Api::Llamacpp),
            model: s.model,
            api_key_set: s.api_key.is_some(),
            api_key: s.api_key,
            input_tokens,
            concurrency,
            output_tokens,
            rounds: s.rounds.unwrap_or(3),
            warmup: s.warmup.unwrap_or(1),
            seed: s.seed.unwrap_or_else(random_seed),
            out: s.out.unwrap_or_else(|| "llmload-results".into()),
            corpus: s.corpus,
            quiet: s.quiet.unwrap_or(false),
            telemetry: parse_source(s.telemetry)?,
            telemetry_interval: duration("telemetry-interval", s.telemetry_interval, "1s")?,
            limits,
            series_window: optional_duration("series-window", s.series_window)?,
            cool_down_below_c: s.cool_down_below,
            cool_down_timeout: duration("cool-down-timeout", s.cool_down_timeout, "10m")?,
        };
        config.validate()?;
        Ok(config)
    }

    /// A shared system prompt leaves room in every prompt for the nonce and one more token.
    fn check_shared_prefix(&self) -> Result<(), ConfigError> {
        let shared = self.load.system_prompt_tokens;
        if shared == 0 {
            return Ok(());
        }
        let floor =
            shared.saturating_add(crate::num::count(crate::workload::prompt::NONCE_LEN) + 1);
        let traced = self.load.trace_entries.iter().flat_map(|e| e.iter());
        let shortest = self
            .input_tokens
            .iter()
            .map(Length::min_tokens)
            .chain(traced.map(|e| e.input_tokens))
            .min()
            .unwrap_or(0);
        if shortest < floor {
            return bad(format!(
                "--system-prompt-tokens {shared} needs prompts of at least {floor} tokens (the \
                 shared part, the {}-token nonce and one more); the shortest is {shortest}",
                crate::workload::prompt::NONCE_LEN
            ));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.concurrency.is_empty() || self.concurrency.contains(&0) {
            return bad("--concurrency needs one or more values above 0");
        }
        self.load.validate()?;
        self.check_shared_prefix()?;
        if self.rounds == 0 {
            return bad("--rounds must be at least 1");
        }
        if self.name.is_empty() || self.name.contains(['/', '\\']) || self.name.starts_with('.') {
            return bad(format!("--name {:?} cannot be a folder name", self.name));
        }
        if let Some(window) = self.series_window {
            if window.is_zero() {
                return bad("--series-window must be longer than 0");
            }
            if self.load.arrival == crate::workload::shape::Arrival::Rounds {
                return bad("--series-window needs --arrival closed-continuous or an open loop");
            }
        }
        if let Some(key) = &self.api_key {
            if reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
                return bad("--api-key holds characters not allowed in a header");
            }
        }
        if self.timeout.is_zero() || self.telemetry_interval.is_zero() {
            return bad("--timeout and --telemetry-interval must be longer than 0");
        }
        let finite = |v: Option<f64>| v.is_none_or(f64::is_finite);
        if !(finite(self.limits.stop_temp_c)
            && finite(self.limits.stop_margin_c)
            && finite(self.cool_down_below_c))
        {
            return bad("--stop-temp, --stop-margin and --cool-down-below must be numbers");
        }
        if self
            .limits
            .max_error_rate
            .is_some_and(|r| !(0.0..=1.0).contains(&r))
        {
            return bad("--max-error-rate is a share between 0 and 1");
        }
        Ok(())
    }

    /// The window length: `--series-window` when given, else one twentieth of the measurement window
    /// (`--duration` − `--warmup-time`) in whole seconds, between 1 s and 5 min; `None` (no series)
    /// without either, or for closed rounds.
    pub fn series_window_length(&self) -> Option<Duration> {
        if self.load.arrival == crate::workload::shape::Arrival::Rounds {
            return None;
        }
        if let Some(explicit) = self.series_window {
            return Some(explicit);
        }
        let measured = self.load.duration?.saturating_sub(self.load.warmup_time);
        let seconds = (measured / DEFAULT_WINDOWS).as_secs();
        Some(Duration::from_secs(seconds).clamp(MIN_WINDOW, MAX_WINDOW))
    }

    /// Whether requests arrive on a schedule.
    pub fn is_open(&self) -> bool {
        self.load.is_open()
    }

    /// What every case shares.
    pub fn template(&self) -> ShapeTemplate {
        self.load.template(self.rounds)
    }

    /// The load points: rates for an open loop, else concurrencies.
    pub fn load_points(&self) -> Vec<LoadPoint> {
        self.load.points(&self.concurrency)
    }

    /// The matrix in the reference campaign's order: input tokens, then load (concurrency or rate), then output
    /// tokens.
    pub fn plans(&self) -> Vec<CasePlan> {
        let template = self.template();
        if let Some(entries) = &self.load.trace_entries {
            // A trace carries its own lengths: one case, named by their means.
            let mean = |f: fn(&TraceEntry) -> u32| {
                let total: f64 = entries.iter().map(|e| f64::from(f(e))).sum();
                Length::Fixed(crate::num::to_u32(
                    (total / entries.len() as f64).round().max(1.0),
                ))
            };
            let point = self.load_points()[0];
            let input = mean(|e| e.input_tokens);
            return vec![template.plan(&input, point, &mean(|e| e.output_tokens))];
        }
        let mut plans: Vec<CasePlan> = Vec::new();
        for input in &self.input_tokens {
            for &point in &self.load_points() {
                for output in &self.output_tokens {
                    let plan = template.plan(input, point, output);
                    if !plans.iter().any(|p| p.case.id == plan.case.id) {
                        plans.push(plan);
                    }
                }
            }
        }
        plans
    }

    /// The cases of [`Config::plans`], as the tables show them.
    pub fn cases(&self) -> Vec<crate::workload::shape::Case> {
        self.plans().into_iter().map(|p| p.case).collect()
    }
}

/// A fresh seed for each attempt unless one is given, so that prompts differ between attempts
/// (a server's automatic prefix cache would otherwise serve a rerun). It is recorded in
/// `campaign.json`; `--seed` reproduces the prompts.
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| {
            u64::try_from(d.as_nanos() % u128::from(u64::MAX)).unwrap_or(0)
        });
    crate::workload::prompt::splitmix64(nanos ^ (u64::from(std::process::id()) << 32))
}

fn validate_url(url: &str) -> Result<String, ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
            Ok(url.trim_end_matches('/').to_owned())
        }
        Ok(u) => bad(format!(
            "--url {url}: scheme {:?} is not http or https",
            u.scheme()
        )),
        Err(e) => bad(format!("--url {url}: {e}")),
    }
}

fn parse_header(header: &str) -> Result<(String, String), ConfigError> {
    let Some((name, value)) = header.split_once(':') else {
        return bad(format!("--header {header:?}: expected NAME:VALUE"));
    };
    let (name, value) = (name.trim(), value.trim());
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
        || reqwest::header::HeaderValue::from_str(value).is_err()
    {
        return bad(format!("--header {header:?}: not a valid HTTP header"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

fn parse_source(text: Option<String>) -> Result<Source, ConfigError> {
    let Some(text) = text else {
        return Ok(Source::Auto);
    };
    let source: Source = text
        .parse()
        .map_err(|e| ConfigError(format!("--telemetry {e}")))?;
    if let Source::Replay(path) = &source {
        crate::telemetry::replay::load(path)
            .map_err(|e| ConfigError(format!("--telemetry {e}")))?;
    }
    Ok(source)
}

pub(crate) fn optional_duration(
    what: &str,
    text: Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    text.map(|t| parse_duration(what, &t)).transpose()
}

/// A duration flag (`90s`, `10m`): one-line error naming `--what` when it is not one.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(text.trim())
        .or_else(|e| bad(format!("--{what} {text:?}: {e} (e.g. 90s, 10m)")))
}

#[cfg(test)]
mod tests {
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
        let config =
            Config::resolve(a.over(Settings::read(&path).expect("readable"))).expect("valid");
        assert_eq!(config.api, Api::Chat);
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
}
