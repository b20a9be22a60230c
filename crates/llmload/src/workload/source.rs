//! Prompts for a run, in the target's own vocabulary.
//!
//! Token-ID APIs get the corpus tokenized once by the server; text APIs (chat, or a server with no
//! `/tokenize`) get word-based texts whose server-side count is searched to be exact: through
//! `/tokenize` plus the chat template's overhead (measured once with a probe request), or, with no
//! tokenizer endpoint, through probe requests alone.
//!
//! With a shared system prompt of S tokens, every prompt of the attempt opens with the same S
//! tokens (from the seed alone), then the request's nonce and its unique rest: a prefix cache may
//! serve the shared part and nothing else. For text prompts S is the shared text's count as the
//! server counts it alone (chat template included), and the whole prompt is still exactly N.

use super::prompt::{offset, splitmix64, token_prompt, TokenCount, Words};

mod fitted;
mod images;
mod opening;
mod turns;
mod vocabulary;
use crate::api::{Api, Prompt};
use crate::error::{Context, Error};
use crate::target::Target;
pub use fitted::{fit_tokens, Built, DatasetPrompts};
pub use images::{costs as image_costs, ImageCost};
pub use turns::{Answer, Conversation, Turn};
use vocabulary::{reused_opening, template_ends, ServerCount, SHARED_SALT};

/// Where a run's prompts come from.
#[derive(Debug)]
pub struct PromptSource {
    vocabulary: Vocabulary,
    /// Tokens of the shared system prompt (0: none).
    shared: u32,
    /// Text prompts: the shared system prompt, built once.
    shared_text: tokio::sync::OnceCell<String>,
    /// Token prompts: the corpus's distinct tokens, for the token after the shared part.
    distinct: std::sync::OnceLock<Vec<u32>>,
    /// Text prompts: words of distinct initials, for the word after the shared part.
    distinct_words: std::sync::OnceLock<Vec<String>>,
    /// Text prompts: the words to follow the shared text, of distinct first tokens after it.
    openings: tokio::sync::OnceCell<Vec<String>>,
    /// `--dataset`: prompts from its entries.
    dataset: Option<DatasetPrompts>,
    /// Tokens per block of a trace's `hash_ids`.
    block_tokens: u32,
    /// Chat prompts: the tokens the template puts before the user's text, the same in every
    /// prompt (0 where the server cannot show them).
    template_head: u32,
    /// `--images`: what an image of each size costs in prompt tokens.
    image_costs: std::collections::BTreeMap<super::image::ImageSpec, ImageCost>,
}

/// The distinct items of a corpus, sorted.
fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.collect();
    items.sort_unstable();
    items.dedup();
    items
}

/// Which distinct item follows the shared part in the `serial`-th prompt: consecutive serials
/// take consecutive items, so no two prompts within `len` of each other share it.
fn junction(serial: u64, seed: u64, len: usize) -> usize {
    crate::num::index(seed.wrapping_add(serial) % len.max(1) as u64)
}

/// The corpus in the form the API takes.
#[derive(Debug)]
pub enum Vocabulary {
    /// The corpus as the server's token IDs.
    Tokens(Vec<u32>),
    /// The corpus as words, with a way to count a text's prompt tokens.
    Text {
        /// The corpus.
        words: Words,
        /// How texts are counted.
        counter: Counter,
    },
}

/// How the prompt tokens of a text are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `/tokenize` of the text plus a fixed template overhead.
    Tokenize {
        /// Tokens the API adds around the text (chat template, BOS), as a probe measured them;
        /// `None` when the server reports no prompt count: then they are not counted.
        overhead: Option<u32>,
    },
    /// The server's own chat template (`/apply-template`), then `/tokenize` with special tokens:
    /// exact, with no generation.
    Template,
    /// A one-token generation request per count.
    Probe,
    /// Anthropic's `/v1/messages/count_tokens`: exact, with no generation.
    CountTokens,
    /// The client's own tokenizer (`--tokenizer`) plus a fixed overhead: for a server with no
    /// `/tokenize`.
    Local {
        /// Tokens the API adds around the text, as a probe measured them; `None` when the
        /// server reports no prompt count: then they are not counted.
        overhead: Option<u32>,
    },
}

impl Counter {
    /// How prompt lengths are counted, in words, for the attempt's files.
    pub fn describe(self, target: &Target) -> String {
        let text = self.describe_text(target);
        if target.endpoint.api == Api::Rerank {
            return format!(
                "{text}, each (query, document) pair: the query's tokens and the server's own \
                 around the pair are among those around the text"
            );
        }
        text
    }

    /// [`Counter::describe`] for any API.
    fn describe_text(self, target: &Target) -> String {
        let client = || {
            target
                .endpoint
                .tokenizer
                .as_ref()
                .map_or_else(String::new, |t| t.source.clone())
        };
        match self {
            Counter::Template => {
                "exact: the server's chat template (/apply-template) and tokenizer".into()
            }
            Counter::Tokenize { overhead } => format!("the server's /tokenize{}", around(overhead)),
            Counter::Probe => "one-token probe requests, the server counting".into(),
            Counter::CountTokens => "exact: the server's /v1/messages/count_tokens".into(),
            Counter::Local { overhead } => {
                format!("the client's tokenizer ({}){}", client(), around(overhead))
            }
        }
    }
}

/// What a count adds for the tokens the server puts around the text: `plus N tokens around the
/// text` as a probe measured them, or that they are not known (the server reports no prompt
/// count), so that prompts are longer than asked by that many: never a count of 0 that reads as
/// exact.
fn around(overhead: Option<u32>) -> String {
    match overhead {
        Some(n) => format!(" plus {n} tokens around the text"),
        None => " for the text alone: the server reports no prompt count, so the tokens it adds \
                 around the text (a chat template, a BOS) are not known and not counted, and \
                 each prompt is longer than asked by that many"
            .into(),
    }
}

impl PromptSource {
    /// Prepares prompts for `target` from `corpus`, each opening with the same `shared` tokens.
    pub async fn prepare(
        target: &Target,
        corpus: &str,
        shared: u32,
        lenient: bool,
    ) -> crate::error::Result<PromptSource> {
        let vocabulary = Vocabulary::prepare(target, corpus, lenient).await?;
        let template_head = match vocabulary {
            Vocabulary::Text { .. } => match template_ends(target).await?.0 {
                0 => reused_opening(target).await?,
                head => head,
            },
            Vocabulary::Tokens(_) => 0,
        };
        Ok(PromptSource {
            vocabulary,
            template_head,
            shared,
            shared_text: tokio::sync::OnceCell::new(),
            distinct: std::sync::OnceLock::new(),
            distinct_words: std::sync::OnceLock::new(),
            openings: tokio::sync::OnceCell::new(),
            dataset: None,
            block_tokens: super::trace::DEFAULT_BLOCK_TOKENS,
            image_costs: std::collections::BTreeMap::new(),
        })
    }

    /// Prompts of a token-ID API cut from `corpus`, with no shared system prompt: no server is
    /// asked for anything.
    #[cfg(test)]
    pub(crate) fn of_tokens(corpus: Vec<u32>) -> PromptSource {
        PromptSource {
            vocabulary: Vocabulary::Tokens(corpus),
            template_head: 0,
            shared: 0,
            shared_text: tokio::sync::OnceCell::new(),
            distinct: std::sync::OnceLock::new(),
            distinct_words: std::sync::OnceLock::new(),
            openings: tokio::sync::OnceCell::new(),
            dataset: None,
            block_tokens: super::trace::DEFAULT_BLOCK_TOKENS,
            image_costs: std::collections::BTreeMap::new(),
        }
    }

    /// Tokens of the shared system prompt that opens every prompt (0: none).
    pub fn shared_tokens(&self) -> u32 {
        self.shared
    }

    /// Tokens the chat template puts before the user's text in every prompt (0 for token
    /// prompts, and where the server cannot show them): a server that reuses cached prefixes
    /// whatever the request asks may serve these, and only these, from its cache.
    pub fn template_head(&self) -> u32 {
        self.template_head
    }

    /// How prompt lengths are counted, in words, for the attempt's files.
    pub fn counting(&self, target: &Target) -> String {
        let prompts = match &self.vocabulary {
            Vocabulary::Tokens(_) => "exact: token IDs from the server's /tokenize".into(),
            Vocabulary::Text { counter, .. } => counter.describe(target),
        };
        prompts + &self.image_counting()
    }

    /// The prompt of the `serial`-th request of the run, exactly `n` tokens long: the shared
    /// system prompt, then the request's nonce and its own text.
    pub async fn prompt(
        &self,
        target: &Target,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Prompt> {
        if self.shared == 0 {
            return self.vocabulary.prompt(target, n, serial, seed, "").await;
        }
        let unique = n
            .checked_sub(self.shared)
            .filter(|&u| u > 0)
            .with_context(|| {
                format!(
                    "a prompt of {n} tokens cannot hold the {} shared",
                    self.shared
                )
            })?;
        match &self.vocabulary {
            Vocabulary::Tokens(corpus) => {
                let distinct = self
                    .distinct
                    .get_or_init(|| distinct(corpus.iter().copied()));
                let start = offset(0, splitmix64(seed ^ SHARED_SALT), corpus.len());
                let mut tokens: Vec<u32> = corpus
                    .iter()
                    .cycle()
                    .skip(start)
                    .take(self.shared as usize)
                    .copied()
                    .collect();
                let mut rest = token_prompt(corpus, unique, serial, seed);
                // A server that reuses a slot's cache token by token (llama.cpp) would match a
                // nonce token equal to the one its previous prompt had there by chance: the
                // first token after the shared part differs from the last `distinct` prompts'.
                rest[0] = distinct[junction(serial, seed, distinct.len())];
                tokens.extend(rest);
                Ok(Prompt::Tokens(tokens))
            }
            Vocabulary::Text { words, counter } => {
                let junctions = self.distinct_words.get_or_init(|| words.junctions());
                let in_context =
                    opening::InContext::new(target, target.endpoint.api, *counter, junctions);
                let shared = self
                    .shared_text
                    .get_or_try_init(|| async {
                        // Word boundaries may step over S: try a few places in the corpus.
                        let counting = ServerCount::new(target, *counter);
                        // Where the server's tokens can be seen, the text is counted at the
                        // opening of prompts that go on ([`opening`]). Else a chat prompt's
                        // count includes the template's tokens after the user text, which no two
                        // prompts share: the text is sized so that the template's head and the
                        // text are S.
                        let tail = match in_context {
                            Some(_) => 0,
                            None => template_ends(target).await?.1,
                        };
                        let mut last_error = None;
                        for attempt in 0..8 {
                            let start =
                                offset(attempt, splitmix64(seed ^ SHARED_SALT), words.len());
                            let whole = self.shared.saturating_add(tail);
                            let found = match &in_context {
                                Some(c) => words.exact_text(whole, start, c).await,
                                None => words.exact_text(whole, start, &counting).await,
                            };
                            match found {
                                Ok(text) => return Ok(text),
                                Err(e) => last_error = Some(e),
                            }
                        }
                        let e = last_error.map_or_else(String::new, |e| e.to_string());
                        Err(Error::Target(format!(
                            "building the shared system prompt: {e}"
                        )))
                    })
                    .await?;
                let words = self
                    .openings
                    .get_or_try_init(|| async {
                        match &in_context {
                            Some(c) => c.openings(shared, self.shared, junctions).await,
                            None => Ok(junctions.clone()),
                        }
                    })
                    .await?;
                let before = format!("{shared} {}", words[junction(serial, seed, words.len())]);
                self.vocabulary
                    .prompt(target, n, serial, seed, &before)
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::around;

    #[test]
    fn tokens_around_the_text_are_a_measured_count_or_said_unknown() {
        assert_eq!(around(Some(9)), " plus 9 tokens around the text");
        assert_eq!(around(Some(0)), " plus 0 tokens around the text");
        let unknown = around(None);
        assert!(!unknown.contains("plus 0"), "{unknown}");
        assert!(
            unknown.contains("are not known and not counted")
                && unknown.contains("longer than asked"),
            "{unknown}"
        );
    }
}
