//! `llmload`: parse → run → exit code; nothing else. What each command prints and its exit codes
//! are in `commands.rs`; `--json` puts the machine-readable result on stdout in place of tables.

use llmload::cli::Cli;
use llmload::commands;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse_plainly();
    if let Some(level) = cli.command.confidence() {
        llmload::stats::interval::set_level(level);
    }
    // Tasks woken from outside the runtime (the open-loop pacer's launches) wait in its global
    // queue; workers look there every 4 polls instead of tokio's default 61, which halves the
    // open loop's p99 send lag on a busy 2-core machine (`scripts/bench-pacer.sh`).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .global_queue_interval(4)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            llmload::console::note(format_args!("error: cannot start the async runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::execute(cli.command)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            llmload::console::note(format_args!("error: {e}"));
            ExitCode::from(commands::error_code(&e))
        }
    }
}
