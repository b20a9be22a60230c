//! Workload: one shard's part of a global plan (`--shard I/N`). Every shard computes the same
//! plan from the same seed and keeps its part of it: of an arrival schedule, arrivals I, I+N,
//! I+2N… (so the shards together are exactly the single process's schedule: the server sees the
//! whole process, though one shard's every-N-th arrivals of a Poisson process are not Poisson
//! themselves, their gaps being Erlang-N); of a closed loop's concurrency, its share of the
//! streams (C/N, the remainder to the lowest indices).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The most shards one attempt may be split into.
pub const MAX_SHARDS: u32 = 10_000;

/// Which part of an attempt a process runs: shard `index` (from 0) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the attempt has (at least 1).
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole attempt in one process: `--shard 0/1`, or no `--shard`.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether this is the whole attempt (one shard of one).
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether arrival `global` (its place in the global schedule, from 0) is this shard's.
    pub fn takes(self, global: usize) -> bool {
        global % self.count as usize == self.index as usize
    }

    /// This shard's items of a global sequence, each with its global index.
    pub fn thin<T>(self, items: impl IntoIterator<Item = T>) -> Vec<(usize, T)> {
        items
            .into_iter()
            .enumerate()
            .filter(|&(g, _)| self.takes(g))
            .collect()
    }

    /// This shard's share of `total` (streams, or a request count): `total / count`, one more
    /// for the `total % count` lowest indices, so the shares add up to `total`.
    pub fn share(self, total: u64) -> u64 {
        let count = u64::from(self.count);
        total / count + u64::from(u64::from(self.index) < total % count)
    }

    /// [`Shard::share`] of a concurrency.
    pub fn share_u32(self, total: u32) -> u32 {
        u32::try_from(self.share(u64::from(total))).unwrap_or(u32::MAX)
    }

    /// The serial number of this shard's `k`-th launch of a closed loop from `base`: the
    /// shards' serials interleave, so no two shards ever build the same prompt.
    pub fn serial(self, base: u64, k: u64) -> u64 {
        base + k * u64::from(self.count) + u64::from(self.index)
    }
}

/// The 64-bit FNV-1a hash of `bytes`: stable across builds and machines, for what every shard
/// must derive alike (the seed from the attempt id, the configuration's fingerprint).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`: I from 0, below N; N from 1 to [`MAX_SHARDS`].
    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text:?}: expected I/N, shard I (from 0) of N, e.g. 0/4");
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = index.trim().parse().map_err(|_| bad())?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "--shard {text}: N is the number of shards, 1 to {MAX_SHARDS}"
            ));
        }
        if index >= count {
            return Err(format!(
                "--shard {text}: shards are numbered from 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::schedule::{offsets, Bound, Process};

    fn shard(text: &str) -> Shard {
        text.parse().expect("a shard")
    }

    #[test]
    fn the_thinned_schedules_together_are_the_whole_one_exactly() {
        let whole = offsets(Process::Poisson, 7.0, Bound::Requests(41), 3);
        let mut union: Vec<(usize, std::time::Duration)> = (0..4)
            .flat_map(|i| Shard { index: i, count: 4 }.thin(whole.iter().copied()))
            .collect();
        assert_eq!(union.len(), 41);
        union.sort_by_key(|&(g, _)| g);
        for (g, (index, offset)) in union.into_iter().enumerate() {
            assert_eq!((index, offset), (g, whole[g]));
        }
        // Shard 1 of 4 takes arrivals 1, 5, 9, …; shard 0 the one more of 41.
        let one = shard("1/4").thin(0..41);
        assert_eq!(
            one.iter().map(|&(g, _)| g).take(3).collect::<Vec<_>>(),
            [1, 5, 9]
        );
        assert_eq!((one.len(), shard("0/4").thin(0..41).len()), (10, 11));
        assert_eq!(Shard::WHOLE.thin(0..5).len(), 5);
    }

    #[test]
    fn a_concurrency_is_split_with_the_remainder_to_the_lowest_indices() {
        let shares = |c: u32, n: u32| -> Vec<u32> {
            (0..n)
                .map(|index| Shard { index, count: n }.share_u32(c))
                .collect()
        };
        assert_eq!(shares(5, 4), [2, 1, 1, 1]);
        assert_eq!(shares(8, 4), [2, 2, 2, 2]);
        assert_eq!(shares(3, 4), [1, 1, 1, 0]);
        assert_eq!(shares(7, 1), [7]);
        // A request count splits as the thinned arrivals do.
        for n in [0_u64, 1, 40, 41, 43] {
            for index in 0..4 {
                let s = Shard { index, count: 4 };
                assert_eq!(s.share(n), s.thin(0..n).len() as u64, "{n} {s}");
            }
        }
    }

    #[test]
    fn closed_loop_serials_never_meet() {
        let mut seen = std::collections::BTreeSet::new();
        for index in 0..3 {
            for k in 0..50 {
                assert!(seen.insert(Shard { index, count: 3 }.serial(10, k)));
            }
        }
        assert_eq!(seen.first().copied(), Some(10));
    }

    #[test]
    fn the_flag_is_parsed_with_one_line_errors() {
        assert_eq!(shard("2/4"), Shard { index: 2, count: 4 });
        assert!(shard("0/1").is_whole());
        for (text, says) in [
            ("4/4", "numbered from 0 to 3"),
            ("0/0", "1 to 10000"),
            ("a/4", "expected I/N"),
            ("3", "expected I/N"),
            ("-1/4", "expected I/N"),
        ] {
            let e = text.parse::<Shard>().expect_err(text);
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
    }
}
