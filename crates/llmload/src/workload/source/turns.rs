//! The turns of a multi-turn session: each sends the history so far and a new user message of
//! exactly the asked length, and says how many of its prompt tokens come before that message
//! (what a prefix cache may serve).
//!
//! Token APIs hold the history as token IDs and concatenate: the count is exact by construction.
//! The chat API holds messages; what the server's template makes of them is read back in its
//! own tokens (`Target::conversation_tokens`): the tokens before the new message are those its
//! prompt shares with a twin that differs from the new message's first word on, and the new
//! message is sized so that the prompt grows by exactly the asked tokens. A server that cannot
//! show its chat prompt's tokens gets messages sized by its counter alone, and its responses are
//! unverified. Every new message opens with a word (or token) whose first token differs from the
//! previous turns', so a cache that matches token by token cannot run past the history.

use super::{distinct, junction, Counter, PromptSource, Vocabulary};
use crate::api::{Message, Prompt};
use crate::error::{Context, Error};
use crate::target::Target;
use crate::workload::prompt::{token_prompt, TokenCount};
use crate::workload::session::{common_prefix, TokenHistory};

/// A session's conversation so far, in the form its API takes.
#[derive(Clone, Debug)]
pub enum Conversation {
    /// Token IDs, concatenated (llamacpp, completions).
    Tokens(TokenHistory),
    /// Chat messages.
    Messages(Vec<Message>),
    /// Texts joined, on a text API that is not chat (no exact count).
    Text(String),
}

/// One turn ready to go.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The whole prompt: the history and the new message.
    pub prompt: Prompt,
    /// Prompt tokens as the server will count them; `None` when they cannot be told.
    pub input_tokens: Option<u32>,
    /// Prompt tokens before the new message; `None` when they cannot be told.
    pub history_tokens: Option<u32>,
}

/// What stands for a turn's answer in the history.
#[derive(Clone, Debug)]
pub enum Answer {
    /// The streamed text.
    Generated(String),
    /// A filler of this many tokens.
    Placeholder(u32),
}

impl PromptSource {
    /// An empty conversation, in the form the API takes.
    pub fn conversation(&self, target: &Target) -> Conversation {
        match &self.vocabulary {
            Vocabulary::Tokens(_) => Conversation::Tokens(TokenHistory::default()),
            Vocabulary::Text { .. } if target.endpoint.api.takes_messages() => {
                Conversation::Messages(Vec::new())
            }
            Vocabulary::Text { .. } => Conversation::Text(String::new()),
        }
    }

    /// The next turn of `conversation`: the first is the case's own prompt of `n` tokens (shared
    /// prefix included); a later one adds a new user message of `n` tokens to the history.
    pub async fn turn(
        &self,
        target: &Target,
        conversation: &mut Conversation,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Turn> {
        match conversation {
            Conversation::Tokens(history) => {
                let user = if history.is_empty() {
                    match self.prompt(target, n, serial, seed).await? {
                        Prompt::Tokens(tokens) => tokens,
                        _ => return Err(Error::Internal("a token prompt was not tokens".into())),
                    }
                } else {
                    self.user_tokens(n, serial, seed)?
                };
                let first = history.is_empty();
                let (tokens, allowed) = history.turn(&user);
                Ok(Turn {
                    input_tokens: Some(crate::num::count(tokens.len())),
                    history_tokens: Some(if first { self.shared } else { allowed }),
                    prompt: Prompt::Tokens(tokens),
                })
            }
            Conversation::Messages(messages) => {
                self.chat_turn(target, messages, n, serial, seed).await
            }
            Conversation::Text(history) => {
                // The first message is the case's prompt (its shared part included); a later one
                // is a message of its own.
                let prompt = if history.is_empty() {
                    self.prompt(target, n, serial, seed).await?
                } else {
                    self.vocabulary.prompt(target, n, serial, seed, "").await?
                };
                let Prompt::Text(text) = prompt else {
                    return Err(Error::Internal("a text prompt was not text".into()));
                };
                let first = history.is_empty();
                if !first {
                    history.push_str("\n\n");
                }
                history.push_str(&text);
                Ok(Turn {
                    prompt: Prompt::Text(history.clone()),
                    // Only the first turn's count is known: the texts' joins are not counted.
                    input_tokens: first.then_some(n),
                    history_tokens: None,
                })
            }
        }
    }

    /// The turn's answer joins the history (`serial` sets a placeholder's text).
    pub async fn answer(
        &self,
        target: &Target,
        conversation: &mut Conversation,
        answer: Answer,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<()> {
        match conversation {
            Conversation::Tokens(history) => {
                let tokens = match answer {
                    Answer::Generated(text) if text.is_empty() => Vec::new(),
                    Answer::Generated(text) => target
                        .tokenize(&text, false)
                        .await?
                        .context("the server's /tokenize went away")?,
                    Answer::Placeholder(n) => self.user_tokens(n, serial, seed)?,
                };
                history.answer(&tokens);
            }
            Conversation::Messages(messages) => {
                let content = self.answer_text(target, answer, serial, seed).await?;
                messages.push(Message {
                    role: "assistant".into(),
                    content,
                });
            }
            Conversation::Text(history) => {
                let content = self.answer_text(target, answer, serial, seed).await?;
                history.push_str("\n\n");
                history.push_str(&content);
            }
        }
        Ok(())
    }

    /// `n` corpus tokens whose first differs from those of the prompts just before (a junction).
    fn user_tokens(&self, n: u32, serial: u64, seed: u64) -> crate::error::Result<Vec<u32>> {
        let Vocabulary::Tokens(corpus) = &self.vocabulary else {
            return Err(Error::Internal("token messages from a text corpus".into()));
        };
        let distinct = self
            .distinct
            .get_or_init(|| distinct(corpus.iter().copied()));
        let mut tokens = token_prompt(corpus, n, serial, seed);
        if let Some(first) = tokens.first_mut() {
            *first = distinct[junction(serial, seed, distinct.len())];
        }
        Ok(tokens)
    }

    /// The text of an answer: as generated, or a placeholder of `n` tokens of the server's
    /// tokenizer (its counter's, without one).
    async fn answer_text(
        &self,
        target: &Target,
        answer: Answer,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<String> {
        match answer {
            Answer::Generated(text) => Ok(text),
            Answer::Placeholder(n) => {
                let Vocabulary::Text { words, counter } = &self.vocabulary else {
                    return Err(Error::Internal("a text placeholder from tokens".into()));
                };
                // Where the server has /tokenize, the text alone is counted there.
                if matches!(counter, Counter::Tokenize { .. } | Counter::Template) {
                    let sequence = words.sequence(serial, seed);
                    return sequence
                        .exact_text(n, 0, &PlainCount { target })
                        .await
                        .map_err(|e| Error::Target(format!("building a placeholder: {e}")));
                }
                match self.vocabulary.prompt(target, n, serial, seed, "").await? {
                    Prompt::Text(text) => Ok(text),
                    _ => Err(Error::Internal("a text prompt was not text".into())),
                }
            }
        }
    }

    /// A chat turn: the first is the case's prompt; a later one a new user message sized so that
    /// the prompt grows by exactly `n` tokens past the history (where the server shows its chat
    /// prompt's tokens).
    async fn chat_turn(
        &self,
        target: &Target,
        messages: &mut Vec<Message>,
        n: u32,
        serial: u64,
        seed: u64,
    ) -> crate::error::Result<Turn> {
        let Vocabulary::Text { words, .. } = &self.vocabulary else {
            return Err(Error::Internal("chat messages from tokens".into()));
        };
        let junctions = self.distinct_words.get_or_init(|| words.junctions());
        if messages.is_empty() {
            let Prompt::Text(text) = self.prompt(target, n, serial, seed).await? else {
                return Err(Error::Internal("a chat prompt was not text".into()));
            };
            // The message's own part starts after the shared text and its space.
            let own = self
                .shared_text
                .get()
                .filter(|_| self.shared > 0)
                .map_or(0, |s| s.len() + 1);
            messages.push(user(&text));
            let history = self
                .history_tokens(target, messages, own, junctions)
                .await?;
            // Sized exactly as every prompt of the run is.
            return Ok(Turn {
                prompt: Prompt::Messages(messages.clone()),
                input_tokens: Some(n),
                history_tokens: history,
            });
        }
        let opening = junctions[junction(serial, seed, junctions.len())].clone();
        messages.push(user(&opening));
        let Some(allowed) = self.history_tokens(target, messages, 0, junctions).await? else {
            // The server cannot show its chat prompt: a message of n tokens as its counter
            // counts one alone.
            let Prompt::Text(text) = self
                .vocabulary
                .prompt(target, n, serial, seed, &opening)
                .await?
            else {
                return Err(Error::Internal("a chat prompt was not text".into()));
            };
            set_last(messages, text);
            return Ok(Turn {
                prompt: Prompt::Messages(messages.clone()),
                input_tokens: None,
                history_tokens: None,
            });
        };
        let count = TurnCount {
            target,
            messages: messages.clone(),
            opening: &opening,
            allowed,
        };
        let mut last_error = None;
        for attempt in 0..4 {
            let sequence = words.sequence(serial * 4 + attempt, seed);
            match sequence.exact_text(n, 0, &count).await {
                Ok(text) => {
                    set_last(messages, format!("{opening} {text}"));
                    return Ok(Turn {
                        prompt: Prompt::Messages(messages.clone()),
                        input_tokens: Some(allowed.saturating_add(n)),
                        history_tokens: Some(allowed),
                    });
                }
                Err(e) => last_error = Some(e),
            }
        }
        let e = last_error.map_or_else(String::new, |e| e.to_string());
        Err(Error::Target(format!(
            "building a session's message of {n} tokens: {e}"
        )))
    }

    /// The prompt tokens of `messages` that come before the last message's own part (from byte
    /// `own` of its text): those it shares with a twin whose own part opens with a word of
    /// another initial. `None` when the server cannot show its chat prompt's tokens.
    async fn history_tokens(
        &self,
        target: &Target,
        messages: &[Message],
        own: usize,
        junctions: &[String],
    ) -> crate::error::Result<Option<u32>> {
        let Some(last) = messages.last() else {
            return Ok(None);
        };
        let text = &last.content;
        let own = own.min(text.len());
        let initial = text[own..]
            .chars()
            .next()
            .map(|c| c.to_lowercase().to_string());
        let Some(other) = junctions.iter().find(|w| {
            let first = w.chars().next().map(|c| c.to_lowercase().to_string());
            first != initial
        }) else {
            return Ok(None);
        };
        let mut twin = messages.to_vec();
        set_last(&mut twin, format!("{}{other}", &text[..own]));
        let (Some(a), Some(b)) = (
            target.conversation_tokens(messages).await?,
            target.conversation_tokens(&twin).await?,
        ) else {
            return Ok(None);
        };
        if a.is_empty() || b.is_empty() {
            return Ok(None);
        }
        Ok(Some(common_prefix(&a, &b)))
    }
}

/// A user message.
fn user(text: &str) -> Message {
    Message {
        role: "user".into(),
        content: text.to_owned(),
    }
}

/// Sets the last message's text.
fn set_last(messages: &mut [Message], text: String) {
    if let Some(last) = messages.last_mut() {
        last.content = text;
    }
}

/// Counts a text as the server's tokenizer does alone (no template, no special tokens).
struct PlainCount<'a> {
    target: &'a Target,
}

impl TokenCount for PlainCount<'_> {
    async fn count(&self, text: &str) -> crate::error::Result<u32> {
        let tokens = self
            .target
            .tokenize(text, false)
            .await?
            .context("the server's /tokenize went away")?;
        Ok(crate::num::count(tokens.len()))
    }
}

/// Counts the tokens a new last message (`opening`, then the text) adds to the chat prompt past
/// the `allowed` tokens of the history.
struct TurnCount<'a> {
    target: &'a Target,
    messages: Vec<Message>,
    opening: &'a str,
    allowed: u32,
}

impl TokenCount for TurnCount<'_> {
    async fn count(&self, text: &str) -> crate::error::Result<u32> {
        let mut messages = self.messages.clone();
        set_last(&mut messages, format!("{} {text}", self.opening));
        let tokens = self
            .target
            .conversation_tokens(&messages)
            .await?
            .context("the server stopped showing its chat prompt's tokens")?;
        Ok(crate::num::count(tokens.len()).saturating_sub(self.allowed))
    }
}
