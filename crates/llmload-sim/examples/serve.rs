//! Runs the simulator on its own, for manual tests and load experiments:
//! `cargo run -p llmload-sim --example serve -- [PORT] [PROFILE|FILE] [SLOTS|-] [TIME_SCALE]
//! [FAULT…]`. Prints the address on its first line; stops on Ctrl-C.
#![expect(
    clippy::print_stdout,
    reason = "an example: it prints the address it serves on"
)]

use llmload_sim::{serve, FaultSpec, Profile, SimConfig, SimError};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |index: usize| args.get(index).map(String::as_str);
    let port: u16 = arg(0).unwrap_or("0").parse()?;
    let mut config = SimConfig::new(Profile::resolve(arg(1).unwrap_or("cpu-tiny"))?);
    config.slots = arg(2)
        .filter(|slots| *slots != "-")
        .map(str::parse)
        .transpose()?;
    config.time_scale = arg(3).unwrap_or("1").parse()?;
    config.faults = args
        .iter()
        .skip(4)
        .map(|spec| FaultSpec::parse(spec))
        .collect::<Result<_, SimError>>()?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("http://{}", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    serve(listener, config, shutdown).await?;
    Ok(())
}
