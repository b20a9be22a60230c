//! The pooling endpoints, answered once: `POST /v1/embeddings` (`OpenAI`'s body, as llama-server
//! and vLLM serve it) and `POST /v1/rerank` (a query and its documents, the Jina/Cohere body).
//!
//! Cost model: each input is a sequence that is prefilled and generates nothing (a pooling pass
//! is a prefill whose last hidden states are pooled), so it takes a slot and the engine's
//! prefill budget like any prompt, batched with the other sequences; the answer leaves when the
//! request's last input has been evaluated. A rerank input is the pair the server scores, as
//! llama-server forms it: BOS, the query's tokens, the document's. The counts come back as
//! llama-server writes them: `usage.prompt_tokens` and `usage.total_tokens`, the sum over the
//! inputs.

use std::sync::Arc;

use bytes::Bytes;
use hyper::StatusCode;
use serde::Deserialize;

use super::generate::Outcome;
use super::reply::{bytes_response, json_response, ApiError};
use super::State;
use crate::engine::SequenceRequest;
use crate::fault::FaultPlan;
use crate::tokenizer::token_id;
use crate::Schedule;
use tokio::time::Instant;

/// The length of every embedding the simulator returns.
pub(crate) const DIMENSION: usize = 64;

/// Which pooling endpoint a request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// `/v1/embeddings`: a vector per input.
    Embeddings,
    /// `/v1/rerank`: a score per document.
    Rerank,
}

/// The pooling endpoint at `path`, if it is one.
pub(crate) fn route(path: &str) -> Option<Pooling> {
    match path {
        "/v1/embeddings" | "/embeddings" => Some(Pooling::Embeddings),
        "/v1/rerank" | "/rerank" | "/v2/rerank" => Some(Pooling::Rerank),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    Text(String),
    Tokens(Vec<u32>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Inputs {
    One(Input),
    Many(Vec<Input>),
}

#[derive(Deserialize)]
struct EmbeddingsBody {
    input: Option<Inputs>,
}

#[derive(Deserialize)]
struct RerankBody {
    query: Option<String>,
    documents: Option<Vec<String>>,
    top_n: Option<usize>,
}

/// The inputs of a request, each as the tokens the engine evaluates, and a rerank's `top_n`.
fn parse(
    kind: Pooling,
    body: &[u8],
    tokenizer: &crate::Tokenizer,
) -> Result<(Vec<Vec<u32>>, Option<usize>), ApiError> {
    let invalid = |e: serde_json::Error| ApiError::bad_request(format!("invalid JSON body: {e}"));
    let tokens = |input: Input| match input {
        Input::Text(text) => tokenizer.tokenize(&text),
        Input::Tokens(tokens) => tokens,
    };
    match kind {
        Pooling::Embeddings => {
            let body: EmbeddingsBody = serde_json::from_slice(body).map_err(invalid)?;
            let inputs = match body.input {
                Some(Inputs::One(input)) => vec![tokens(input)],
                // A flat array of numbers is one input of token IDs.
                Some(Inputs::Many(inputs)) => inputs.into_iter().map(tokens).collect(),
                None => return Err(ApiError::bad_request("\"input\" is required")),
            };
            Ok((inputs, None))
        }
        Pooling::Rerank => {
            let body: RerankBody = serde_json::from_slice(body).map_err(invalid)?;
            let (Some(query), Some(documents)) = (body.query, body.documents) else {
                return Err(ApiError::bad_request(
                    "\"query\" and \"documents\" are required",
                ));
            };
            let query = tokenizer.tokenize(&query);
            let bos = token_id("<bos>");
            let pairs = documents
                .iter()
                .map(|d| {
                    let mut pair = vec![bos];
                    pair.extend(&query);
                    pair.extend(tokenizer.tokenize(d));
                    pair
                })
                .collect();
            Ok((pairs, body.top_n))
        }
    }
}

/// Answers one pooling request whose last byte arrived at `arrived`.
pub(crate) async fn answer(
    state: &Arc<State>,
    kind: Pooling,
    body: &Bytes,
    arrived: Instant,
) -> Outcome {
    match run(state, kind, body, arrived).await {
        Ok(outcome) => outcome,
        Err(error) => Outcome::Respond(error.into_response()),
    }
}

async fn run(
    state: &Arc<State>,
    kind: Pooling,
    body: &Bytes,
    arrived: Instant,
) -> Result<Outcome, ApiError> {
    let (serial, kinds) = state.faults.next();
    let (inputs, top_n) = parse(kind, body, &state.tokenizer)?;
    if inputs.is_empty() {
        return Err(ApiError::bad_request("no inputs"));
    }
    let tokens: usize = inputs.iter().map(Vec::len).sum();
    let plan = FaultPlan::resolve(&kinds, tokens, 0);
    if let Some(status) = plan.status {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(ApiError::new(
            status,
            format!("injected fault: HTTP {status}"),
        ));
    }
    for input in &inputs {
        state
            .engine
            .check(input.len(), 0, None)
            .map_err(|rejection| ApiError::bad_request(rejection.to_string()))?;
    }
    if state.schedule == Schedule::Engine {
        evaluate(state, serial, &inputs).await?;
    } else if let Some(offset) = state.schedule.token_offset(0) {
        tokio::time::sleep_until(arrived + offset).await;
    }
    if let Some(delay) = plan.first_byte_delay {
        tokio::time::sleep(delay).await;
    }
    if plan.drop_after.is_some() {
        return Ok(Outcome::Drop);
    }
    if let Some((_, duration)) = plan.stall {
        tokio::time::sleep(duration).await;
    }
    if plan.malformed_after.is_some() {
        let cut = "{\"object\":\"list\",\"data\":[{\"index\":0,\"embedding\":[0.1,";
        return Ok(Outcome::Respond(bytes_response(
            StatusCode::OK,
            "application/json",
            cut,
        )));
    }
    let seed = state.seed ^ serial.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let usage = serde_json::json!({"prompt_tokens": tokens, "total_tokens": tokens});
    let model = state.profile.model.clone();
    let body = match kind {
        Pooling::Embeddings => {
            let data: Vec<serde_json::Value> = (0..inputs.len())
                .map(|i| {
                    serde_json::json!({"object": "embedding", "index": i,
                        "embedding": vector(seed, i)})
                })
                .collect();
            serde_json::json!({"object": "list", "model": model, "data": data, "usage": usage})
        }
        Pooling::Rerank => {
            let mut results: Vec<(usize, f64)> =
                (0..inputs.len()).map(|i| (i, unit(seed, i, 0))).collect();
            results.sort_by(|a, b| b.1.total_cmp(&a.1));
            results.truncate(top_n.unwrap_or(results.len()));
            let results: Vec<serde_json::Value> = results
                .into_iter()
                .map(|(index, score)| serde_json::json!({"index": index, "relevance_score": score}))
                .collect();
            serde_json::json!({"object": "list", "model": model, "results": results,
                "usage": usage})
        }
    };
    Ok(Outcome::Respond(json_response(StatusCode::OK, &body)))
}

/// Submits every input to the engine as a sequence that generates nothing, and waits until the
/// last has been evaluated.
async fn evaluate(state: &Arc<State>, serial: u64, inputs: &[Vec<u32>]) -> Result<(), ApiError> {
    let mut waiting = Vec::with_capacity(inputs.len());
    for (k, prompt) in inputs.iter().enumerate() {
        // Ids of their own, apart from the generation requests' serial numbers.
        let id = (1 << 63) | (serial << 20) | (k as u64 & 0xF_FFFF);
        let sequence = SequenceRequest {
            prompt: prompt.clone(),
            max_tokens: 0,
            eos_after: None,
            cache_prompt: false,
            slot: None,
            adapter: None,
        };
        let progress = state.engine.submit(id, sequence).await.map_err(|stopped| {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, stopped.to_string())
        })?;
        waiting.push(progress);
    }
    for mut progress in waiting {
        super::generate::wait_for_finish(&mut progress).await?;
    }
    Ok(())
}

/// A deterministic vector of [`DIMENSION`] values in [-1, 1) for input `index`.
fn vector(seed: u64, index: usize) -> Vec<f64> {
    (0..DIMENSION).map(|d| unit(seed, index, d + 1)).collect()
}

/// A deterministic value in [-1, 1), rounded to 6 places.
fn unit(seed: u64, index: usize, k: usize) -> f64 {
    let mut bits = seed ^ ((index as u64) << 24) ^ k as u64;
    bits = (bits ^ (bits >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    bits = (bits ^ (bits >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    bits ^= bits >> 31;
    let value = (bits >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    (value * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_tokenized_and_a_rerank_pair_is_bos_query_document() {
        let tokenizer = crate::Tokenizer::new();
        let (inputs, _) = parse(
            Pooling::Embeddings,
            br#"{"input":[[1,2,3],"one two"]}"#,
            &tokenizer,
        )
        .expect("valid");
        assert_eq!(inputs.iter().map(Vec::len).collect::<Vec<_>>(), [3, 2]);
        let (single, _) =
            parse(Pooling::Embeddings, br#"{"input":[5,6]}"#, &tokenizer).expect("valid");
        assert_eq!(single, [vec![5, 6]]);
        let (pairs, top_n) = parse(
            Pooling::Rerank,
            br#"{"query":"a b","documents":["c","d e f"],"top_n":1}"#,
            &tokenizer,
        )
        .expect("valid");
        assert_eq!(pairs.iter().map(Vec::len).collect::<Vec<_>>(), [4, 6]);
        assert_eq!(top_n, Some(1));
        assert!(parse(Pooling::Rerank, br#"{"query":"a"}"#, &tokenizer).is_err());
        assert!(parse(Pooling::Embeddings, b"{}", &tokenizer).is_err());
    }

    #[test]
    fn vectors_are_deterministic_per_seed_and_input() {
        assert_eq!(vector(7, 0), vector(7, 0));
        assert_ne!(vector(7, 0), vector(7, 1));
        assert!(vector(7, 3).iter().all(|v| (-1.0..1.0).contains(v)));
    }
}
