//! The shared text of text prompts, counted where it stands: at the opening of longer prompts.
//!
//! A text counted alone can end in a token that merges with what follows it (a chat template's
//! closing `<|im_end|>` written as plain text merges with a final comma into `,<`), so its count
//! alone can differ by one from the tokens it takes at the head of a prompt that goes on. The
//! shared text is therefore sized by the tokens that prompts opening with it and going on with
//! different words have in common, and the words that follow it are chosen by their first token
//! there: no two alike, so a cache that matches token by token stops at the shared part.

use super::{Counter, TokenCount};
use crate::api::Api;
use crate::error::Context;
use crate::target::Target;

/// Counts a text's tokens as the common opening of prompts that go on with different words.
pub(super) struct InContext<'a> {
    target: &'a Target,
    /// Through the chat template (llama-server's `/apply-template`, vLLM's chat `/tokenize`).
    chat: bool,
    /// Tokens the server adds before the text that `/tokenize` does not show (a BOS).
    overhead: u32,
    /// Words to go on with, of different initials.
    after: [&'a str; 3],
}

impl<'a> InContext<'a> {
    /// The counter for prompts counted by `counter` on `api`, going on with three of `words`
    /// (of different initials); `None` where the server's tokens cannot be seen (counts by probe
    /// requests or the client's tokenizer) or with fewer than three words.
    pub(super) fn new(
        target: &'a Target,
        api: Api,
        counter: Counter,
        words: &'a [String],
    ) -> Option<InContext<'a>> {
        let (chat, overhead) = match counter {
            Counter::Template => (true, 0),
            Counter::Tokenize { overhead } if !api.takes_messages() => {
                (false, overhead.unwrap_or(0))
            }
            _ => return None,
        };
        let [a, b, c, ..] = words else {
            return None;
        };
        Some(InContext {
            target,
            chat,
            overhead,
            after: [a, b, c],
        })
    }

    /// The server's tokens of `text` as a whole prompt (template included for chat).
    async fn tokens(&self, text: &str) -> crate::error::Result<Vec<u32>> {
        let tokens = if self.chat {
            self.target.chat_tokens(text).await?
        } else {
            self.target.tokenize(text, false).await?
        };
        tokens.context("the server's tokenizer went away")
    }

    /// Of `candidates`, each followed by the one `shared` text of `tokens` tokens (as counted
    /// here), those whose first token after it differs from every earlier one's; `candidates`
    /// as they are where fewer than two would be left.
    pub(super) async fn openings(
        &self,
        shared: &str,
        tokens: u32,
        candidates: &[String],
    ) -> crate::error::Result<Vec<String>> {
        let at = crate::num::index(u64::from(tokens.saturating_sub(self.overhead)));
        let mut seen = Vec::new();
        let mut kept = Vec::new();
        for word in candidates {
            let whole = self.tokens(&format!("{shared} {word}")).await?;
            if let Some(&first) = whole.get(at) {
                if !seen.contains(&first) {
                    seen.push(first);
                    kept.push(word.clone());
                }
            }
        }
        Ok(if kept.len() >= 2 {
            kept
        } else {
            candidates.to_vec()
        })
    }
}

/// Length of the common opening of `a` and `b`.
fn common(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl TokenCount for InContext<'_> {
    async fn count(&self, text: &str) -> crate::error::Result<u32> {
        let [a, b, c] = self.after;
        let first = self.tokens(&format!("{text} {a}")).await?;
        let second = self.tokens(&format!("{text} {b}")).await?;
        let third = self.tokens(&format!("{text} {c}")).await?;
        // Two of the words may open alike; the three cannot all share a first token when any
        // two differ, so the shortest common opening is the text's.
        let shared = common(&first, &second).min(common(&first, &third));
        Ok(crate::num::count(shared).saturating_add(self.overhead))
    }
}
