//! The options of the workload: the prompts and outputs of each request.

use crate::config::combine::options;
use crate::config::settings::{one_or_many, LengthItem};
use clap::Args;
use serde::Deserialize;
use std::path::PathBuf;

options! {
    /// The prompts and outputs of each request.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "What to send")]
    #[serde(default)]
    pub struct WorkloadOptions {
        /// Prompt lengths: a list (one case each) or one distribution [default: 2048,8192]
        ///
        /// A comma-separated list of token counts, one case each, or one distribution sampled
        /// per request: `choice:32,256,1024`, `choice:32@0.5,256@0.5`, `uniform:MIN,MAX`,
        /// `normal:MEAN,SD[,MIN,MAX]`, `lognormal:MEDIAN,SIGMA[,MIN,MAX]`.
        #[arg(long, value_name = "N,…|SPEC")]
        #[serde(deserialize_with = "one_or_many")]
        pub input_tokens: Option<Vec<LengthItem>>,
        /// Generated tokens per request, EOS ignored: a list or a distribution [default: 256]
        ///
        /// As for --input-tokens.
        #[arg(long, value_name = "N,…|SPEC")]
        #[serde(deserialize_with = "one_or_many")]
        pub output_tokens: Option<Vec<LengthItem>>,
        /// Embeddings and rerank: inputs per request, comma-separated, one case each [default: 1]
        ///
        /// --api embeddings sends this many inputs in each request, --api rerank this many
        /// documents with its query; each input is --input-tokens long (for rerank, each
        /// (query, document) pair as the server counts it).
        #[arg(long, value_delimiter = ',', value_name = "B,…")]
        pub batch_size: Option<Vec<u32>>,
        /// Chat: images per request, comma-separated, one case each [default: 0]
        ///
        /// PNG images generated per request (each its own, the same for the same seed), sent
        /// after the prompt's text as `image_url` parts with `data:` URLs; --api chat only. 0 is a
        /// case without images.
        #[arg(long, value_delimiter = ',', value_name = "N,…")]
        pub images: Option<Vec<u32>>,
        /// Chat images: `WIDTHxHEIGHT` in pixels, comma-separated, one case each [default: 224x224]
        #[arg(long, value_delimiter = ',', value_name = "WxH,…")]
        pub image_size: Option<Vec<String>>,
        /// Open every prompt with the same S tokens, a shared system prompt [default: 0]
        ///
        /// The server may serve them from its prefix cache (it is allowed to for those tokens
        /// alone), and the summary reports the hit rate its counters show. The rest of each
        /// prompt stays unique.
        #[arg(long, value_name = "S")]
        pub system_prompt_tokens: Option<u32>,
        /// Text to build prompts from [default: the bundled public-domain text]
        #[arg(long, value_name = "FILE")]
        pub corpus: Option<PathBuf>,
        /// Prompts from a local dataset file
        ///
        /// JSONL lines of {"prompt"} or {"messages"}, or `ShareGPT` {"conversations"} (JSONL or
        /// one JSON array).
        #[arg(long, value_name = "FILE")]
        pub dataset: Option<PathBuf>,
        /// Dataset prompts: fit (to exactly --input-tokens) or as-is [default: fit]
        ///
        /// fit: cut or repeated to exactly --input-tokens, verified; as-is: sent unchanged, the
        /// server's count recorded.
        #[arg(long, value_name = "HOW")]
        pub dataset_lengths: Option<crate::workload::dataset::Lengths>,
        /// Dataset runs' output lengths: fixed or from-dataset [default: fixed]
        ///
        /// fixed: --output-tokens; from-dataset: each entry's answer, counted by the server's
        /// tokenizer.
        #[arg(long, value_name = "FROM")]
        pub dataset_output: Option<crate::workload::dataset::Output>,
        /// Replay a trace file (JSONL or CSV); implies --arrival trace
        ///
        /// JSONL lines of {"`offset_s`", "`input_tokens`", "`output_tokens`"}, or of
        /// {"timestamp" (ms), "`input_length`", "`output_length`", "`hash_ids`"} whose shared
        /// blocks become shared prompt prefixes; or CSV (by its .csv name or header) with the
        /// header `TIMESTAMP,ContextTokens,GeneratedTokens` (the Azure LLM inference traces) or
        /// `timestamp,input_length,output_length[,hash_ids]`.
        #[arg(long, value_name = "FILE")]
        pub trace: Option<PathBuf>,
        /// Tokens per block of a trace's `hash_ids` [default: 512]
        #[arg(long, value_name = "N")]
        pub trace_block_tokens: Option<u32>,
        /// Seed for prompts, lengths and schedules [default: a fresh one per attempt]
        ///
        /// The same seed reproduces the same prompts; the seed used is recorded in
        /// campaign.json.
        #[arg(long)]
        pub seed: Option<u64>,
    }
}
