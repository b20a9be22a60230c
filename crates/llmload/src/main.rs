//! `llmload`: parse → run → exit code; nothing else. What each command prints and its exit codes
//! are in `commands.rs`; `--json` puts the machine-readable result on stdout in place of tables.

use clap::Parser;
use llmload::cli::Cli;
use llmload::commands;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::execute(cli.command).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(commands::error_code(&e))
        }
    }
}
