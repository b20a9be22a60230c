//! One generation request as the runner asks for it, before an API makes it a body.

use super::Prompt;

/// One generation request, before it becomes a body.
#[derive(Clone, Copy, Debug)]
pub struct GenerationRequest<'a> {
    /// The prompt.
    pub prompt: &'a Prompt,
    /// Tokens to generate; end-of-sequence is ignored so that exactly this many come.
    pub output_tokens: u32,
    /// llama.cpp slot to run on (the warmup uses slot 0); `None` lets the server choose.
    pub slot: Option<u32>,
    /// Model name for `OpenAI` APIs.
    pub model: Option<&'a str>,
    /// Let the server reuse cached prompt tokens (only with a shared system prompt: the nonce
    /// after it keeps the rest of the prompt uncacheable).
    pub cache_prompt: bool,
    /// Ask for usage on every chunk (`stream_options.continuous_usage_stats`), so that chunks
    /// carrying several tokens are counted exactly; only for servers known to accept it.
    pub usage_per_chunk: bool,
    /// Fields merged into the body (`--extra-body`): objects merge key by key, anything else
    /// replaces.
    pub extra: Option<&'a serde_json::Value>,
}

/// A request for tests: `prompt`, 8 output tokens, model `m`, nothing else asked.
#[cfg(test)]
pub(crate) fn test_request(prompt: &Prompt) -> GenerationRequest<'_> {
    GenerationRequest {
        prompt,
        output_tokens: 8,
        slot: None,
        model: Some("m"),
        cache_prompt: false,
        usage_per_chunk: false,
        extra: None,
    }
}
