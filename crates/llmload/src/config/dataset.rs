//! Config: prompts from a dataset (`--dataset`, `--dataset-lengths`, `--dataset-output`), read
//! and checked once here.

use super::parse::bad;
use super::{LoadConfig, Settings};
use crate::api::Api;
use crate::error::ConfigError;
use crate::workload::dataset::{Dataset, Lengths, Output};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// A dataset run's prompts.
#[derive(Clone, Debug, Serialize)]
pub struct DatasetConfig {
    /// The file.
    pub path: PathBuf,
    /// How prompts are sized.
    pub lengths: Lengths,
    /// Where requested output lengths come from.
    pub output: Output,
    /// Its entries.
    pub entries: usize,
    /// The entries, read.
    #[serde(skip)]
    pub dataset: Arc<Dataset>,
}

impl DatasetConfig {
    /// The dataset's name in case ids ([`crate::workload::dataset::id_name`]).
    pub fn id_name(&self) -> String {
        crate::workload::dataset::id_name(&self.path)
    }

    /// The dataset of `s`, read and checked; `None` without `--dataset`.
    pub(super) fn resolve(s: &Settings) -> Result<Option<DatasetConfig>, ConfigError> {
        let Some(path) = &s.workload.dataset else {
            if s.workload.dataset_lengths.is_some() || s.workload.dataset_output.is_some() {
                return bad("--dataset-lengths and --dataset-output need --dataset FILE");
            }
            return Ok(None);
        };
        let dataset = Dataset::load(path).map_err(|e| ConfigError(format!("--dataset {e}")))?;
        let output = s.workload.dataset_output.unwrap_or_default();
        if output == Output::FromDataset {
            if let Some(i) = dataset.entries.iter().position(|e| e.answer.is_none()) {
                return bad(format!(
                    "--dataset-output from-dataset: entry {} of {} has no answer",
                    i + 1,
                    path.display()
                ));
            }
        }
        if s.workload.system_prompt_tokens.is_some_and(|t| t > 0) {
            return bad("--system-prompt-tokens does not apply to --dataset prompts");
        }
        Ok(Some(DatasetConfig {
            path: path.clone(),
            lengths: s.workload.dataset_lengths.unwrap_or_default(),
            output,
            entries: dataset.entries.len(),
            dataset: Arc::new(dataset),
        }))
    }
}

/// A dataset's entries sent as they are, or its answers' lengths asked for, set those lengths:
/// the matrix has one of each, written as 0 (a case named `indataset`, `outdataset`), and the
/// flag that would set them is refused.
pub(super) fn dataset_lengths(
    settings: &Settings,
    dataset: Option<&DatasetConfig>,
) -> Result<(bool, bool), ConfigError> {
    let Some(dataset) = dataset else {
        return Ok((false, false));
    };
    let w = &settings.workload;
    if dataset.lengths == Lengths::AsIs && w.input_tokens.is_some() {
        return bad(
            "--input-tokens does not apply with --dataset-lengths as-is: each entry goes as it \
             is, and its length is what the server counts",
        );
    }
    if dataset.output == Output::FromDataset && w.output_tokens.is_some() {
        return bad(
            "--output-tokens does not apply with --dataset-output from-dataset: each entry's \
             answer sets its output length",
        );
    }
    Ok((
        dataset.lengths == Lengths::AsIs,
        dataset.output == Output::FromDataset,
    ))
}

/// Combinations that cannot run: a trace's `hash_ids` build their own prompts, from token IDs.
pub(super) fn check_prompts(
    dataset: Option<&DatasetConfig>,
    load: &LoadConfig,
    api: Option<Api>,
) -> Result<(), ConfigError> {
    if load.session.is_some() && dataset.is_some() {
        return bad("--turns builds its own messages: --dataset does not apply");
    }
    if !load.has_blocks() {
        return Ok(());
    }
    if dataset.is_some() {
        return bad("a trace's hash_ids build its prompts: --dataset does not apply");
    }
    if api.is_some_and(Api::takes_messages) {
        return bad(
            "a trace's hash_ids become token-ID prompts: use --api llamacpp or completions",
        );
    }
    Ok(())
}
