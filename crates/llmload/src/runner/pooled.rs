//! Embeddings and rerank requests (`--api embeddings`, `--api rerank`): a batch of inputs per
//! request, each its own prompt of the case's length.

use super::Runner;
use crate::api::Body;
use crate::record::RequestMeta;

impl Runner<'_> {
    /// An embeddings or rerank request's body: `meta.inputs` prompts of `meta.input_tokens`
    /// each, every one its own (a serial number each).
    pub(super) async fn pooling_body(
        &mut self,
        meta: &mut RequestMeta,
    ) -> crate::error::Result<Body> {
        let mut inputs = Vec::with_capacity(meta.inputs as usize);
        for _ in 0..meta.inputs {
            let serial = self.serial;
            self.serial += 1;
            let built = self
                .prompts
                .build(self.target, meta.input_tokens, serial, self.settings.seed)
                .await?;
            inputs.push(built.prompt);
        }
        let api = self.target.endpoint.api;
        let request = crate::api::pooling::PoolingRequest {
            inputs: &inputs,
            model: self.target.model.as_deref(),
        };
        let json = api
            .pooling_body(&request, self.settings.extra_body.as_ref())
            .unwrap_or_default();
        let mut body = Body::pooling(&json, meta.inputs);
        body.id = self.settings.ids.as_ref().map(|ids| ids.next());
        meta.request_id = body.id.as_ref().map(|id| id.id.clone());
        Ok(body)
    }
}
