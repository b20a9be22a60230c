//! One request's meta and body: its lengths drawn from the seed, its prompt built, its model,
//! images, id and cancellation settled.

use super::{Prepared, Runner};
use crate::api::{Body, GenerationRequest};
use crate::record::{Phase, RequestMeta};
use crate::workload::prompt::splitmix64;
use crate::workload::shape::CasePlan;
use crate::workload::source::Built;
use crate::workload::trace::TraceEntry;
use rand::SeedableRng;
use tokio::time::Instant;

impl Runner<'_> {
    /// A request's meta with lengths drawn for it (from the seed and its serial number).
    pub(super) fn meta(
        &self,
        plan: &CasePlan,
        phase: Phase,
        round: Option<u32>,
        index: u32,
        scheduled: Option<Instant>,
    ) -> RequestMeta {
        // Serial numbers are distinct between streamed requests, indices within a round.
        let key = splitmix64(self.serial).rotate_left(17) ^ u64::from(index);
        let mut rng = rand::rngs::StdRng::seed_from_u64(splitmix64(self.settings.seed ^ key));
        RequestMeta {
            case: plan.case.id.clone(),
            phase,
            round,
            index,
            input_tokens: plan.input.sample(&mut rng),
            output_tokens: plan.output.sample(&mut rng),
            shared_tokens: self.prompts.shared_tokens(),
            template_head: self.prompts.template_head(),
            exact_input: true,
            dataset_entry: None,
            scheduled,
            launched: None,
            turn: None,
            graph: None,
            request_id: None,
            cancel_after: None,
            inputs: plan.case.batch.unwrap_or(0),
            images: plan.case.images.map(crate::record::Images::from),
            model: None,
            canary: None,
        }
    }

    /// A streamed request's meta and body; a trace entry sets its lengths.
    pub(super) async fn prepare(
        &mut self,
        plan: &CasePlan,
        index: u64,
        entry: Option<TraceEntry>,
    ) -> crate::error::Result<Prepared> {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        let mut meta = self.meta(plan, Phase::Measured, None, index, None);
        let mut blocks = Vec::new();
        if let Some(entry) = entry {
            meta.input_tokens = entry.input_tokens;
            meta.output_tokens = entry.output_tokens;
            if !entry.blocks.is_empty() {
                meta.shared_tokens = entry.shared_tokens;
                blocks = entry.blocks;
            }
        }
        let body = self.body(&mut meta, None, &blocks).await?;
        Ok((meta, body))
    }

    /// The request's body; building its prompt may settle its lengths (a dataset's) and its
    /// entry. A trace's `blocks` make a block prompt, which the cache may serve up to its shared
    /// tokens.
    pub(super) async fn body(
        &mut self,
        meta: &mut RequestMeta,
        slot: Option<u32>,
        blocks: &[u64],
    ) -> crate::error::Result<Body> {
        if meta.inputs > 0 {
            return self.pooling_body(meta).await;
        }
        let serial = self.serial;
        self.serial += 1;
        let built = if blocks.is_empty() {
            self.prompts
                .build(self.target, meta.input_tokens, serial, self.settings.seed)
                .await?
        } else {
            Built::exact(self.prompts.block_prompt(
                meta.input_tokens,
                blocks,
                serial,
                self.settings.seed,
            )?)
        };
        meta.exact_input = built.exact;
        meta.dataset_entry = built.entry;
        if let Some(output) = built.output_tokens {
            meta.output_tokens = output;
        }
        if let (Some(mix), None) = (&self.settings.mix, &meta.model) {
            // Warmups go to the models in turn, measured requests to the one drawn for them.
            let model = match meta.phase {
                // A canary prompt always goes to the same model, its reference's.
                Phase::Warmup | Phase::Canary => mix.warmup(meta.index),
                Phase::Measured => mix.pick(self.settings.seed, serial),
            };
            meta.model = Some(model.to_owned());
        }
        let canary_extra = self.extra_for(meta);
        let request = GenerationRequest {
            prompt: &built.prompt,
            output_tokens: meta.output_tokens,
            slot: slot.filter(|_| self.target.endpoint.api == crate::api::Api::Llamacpp),
            model: meta.model.as_deref().or(self.target.model.as_deref()),
            cache_prompt: meta.shared_tokens > 0 || !blocks.is_empty(),
            usage_per_chunk: self.target.reports_usage_per_chunk(),
            extra: canary_extra.as_ref().or(self.settings.extra_body.as_ref()),
        };
        let mut json = self.target.body(&request);
        if let Some(images) = &mut meta.images {
            let spec = crate::workload::image::ImageSpec::from(*images);
            images.tokens = self.prompts.image_tokens(spec);
            let urls = crate::workload::image::urls(spec, self.settings.seed, serial);
            crate::api::openai::attach_images(&mut json, &urls);
        }
        let mut body = Body::from_json(&json);
        body.id = self.settings.ids.as_ref().map(|ids| ids.next());
        meta.request_id = body.id.as_ref().map(|id| id.id.clone());
        if let Some(cancel) = self.settings.cancel {
            if meta.phase == Phase::Measured && cancel.picks(self.settings.seed, serial) {
                meta.cancel_after = Some(cancel.after);
                body.cancel_after = Some(cancel.after);
            }
        }
        Ok(body)
    }
}
