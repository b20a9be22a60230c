//! llmload's integration tests, in one test binary: end to end against the simulator, hostile
//! servers, a real llama-server, vLLM, a gateway and real proxies, plus the decoders' fuzzing.
//!
//! One binary, not one per file: each integration test binary links the whole crate and its
//! dependencies, so thirty-odd binaries spent most of a fresh build linking. Every former file
//! is a module here, and a test's full name starts with it (`llama_server::…`,
//! `hostile::signals::…`), which is what a filter selects:
//!
//! ```text
//! cargo test -p llmload --test it                    # every test that is not ignored
//! cargo test -p llmload --test it -- cli::           # one module
//! cargo test -p llmload --test it -- --include-ignored --test-threads 1 vllm::   # a group
//! ```
//!
//! To add tests: write `tests/it/NAME.rs` (or `tests/it/NAME/mod.rs` with submodules) starting
//! with a `//!` doc and `use crate::common;`, and add `mod NAME;` below. A new file directly
//! under `tests/` would build as a binary of its own again: move it here, with `mod common;`
//! become `use crate::common;`, `#[path = "common/X.rs"] mod X;` become `use crate::common::X;`
//! (chromium, front and hostile are modules of `common`), and one more `../` in each
//! `include_str!` path.
//!
//! The modules share one process, so tests of different modules run side by side (as many at
//! once as `--test-threads`, by default the machine's cores), where each file used to run alone.
//! What they share goes through [`common`]: every test that starts a real llama-server holds
//! [`common::SERIAL`] while it runs, so those tests still run one at a time, now across all
//! modules; a new test that loads a real server, or whose figures a neighbour's load would
//! change, takes it too. No test sets environment variables or changes the working directory
//! (the llmload binary runs as a child), and servers take ports the OS picks. The groups that
//! need vLLM, a gateway or podman are `#[ignore]`d; `scripts/test.sh` runs each with
//! `--include-ignored` and its module's path as the filter.

#[path = "../common/mod.rs"]
mod common;

mod ab;
mod canaries;
mod cancel;
mod capacity;
mod chunks;
mod cli;
mod compare_gate;
mod cost;
mod datasets;
mod deploy;
mod endpoints;
mod energy;
mod fuzz;
mod gateway;
mod graphs;
mod guard;
mod hostile;
mod images;
mod killed;
mod llama_server;
mod llama_server_workloads;
mod load_shapes;
mod metrics;
mod model_mix;
mod plan;
mod pooling;
mod profile_server;
mod proxies;
mod repeats;
mod replicas;
mod report;
mod report_page;
mod saturation;
mod selfcheck;
mod server_pace;
mod sessions;
mod shards;
mod shared_prefix;
mod simulator;
mod soak;
mod speculative;
mod stages;
mod tls;
mod vllm;
mod vllm_pooling;
mod vllm_vision;
