//! The simulator's tokenizer and its generated-text vocabulary.
//!
//! A token is a maximal match of `\s*\S+` (optional whitespace run, then a run of non-whitespace),
//! trailing whitespace alone is one token, and runs longer than [`MAX_TOKEN_CHARS`] characters are
//! split. Ids are a stable FNV-1a hash folded to 31 bits, so any text tokenizes without a
//! vocabulary; a shared id → text table, filled as text is tokenized, serves `/detokenize`.
//! Concatenating the tokens gives back the text, so tokenize ∘ detokenize ∘ tokenize = tokenize.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

/// Longest run of whitespace or of non-whitespace kept in one token, in characters.
pub(crate) const MAX_TOKEN_CHARS: usize = 16;

/// Text returned by `/detokenize` for an id the table has never seen.
pub(crate) const UNKNOWN_TOKEN_TEXT: &str = " <unk>";

/// Entries the id → text table keeps at most; later new tokens still tokenize but do not
/// detokenize (bounds the memory a client can make the server hold).
const TABLE_CAPACITY: usize = 1 << 20;

/// Words the simulated model generates, each with its leading space.
const VOCABULARY: &[&str] = &[
    " the",
    " model",
    " answers",
    " with",
    " tokens",
    " that",
    " measure",
    " load",
    " of",
    " a",
    " server",
    " under",
    " many",
    " requests",
    " and",
    " time",
    " to",
    " first",
    " token",
    " is",
    " one",
    " metric",
    " throughput",
    " another",
    " queue",
    " slot",
    " cache",
    " prompt",
    " batch",
    " decode",
    " prefill",
    " latency",
    " each",
    " stream",
    " ends",
    " when",
    " limit",
    " reached",
    " we",
    " count",
    " what",
    " was",
    " sent",
    " received",
    " in",
    " order",
    " so",
    " results",
    " stay",
    " honest",
    " across",
    " rounds",
    " cases",
    " attempts",
    " never",
    " pooled",
    " seeds",
    " table",
    " median",
    " complete",
    " response",
    " aggregate",
    " output",
    " per",
];

/// Stable 31-bit id of a token's text (FNV-1a 64, high and low halves folded).
pub(crate) fn token_id(text: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let folded = (hash >> 32) ^ (hash & 0xffff_ffff);
    // Masked to 31 bits, so the conversion cannot fail.
    u32::try_from(folded & 0x7fff_ffff).unwrap_or_default()
}

/// Splits text into token strings; concatenating them gives back `text`.
pub(crate) fn split(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // A whitespace run followed by a non-whitespace run; a whitespace run that ends the
        // text, or is cut at MAX_TOKEN_CHARS before more whitespace, stands alone.
        let whitespace_end = run_end(rest, char::is_whitespace);
        let end = whitespace_end + run_end(&rest[whitespace_end..], |c| !c.is_whitespace());
        let (token, tail) = rest.split_at(end);
        tokens.push(token);
        rest = tail;
    }
    tokens
}

/// Byte length of the leading run of characters matching `class`, at most
/// [`MAX_TOKEN_CHARS`] characters.
fn run_end(text: &str, class: impl Fn(char) -> bool) -> usize {
    text.char_indices()
        .take(MAX_TOKEN_CHARS)
        .take_while(|(_, c)| class(*c))
        .map(|(index, c)| index + c.len_utf8())
        .last()
        .unwrap_or(0)
}

/// A tokenizer with a shared id → text table for detokenization.
#[derive(Debug, Default)]
pub struct Tokenizer {
    table: RwLock<HashMap<u32, Box<str>>>,
}

impl Tokenizer {
    /// A tokenizer whose table already knows the generated-text vocabulary.
    pub fn new() -> Self {
        let tokenizer = Self::default();
        for word in VOCABULARY {
            tokenizer.tokenize(word);
        }
        tokenizer
    }

    /// Token ids of `text`, remembering each token's text for [`Tokenizer::detokenize`].
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let pieces = split(text);
        let ids: Vec<u32> = pieces.iter().map(|piece| token_id(piece)).collect();
        let missing = {
            let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
            ids.iter().any(|id| !table.contains_key(id))
        };
        if missing {
            let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
            for (id, piece) in ids.iter().zip(&pieces) {
                if table.len() >= TABLE_CAPACITY {
                    break;
                }
                table.entry(*id).or_insert_with(|| Box::from(*piece));
            }
        }
        ids
    }

    /// Text of the given ids; ids never seen give `" <unk>"`.
    pub fn detokenize(&self, ids: &[u32]) -> String {
        let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
        ids.iter()
            .map(|id| table.get(id).map_or(UNKNOWN_TOKEN_TEXT, |text| text))
            .collect()
    }
}

/// The `index`-th token (0-based) generated for request `serial`: deterministic for a seed.
pub(crate) fn generated_token(seed: u64, serial: u64, index: usize) -> (u32, &'static str) {
    let mut mix = seed ^ serial.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (index as u64);
    mix = (mix ^ (mix >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mix = (mix ^ (mix >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mix ^= mix >> 31;
    // The remainder is below the vocabulary's length, so it fits in usize.
    let word = VOCABULARY[usize::try_from(mix % VOCABULARY.len() as u64).unwrap_or_default()];
    (token_id(word), word)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn splits_words_with_leading_whitespace() {
        assert_eq!(split("Hello  world \n"), ["Hello", "  world", " \n"]);
        assert_eq!(split(" a"), [" a"]);
        assert_eq!(split(""), Vec::<&str>::new());
        let long = "x".repeat(20);
        assert_eq!(split(&long), [&long[..16], &long[16..]]);
        let spaces = format!("{}y", " ".repeat(18));
        assert_eq!(split(&spaces), [&spaces[..16], &spaces[16..]]);
    }

    #[test]
    fn unknown_ids_detokenize_to_unk() {
        let tokenizer = Tokenizer::new();
        let ids = tokenizer.tokenize("known words");
        assert_eq!(tokenizer.detokenize(&ids), "known words");
        let unknown = token_id("never tokenized anywhere");
        assert_eq!(tokenizer.detokenize(&[unknown]), UNKNOWN_TOKEN_TEXT);
    }

    #[test]
    fn generated_tokens_are_known_and_deterministic() {
        let tokenizer = Tokenizer::new();
        let (id, text) = generated_token(7, 3, 11);
        assert_eq!((id, text), generated_token(7, 3, 11));
        assert_eq!(tokenizer.detokenize(&[id]), text);
        let texts: Vec<_> = (0..32).map(|i| generated_token(7, 3, i).1).collect();
        assert!(texts.iter().any(|t| *t != texts[0]), "output varies");
    }

    proptest! {
        #[test]
        fn tokenize_is_idempotent(text in "(\\PC|\\s){0,200}") {
            let tokenizer = Tokenizer::new();
            let ids = tokenizer.tokenize(&text);
            prop_assert_eq!(split(&text).concat(), text.clone());
            let back = tokenizer.detokenize(&ids);
            prop_assert_eq!(&back, &text);
            prop_assert_eq!(&tokenizer.tokenize(&back), &ids);
            prop_assert!(ids.iter().all(|id| *id < (1 << 31)));
        }
    }
}
