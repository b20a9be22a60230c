//! `llmload`: parse → run → exit code; nothing else.
//!
//! Exit codes: 0 every case complete; 1 the run could not start or go on (unreachable server,
//! I/O); 2 bad flags or campaign file; 3 finished with incomplete cases (`plan`: the
//! measurements do not cover the whole question); 4 stopped (interrupted or by a guard).
//! `--json` puts the machine-readable result on stdout in place of the tables.

use clap::Parser;
use llmload::cli::{Cli, Command};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => llmload::run(&args).await.map(|result| {
            if args.json {
                print!("{}", json(&result.summary));
            } else {
                print!("{}", llmload::report::markdown::render(&result.summary));
            }
            if !args.quiet {
                eprintln!("records: {}", result.dir.display());
            }
            llmload::exit_code(&result.summary.outcome)
        }),
        Command::Sweep(args) => llmload::sweep::sweep(&args).await.map(|(result, section)| {
            if args.run.json {
                print!("{}", json(&result.summary));
            } else {
                print!(
                    "{}",
                    llmload::saturation::render(&section.analysis, &section.axis)
                );
                if let Some(why) = &section.stopped_because {
                    println!("The sweep stopped adding load: {why}.");
                }
            }
            if !args.run.quiet {
                eprintln!("records: {}", result.dir.display());
            }
            llmload::exit_code(&result.summary.outcome)
        }),
        Command::Sim(args) => llmload::sim::serve_until_stopped(&args).await.map(|()| 0),
        Command::Report(args) => llmload::report::regenerate(&args.dir).map(|report| {
            if args.json {
                print!("{}", json(&report.summary));
            } else {
                print!("{}", llmload::report::markdown::render(&report.summary));
            }
            0
        }),
        Command::Compare(args) => llmload::report::compare::load(&args.dirs).map(|attempts| {
            if args.json {
                print!(
                    "{}",
                    json(&llmload::report::compare::to_json(&args.dirs, &attempts))
                );
            } else {
                print!("{}", llmload::report::compare::render(&attempts));
            }
            0
        }),
        Command::Plan(args) => llmload::plan::run(&args).map(|plan| {
            if args.json {
                print!("{}", json(&plan));
            } else {
                print!("{}", llmload::plan::render(&plan));
            }
            if plan.covered {
                0
            } else {
                3
            }
        }),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            let usage = e.downcast_ref::<llmload::config::ConfigError>().is_some();
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// `value` as pretty JSON and a newline.
fn json(value: &impl serde::Serialize) -> String {
    match serde_json::to_string_pretty(value) {
        Ok(text) => text + "\n",
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}
