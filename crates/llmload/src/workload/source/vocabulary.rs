//! How a prompt source counts and builds its texts: the vocabulary picked at setup (token IDs
//! from the server's tokenizer, or texts counted by the server or the client), and the server
//! counts it asks for.

use super::super::prompt::{token_prompt, TokenCount, Words};
use super::{Counter, Vocabulary};
use crate::api::{Api, Prompt};
use crate::error::{Context, Error};
use crate::target::Target;

/// Mixed into the seed for the shared system prompt's place in the corpus.
pub(super) const SHARED_SALT: u64 = 0x5A4E_D000;

impl Vocabulary {
    /// Tokenizes `corpus` on the server when the API takes token IDs, else picks how texts are
    /// counted.
    pub(super) async fn prepare(
        target: &Target,
        corpus: &str,
        lenient: bool,
    ) -> crate::error::Result<Vocabulary> {
        const SAMPLE: &str = "Hello there";
        let api = target.endpoint.api;
        let tokens = target
            .tokenize(corpus, false)
            .await
            .context("tokenizing the corpus")?;
        if api.takes_token_ids() {
            match tokens {
                Some(tokens) if tokens.len() >= 64 => return Ok(Vocabulary::Tokens(tokens)),
                Some(tokens) => {
                    return Err(Error::Target(format!(
                        "the corpus is only {} tokens long; give a longer --corpus",
                        tokens.len()
                    )))
                }
                None if api == Api::Llamacpp => {
                    return Err(Error::Target(
                        "the server has no /tokenize endpoint".to_string(),
                    ))
                }
                None => {}
            }
        }
        let words = Words::new(corpus);
        let Some(probed) = target.probe_count(Prompt::Text(SAMPLE.into())).await? else {
            return Ok(Vocabulary::Text {
                words,
                counter: uncounted(target, lenient).await?,
            });
        };
        let local = target.endpoint.tokenizer.as_ref();
        let counter = if target.count_tokens(SAMPLE).await? == Some(probed) {
            Counter::CountTokens
        } else if api.takes_messages()
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
                    overhead: Some(probed.checked_sub(crate::num::count(sample.len())).context(
                        "the server counts fewer prompt tokens than its tokenizer gives for the text",
                    )?),
                },
                None => match local {
                    Some(local) => Counter::Local {
                        overhead: Some(probed.checked_sub(local.count(SAMPLE, false)).context(
                            "the server counts fewer prompt tokens than --tokenizer gives for the \
                             text: is it the server's model's tokenizer?",
                        )?),
                    },
                    None => Counter::Probe,
                },
            }
        };
        Ok(Vocabulary::Text { words, counter })
    }

    /// Exactly `n` tokens: the nonce of the `serial`-th request and its corpus text, after
    /// `before` (text prompts: a shared text that the count includes).
    pub(super) async fn prompt(
        &self,
        target: &Target,
        n: u32,
        serial: u64,
        seed: u64,
        before: &str,
    ) -> crate::error::Result<Prompt> {
        match self {
            Vocabulary::Tokens(corpus) => Ok(Prompt::Tokens(token_prompt(corpus, n, serial, seed))),
            Vocabulary::Text { words, counter } => {
                let counting = ServerCount {
                    target,
                    counter: *counter,
                    before,
                };
                let mut last_error = None;
                for attempt in 0..4 {
                    let sequence = words.sequence(serial * 4 + attempt, seed);
                    match sequence.exact_text(n, 0, &counting).await {
                        Ok(text) => return Ok(Prompt::Text(counting.whole(&text))),
                        Err(e) => last_error = Some(e),
                    }
                }
                let e = last_error.map_or_else(String::new, |e| e.to_string());
                Err(Error::Target(format!(
                    "building a prompt of {n} tokens: {e}"
                )))
            }
        }
    }
}

/// Tokens the chat template puts before the user's text (Gemma's `<bos><start_of_turn>user`)
/// and after it (`<end_of_turn>`, the model turn's opening): the common head and tail of two
/// chat prompts whose texts differ at both ends. (0, 0) for the other APIs, and for a server
/// that cannot show its chat prompt's tokens.
pub(super) async fn template_ends(target: &Target) -> crate::error::Result<(u32, u32)> {
    if !target.endpoint.api.takes_messages() {
        return Ok((0, 0));
    }
    let (Some(a), Some(b)) = (
        target.chat_tokens("Cats: the last word is cat").await?,
        target.chat_tokens("Dogs: the last word is dog").await?,
    ) else {
        return Ok((0, 0));
    };
    let common = |x: &mut dyn Iterator<Item = (&u32, &u32)>| {
        crate::num::count(x.take_while(|(x, y)| x == y).count())
    };
    let head = common(&mut a.iter().zip(b.iter()));
    let tail = common(&mut a.iter().rev().zip(b.iter().rev()));
    Ok((head, tail))
}

/// On the Messages API, whose servers may reuse their prompt cache whatever the request asks
/// (llama-server's does) and which shows no chat prompt's tokens through a gateway: how many
/// prompt tokens the server serves from its cache for prompts that differ from their first
/// word on, the most of three one-token probes after a first. These can only be the template's
/// opening, the same in every prompt. 0 on the other APIs.
pub(super) async fn reused_opening(target: &Target) -> crate::error::Result<u32> {
    if target.endpoint.api != Api::Messages {
        return Ok(0);
    }
    let mut most = 0;
    for (i, text) in [
        "Cats: the first word differs",
        "Dogs: the first word differs",
        "Owls: the first word differs",
        "Bees: the first word differs",
    ]
    .into_iter()
    .enumerate()
    {
        let counters = target.probe(Prompt::Text(text.into())).await?;
        if i > 0 {
            most = most.max(counters.cached_tokens.unwrap_or(0));
        }
    }
    Ok(most)
}

/// How texts are counted on a server that reports no prompt count: its `/tokenize`, else the
/// client's tokenizer; only in best-effort mode, since the lengths cannot be checked.
async fn uncounted(target: &Target, lenient: bool) -> crate::error::Result<Counter> {
    if !lenient {
        return Err(Error::Target(
            "the server reports no prompt-token count, so prompt lengths cannot be set or \
             checked: pass --best-effort to measure it anyway (every response unverified)"
                .into(),
        ));
    }
    if target.tokenize("Hello there", false).await?.is_some() {
        return Ok(Counter::Tokenize { overhead: None });
    }
    if target.endpoint.tokenizer.is_some() {
        return Ok(Counter::Local { overhead: None });
    }
    Err(Error::Target(
        "the server reports no prompt-token count and has no /tokenize: pass --tokenizer FILE \
         (the model's tokenizer.json) so that the client can size the prompts"
            .into(),
    ))
}

/// Counts texts on the server, each after a fixed text (the shared system prompt, or nothing).
pub(super) struct ServerCount<'a> {
    target: &'a Target,
    counter: Counter,
    before: &'a str,
}

impl<'a> ServerCount<'a> {
    pub(super) fn new(target: &'a Target, counter: Counter) -> Self {
        ServerCount {
            target,
            counter,
            before: "",
        }
    }

    /// The text as sent: after the fixed text, separated by a space.
    fn whole(&self, text: &str) -> String {
        match self.before {
            "" => text.to_owned(),
            before => format!("{before} {text}"),
        }
    }
}

impl TokenCount for ServerCount<'_> {
    async fn count(&self, text: &str) -> crate::error::Result<u32> {
        let whole = self.whole(text);
        let text = whole.as_str();
        match self.counter {
            Counter::Tokenize { overhead } => {
                let tokens = self
                    .target
                    .tokenize(text, false)
                    .await?
                    .context("tokenizer went away")?;
                Ok(crate::num::count(tokens.len()).saturating_add(overhead.unwrap_or(0)))
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
                Ok(crate::num::count(tokens.len()))
            }
            Counter::Probe => {
                self.target
                    .probe_prompt_tokens(Prompt::Text(text.to_owned()))
                    .await
            }
            Counter::CountTokens => self
                .target
                .count_tokens(text)
                .await?
                .context("the server's /v1/messages/count_tokens went away"),
            Counter::Local { overhead } => {
                let overhead = overhead.unwrap_or(0);
                let tokenizer = self
                    .target
                    .endpoint
                    .tokenizer
                    .as_ref()
                    .context("no --tokenizer")?;
                Ok(tokenizer
                    .count(text, overhead == 0)
                    .saturating_add(overhead))
            }
        }
    }
}
