//! Exact-length prompts.
//!
//! Token prompts: the corpus's tokens, repeated and cut to exactly N, starting at an offset that
//! differs for every request so that no prefix cache can stand in for prompt processing.
//! Text prompts (chat, or servers without a tokenizer endpoint): whole words from the corpus,
//! then characters of the next word, until the server-side count is exactly N — a search driven by
//! a [`TokenCount`], which asks the server.

/// Something that tells how many prompt tokens the server will count for a text.
pub trait TokenCount {
    /// Prompt tokens the server counts for `text` (chat template included where it applies).
    fn count(&self, text: &str) -> impl std::future::Future<Output = crate::error::Result<u32>>;
}

/// The start offset of the `serial`-th prompt in a ring of `len` items.
///
/// Offsets advance by a step coprime with `len`, so the first `len` prompts all start at
/// different places; `seed` picks where the sequence starts.
pub fn offset(serial: u64, seed: u64, len: usize) -> usize {
    if len <= 1 {
        return 0;
    }
    let len = len as u64;
    let mut step = 7919 % len;
    while step == 0 || gcd(step, len) != 1 {
        step = (step + 1) % len;
    }
    crate::num::index((seed % len + serial % len * step) % len)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Items that open every prompt, drawn from the corpus at random (a function of `seed` and
/// `serial`), so that no two prompts share a first cache block: not within an attempt, not
/// across attempts with different seeds, not across independent clients. A prefix cache works
/// on chained blocks, so a distinct first block defeats it for the whole prompt.
pub const NONCE_LEN: usize = 8;

/// Indices into a corpus of `len` items for the nonce of the `serial`-th prompt.
pub fn nonce(serial: u64, seed: u64, len: usize) -> impl Iterator<Item = usize> {
    let mut state = seed ^ splitmix64(serial);
    (0..NONCE_LEN).map(move |_| {
        state = splitmix64(state);
        crate::num::index(state % len.max(1) as u64)
    })
}

/// `SplitMix64`: a fast, well-mixed 64-bit hash for deterministic pseudo-random choices.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) drawn from `seed` and `key` alone (`salt` keeps draws for
/// different purposes apart), so that the same seed draws the same for the same key.
pub fn uniform(seed: u64, key: u64, salt: u64) -> f64 {
    let draw = splitmix64(seed ^ splitmix64(key ^ salt));
    // The top 53 bits as a uniform number in [0, 1).
    #[expect(clippy::cast_precision_loss, reason = "53 bits fit an f64 exactly")]
    let u = (draw >> 11) as f64 / (1u64 << 53) as f64;
    u
}

/// Exactly `n` tokens: the nonce of the `serial`-th prompt, then the ring `corpus` from its
/// offset.
pub fn token_prompt(corpus: &[u32], n: u32, serial: u64, seed: u64) -> Vec<u32> {
    let n = n as usize;
    let start = offset(serial, seed, corpus.len());
    let mut prompt: Vec<u32> = nonce(serial, seed, corpus.len())
        .map(|i| corpus[i])
        .take(n)
        .collect();
    let rest = n - prompt.len();
    prompt.extend(corpus.iter().cycle().skip(start).take(rest).copied());
    prompt
}

/// The corpus as a ring of whitespace-separated words.
#[derive(Clone, Debug)]
pub struct Words {
    words: Vec<String>,
}

/// Why no text of the requested length could be built.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The corpus has no words.
    #[error("the corpus holds no text")]
    EmptyCorpus,
    /// The server's counts never landed on the target.
    #[error(
        "no text of exactly {target} prompt tokens found (closest: {below} below, {above} above)"
    )]
    Unreachable {
        /// Requested prompt tokens.
        target: u32,
        /// Closest count below the target.
        below: u32,
        /// Closest count above the target.
        above: u32,
    },
    /// The server could not count.
    #[error(transparent)]
    Count(#[from] crate::error::Error),
}

impl Words {
    /// Splits `text` into words.
    pub fn new(text: &str) -> Words {
        Words {
            words: text.split_whitespace().map(str::to_owned).collect(),
        }
    }

    /// The distinct words of the ring, sorted.
    pub fn distinct(&self) -> Vec<String> {
        let mut words = self.words.clone();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// Words to follow a shared prefix, one per initial letter: any two start with different
    /// letters, so their first tokens differ, and a cache that matches token by token (a
    /// llama.cpp slot) cannot extend a match past the shared prefix by a word's opening. Words
    /// that open with something other than a letter are left out (a tokenizer may give them a
    /// bare space token, the same for all); all distinct words when there are fewer than two
    /// letters to tell apart.
    pub fn junctions(&self) -> Vec<String> {
        let mut by_initial: Vec<String> = Vec::new();
        for word in self.distinct() {
            let Some(initial) = word.chars().next().filter(|c| c.is_alphabetic()) else {
                continue;
            };
            let initial = initial.to_lowercase().to_string();
            if !by_initial
                .iter()
                .any(|w| w.to_lowercase().starts_with(&initial))
            {
                by_initial.push(word);
            }
        }
        if by_initial.len() < 2 {
            return self.distinct();
        }
        by_initial
    }

    /// Number of words in the ring.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The nonce words of the `serial`-th prompt, then the ring from its offset.
    #[must_use]
    pub fn sequence(&self, serial: u64, seed: u64) -> Words {
        let len = self.words.len();
        let start = offset(serial, seed, len);
        let lead = nonce(serial, seed, len).map(|i| self.words[i].clone());
        let ring = self.words.iter().cycle().skip(start).take(len).cloned();
        Words {
            words: lead.chain(ring).collect(),
        }
    }

    /// The nonce words of the `serial`-th prompt (from this ring), then the words of `text` from
    /// its first, repeated: enough words for a text of `n` tokens, since a word is at least one.
    #[must_use]
    pub fn fitted(&self, text: &str, n: u32, serial: u64, seed: u64) -> Words {
        let lead = nonce(serial, seed, self.len()).filter_map(|i| self.words.get(i).cloned());
        let own: Vec<&str> = text.split_whitespace().collect();
        let body = own
            .iter()
            .cycle()
            .take(n as usize + 1)
            .map(|w| (*w).to_owned());
        Words {
            words: lead.chain(body).collect(),
        }
    }

    /// `count` words from `start`, joined by single spaces, then `extra` characters of the next.
    fn text(&self, start: usize, count: usize, extra: usize) -> String {
        let ring = self.words.iter().cycle().skip(start);
        let mut text = ring
            .clone()
            .take(count)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
        if extra > 0 {
            let next = ring.clone().nth(count).map_or("", String::as_str);
            if count > 0 {
                text.push(' ');
            }
            text.extend(next.chars().take(extra));
        }
        text
    }

    /// A text the counter counts as exactly `target` tokens, starting at word `start`.
    pub async fn exact_text(
        &self,
        target: u32,
        start: usize,
        counter: &impl TokenCount,
    ) -> Result<String, PromptError> {
        if self.is_empty() {
            return Err(PromptError::EmptyCorpus);
        }
        let (mut lo, mut hi) = ((0usize, 0u32), (usize::MAX, u32::MAX));
        let mut words = (target as usize * 3 / 4).max(1);
        for _ in 0..32 {
            let count = counter.count(&self.text(start, words, 0)).await?;
            if count == target {
                return Ok(self.text(start, words, 0));
            }
            if count < target {
                lo = (words, count);
            } else {
                hi = (words, count);
            }
            if hi.0 == lo.0 + 1 {
                break;
            }
            let scaled = crate::num::to_usize(
                (words as f64 * f64::from(target) / f64::from(count.max(1))).round(),
            );
            words = if scaled > lo.0 && scaled < hi.0 {
                scaled
            } else if hi.0 == usize::MAX {
                lo.0 * 2 + 1
            } else {
                lo.0 + (hi.0 - lo.0) / 2
            };
        }
        self.fill_with_characters(target, start, lo, hi.1, counter)
            .await
    }

    /// `lo` words count below the target and one more word above it: add the next word's
    /// characters one at a time.
    async fn fill_with_characters(
        &self,
        target: u32,
        start: usize,
        lo: (usize, u32),
        above: u32,
        counter: &impl TokenCount,
    ) -> Result<String, PromptError> {
        let next_len = self.words[(start + lo.0) % self.len()].chars().count();
        let mut below = lo.1;
        for extra in 1..next_len {
            let text = self.text(start, lo.0, extra);
            let count = counter.count(&text).await?;
            if count == target {
                return Ok(text);
            }
            if count > target {
                return Err(PromptError::Unreachable {
                    target,
                    below,
                    above: count,
                });
            }
            below = count;
        }
        Err(PromptError::Unreachable {
            target,
            below,
            above,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn offsets_are_distinct_over_a_whole_ring() {
        for len in [1usize, 2, 7919, 7920, 1000, 4096] {
            let mut seen: Vec<usize> = (0..len as u64).map(|s| offset(s, 42, len)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), len, "ring of {len}");
        }
    }

    #[test]
    fn token_prompts_open_with_a_nonce_then_repeat_the_corpus() {
        let corpus: Vec<u32> = (100..400).collect();
        for n in [0u32, 1, 5, 8, 9, 64, 1000] {
            assert_eq!(token_prompt(&corpus, n, 3, 7).len(), n as usize);
        }
        let p = token_prompt(&corpus, 1000, 3, 7);
        let start = offset(3, 7, corpus.len());
        assert_eq!(p[NONCE_LEN], corpus[start]);
        let ring = &p[NONCE_LEN..];
        assert!(ring
            .windows(2)
            .all(|w| w[1] == w[0] + 1 || (w[0], w[1]) == (399, 100)));
    }

    #[test]
    fn no_two_prompts_share_a_first_block() {
        let corpus: Vec<u32> = (0..2000).collect();
        let mut firsts: Vec<Vec<u32>> = Vec::new();
        for seed in [0u64, 1, 99] {
            for serial in 0..300 {
                firsts.push(token_prompt(&corpus, 16, serial, seed));
            }
        }
        let total = firsts.len();
        firsts.sort();
        firsts.dedup();
        assert_eq!(firsts.len(), total);
    }

    /// Counts like a subword tokenizer: a fixed template overhead, one token per 4 characters
    /// of each word (rounded up), and counts its calls.
    struct FakeTokenizer {
        overhead: u32,
        calls: Cell<u32>,
    }

    impl TokenCount for FakeTokenizer {
        async fn count(&self, text: &str) -> crate::error::Result<u32> {
            self.calls.set(self.calls.get() + 1);
            let words: u32 = text
                .split_whitespace()
                .map(|w| crate::num::count(w.len().div_ceil(4)))
                .sum();
            Ok(self.overhead + words)
        }
    }

    #[tokio::test]
    async fn text_prompts_hit_the_exact_count() {
        let words = Words::new(crate::workload::BUNDLED_CORPUS);
        let counter = FakeTokenizer {
            overhead: 9,
            calls: Cell::new(0),
        };
        for target in [10u32, 17, 128, 512, 2048] {
            for start in [0usize, 5, 333] {
                let text = words
                    .exact_text(target, start, &counter)
                    .await
                    .expect("reachable");
                assert_eq!(counter.count(&text).await.expect("counts"), target);
            }
        }
        assert!(
            counter.calls.get() < 15 * 20,
            "search took {} counts",
            counter.calls.get()
        );
    }

    #[tokio::test]
    async fn fitted_texts_hit_the_exact_count_from_the_texts_start() {
        let words = Words::new(crate::workload::BUNDLED_CORPUS);
        let counter = FakeTokenizer {
            overhead: 5,
            calls: Cell::new(0),
        };
        let entry = "Write a short poem about the sea";
        for target in [40u32, 64, 300] {
            let fitted = words.fitted(entry, target, 3, 11);
            let text = fitted.exact_text(target, 0, &counter).await.expect("fits");
            assert_eq!(counter.count(&text).await.expect("counts"), target);
            let after_nonce: Vec<&str> = text.split_whitespace().skip(NONCE_LEN).collect();
            assert!(after_nonce.join(" ").starts_with("Write a"), "{text}");
        }
    }

    #[test]
    fn junction_words_start_with_different_letters() {
        let words = Words::new(crate::workload::BUNDLED_CORPUS);
        let junctions = words.junctions();
        assert!(junctions.len() >= 10, "{junctions:?}");
        let mut initials: Vec<String> = junctions
            .iter()
            .map(|w| w.chars().next().expect("a word").to_lowercase().to_string())
            .collect();
        let n = initials.len();
        initials.sort();
        initials.dedup();
        assert_eq!(initials.len(), n, "{junctions:?}");
        assert!(junctions
            .iter()
            .all(|w| w.chars().next().is_some_and(char::is_alphabetic)));
        // Too few letters to tell apart: every distinct word.
        assert_eq!(Words::new("1 2 3 apple").junctions().len(), 4);
    }

    #[tokio::test]
    async fn unreachable_targets_are_an_error_not_a_wrong_length() {
        let words = Words::new("alpha beta");
        let counter = FakeTokenizer {
            overhead: 9,
            calls: Cell::new(0),
        };
        assert!(matches!(
            words.exact_text(5, 0, &counter).await,
            Err(PromptError::Unreachable { .. })
        ));
    }
}
