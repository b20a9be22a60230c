//! The built-in engine simulator as a target: `llmload sim` serves it, and `llmload run` without
//! `--url` starts it in-process (profile `seed-qwen3-8b`) so that the main job needs no setup.

use crate::config::ConfigError;
use crate::error::{Context, Error};
use llmload_sim::{serve, FaultSpec, Profile, Schedule, SimConfig};
use std::io::Write;
use tokio_util::sync::CancellationToken;

/// Profile of the default target: calibrated to the reference campaign (Qwen3-8B `Q4_K_M` on one
/// RTX PRO 6000, llama.cpp, 4 slots).
pub const DEFAULT_PROFILE: &str = "seed-qwen3-8b";

/// A simulator serving in this process until dropped.
pub struct LocalSimulator {
    /// Its base URL.
    pub url: String,
    shutdown: CancellationToken,
}

impl Drop for LocalSimulator {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn sim_config(
    profile: &str,
    slots: Option<usize>,
    seed: u64,
    time_scale: f64,
    faults: &[String],
) -> Result<SimConfig, ConfigError> {
    let profile = Profile::resolve(profile).map_err(|e| ConfigError(format!("--profile: {e}")))?;
    let faults = faults
        .iter()
        .map(|f| FaultSpec::parse(f).map_err(|e| ConfigError(format!("--fault {f:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let config = SimConfig {
        profile,
        slots,
        seed,
        time_scale,
        faults,
        schedule: Schedule::Engine,
        hosted: false,
        adapters: Vec::new(),
    };
    config
        .effective_profile()
        .map_err(|e| ConfigError(e.to_string()))?;
    Ok(config)
}

/// Starts the default simulator on a free loopback port, saying so on stderr unless `quiet`.
/// `models`: the names of a mix of models, each served (the profile's own model as itself, the
/// others as its adapters).
pub async fn start_default(quiet: bool, models: &[String]) -> crate::error::Result<LocalSimulator> {
    let mut config = sim_config(DEFAULT_PROFILE, None, 0, 1.0, &[])?;
    config.adapters = models
        .iter()
        .filter(|m| **m != config.profile.model)
        .cloned()
        .collect();
    config
        .effective_profile()
        .map_err(|e| ConfigError(format!("--model: {e}")))?;
    let adapters = config.adapters.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the simulator")?;
    let url = format!(
        "http://{}",
        listener.local_addr().context("the simulator's address")?
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if let Err(e) = serve(listener, config, stop).await {
            crate::console::note(format_args!("error: simulator: {e}"));
        }
    });
    if !quiet {
        let adapters = if adapters.is_empty() {
            String::new()
        } else {
            format!(", with adapters {}", adapters.join(", "))
        };
        crate::console::note(format_args!(
            "no --url: measuring the built-in simulator (profile {DEFAULT_PROFILE}{adapters}) at \
             {url}; results are SIMULATED"
        ));
    }
    Ok(LocalSimulator { url, shutdown })
}

/// `llmload sim`: serve the engine simulator.
#[derive(Clone, Debug, clap::Args)]
pub struct SimOptions {
    /// Port to listen on [default: a free one]
    ///
    /// Without it (or with 0), the system picks a free port. The address is printed on the
    /// first line of stdout: `listening on http://127.0.0.1:PORT`.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Built-in profile name or a TOML profile file.
    #[arg(long, default_value = "seed-qwen3-8b")]
    pub profile: String,
    /// Slots (maximum running sequences), overriding the profile.
    #[arg(long)]
    pub slots: Option<usize>,
    /// Seed for jitter and fault selection.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run this many times faster than the modelled engine (records say so).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Fault to inject, e.g. `http503:rate=0.1` or `drop:index=3,after=5`; may be repeated.
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// When tokens are sent: `engine` (the profile's model), `zero-cost` (as fast as the
    /// connection takes them, one event per write) or `fixed:ttft_ms=100,itl_ms=20` (an exact
    /// per-request timeline, no batching, no jitter); the last two are for measuring clients.
    #[arg(long, default_value = "engine", value_name = "SCHEDULE")]
    pub schedule: String,
    /// Play a hosted OpenAI-compatible endpoint: only /v1/models and the `OpenAI` generation APIs
    /// answer (no /props, /tokenize or /metrics), usage is never reported, and `ignore_eos` and
    /// `min_tokens` are ignored.
    #[arg(long)]
    pub hosted: bool,
    /// LoRA adapters to serve besides the profile's model, `NAME,…`
    ///
    /// Each is listed at /v1/models (its parent the model) and answers requests that name it;
    /// a decoding sequence with an adapter costs the profile's `adapter_decode_per_seq_ms` more
    /// per step. A request naming any other model is answered 404, as vLLM answers it.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    pub adapters: Vec<String>,
}

/// `llmload sim`: serves until Ctrl-C; the first line on stdout is its address.
pub async fn serve_until_stopped(args: &SimOptions) -> crate::error::Result<()> {
    if !(1e-3..=1e6).contains(&args.time_scale) {
        return Err(
            ConfigError("--time-scale must be a number between 0.001 and 1000000".into()).into(),
        );
    }
    let mut config = sim_config(
        &args.profile,
        args.slots,
        args.seed,
        args.time_scale,
        &args.faults,
    )?;
    config.schedule = args
        .schedule
        .parse()
        .map_err(|e: llmload_sim::SimError| ConfigError(e.to_string()))?;
    config.hosted = args.hosted;
    config.adapters.clone_from(&args.adapters);
    config
        .effective_profile()
        .map_err(|e| ConfigError(format!("--adapters: {e}")))?;
    crate::api::http1::raise_open_files_limit();
    let address = tokio::net::lookup_host((args.host.as_str(), args.port))
        .await
        .ok()
        .and_then(|mut addresses| addresses.next())
        .with_context(|| format!("cannot resolve --host {}", args.host))?;
    let listener = llmload_sim::bind(address)
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let mut stdout = std::io::stdout();
    let address = listener.local_addr().context("the simulator's address")?;
    writeln!(stdout, "listening on http://{address}")
        .and_then(|()| stdout.flush())
        .context("writing to stdout")?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    // Ctrl-C or SIGTERM (a container's stop) ends serving.
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    tokio::spawn(async move {
        match terminate {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        stop.cancel();
    });
    serve(listener, config, shutdown)
        .await
        .map_err(|e| Error::Internal(format!("simulator: {e}")))
}
