//! llmload-sim: an HTTP server that behaves like an LLM inference engine under load.
//!
//! It speaks llama-server's `/completion` and the `OpenAI` `/v1/completions` and
//! `/v1/chat/completions` streaming APIs, and schedules requests with a modelled engine (slots,
//! continuous batching, prefill and decode cost, KV capacity, prefix cache). It is llmload's
//! zero-setup target and the ground truth for the harness's own accuracy tests.
//!
//! `Profile` (cost model) → `engine` (pure state machine) → `driver` (absolute-clock task) →
//! `server` (HTTP, with `fault` injection).
//!
//! ```no_run
//! use llmload_sim::{serve, FaultSpec, Profile, SimConfig};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
//! let mut config = SimConfig::new(profile);
//! config.time_scale = 10.0;
//! config.faults.push(FaultSpec::parse("drop:after=8,rate=0.1")?);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! println!("http://{}", listener.local_addr()?);
//! serve(listener, config, CancellationToken::new()).await?;
//! # Ok(())
//! # }
//! ```

mod driver;
pub mod engine;
mod error;
mod fault;
mod profile;
mod schedule;
mod server;
mod timer;
mod tokenizer;

pub use error::SimError;
pub use fault::{FaultKind, FaultSpec, Selector};
pub use profile::{Profile, Served};
pub use schedule::Schedule;
pub use tokenizer::Tokenizer;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use driver::EngineHandle;
use engine::Engine;
use fault::FaultInjector;

/// How to run the simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The engine model.
    pub profile: Profile,
    /// Overrides the profile's slot count.
    pub slots: Option<usize>,
    /// Seed of jitter, fault rates, EOS draws and generated text.
    pub seed: u64,
    /// Speed-up over real time: every modelled duration is divided by it (10 = ten times
    /// faster). Fault durations (stall, slow-first-byte) are wall-clock and not scaled.
    pub time_scale: f64,
    /// Faults to inject.
    pub faults: Vec<FaultSpec>,
    /// When tokens are sent: the engine model (default), or a fixed or zero-cost timeline that
    /// bypasses it (for measuring clients).
    pub schedule: Schedule,
    /// Play a hosted OpenAI-compatible endpoint: only `/v1/models` and the `OpenAI` generation
    /// APIs answer (no `/props`, `/tokenize`, `/metrics`, nor llama.cpp's `/completion`), usage
    /// is never reported, and `ignore_eos` and `min_tokens` are ignored.
    pub hosted: bool,
    /// LoRA adapters served besides the profile's own (`--adapters`).
    pub adapters: Vec<String>,
}

impl SimConfig {
    /// A config of this profile at real time, seed 0, no faults.
    pub fn new(profile: Profile) -> Self {
        Self {
            profile,
            slots: None,
            seed: 0,
            time_scale: 1.0,
            faults: Vec::new(),
            schedule: Schedule::Engine,
            hosted: false,
            adapters: Vec::new(),
        }
    }

    /// The profile with the slot override applied, validated.
    pub fn effective_profile(&self) -> Result<Profile, SimError> {
        let profile = match self.slots {
            Some(0) => {
                return Err(SimError::InvalidOption(
                    "--slots must be at least 1".to_owned(),
                ))
            }
            Some(slots) => self.profile.clone().with_slots(slots),
            None => self.profile.clone(),
        };
        let mut profile = profile;
        profile.adapters.extend(self.adapters.iter().cloned());
        profile.validate()?;
        Ok(profile)
    }
}

/// Connections the kernel may hold for the simulator before it accepts them (capped by the
/// system's `somaxconn`). Tokio's default of 1,024 is too few when 10,000 clients connect at
/// once: a full queue drops the handshake's last packet, and the client, believing itself
/// connected, waits a second for the retransmission.
const LISTEN_BACKLOG: u32 = 65_535;

/// A listener on `address` with a backlog deep enough for thousands of simultaneous connects.
#[expect(
    clippy::unused_async,
    reason = "being async keeps it inside a tokio runtime, which registering the listener needs"
)]
pub async fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match address {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves the simulator's HTTP API on `listener` until `shutdown` is cancelled.
///
/// Returns an error only when the configuration is invalid; transient accept errors are
/// retried. Open connections are closed when `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    config: SimConfig,
    shutdown: CancellationToken,
) -> Result<(), SimError> {
    let profile = config.effective_profile()?;
    if !(config.time_scale.is_finite() && config.time_scale > 0.0) {
        return Err(SimError::InvalidOption(format!(
            "--time-scale must be a positive number, got {}",
            config.time_scale
        )));
    }
    let engine = Engine::new(&profile, config.seed);
    let state = Arc::new(server::State {
        engine: EngineHandle::spawn(engine, config.time_scale, shutdown.clone()),
        faults: FaultInjector::new(config.faults, config.seed),
        tokenizer: Tokenizer::new(),
        seed: config.seed,
        time_scale: config.time_scale,
        schedule: config.schedule,
        hosted: config.hosted,
        generating: Arc::default(),
        profile,
    });
    server::accept_loop(listener, state, shutdown).await;
    Ok(())
}
