//! The engine model: a pure state machine of slots, a FIFO waiting queue, KV capacity, continuous
//! batching and an optional prefix cache. It knows nothing of HTTP or the wall clock: each
//! [`Engine::step`] says how long the step takes in modelled milliseconds and what it produced,
//! and the caller (the async driver, or [`Simulation`] on a virtual clock) decides when that is.
//!
//! One step works like llama-server's update loop: waiting requests are admitted to free slots
//! (FIFO; a request waits while its prompt + output would not fit in the free KV capacity), every
//! decoding sequence puts one token into the batch, then prompt tokens fill the rest of the
//! `prefill_chunk_tokens` budget slot by slot, so a long prompt spills into later steps (and
//! when decode tokens alone fill the budget, prompts wait, as in llama.cpp). A sequence's first
//! token is produced by the step that evaluates its last prompt token. KV capacity is reserved
//! for prompt + requested output at admission and freed when the sequence ends or is cancelled.

mod campaign;
mod cost;
mod prefix_cache;
mod simulation;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub use campaign::{run_closed_rounds, CaseFigures, ClosedRounds};
pub use cost::CostModel;
pub use simulation::{Simulation, Timeline};

use crate::Profile;
use prefix_cache::{block_hashes, PrefixCache};

/// Identifies a sequence to the engine's caller.
pub type SequenceId = u64;

/// Why a sequence stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It produced the tokens it was asked for.
    Limit,
    /// The model emitted an end-of-sequence token first.
    Eos,
}

/// A generation request as the engine sees it.
#[derive(Debug, Clone)]
pub struct SequenceRequest {
    /// Prompt token ids (hashed into blocks for the prefix cache).
    pub prompt: Vec<u32>,
    /// Output tokens asked for.
    pub max_tokens: usize,
    /// The model emits EOS after this many tokens, if that comes before `max_tokens`.
    pub eos_after: Option<usize>,
    /// Whether the prefix cache may serve this prompt.
    pub cache_prompt: bool,
    /// A specific slot to run in (`id_slot`), or any.
    pub slot: Option<usize>,
    /// The LoRA adapter it runs with (an index into the profile's), or the model alone. Its
    /// decode steps cost more, and its prompt's blocks are cached apart from the model's.
    pub adapter: Option<usize>,
}

/// Why the engine refuses a request outright (an HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The prompt has no tokens.
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// Prompt + output does not fit in one slot's context.
    #[error(
        "the request exceeds the available context size: prompt {prompt_tokens} + \
         output {output_tokens} tokens > {slot_context_tokens} tokens per slot"
    )]
    ContextExceeded {
        /// Prompt tokens.
        prompt_tokens: usize,
        /// Output tokens asked for.
        output_tokens: usize,
        /// Context of one slot.
        slot_context_tokens: usize,
    },
    /// `id_slot` names a slot that does not exist.
    #[error("id_slot {slot} does not exist: the server has {slots} slots")]
    NoSuchSlot {
        /// The slot asked for.
        slot: usize,
        /// Slots the server has.
        slots: usize,
    },
}

/// How a sequence ended, with llama.cpp-style timings in modelled milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finish {
    /// Why it stopped.
    pub stop: StopReason,
    /// From the first prefill step's start to the first token.
    pub prompt_ms: f64,
    /// From the first token to the last.
    pub predicted_ms: f64,
}

/// What one step did to one sequence: produced a token, finished, or both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequenceUpdate {
    /// The sequence.
    pub id: SequenceId,
    /// Its slot.
    pub slot: usize,
    /// Prompt tokens served by the prefix cache.
    pub cached_tokens: usize,
    /// Tokens generated so far.
    pub generated: usize,
    /// Set when the sequence ended in this step.
    pub finish: Option<Finish>,
}

#[derive(Debug)]
struct Sequence {
    id: SequenceId,
    prompt_len: usize,
    blocks: Vec<u64>,
    stop_at: usize,
    stop: StopReason,
    adapter: bool,
    requested_slot: Option<usize>,
    reserved_tokens: usize,
    evaluated: usize,
    cached: usize,
    generated: usize,
    decodes_now: bool,
    prefill_start_ms: Option<f64>,
    first_token_ms: f64,
}

/// A prompt's block hashes as the cache keys them: an adapter's apart from the model's and from
/// every other adapter's (its key changes every block hash alike, so prefixes still chain).
fn adapter_blocks(blocks: Vec<u64>, adapter: Option<usize>) -> Vec<u64> {
    let Some(adapter) = adapter else {
        return blocks;
    };
    let key = (adapter as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    blocks.into_iter().map(|h| h ^ key).collect()
}

/// Whether a request fits an engine of `slots` slots of `slot_context_tokens` tokens.
pub fn check_request(
    slots: usize,
    slot_context_tokens: usize,
    prompt_tokens: usize,
    output_tokens: usize,
    slot: Option<usize>,
) -> Result<(), Rejection> {
    if prompt_tokens == 0 {
        return Err(Rejection::EmptyPrompt);
    }
    if prompt_tokens.saturating_add(output_tokens) > slot_context_tokens {
        return Err(Rejection::ContextExceeded {
            prompt_tokens,
            output_tokens,
            slot_context_tokens,
        });
    }
    match slot {
        Some(slot) if slot >= slots => Err(Rejection::NoSuchSlot { slot, slots }),
        _ => Ok(()),
    }
}

/// The engine state machine.
#[derive(Debug)]
pub struct Engine {
    cost: CostModel,
    chunk_tokens: usize,
    slot_context_tokens: usize,
    kv_capacity_tokens: usize,
    block_tokens: usize,
    jitter: f64,
    cache: Option<PrefixCache>,
    slots: Vec<Option<Sequence>>,
    waiting: VecDeque<Sequence>,
    kv_used_tokens: usize,
    clock_ms: f64,
    rng: StdRng,
    prompt_tokens_total: u64,
    predicted_tokens_total: u64,
}

impl Engine {
    /// An idle engine for a (validated) profile; `seed` drives the jitter.
    pub fn new(profile: &Profile, seed: u64) -> Self {
        Self {
            cost: CostModel::from_profile(profile),
            chunk_tokens: profile.prefill_chunk_tokens,
            slot_context_tokens: profile.slot_context_tokens,
            kv_capacity_tokens: profile.kv_capacity(),
            block_tokens: profile.block_tokens,
            jitter: profile.jitter,
            cache: profile
                .prefix_cache
                .then(|| PrefixCache::new(profile.cache_capacity())),
            slots: (0..profile.slots).map(|_| None).collect(),
            waiting: VecDeque::new(),
            kv_used_tokens: 0,
            clock_ms: 0.0,
            rng: StdRng::seed_from_u64(seed),
            prompt_tokens_total: 0,
            predicted_tokens_total: 0,
        }
    }

    /// Whether a request of this shape can ever run here.
    pub fn check(
        &self,
        prompt_tokens: usize,
        output_tokens: usize,
        slot: Option<usize>,
    ) -> Result<(), Rejection> {
        check_request(
            self.slots.len(),
            self.slot_context_tokens,
            prompt_tokens,
            output_tokens,
            slot,
        )
    }

    /// Queues a request; it is admitted at the start of the next step that has room.
    pub fn submit(&mut self, id: SequenceId, request: &SequenceRequest) -> Result<(), Rejection> {
        let prompt_len = request.prompt.len();
        self.check(prompt_len, request.max_tokens, request.slot)?;
        let caching = self.cache.is_some() && request.cache_prompt;
        let (stop_at, stop) = match request.eos_after {
            Some(eos) if eos < request.max_tokens => (eos, StopReason::Eos),
            _ => (request.max_tokens, StopReason::Limit),
        };
        self.waiting.push_back(Sequence {
            id,
            prompt_len,
            blocks: if caching {
                adapter_blocks(
                    block_hashes(&request.prompt, self.block_tokens),
                    request.adapter,
                )
            } else {
                Vec::new()
            },
            stop_at,
            stop,
            adapter: request.adapter.is_some(),
            requested_slot: request.slot,
            reserved_tokens: prompt_len + request.max_tokens,
            evaluated: 0,
            cached: 0,
            generated: 0,
            decodes_now: false,
            prefill_start_ms: None,
            first_token_ms: 0.0,
        });
        Ok(())
    }

    /// Drops a sequence (its client went away), freeing its slot and KV. False if unknown.
    pub fn cancel(&mut self, id: SequenceId) -> bool {
        if let Some(position) = self.waiting.iter().position(|seq| seq.id == id) {
            self.waiting.remove(position);
            return true;
        }
        let running = self
            .slots
            .iter_mut()
            .find(|entry| entry.as_ref().is_some_and(|seq| seq.id == id));
        match running.and_then(Option::take) {
            Some(seq) => {
                self.kv_used_tokens -= seq.reserved_tokens;
                true
            }
            None => false,
        }
    }

    /// Runs one step: admits what fits, batches decode and prefill, and reports into `updates`
    /// what the step produced. Returns the step's modelled duration, or `None` when idle.
    pub fn step(&mut self, updates: &mut Vec<SequenceUpdate>) -> Option<f64> {
        updates.clear();
        self.admit();
        if self.slots.iter().all(Option::is_none) {
            return None;
        }
        let start_ms = self.clock_ms;
        let mut duration_ms = self.batch(start_ms);
        if self.jitter > 0.0 {
            let spread = self.rng.random::<f64>() * 2.0 - 1.0;
            duration_ms *= 1.0 + self.jitter * spread;
        }
        self.clock_ms = start_ms + duration_ms;
        self.produce(updates);
        Some(duration_ms)
    }

    /// Moves waiting requests into free slots in FIFO order while KV capacity allows. `step`
    /// does this first; calling it earlier only makes the gauges show the coming batch.
    pub fn admit(&mut self) {
        let mut index = 0;
        while let Some(seq) = self.waiting.get(index) {
            let slot = match seq.requested_slot {
                Some(slot) => (self.slots[slot].is_none()).then_some(slot),
                None => self.slots.iter().position(Option::is_none),
            };
            let Some(slot) = slot else {
                if seq.requested_slot.is_some() {
                    index += 1;
                    continue;
                }
                break;
            };
            if self.kv_used_tokens + seq.reserved_tokens > self.kv_capacity_tokens {
                break;
            }
            // Cannot miss: `get` just found it.
            let Some(mut seq) = self.waiting.remove(index) else {
                break;
            };
            if let Some(cache) = self.cache.as_mut().filter(|_| !seq.blocks.is_empty()) {
                let hits = cache.longest_prefix(&seq.blocks);
                // At least one prompt token is evaluated to produce the first token's logits.
                seq.cached = (hits * self.block_tokens).min(seq.prompt_len - 1);
                seq.evaluated = seq.cached;
            }
            self.kv_used_tokens += seq.reserved_tokens;
            self.slots[slot] = Some(seq);
        }
    }

    /// Builds the batch (decode tokens first, then prompt chunks slot by slot) and returns its
    /// cost before jitter.
    fn batch(&mut self, start_ms: f64) -> f64 {
        let (mut decoding, mut context, mut adapted) = (0, 0, 0);
        for seq in self.slots.iter_mut().flatten() {
            seq.decodes_now = seq.evaluated == seq.prompt_len;
            if seq.decodes_now {
                decoding += 1;
                context += seq.prompt_len + seq.generated;
                adapted += usize::from(seq.adapter);
            }
        }
        let mut cost = self.cost.step_overhead_ms
            + self.cost.decode_ms(decoding, context)
            + self.cost.adapter_ms(adapted);
        let mut budget = self.chunk_tokens.saturating_sub(decoding);
        for seq in self.slots.iter_mut().flatten() {
            if seq.decodes_now || budget == 0 {
                continue;
            }
            let tokens = (seq.prompt_len - seq.evaluated).min(budget);
            cost += self.cost.prefill_ms(tokens, seq.evaluated);
            seq.prefill_start_ms.get_or_insert(start_ms);
            seq.evaluated += tokens;
            budget -= tokens;
            self.prompt_tokens_total += tokens as u64;
        }
        cost
    }

    /// Hands out the step's tokens, finishes sequences and frees their slots.
    fn produce(&mut self, updates: &mut Vec<SequenceUpdate>) {
        let now_ms = self.clock_ms;
        for (slot, entry) in self.slots.iter_mut().enumerate() {
            let Some(seq) = entry else { continue };
            if seq.decodes_now {
                seq.generated += 1;
            } else if seq.evaluated == seq.prompt_len {
                seq.first_token_ms = now_ms;
                if let Some(cache) = self.cache.as_mut() {
                    cache.insert(&seq.blocks);
                }
                seq.generated = usize::from(seq.stop_at > 0);
            } else {
                continue;
            }
            self.predicted_tokens_total += u64::from(seq.generated > 0);
            let finish = (seq.generated >= seq.stop_at).then(|| Finish {
                stop: seq.stop,
                prompt_ms: seq.first_token_ms - seq.prefill_start_ms.unwrap_or(now_ms),
                predicted_ms: now_ms - seq.first_token_ms,
            });
            updates.push(SequenceUpdate {
                id: seq.id,
                slot,
                cached_tokens: seq.cached,
                generated: seq.generated,
                finish,
            });
            if finish.is_some() {
                self.kv_used_tokens -= seq.reserved_tokens;
                *entry = None;
            }
        }
    }

    /// True when nothing runs and nothing waits.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.slots.iter().all(Option::is_none)
    }

    /// Number of slots.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Whether slot `slot` holds a sequence.
    pub fn slot_busy(&self, slot: usize) -> bool {
        self.slots.get(slot).is_some_and(Option::is_some)
    }

    /// Sequences in slots.
    pub fn running(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Requests waiting for a slot or for KV capacity.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Context of one slot in tokens.
    pub fn slot_context_tokens(&self) -> usize {
        self.slot_context_tokens
    }

    /// Fraction of the KV capacity reserved by running sequences.
    pub fn kv_usage_ratio(&self) -> f64 {
        self.kv_used_tokens as f64 / self.kv_capacity_tokens as f64
    }

    /// Prompt tokens evaluated so far (cached tokens excluded).
    pub fn prompt_tokens_total(&self) -> u64 {
        self.prompt_tokens_total
    }

    /// Tokens generated so far.
    pub fn predicted_tokens_total(&self) -> u64 {
        self.predicted_tokens_total
    }
}
