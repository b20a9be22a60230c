//! A block prefix cache: LRU over chained hashes of fixed-size token blocks, as vLLM's automatic
//! prefix caching keys its KV blocks. A prompt's cached prefix is its longest run of leading
//! blocks present in the cache.

use std::collections::{BTreeMap, HashMap};

/// Chained FNV-1a hashes of the full `block_tokens`-token blocks of `tokens`: block i's hash
/// covers every token before it, so equal hashes mean equal prefixes.
pub(super) fn block_hashes(tokens: &[u32], block_tokens: usize) -> Vec<u64> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    tokens
        .chunks_exact(block_tokens.max(1))
        .map(|block| {
            for token in block {
                for byte in token.to_le_bytes() {
                    hash ^= u64::from(byte);
                    hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
            hash
        })
        .collect()
}

/// Least-recently-used set of block hashes.
#[derive(Debug)]
pub(super) struct PrefixCache {
    capacity_blocks: usize,
    clock: u64,
    last_use: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
}

impl PrefixCache {
    /// An empty cache holding at most `capacity_blocks` blocks.
    pub(super) fn new(capacity_blocks: usize) -> Self {
        Self {
            capacity_blocks,
            clock: 0,
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    /// Number of leading blocks of `blocks` in the cache; those blocks become most recent.
    pub(super) fn longest_prefix(&mut self, blocks: &[u64]) -> usize {
        let hits = blocks
            .iter()
            .take_while(|hash| self.last_use.contains_key(hash))
            .count();
        for hash in &blocks[..hits] {
            self.touch(*hash);
        }
        hits
    }

    /// Adds (or refreshes) blocks, evicting the least recently used beyond capacity.
    pub(super) fn insert(&mut self, blocks: &[u64]) {
        for hash in blocks {
            self.touch(*hash);
        }
        while self.last_use.len() > self.capacity_blocks {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&oldest);
        }
    }

    fn touch(&mut self, hash: u64) {
        self.clock += 1;
        if let Some(previous) = self.last_use.insert(hash, self.clock) {
            self.by_age.remove(&previous);
        }
        self.by_age.insert(self.clock, hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_hit_and_lru_evicts() {
        let a: Vec<u32> = (0..64).collect();
        let mut b = a.clone();
        b[40] = 999;
        let (blocks_a, blocks_b) = (block_hashes(&a, 16), block_hashes(&b, 16));
        assert_eq!(blocks_a.len(), 4);
        assert_eq!(blocks_a[..2], blocks_b[..2]);
        assert_ne!(blocks_a[2], blocks_b[2]);
        let mut cache = PrefixCache::new(4);
        assert_eq!(cache.longest_prefix(&blocks_a), 0);
        cache.insert(&blocks_a);
        assert_eq!(cache.longest_prefix(&blocks_b), 2);
        cache.insert(&blocks_b);
        // Capacity 4: inserting b's two new blocks evicted a's two least recent (blocks 2, 3).
        assert_eq!(cache.longest_prefix(&blocks_a), 2);
        assert_eq!(cache.longest_prefix(&blocks_b), 4);
    }
}
