//! Short responses, judged by their case. A best-effort response that got a quarter or less of
//! the output it asked for is *far short* ([`crate::record::far_short`]): that much its record can
//! say the moment it is written. Whether it is *short* (a stream the server cut, counted apart and
//! in no figure) or the server's own early end (a server that cannot be told to ignore its end
//! of sequence stops every response early) only its peers can say: the case's other `ok`
//! responses. The far-short responses are short when the mean share of the asked output they got
//! is at most a quarter of their peers' ([`FAR_SHORT`](crate::record::FAR_SHORT)); without peers,
//! or where the peers got no more, nothing says they were cut, and they stay `ok`, unverified.
//!
//! The case decides when it ends. Until then every accumulator that a far-short response would
//! enter is kept two ways ([`Judged`]): as the records say (the response `ok`), and as if the case
//! counted it short. The second copy is made at the first far-short response, so a case without
//! one pays nothing.

use crate::record::{Record, Status, FAR_SHORT};
use serde::{Deserialize, Serialize};

/// The share of the asked output a far-short response got, when `r` is one: an `ok` response
/// (or one an earlier version recorded `short`) with a quarter or less of its asked output.
pub fn far_short_share(r: &Record) -> Option<f64> {
    let generated = r.generated_tokens();
    let asked = r.requested_output_tokens;
    (matches!(r.status, Status::Ok | Status::Short) && crate::record::far_short(generated, asked))
        .then(|| f64::from(generated) / f64::from(asked))
}

/// The far-short responses of a case and their peers, gathered one measured record at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shortfall {
    far: u32,
    far_share: f64,
    peers: u32,
    peers_share: f64,
}

impl Shortfall {
    /// Adds a measured record; whether it is far short.
    pub fn add(&mut self, r: &Record) -> bool {
        if let Some(share) = far_short_share(r) {
            self.far += 1;
            self.far_share += share;
            return true;
        }
        if r.status == Status::Ok && r.requested_output_tokens > 0 {
            self.peers += 1;
            self.peers_share +=
                f64::from(r.generated_tokens()) / f64::from(r.requested_output_tokens);
        }
        false
    }

    /// Whether the case counts its far-short responses short: there are some, and their mean
    /// share of the asked output is at most a quarter of their peers'.
    pub fn short(&self) -> bool {
        self.far > 0
            && self.peers > 0
            && f64::from(FAR_SHORT) * self.far_share / f64::from(self.far)
                <= self.peers_share / f64::from(self.peers)
    }

    /// What the case says of its far-short responses; absent when there were none.
    pub fn finish(&self) -> Option<FarShort> {
        (self.far > 0).then(|| FarShort {
            responses: self.far,
            share: self.far_share / f64::from(self.far),
            peers: self.peers,
            peers_share: (self.peers > 0).then(|| self.peers_share / f64::from(self.peers)),
            short: self.short(),
        })
    }
}

/// A case's far-short responses: how short they and their peers were, and whether the case
/// counted them short (`summary.json`'s `far_short`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FarShort {
    /// Responses that got a quarter or less of the output they asked for.
    pub responses: u32,
    /// The mean share of the asked output they got.
    pub share: f64,
    /// The case's other `ok` responses.
    pub peers: u32,
    /// The mean share of the asked output those got; absent without peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers_share: Option<f64>,
    /// The case counted them short: counted apart, in no figure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short: bool,
}

impl FarShort {
    /// One sentence for case `id`: how short, against whom, and what the case made of it.
    pub fn sentence(&self, id: &str) -> String {
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        let n = self.responses;
        let them = if n == 1 {
            "response got"
        } else {
            "responses got"
        };
        let head = format!(
            "{id}: {n} {them} a quarter or less of the output asked for ({} on average)",
            pct(self.share)
        );
        match self.peers_share {
            Some(peers) if self.short => format!(
                "{head} against {} for the other {}: cut short, so counted apart (short) and \
                 in no figure, and the case is incomplete.",
                pct(peers),
                self.peers
            ),
            Some(peers) => format!(
                "{head}, and the other {} not four times as much ({}): the server ends its \
                 responses early (at its end of sequence), so they are ok, unverified, in every \
                 figure.",
                self.peers,
                pct(peers)
            ),
            None => format!(
                "{head}, and no other response got more: nothing says they were cut, so they \
                 are ok, unverified, in every figure."
            ),
        }
    }
}

/// An accumulator of a case kept two ways until the case says whether its far-short responses
/// are short: as the records say, and (from the first far-short response on) as if they were.
#[derive(Debug, Default)]
pub struct Judged<T> {
    kept: T,
    cut: Option<T>,
    shortfall: Shortfall,
}

impl<T: Clone> Judged<T> {
    /// An accumulator that has seen nothing yet.
    pub fn new(first: T) -> Judged<T> {
        Judged {
            kept: first,
            cut: None,
            shortfall: Shortfall::default(),
        }
    }

    /// Adds `r` through `add`: to both copies as it is, a far-short one `ok` to the first and
    /// `short` to the second. Only measured records count toward the case's decision.
    pub fn add(&mut self, r: &Record, mut add: impl FnMut(&mut T, &Record)) {
        let far = if r.phase == crate::record::Phase::Measured {
            self.shortfall.add(r)
        } else {
            far_short_share(r).is_some()
        };
        if !far {
            add(&mut self.kept, r);
            if let Some(cut) = &mut self.cut {
                add(cut, r);
            }
            return;
        }
        let cut = self.cut.get_or_insert_with(|| self.kept.clone());
        let mut as_short = r.clone();
        as_short.status = Status::Short;
        add(cut, &as_short);
        if r.status == Status::Ok {
            add(&mut self.kept, r);
        } else {
            as_short.status = Status::Ok;
            add(&mut self.kept, &as_short);
        }
    }

    /// Applies `f` to both copies (what every record shares: a launch, a settled instant).
    pub fn each(&mut self, mut f: impl FnMut(&mut T)) {
        f(&mut self.kept);
        if let Some(cut) = &mut self.cut {
            f(cut);
        }
    }

    /// Whether the case so far counts its far-short responses short.
    pub fn short(&self) -> bool {
        self.shortfall.short()
    }

    /// The copy the case's decision so far picks.
    pub fn get(&self) -> &T {
        match &self.cut {
            Some(cut) if self.short() => cut,
            _ => &self.kept,
        }
    }

    /// The copy the case's decision picks, and what it says of its far-short responses.
    pub fn finish(self) -> (T, Option<FarShort>) {
        let judged = self.shortfall.finish();
        let chosen = match self.cut {
            Some(cut) if self.shortfall.short() => cut,
            _ => self.kept,
        };
        (chosen, judged)
    }
}

#[cfg(test)]
mod tests;
