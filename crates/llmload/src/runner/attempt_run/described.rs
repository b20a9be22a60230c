//! How an attempt run describes itself: the dataset it used, what names it on the live board, and
//! how the tokens of each chunk are counted.

use crate::attempt::Attempt;
use crate::config::Config;
use crate::target::Target;

/// The dataset of a run, as the summary names it: its file's name (never its folder), length,
/// digest and use.
pub(super) fn dataset_used(d: &crate::config::DatasetConfig) -> crate::summary::DatasetUsed {
    crate::summary::DatasetUsed {
        file: d.path.file_name().map_or_else(
            || "(unnamed)".into(),
            |n| crate::console::printable(&n.to_string_lossy()).into_owned(),
        ),
        bytes: d.dataset.bytes,
        fnv1a64: d.dataset.digest.clone(),
        entries: d.entries as u64,
        lengths: d.lengths.as_str().to_owned(),
        output: d.output.as_str().to_owned(),
    }
}

/// What names the run on the live board: the attempt, the shard, the API and the model (as the
/// reports show it: scrubbed, its controls written out, at most 128 characters).
pub(super) fn live_info(config: &Config, target: &Target, attempt: &Attempt) -> crate::board::Info {
    let shard = config.sharding.shard;
    let model = target.model.as_deref().unwrap_or_default();
    let model = crate::console::printable(&crate::secrets::scrub(model))
        .chars()
        .take(128)
        .collect();
    crate::board::Info {
        attempt_id: (config.sharding.attempt_id.clone()).unwrap_or_else(|| attempt.id.clone()),
        shard: format!("{}/{}", shard.index, shard.count),
        api: target.endpoint.api.name().to_owned(),
        model,
    }
}

/// How the tokens of each streamed chunk are counted against this target.
pub(super) fn output_counting(target: &Target) -> String {
    if target.endpoint.api.is_pooling() {
        "none generated (embeddings and rerank answer once; the server's usage counts the \
         prompt tokens)"
            .into()
    } else if target.endpoint.api == crate::api::Api::Llamacpp {
        "the server's token IDs on every event".into()
    } else if target.reports_usage_per_chunk() {
        "the server's usage on every chunk (continuous_usage_stats)".into()
    } else if let Some(tokenizer) = &target.endpoint.tokenizer {
        format!(
            "the client's tokenizer ({}) on each chunk's text, after the stream",
            tokenizer.source
        )
    } else {
        "one token per chunk with text: the server does not say how many a chunk carries \
         (--tokenizer counts them)"
            .into()
    }
}
