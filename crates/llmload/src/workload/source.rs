//! Prompts for a run, in the target's own vocabulary.
//!
//! Token-ID APIs get the corpus tokenized once by the server; text APIs (chat, or a server with no
//! `/tokenize`) get word-based texts whose server-side count is searched to be exact: through
//! `/tokenize` plus the chat template's overhead (measured once with a probe request), or, with no
//! tokenizer endpoint, through probe requests alone.

use super::prompt::{token_prompt, TokenCount, Words};
use crate::api::{Api, Prompt};
use crate::target::Target;
use anyhow::{bail, Context};

/// Where a run's prompts come from.
#[derive(Debug)]
pub enum PromptSource {
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
        /// Tokens the API adds around the text (chat template, BOS).
        overhead: u32,
    },
    /// The server's own chat template (`/apply-template`), then `/tokenize` with special tokens:
    /// exact, with no generation.
    Template,
    /// A one-token generation request per count.
    Probe,
}

impl PromptSource {
    /// Prepares prompts for `target` from `corpus`.
    pub async fn prepare(target: &Target, corpus: &str) -> anyhow::Result<PromptSource> {
        let api = target.endpoint.api;
        let tokens = target
            .tokenize(corpus, false)
            .await
            .context("tokenizing the corpus")?;
        if api.takes_token_ids() {
            match tokens {
                Some(tokens) if tokens.len() >= 64 => return Ok(PromptSource::Tokens(tokens)),
                Some(tokens) => bail!(
                    "the corpus is only {} tokens long; give a longer --corpus",
                    tokens.len()
                ),
                None if api == Api::Llamacpp => bail!("the server has no /tokenize endpoint"),
                None => {}
            }
        }
        let words = Words::new(corpus);
        const SAMPLE: &str = "Hello there";
        let probed = target
            .probe_prompt_tokens(Prompt::Text(SAMPLE.into()))
            .await?;
        let counter = if api == Api::Chat
            && ServerCount::new(target, Counter::Template)
                .count(SAMPLE)
                .await
                .ok()
                == Some(probed)
        {
            Counter::Template
        } else {
            match target.tokenize(SAMPLE, false).await? {
                Some(sample) => Counter::Tokenize {
                    overhead: probed.checked_sub(sample.len() as u32).context(
                        "the server counts fewer prompt tokens than its tokenizer gives for the text",
                    )?,
                },
                None => Counter::Probe,
            }
        };
        Ok(PromptSource::Text { words, counter })
    }

    /// The prompt of the `serial`-th request of the run, exactly `n` tokens long.
    pub async fn prompt(
        &self,
        target: &Target,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> anyhow::Result<Prompt> {
        match self {
            PromptSource::Tokens(corpus) => {
                Ok(Prompt::Tokens(token_prompt(corpus, n, serial, seed)))
            }
            PromptSource::Text { words, counter } => {
                let counting = ServerCount::new(target, *counter);
                let mut last_error = None;
                for attempt in 0..4 {
                    let sequence = words.sequence(serial * 4 + attempt, seed);
                    match sequence.exact_text(n, 0, &counting).await {
                        Ok(text) => return Ok(Prompt::Text(text)),
                        Err(e) => last_error = Some(e),
                    }
                }
                let e = last_error.expect("the loop ran at least once");
                Err(anyhow::Error::new(e).context(format!("building a prompt of {n} tokens")))
            }
        }
    }
}

struct ServerCount<'a> {
    target: &'a Target,
    counter: Counter,
}

impl<'a> ServerCount<'a> {
    fn new(target: &'a Target, counter: Counter) -> Self {
        ServerCount { target, counter }
    }
}

impl TokenCount for ServerCount<'_> {
    async fn count(&self, text: &str) -> anyhow::Result<u32> {
        match self.counter {
            Counter::Tokenize { overhead } => {
                let tokens = self
                    .target
                    .tokenize(text, false)
                    .await?
                    .context("tokenizer went away")?;
                Ok(tokens.len() as u32 + overhead)
            }
            Counter::Template => {
                let prompt = self
                    .target
                    .apply_template(text)
                    .await?
                    .context("no chat template endpoint")?;
                let tokens = self
                    .target
                    .tokenize(&prompt, true)
                    .await?
                    .context("no tokenizer endpoint")?;
                Ok(tokens.len() as u32)
            }
            Counter::Probe => {
                self.target
                    .probe_prompt_tokens(Prompt::Text(text.to_owned()))
                    .await
            }
        }
    }
}
