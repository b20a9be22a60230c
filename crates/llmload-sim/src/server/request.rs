//! Generation requests of the three APIs, parsed into one [`Generation`]. Only the fields the
//! simulator acts on are read; anything else a client sends (temperature, …) is ignored, as a
//! real server would accept it.

use serde::Deserialize;

use super::reply::ApiError;
use crate::{Profile, Tokenizer};

/// Which API a request came in on; it decides the wire format of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// llama-server's native `POST /completion`.
    Llama,
    /// `OpenAI` `POST /v1/completions`.
    Completions,
    /// `OpenAI` `POST /v1/chat/completions`.
    Chat,
}

/// A generation request, whatever API it came in on.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is an independent boolean field of the request APIs"
)]
pub(crate) struct Generation {
    /// The API, for the answer's format.
    pub api: Api,
    /// Prompt token ids (chat template included).
    pub prompt: Vec<u32>,
    /// Output tokens asked for; `None` fills the slot's context.
    pub max_tokens: Option<usize>,
    /// Generate `max_tokens` even if the model would stop.
    pub ignore_eos: bool,
    /// No EOS before this many tokens.
    pub min_tokens: usize,
    /// Whether the prefix cache may serve the prompt.
    pub cache_prompt: bool,
    /// A specific slot (`id_slot`), or any.
    pub slot: Option<usize>,
    /// Stream events rather than answer once.
    pub stream: bool,
    /// Add a usage chunk before `[DONE]` (`OpenAI`).
    pub include_usage: bool,
    /// Usage on every token chunk too (vLLM's `continuous_usage_stats`).
    pub continuous_usage: bool,
    /// `chat_template_kwargs.enable_thinking` is `false`: a reasoning model answers at once.
    pub thinking_off: bool,
    /// Put token ids in llama.cpp events.
    pub return_tokens: bool,
    /// The model asked for (`OpenAI` APIs), if named.
    pub model: Option<String>,
    /// Greedy decoding asked for (`temperature` 0): the text is a function of the prompt alone,
    /// as a model's greedy output is.
    pub greedy: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Prompt {
    Text(String),
    Tokens(Vec<u32>),
    Batch(Vec<Prompt>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
struct ContentPart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<ImageUrl>,
}

#[derive(Debug, Deserialize)]
struct ImageUrl {
    url: String,
}

/// Side of the square patches an image is cut into: each patch is one prompt token.
pub(crate) const PATCH: u32 = 28;

/// The prompt tokens of an image part: one per [`PATCH`]-pixel patch (the last row and column
/// of patches may be partial), each an id drawn from the image's bytes so that two images never
/// share a cacheable prefix. Only `data:image/png;base64,` URLs are read (a server here fetches
/// nothing); anything else is a 400.
fn image_tokens(url: &str) -> Result<Vec<u32>, ApiError> {
    use base64::Engine;
    let refused = || {
        ApiError::bad_request("image_url: only data:image/png;base64 URLs of PNG images are read")
    };
    let payload = url
        .strip_prefix("data:image/png;base64,")
        .ok_or_else(refused)?;
    // The signature and the IHDR chunk's width and height: the first 24 bytes.
    let head = payload.get(..32).ok_or_else(refused)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(head)
        .map_err(|_| refused())?;
    if bytes.get(..8) != Some(b"\x89PNG\r\n\x1a\n".as_slice()) || bytes.get(12..16) != Some(b"IHDR")
    {
        return Err(refused());
    }
    let side =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (width, height) = (side(16), side(20));
    let patches = width.div_ceil(PATCH).saturating_mul(height.div_ceil(PATCH));
    if patches == 0 || patches > 1 << 16 {
        return Err(ApiError::bad_request(format!(
            "image_url: an image of {width}×{height} pixels"
        )));
    }
    let seed = crate::tokenizer::token_id(payload.get(..payload.len().min(4096)).unwrap_or(""))
        ^ crate::tokenizer::token_id(
            payload
                .get(payload.len().saturating_sub(256)..)
                .unwrap_or(""),
        );
    Ok((0..patches)
        .map(|k| seed ^ k.wrapping_mul(0x9e37_79b9))
        .collect())
}

#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    role: String,
    #[serde(default)]
    content: Option<MessageContent>,
}

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
    /// vLLM's: usage on every chunk, its completion tokens counting all generated so far.
    #[serde(default)]
    continuous_usage_stats: bool,
}

/// Every field any of the three APIs may carry that the simulator reads.
#[derive(Debug, Deserialize)]
struct Body {
    prompt: Option<Prompt>,
    messages: Option<Vec<Message>>,
    n_predict: Option<i64>,
    max_tokens: Option<i64>,
    max_completion_tokens: Option<i64>,
    #[serde(default)]
    ignore_eos: bool,
    #[serde(default)]
    min_tokens: usize,
    cache_prompt: Option<bool>,
    id_slot: Option<i64>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    return_tokens: bool,
    chat_template_kwargs: Option<serde_json::Value>,
    model: Option<String>,
    temperature: Option<f64>,
}

/// Parses a generation request body of `api`, tokenizing text prompts.
pub(crate) fn parse(
    api: Api,
    bytes: &[u8],
    tokenizer: &Tokenizer,
    profile: &Profile,
) -> Result<Generation, ApiError> {
    let body: Body = serde_json::from_slice(bytes)
        .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))?;
    let prompt = match api {
        Api::Chat => chat_prompt(body.messages.as_deref(), tokenizer, profile)?,
        Api::Llama | Api::Completions => match body.prompt {
            Some(prompt) => prompt_tokens(prompt, tokenizer)?,
            None => return Err(ApiError::bad_request("\"prompt\" is required")),
        },
    };
    let limit = match api {
        Api::Llama => body.n_predict.or(body.max_tokens),
        Api::Completions | Api::Chat => body.max_completion_tokens.or(body.max_tokens),
    };
    let max_tokens = match limit {
        None => None,
        Some(limit) if limit < 0 && api == Api::Llama => None,
        Some(limit) => Some(
            usize::try_from(limit)
                .map_err(|_| ApiError::bad_request(format!("max tokens {limit} is negative")))?,
        ),
    };
    let slot = match body.id_slot {
        None => None,
        Some(slot) if slot < 0 => None,
        Some(slot) => usize::try_from(slot).ok(),
    };
    Ok(Generation {
        api,
        prompt,
        max_tokens,
        ignore_eos: body.ignore_eos,
        min_tokens: body.min_tokens,
        cache_prompt: body.cache_prompt.unwrap_or(true),
        slot,
        stream: body.stream,
        include_usage: body
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
        continuous_usage: body
            .stream_options
            .as_ref()
            .is_some_and(|o| o.continuous_usage_stats),
        thinking_off: body
            .chat_template_kwargs
            .as_ref()
            .is_some_and(|k| k["enable_thinking"] == serde_json::Value::Bool(false)),
        return_tokens: body.return_tokens,
        model: body.model,
        greedy: body.temperature == Some(0.0),
    })
}

fn prompt_tokens(prompt: Prompt, tokenizer: &Tokenizer) -> Result<Vec<u32>, ApiError> {
    match prompt {
        Prompt::Text(text) => Ok(tokenizer.tokenize(&text)),
        Prompt::Tokens(tokens) => Ok(tokens),
        Prompt::Batch(mut prompts) if prompts.len() == 1 => {
            prompt_tokens(prompts.remove(0), tokenizer)
        }
        Prompt::Batch(_) => Err(ApiError::bad_request(
            "batched prompts are not supported: send one prompt per request",
        )),
    }
}

/// Σ tokenize(content) plus the profile's chat template: `chat_tokens_per_message` marker
/// tokens before each message's content and `chat_generation_prompt_tokens` at the end. The
/// markers are fixed ids per role, so equal conversations share a cacheable prefix.
pub(crate) fn chat_prompt(
    messages: Option<&[Message]>,
    tokenizer: &Tokenizer,
    profile: &Profile,
) -> Result<Vec<u32>, ApiError> {
    let messages = messages
        .filter(|messages| !messages.is_empty())
        .ok_or_else(|| ApiError::bad_request("\"messages\" must be a non-empty array"))?;
    let mut prompt = Vec::new();
    for message in messages {
        let marker = crate::tokenizer::token_id(&format!("<|im_start|>{}", message.role));
        let per_message = u32::try_from(profile.chat_tokens_per_message).unwrap_or(u32::MAX);
        prompt.extend((0..per_message).map(|k| marker ^ k));
        match &message.content {
            Some(MessageContent::Text(text)) => prompt.extend(tokenizer.tokenize(text)),
            Some(MessageContent::Parts(parts)) => {
                for part in parts {
                    if let Some(text) = part.text.as_deref() {
                        prompt.extend(tokenizer.tokenize(text));
                    }
                    if let Some(image) = &part.image_url {
                        prompt.extend(image_tokens(&image.url)?);
                    }
                }
            }
            None => {}
        }
    }
    let generation = crate::tokenizer::token_id("<|im_start|>assistant\n");
    let closing = u32::try_from(profile.chat_generation_prompt_tokens).unwrap_or(u32::MAX);
    prompt.extend((0..closing).map(|k| generation ^ k));
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_json(api: Api, json: &str) -> Result<Generation, ApiError> {
        let profile = Profile::builtin("cpu-tiny").expect("built in");
        parse(api, json.as_bytes(), &Tokenizer::new(), &profile)
    }

    #[test]
    fn llama_fields() {
        let generation = parse_json(
            Api::Llama,
            r#"{"prompt":[1,2,3],"n_predict":5,"ignore_eos":true,"cache_prompt":false,
                "id_slot":1,"stream":true,"return_tokens":true,"temperature":0.1}"#,
        )
        .expect("valid");
        assert_eq!(generation.prompt, [1, 2, 3]);
        assert_eq!(generation.max_tokens, Some(5));
        assert!(generation.ignore_eos && !generation.cache_prompt && generation.stream);
        assert_eq!(generation.slot, Some(1));
        let defaults = parse_json(
            Api::Llama,
            r#"{"prompt":"a b","n_predict":-1,"id_slot":-1}"#,
        )
        .expect("valid");
        assert_eq!(defaults.prompt.len(), 2);
        assert_eq!((defaults.max_tokens, defaults.slot), (None, None));
        assert!(defaults.cache_prompt);
    }

    #[test]
    fn openai_fields_and_chat_template() {
        let generation = parse_json(
            Api::Completions,
            r#"{"model":"m","prompt":["one two"],"max_tokens":7,"min_tokens":7,
                "stream":true,"stream_options":{"include_usage":true}}"#,
        )
        .expect("valid");
        assert_eq!(generation.prompt.len(), 2);
        assert_eq!((generation.max_tokens, generation.min_tokens), (Some(7), 7));
        assert!(generation.include_usage);
        let chat = parse_json(
            Api::Chat,
            r#"{"messages":[{"role":"system","content":"be brief"},
                {"role":"user","content":[{"type":"text","text":"hi there"}]}]}"#,
        )
        .expect("valid");
        // 2 + 2 content tokens, 4 per message, 3 for the generation prompt.
        assert_eq!(chat.prompt.len(), 4 + 2 * 4 + 3);
    }

    #[test]
    fn bad_bodies_are_400() {
        for (api, json) in [
            (Api::Llama, "{"),
            (Api::Llama, r#"{"n_predict":3}"#),
            (Api::Completions, r#"{"prompt":["a","b"]}"#),
            (Api::Completions, r#"{"prompt":"a","max_tokens":-1}"#),
            (Api::Chat, r#"{"messages":[]}"#),
        ] {
            let error = parse_json(api, json).expect_err(json);
            assert_eq!(error.status, hyper::StatusCode::BAD_REQUEST, "{json}");
        }
    }
}
