//! Args and TOML → a validated `Config`: every value checked once here, with a one-line error,
//! so that the rest of the pipeline never sees a string standing in for an enum or a zero
//! standing in for "unset".

use crate::api::tls::TlsOptions;
use crate::api::Api;
use crate::guard::Limits;
use crate::telemetry::Source;
use crate::workload::length::Length;
use crate::workload::mix::ModelMix;
pub use load::LoadConfig;

pub mod canaries;
mod cancel;
mod dataset;
mod load;
mod objectives;
mod parse;
mod plans;
mod pooling;
pub use dataset::DatasetConfig;
pub(crate) use parse::optional_duration;
pub use parse::parse_duration;
use parse::{
    as_optional_seconds, as_seconds, bad, drop_fields, extra_body, parse_headers, redacted_json,
    replaced_ids,
};
mod combine;
mod file;
mod guarded;
mod images;
mod options;
mod watch;
pub use watch::{MetricsConfig, Watch};
mod repeat;
mod scrub;
mod sessions;
mod settings;
mod sharding;
mod sizes;
mod validate;
pub use combine::Combine;
pub use options::{
    GuardOptions, LoadOptions, ObjectiveOptions, OutputOptions, RoundOptions, SessionOptions,
    Settings, ShardOptions, TargetOptions, WatchOptions, WorkloadOptions,
};
use serde::Serialize;
use settings::lengths;
pub use settings::{LengthItem, StageTable, StagesSetting};
pub use sharding::{parse_start_at, Sharding};
use std::path::PathBuf;
use std::time::Duration;

pub use crate::error::ConfigError;
use crate::secrets::Header;

/// The most tokens a request may send or ask for.
pub const MAX_TOKENS: u32 = 10_000_000;

/// The most rounds (and warmup requests) a case may have.
pub const MAX_ROUNDS: u32 = 1_000_000;

/// The most arrivals a continuous or open loop may schedule per case.
pub const MAX_ARRIVALS: u64 = 10_000_000;

/// Where the load goes when it goes to several servers, and what a session's requests carry.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Replicas {
    /// Several `--url`: every replica's base URL (the first is [`Config::url`]), in the order
    /// given; empty with one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    /// `--balance`: how requests are spread over the replicas.
    pub balance: crate::api::replicas::Balance,
    /// `--session-header`: the header that carries a session's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
}

/// A validated campaign.
#[derive(Clone, Debug, Serialize)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent yes/no settings of a campaign, each its own flag; no two form a state"
)]
pub struct Config {
    /// Campaign name (a folder name).
    pub name: String,
    /// Server base URL without trailing slash; `None` = the built-in simulator. With several
    /// `--url`, the first.
    pub url: Option<String>,
    /// Several `--url`, `--balance`, `--session-header`.
    pub replicas: Replicas,
    /// API to drive; `None` picks it from what the server is.
    pub api: Option<Api>,
    /// Model for `OpenAI` APIs: the one given, or the first of a mix (setup requests name it).
    pub model: Option<String>,
    /// `--model NAME:WEIGHT,…`: the models each measured request's model is drawn from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<ModelMix>,
    /// Bearer token (never written to disk).
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Whether a bearer token was given.
    pub api_key_set: bool,
    /// `user:password` taken out of the URL, sent as basic authentication (never written).
    #[serde(skip)]
    pub url_credentials: Option<String>,
    /// Whether the URL carried credentials.
    pub url_credentials_set: bool,
    /// What resolving changed in what was given, said once at the start of a run (on stderr,
    /// unless `--quiet`).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Extra headers; written as `[name, value]` with the value redacted unless its name is
    /// harmless or named by `--show-header`.
    pub headers: Vec<Header>,
    /// Per-request limit.
    #[serde(rename = "timeout_s", serialize_with = "as_seconds")]
    pub timeout: Duration,
    /// The limit for each setup request and `/metrics` scrape.
    #[serde(rename = "setup_timeout_s", serialize_with = "as_seconds")]
    pub setup_timeout: Duration,
    /// How an `https://` server's certificate is checked: `ca_cert` and `insecure`.
    #[serde(flatten)]
    pub tls: TlsOptions,
    /// Fields merged into every request body; written with values under secret-looking keys
    /// redacted.
    #[serde(serialize_with = "redacted_json")]
    pub extra_body: Option<serde_json::Value>,
    /// Engine fields left out of every request body (`--drop-field`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drop_fields: Vec<String>,
    /// Prompt lengths: one case each.
    pub input_tokens: Vec<Length>,
    /// Simultaneous requests per round, or kept in flight.
    pub concurrency: Vec<u32>,
    /// Generated tokens per request: one case each.
    pub output_tokens: Vec<Length>,
    /// Embeddings and rerank: inputs per request, one case each; empty for generation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batch_size: Vec<u32>,
    /// `--images` × `--image-size`: the images of each request, one case each (a count of 0:
    /// a case without); empty without `--images`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::workload::image::ImageSpec>,
    /// How requests are launched, and the objectives for goodput.
    #[serde(flatten)]
    pub load: LoadConfig,
    /// Measured rounds per case.
    pub rounds: u32,
    /// Warmup requests per case.
    pub warmup: u32,
    /// `--repeat N`: the campaign run N times as one series; `None` for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Seed for prompt offsets.
    pub seed: u64,
    /// Results folder.
    pub out: PathBuf,
    /// Corpus file, if not the bundled text.
    pub corpus: Option<PathBuf>,
    /// Prompts from a dataset, when one is given.
    pub dataset: Option<DatasetConfig>,
    /// The model's tokenizer file, for counting on the client.
    pub tokenizer: Option<PathBuf>,
    /// Outputs as long as the server makes them, counts from the client where the server gives
    /// none: every such response unverified, with its reason.
    pub best_effort: bool,
    /// `--traceparent`: a W3C `traceparent` header on every request, besides its `X-Request-Id`.
    pub traceparent: bool,
    /// `--reset-prefix-cache`: the server is asked to drop its prefix cache before each case.
    #[serde(default)]
    pub reset_prefix_cache: bool,
    /// `--profile-server N`: the server's profiler over one round, from N running requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_server: Option<u32>,
    /// `--canaries`: output canaries beside the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canaries: Option<canaries::Canaries>,
    /// Only the table on stdout, nothing on stderr but errors.
    pub quiet: bool,
    /// Where GPU readings come from.
    pub telemetry: Source,
    /// Time between live readings.
    #[serde(rename = "telemetry_interval_s", serialize_with = "as_seconds")]
    pub telemetry_interval: Duration,
    /// The guard's stop rules.
    pub limits: Limits,
    /// Soak runs: the window length given; without it there is no series (see
    /// [`Config::series_window_length`]).
    #[serde(rename = "series_window_s", serialize_with = "as_optional_seconds")]
    pub series_window: Option<Duration>,
    /// Between cases, wait until every GPU is below this temperature, °C.
    pub cool_down_below_c: Option<f64>,
    /// The longest a cool-down waits.
    #[serde(rename = "cool_down_timeout_s", serialize_with = "as_seconds")]
    pub cool_down_timeout: Duration,
    /// `--gpu-cost-per-hour` and `--gpus`: what the server's hardware costs, for each case's
    /// cost per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<crate::summary::cost::Price>,
    /// `--shard`, `--attempt-id`, `--start-at`: which part of an attempt this process runs, and
    /// when its load begins.
    pub sharding: Sharding,
    /// How the run is watched: `/metrics` and the live view (not written: neither changes what
    /// is measured).
    #[serde(skip)]
    pub watch: Watch,
}

/// The case matrix (input lengths, concurrencies, output lengths): the given values over the
/// defaults.
type Matrix = (Vec<Length>, Vec<u32>, Vec<Length>);

fn matrix(s: &mut Settings) -> Result<Matrix, ConfigError> {
    // Embeddings and rerank generate nothing, and take inputs of an encoder's length.
    let pooling = pooling::check_settings(s)?;
    let (input, output) = if pooling {
        ("512", "0")
    } else {
        ("2048,8192", "256")
    };
    let input = lengths("input-tokens", s.workload.input_tokens.take(), input)?;
    let concurrency = s.load.concurrency.take().unwrap_or_else(|| vec![1, 4]);
    let output = if pooling {
        vec![Length::Fixed(0)]
    } else {
        lengths("output-tokens", s.workload.output_tokens.take(), output)?
    };
    Ok((input, concurrency, output))
}

/// The load, the dataset and the case matrix, checked against each other.
fn shape(
    settings: &mut Settings,
) -> Result<(LoadConfig, Option<DatasetConfig>, Matrix), ConfigError> {
    let load = LoadConfig::resolve(settings)?;
    let dataset = DatasetConfig::resolve(settings)?;
    if load.stages.is_some() && settings.load.concurrency.is_some() {
        return bad("--stages sets the load: leave out --concurrency");
    }
    let (input_as_is, output_from_dataset) = dataset::dataset_lengths(settings, dataset.as_ref())?;
    if load.stages.is_some() && settings.workload.input_tokens.is_none() {
        // One case per stage: the reference matrix's first prompt length.
        settings.workload.input_tokens = Some(vec![LengthItem::Tokens(2048)]);
    }
    let (mut input_tokens, mut concurrency, mut output_tokens) = matrix(settings)?;
    if input_as_is {
        input_tokens = vec![Length::Fixed(0)];
    }
    if output_from_dataset {
        output_tokens = vec![Length::Fixed(0)];
    }
    if let Some(peak) = load.stage_concurrency() {
        concurrency = vec![peak];
    }
    if load.stages.is_some() && (input_tokens.len() > 1 || output_tokens.len() > 1) {
        return bad(
            "a staged run takes one --input-tokens and one --output-tokens (a distribution \
             is fine)",
        );
    }
    Ok((load, dataset, (input_tokens, concurrency, output_tokens)))
}

/// `--model` and `--warmup`: the model setup requests name (the one given, or the first of a
/// mix), the mix, and the warmups (a mix warms each of its models once unless told otherwise).
fn model_mix(
    model: Option<String>,
    warmup: Option<u32>,
) -> Result<(Option<String>, Option<ModelMix>, u32), ConfigError> {
    let mix = match &model {
        Some(text) => ModelMix::parse(text).map_err(ConfigError)?,
        None => None,
    };
    let model = match &mix {
        Some(mix) => mix.names().next().map(str::to_owned),
        None => model,
    };
    let warmup = warmup.unwrap_or_else(|| mix.as_ref().map_or(1, ModelMix::len));
    Ok((model, mix, warmup))
}

impl Config {
    /// The names of `--model`'s mix, in the order given; none for one model.
    pub fn mix_names(&self) -> Vec<String> {
        self.mix
            .iter()
            .flat_map(|m| m.names().map(str::to_owned))
            .collect()
    }

    /// Validates `settings` (flags already laid over the campaign file) and fills in the
    /// defaults.
    pub fn resolve(mut settings: Settings) -> Result<Config, ConfigError> {
        let (load, dataset, (input_tokens, concurrency, output_tokens)) = shape(&mut settings)?;
        let sharding = Sharding::resolve(&settings)?;
        // Every option of these groups is named here, so that one left unresolved does not
        // compile; the others were resolved above.
        let TargetOptions {
            url,
            balance,
            session_header,
            api,
            model,
            api_key,
            headers,
            show_headers,
            timeout,
            setup_timeout,
            ca_cert,
            insecure,
            extra_body: body,
            drop_field,
            tokenizer,
            best_effort,
            traceparent,
            reset_prefix_cache,
            profile_server,
        } = settings.target;
        let guard = guarded::Guarded::resolve(settings.guard)?;
        let OutputOptions {
            out,
            name,
            series_window,
            quiet,
        } = settings.outputs;
        let RoundOptions {
            rounds,
            warmup,
            repeat,
            canaries,
            canary_fail,
        } = settings.rounds;
        let duration = |flag: &str, given: Option<String>, default: &str| {
            parse_duration(flag, given.as_deref().unwrap_or(default))
        };
        let ((url, url_credentials, url_note), replicas) =
            parse::urls(&url.unwrap_or_default(), balance, session_header)?;
        let (model, mix, warmup) = model_mix(model, warmup)?;
        let mut config = Config {
            load,
            headers: parse_headers(&headers, &show_headers)?,
            timeout: duration("timeout", timeout, "10m")?,
            setup_timeout: duration("setup-timeout", setup_timeout, "30s")?,
            tls: TlsOptions {
                ca_cert,
                insecure: insecure.unwrap_or(false),
            },
            extra_body: extra_body(body)?,
            drop_fields: drop_fields(drop_field)?,
            name: name.unwrap_or_else(|| "campaign".into()),
            url,
            replicas,
            notes: url_note.into_iter().collect(),
            url_credentials_set: url_credentials.is_some(),
            url_credentials,
            api,
            model,
            mix,
            api_key_set: api_key.is_some(),
            api_key,
            input_tokens,
            concurrency,
            output_tokens,
            batch_size: pooling::batch_sizes(api, settings.workload.batch_size.take())?,
            images: images::resolve(api, &settings.workload)?,
            rounds: rounds.unwrap_or(3),
            warmup,
            repeat,
            seed: (settings.workload.seed)
                .or_else(|| sharding.derived_seed())
                .unwrap_or_else(random_seed),
            out: out.unwrap_or_else(|| "llmload-results".into()),
            dataset,
            corpus: settings.workload.corpus,
            tokenizer,
            best_effort: best_effort.unwrap_or(false),
            traceparent: traceparent.unwrap_or(false),
            reset_prefix_cache: reset_prefix_cache.unwrap_or(false),
            canaries: canaries::resolve(canaries, canary_fail)?,
            profile_server,
            quiet: quiet.unwrap_or(false),
            telemetry: guard.telemetry,
            telemetry_interval: guard.telemetry_interval,
            limits: guard.limits,
            series_window: optional_duration("series-window", series_window)?,
            cool_down_below_c: guard.cool_down_below_c,
            cool_down_timeout: guard.cool_down_timeout,
            price: guard.price,
            sharding,
            watch: watch::watch(&settings.watch)?,
        };
        let replaced = replaced_ids(&config.headers, config.traceparent);
        config.notes.extend(replaced);
        config.validate()?;
        Ok(config)
    }

    /// The soak series' window length: `--series-window`, which is what asks for a soak; `None`
    /// (no series, no soak table) without it, whatever the duration, and for closed rounds.
    pub fn series_window_length(&self) -> Option<Duration> {
        if self.load.arrival == crate::workload::shape::Arrival::Rounds {
            return None;
        }
        self.series_window
    }

    /// The `Authorization` value: the API key as a bearer token, else the URL's credentials.
    pub fn authorization(&self) -> Option<String> {
        match (&self.api_key, &self.url_credentials) {
            (Some(key), _) => Some(format!("Bearer {key}")),
            (None, Some(credentials)) => Some(crate::secrets::basic_auth(credentials)),
            (None, None) => None,
        }
    }

    /// The extra headers as (name, value), for the requests.
    pub fn header_pairs(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect()
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

#[cfg(test)]
mod tests;
