//! Prompts from a dataset's entries (`--dataset`) and from a trace's `hash_ids` blocks.
//!
//! A fitted entry is the nonce of its request, then the entry's text cut or repeated to exactly
//! the case's input tokens, counted as the corpus prompts are. An as-is entry goes unchanged.
//! A block prompt is the blocks' tokens in order, each block's content a function of its id and
//! the seed alone (so that equal ids give equal tokens), then the request's own unique tail.

use super::{distinct, junction, PromptSource, ServerCount, Vocabulary};
use crate::api::Prompt;
use crate::error::{Context, Error};
use crate::target::Target;
use crate::workload::dataset::{Ask, Dataset, Lengths, Output};
use crate::workload::prompt::{nonce, splitmix64, token_prompt};
use std::sync::Arc;

/// A run's dataset and how its entries are used.
#[derive(Clone, Debug)]
pub struct DatasetPrompts {
    /// The entries.
    pub dataset: Arc<Dataset>,
    /// How prompts are sized.
    pub lengths: Lengths,
    /// Where requested output lengths come from.
    pub output: Output,
}

/// A request's prompt, and what building it settled.
#[derive(Debug)]
pub struct Built {
    /// The prompt as it goes on the wire.
    pub prompt: Prompt,
    /// Whether it is exactly the requested input tokens.
    pub exact: bool,
    /// The output tokens the dataset's answer sets, if it does.
    pub output_tokens: Option<u32>,
    /// The dataset entry it came from.
    pub entry: Option<u64>,
}

impl Built {
    /// A prompt of exactly the requested length, from no dataset.
    pub fn exact(prompt: Prompt) -> Built {
        Built {
            prompt,
            exact: true,
            output_tokens: None,
            entry: None,
        }
    }
}

/// Mixed into a block id for its place in the corpus.
const BLOCK_SALT: u64 = 0xB10C_0000_0000;

impl PromptSource {
    /// Prompts come from `dataset`'s entries.
    #[must_use]
    pub fn with_dataset(mut self, dataset: Option<DatasetPrompts>) -> PromptSource {
        self.dataset = dataset;
        self
    }

    /// A trace's `hash_ids` blocks are `tokens` long.
    #[must_use]
    pub fn with_block_tokens(mut self, tokens: u32) -> PromptSource {
        self.block_tokens = tokens;
        self
    }

    /// The `serial`-th request's prompt: from the dataset when there is one, else from the
    /// corpus; `n` tokens unless the dataset's text goes as it is.
    pub async fn build(
        &self,
        target: &Target,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Built> {
        let Some(d) = &self.dataset else {
            return Ok(Built::exact(self.prompt(target, n, serial, seed).await?));
        };
        let index = d.dataset.pick(serial, seed);
        let entry = &d.dataset.entries[index];
        let output_tokens = match (d.output, &entry.answer) {
            (Output::FromDataset, Some(answer)) => Some(count_answer(target, answer).await?),
            _ => None,
        };
        let (prompt, exact) = match (d.lengths, &entry.ask) {
            (Lengths::AsIs, Ask::Text(text)) => (Prompt::Text(text.clone()), false),
            (Lengths::AsIs, Ask::Messages(messages)) => (Prompt::Messages(messages.clone()), false),
            (Lengths::Fit, ask) => (self.fit(target, &ask.text(), n, serial, seed).await?, true),
        };
        Ok(Built {
            prompt,
            exact,
            output_tokens,
            entry: Some(index as u64),
        })
    }

    /// Exactly `n` tokens: the request's nonce, then `text` cut or repeated.
    async fn fit(
        &self,
        target: &Target,
        text: &str,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Prompt> {
        match &self.vocabulary {
            Vocabulary::Tokens(corpus) => {
                let tokens = target
                    .tokenize(text, false)
                    .await?
                    .context("the tokenizer went away")?;
                if tokens.is_empty() {
                    return Err(Error::Target("a dataset entry has no tokens".into()));
                }
                Ok(Prompt::Tokens(fit_tokens(corpus, &tokens, n, serial, seed)))
            }
            Vocabulary::Text { words, counter } => {
                let counting = ServerCount::new(target, *counter);
                let fitted = words.fitted(text, n, serial, seed);
                let text = fitted.exact_text(n, 0, &counting).await.map_err(|e| {
                    Error::Target(format!("fitting a dataset entry to {n} tokens: {e}"))
                })?;
                Ok(Prompt::Text(text))
            }
        }
    }

    /// Exactly `n` tokens: the blocks `blocks` in order (the last cut short where `n` ends in
    /// it), then a tail unique to the `serial`-th request. Token-ID APIs only.
    pub fn block_prompt(
        &self,
        n: u32,
        blocks: &[u64],
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Prompt> {
        let Vocabulary::Tokens(corpus) = &self.vocabulary else {
            return Err(Error::Target(
                "a trace's hash_ids need an API that takes token IDs (llamacpp or completions \
                 on a server with /tokenize)"
                    .into(),
            ));
        };
        let distinct = self
            .distinct
            .get_or_init(|| distinct(corpus.iter().copied()));
        let ring = Ring { corpus, distinct };
        Ok(Prompt::Tokens(ring.blocks(
            n,
            blocks,
            self.block_tokens,
            serial,
            seed,
        )))
    }
}

/// Exactly `n` tokens: the nonce of the `serial`-th prompt (from `corpus`), then `text` from its
/// start, repeated as often as it takes and cut at `n`.
pub fn fit_tokens(corpus: &[u32], text: &[u32], n: u32, serial: u64, seed: u64) -> Vec<u32> {
    let n = n as usize;
    let mut prompt: Vec<u32> = nonce(serial, seed, corpus.len())
        .map(|i| corpus[i])
        .take(n)
        .collect();
    let rest = n - prompt.len();
    prompt.extend(text.iter().cycle().take(rest).copied());
    prompt
}

/// A corpus of token IDs and its distinct tokens.
struct Ring<'a> {
    corpus: &'a [u32],
    distinct: &'a [u32],
}

impl Ring<'_> {
    /// The tokens of a block prompt (see [`PromptSource::block_prompt`]). Each block and the
    /// tail open with a token picked from the distinct ones by the block's id (the tail's: by the
    /// serial), so that a server matching a slot's cache token by token (llama.cpp) finds no
    /// chance match where two prompts part.
    fn blocks(&self, n: u32, blocks: &[u64], block: u32, serial: u64, seed: u64) -> Vec<u32> {
        let mut prompt = Vec::with_capacity(n as usize);
        let opening = |key: u64| self.distinct[junction(key, seed, self.distinct.len())];
        for &id in blocks {
            let left = n - crate::num::count(prompt.len());
            if left == 0 {
                break;
            }
            let key = splitmix64(id ^ BLOCK_SALT);
            let mut content = token_prompt(self.corpus, block.min(left), key, seed);
            content[0] = opening(id);
            prompt.extend(content);
        }
        let left = n - crate::num::count(prompt.len());
        if left > 0 {
            let mut tail = token_prompt(self.corpus, left, serial, seed);
            tail[0] = opening(splitmix64(serial ^ BLOCK_SALT));
            prompt.extend(tail);
        }
        prompt
    }
}

/// The answer's tokens as the server's tokenizer counts them (else the client's `--tokenizer`),
/// at least 1.
async fn count_answer(target: &Target, answer: &str) -> crate::error::Result<u32> {
    let count = match target.tokenize(answer, false).await? {
        Some(tokens) => crate::num::count(tokens.len()),
        None => target
            .endpoint
            .tokenizer
            .as_ref()
            .map(|t| t.count(answer, false))
            .context(
                "--dataset-output from-dataset counts answers with the server's /tokenize or \
                 --tokenizer FILE; this server has no /tokenize",
            )?,
    };
    Ok(count.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_tokens_are_exact_and_repeat_the_text_after_the_nonce() {
        let corpus: Vec<u32> = (1000..3000).collect();
        let text = [1u32, 2, 3];
        for n in [1u32, 8, 9, 10, 11, 100] {
            assert_eq!(fit_tokens(&corpus, &text, n, 5, 9).len(), n as usize);
        }
        let p = fit_tokens(&corpus, &text, 15, 5, 9);
        assert_eq!(&p[8..], &[1, 2, 3, 1, 2, 3, 1]);
        assert_ne!(p[..8], fit_tokens(&corpus, &text, 15, 6, 9)[..8]);
    }

    #[test]
    fn requests_sharing_blocks_share_exactly_those_tokens() {
        let corpus: Vec<u32> = (0..2000).collect();
        let ring = Ring {
            corpus: &corpus,
            distinct: &corpus,
        };
        let block_tokens =
            |n, blocks: &[u64], b, serial, seed| ring.blocks(n, blocks, b, serial, seed);
        let b = 64u32;
        let a = block_tokens(2 * b + 30, &[1, 2], b, 10, 7);
        let c = block_tokens(2 * b + 40, &[1, 2], b, 11, 7);
        let d = block_tokens(2 * b, &[1, 3], b, 12, 7);
        assert_eq!(a.len(), 2 * b as usize + 30);
        assert_eq!(d.len(), 2 * b as usize);
        let common = |x: &[u32], y: &[u32]| x.iter().zip(y).take_while(|(p, q)| p == q).count();
        assert_eq!(
            common(&a, &c),
            2 * b as usize,
            "unique tails differ at once"
        );
        assert_eq!(common(&a, &d), b as usize);
        // A short last block is the head of the same block.
        let short = block_tokens(b + 5, &[1, 2], b, 13, 7);
        assert_eq!(short[..], a[..b as usize + 5]);
        // Another seed, other content.
        assert_ne!(block_tokens(b, &[1], b, 10, 8), a[..b as usize]);
        // Blocks 2 and 3 part at once: their first tokens differ.
        assert_ne!(a[b as usize], d[b as usize]);
    }
}
