//! `--canaries N`: N fixed prompts decoded greedily, each sent alone once before the first
//! load for its reference output, then in canary rounds after each case's measured rounds, each
//! with the case's load (its concurrency less one other requests) beside it.
//! A canary is a record of phase `canary`, compared with its reference as it ends
//! ([`crate::record::canary::compare`]) and in no figure of the load.

use super::Runner;
use crate::api::client::Exchange;
use crate::api::{Api, Body};
use crate::config::canaries::Canaries;
use crate::record::canary::{self, Canary};
use crate::record::{Phase, Record, RequestMeta, Status};
use crate::summary::window::CaseRun;
use crate::workload::shape::CasePlan;

/// Canary rounds of each prompt per case: twice, so that a prompt that diverges can be seen to
/// diverge the same way again, or not.
const ROUNDS_PER_PROMPT: u32 = 2;

/// Serial numbers of the canary prompts: far from the load's, the same in every case.
const SERIAL_BASE: u64 = 1 << 40;

/// `canary` with the output `exchange` kept (within the client's bound on a stream's text).
pub(super) fn with_output(canary: &mut Canary, exchange: &Exchange) {
    exchange
        .answer
        .as_deref()
        .unwrap_or_default()
        .clone_into(&mut canary.text);
    canary.ends.clone_from(&exchange.answer_ends);
}

/// The sampling fields of a canary's body: greedy decoding, and a fixed seed where the API
/// takes one; merged over `--extra-body`.
fn greedy(extra: Option<&serde_json::Value>, api: Api) -> serde_json::Value {
    let mut body = match extra {
        Some(serde_json::Value::Object(fields)) => fields.clone(),
        _ => serde_json::Map::new(),
    };
    body.insert("temperature".into(), 0.into());
    if matches!(api, Api::Completions | Api::Chat | Api::Llamacpp) {
        body.insert("seed".into(), 0.into());
    }
    serde_json::Value::Object(body)
}

impl Runner<'_> {
    /// The body's extra fields: a canary's greedy ones, else (`None`) `--extra-body`.
    pub(super) fn extra_for(&self, meta: &RequestMeta) -> Option<serde_json::Value> {
        meta.canary
            .is_some()
            .then(|| greedy(self.settings.extra_body.as_ref(), self.target.endpoint.api))
    }

    /// Sends each canary prompt alone, once, for its reference (before the first load with
    /// canaries; nothing when they are sent already or the run has none).
    pub(super) async fn canary_references(
        &mut self,
        plan: &CasePlan,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let Some(settings) = self.settings.canaries else {
            return Ok(());
        };
        if !self.canary_references.is_empty() {
            return Ok(());
        }
        self.canary_references = vec![None; settings.count as usize];
        for prompt in 0..settings.count {
            let at = format!("before reference canary {}", prompt + 1);
            if self.guard.process_check(&at) {
                break;
            }
            let canary = self.canary(plan, settings, prompt, (None, 0)).await?;
            self.launch(Vec::new(), Some(canary), run).await?;
        }
        Ok(())
    }

    /// The case's canary rounds, after its measured rounds or its continuous loop: each prompt
    /// twice (the prompts in
    /// turn), each canary with the case's concurrency less one requests of load beside it, so
    /// that the server runs the case's load with the canary in it. The load beside a canary is
    /// of phase `canary` too, and in no figure; the measured rounds have no canary in them.
    pub(super) async fn canary_rounds(
        &mut self,
        plan: &CasePlan,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let Some(settings) = self.settings.canaries else {
            return Ok(());
        };
        // A continuous loop's first case sends the references after its loop (alone still).
        self.canary_references(plan, run).await?;
        let beside = plan.case.concurrency.saturating_sub(1);
        for k in 0..settings.count * ROUNDS_PER_PROMPT {
            let at = format!("before canary round {} of case {}", k + 1, plan.case.id);
            if self.guard.process_check(&at) {
                run.stopped = true;
                return Ok(());
            }
            let load = (0..beside)
                .map(|index| {
                    (
                        self.meta(plan, Phase::Canary, Some(k + 1), index, None),
                        None,
                    )
                })
                .collect();
            let canary = self
                .canary(plan, settings, k % settings.count, (Some(k + 1), beside))
                .await?;
            self.launch(load, Some(canary), run).await?;
        }
        Ok(())
    }

    /// Canary `prompt`'s request in `round` with `beside` others: a reference when `round` is
    /// `None`.
    async fn canary(
        &mut self,
        plan: &CasePlan,
        settings: Canaries,
        prompt: u32,
        (round, beside): (Option<u32>, u32),
    ) -> crate::error::Result<(RequestMeta, Body)> {
        let mut meta = self.meta(plan, Phase::Canary, round, prompt, None);
        meta.input_tokens = settings.input_tokens;
        meta.output_tokens = settings.output_tokens;
        meta.images = None;
        meta.canary = Some(Box::new(Canary {
            prompt,
            reference: round.is_none(),
            beside,
            ..Canary::default()
        }));
        // The prompt's own serial number, so that the same prompt is built every time.
        let serial = self.serial;
        self.serial = SERIAL_BASE + u64::from(prompt);
        let body = self.body(&mut meta, None, &[]).await;
        self.serial = serial;
        let mut body = body?;
        body.keep_answer = true;
        Ok((meta, body))
    }

    /// A canary record as it ends: a complete reference is kept, any other canary compared
    /// with its prompt's reference.
    pub(super) fn judge_canary(&mut self, record: &mut Record) {
        let Some(canary) = record.canary.as_deref_mut() else {
            return;
        };
        let slot = self.canary_references.get_mut(canary.prompt as usize);
        let ok = record.status == Status::Ok;
        match slot {
            Some(slot) if canary.reference && ok => *slot = Some(canary.clone()),
            Some(Some(reference)) if !canary.reference && ok => {
                canary.compared = Some(canary::compare(reference, canary));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canary_decodes_greedily_over_the_extra_body() {
        let extra = serde_json::json!({"temperature": 0.8, "top_k": 5});
        let body = greedy(Some(&extra), Api::Chat);
        assert_eq!(
            body,
            serde_json::json!({"temperature": 0, "top_k": 5, "seed": 0})
        );
        // The Anthropic and Responses APIs take no seed.
        assert_eq!(
            greedy(None, Api::Messages),
            serde_json::json!({"temperature": 0})
        );
    }
}
