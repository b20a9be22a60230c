//! The pooling APIs, answered once rather than streamed: `POST /v1/embeddings` (`OpenAI`'s
//! embeddings, as llama-server and vLLM serve them) and `POST /v1/rerank` (the Jina/Cohere
//! rerank body that llama-server and vLLM serve: a query and its documents).
//!
//! A request carries a batch of inputs (embeddings: token-ID arrays where the server takes them,
//! else texts; rerank: documents as texts). The answer is one JSON object, read whole: how many
//! results it holds (a vector per input, a score per document), the length of each vector, and
//! the server's count of the prompt tokens it processed (`usage.prompt_tokens`, else
//! `usage.total_tokens`: nothing is generated, so the two are the same count).

use super::{Counters, Prompt};
use serde::Deserialize;
use serde_json::json;

/// The query of every rerank request: the same sentence each time, so that the tokens of a
/// (query, document) pair are the document's and a fixed number more, which the prompt fitting
/// measures once at setup.
pub const QUERY: &str = "Which of these passages says the most about the question at hand?";

/// One pooling request: its inputs, the model, and nothing else asked.
#[derive(Clone, Copy, Debug)]
pub struct PoolingRequest<'a> {
    /// The inputs (embeddings) or documents (rerank), in order.
    pub inputs: &'a [Prompt],
    /// Model name.
    pub model: Option<&'a str>,
}

/// An input as the body holds it: token IDs as an array, anything else as text.
fn input(prompt: &Prompt) -> serde_json::Value {
    match prompt {
        Prompt::Tokens(tokens) => json!(tokens),
        Prompt::Text(text) => json!(text),
        Prompt::Messages(messages) => json!(super::joined(messages)),
    }
}

/// The body of an embeddings request: every input, vectors asked for as floats (whose count is
/// the vector's length).
pub fn embeddings_body(request: &PoolingRequest<'_>) -> serde_json::Value {
    let inputs: Vec<serde_json::Value> = request.inputs.iter().map(input).collect();
    let mut body = json!({"input": inputs, "encoding_format": "float"});
    if let Some(model) = request.model {
        body["model"] = json!(model);
    }
    body
}

/// The body of a rerank request: [`QUERY`] and every input as a document, a score asked for
/// each (`top_n` = the documents), without the documents echoed back.
pub fn rerank_body(request: &PoolingRequest<'_>) -> serde_json::Value {
    let documents: Vec<String> = request
        .inputs
        .iter()
        .map(|p| match p {
            Prompt::Text(text) => text.clone(),
            Prompt::Messages(messages) => super::joined(messages),
            // Documents are texts: the prompt sources give this API text.
            Prompt::Tokens(_) => String::new(),
        })
        .collect();
    let mut body = json!({
        "query": QUERY,
        "documents": documents,
        "top_n": documents.len(),
        "return_documents": false,
    });
    if let Some(model) = request.model {
        body["model"] = json!(model);
    }
    body
}

/// What a pooling answer held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pooled {
    /// Results: vectors (embeddings) or scores (rerank).
    pub results: u32,
    /// Embeddings: the length of the vectors, where every one had the same; rerank: `None`.
    pub dimension: Option<u32>,
    /// What is wrong with the results themselves (vectors of different lengths, an empty one,
    /// an index out of range or given twice), in words; `None` when nothing is.
    pub problem: Option<String>,
    /// The server's counters: the prompt tokens, where it reported them.
    pub counters: Counters,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u32>,
    total_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Embedding {
    index: Option<u32>,
    embedding: Vector,
}

/// An embedding as read: its length, and how many of its values are no finite number (a
/// string, a null, an object: nothing a vector holds).
#[derive(Clone, Copy, Debug, Default)]
struct Vector {
    len: u32,
    not_numbers: u32,
}

impl<'de> Deserialize<'de> for Vector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Values;
        impl<'de> serde::de::Visitor<'de> for Values {
            type Value = Vector;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of numbers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Vector, A::Error> {
                let mut vector = Vector::default();
                // A number is held without allocating; anything else is counted and dropped.
                while let Some(value) = seq.next_element::<serde_json::Value>()? {
                    vector.len = vector.len.saturating_add(1);
                    if !value.as_f64().is_some_and(f64::is_finite) {
                        vector.not_numbers = vector.not_numbers.saturating_add(1);
                    }
                }
                Ok(vector)
            }
        }
        deserializer.deserialize_seq(Values)
    }
}

#[derive(Deserialize)]
struct Score {
    index: Option<u32>,
    relevance_score: Option<f64>,
}

#[derive(Deserialize)]
struct Answer {
    data: Option<Vec<Embedding>>,
    results: Option<Vec<Score>>,
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
}

/// Reads a whole pooling answer of `inputs` inputs: the results it holds, what is wrong with
/// them, and the server's prompt count. An answer that is not JSON of either shape, or that
/// carries an `error`, is an error in words.
pub fn parse_answer(body: &[u8], inputs: u32, rerank: bool) -> Result<Pooled, String> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| {
        let shown = String::from_utf8_lossy(&body[..body.len().min(120)]);
        format!("malformed answer: {e} in {shown:?}")
    })?;
    if let Some(error) = answer.error {
        return Err(format!(
            "the server's error: {}",
            super::error_message(&error)
        ));
    }
    let counters = Counters {
        prompt_tokens: answer
            .usage
            .and_then(|u| u.prompt_tokens.or(u.total_tokens)),
        ..Counters::default()
    };
    let (indices, dimension, mut problem) = match (rerank, answer.data, answer.results) {
        (false, Some(data), _) => {
            let lengths: Vec<u32> = data.iter().map(|e| e.embedding.len).collect();
            let dimension = lengths.first().copied();
            let not_numbers: u32 = data.iter().map(|e| e.embedding.not_numbers).sum();
            let problem = if lengths.contains(&0) {
                Some("an embedding has no values".to_owned())
            } else if not_numbers > 0 {
                Some(format!(
                    "embeddings hold {not_numbers} values that are no finite number (strings, \
                     nulls, objects)"
                ))
            } else if lengths.iter().any(|&l| Some(l) != dimension) {
                let (low, high) = (
                    lengths.iter().min().copied().unwrap_or(0),
                    lengths.iter().max().copied().unwrap_or(0),
                );
                Some(format!("embeddings of different lengths ({low} to {high})"))
            } else {
                None
            };
            let indices = data.iter().map(|e| e.index).collect::<Vec<_>>();
            (indices, dimension.filter(|_| problem.is_none()), problem)
        }
        (true, _, Some(results)) => {
            let problem = results
                .iter()
                .any(|s| s.relevance_score.is_none_or(|v| !v.is_finite()))
                .then(|| "a result has no finite relevance_score".to_owned());
            (results.iter().map(|s| s.index).collect(), None, problem)
        }
        (false, ..) => return Err("malformed answer: no \"data\" list of embeddings".into()),
        (true, ..) => return Err("malformed answer: no \"results\" list of scores".into()),
    };
    problem = problem.or_else(|| index_problem(&indices, inputs));
    Ok(Pooled {
        results: crate::num::count(indices.len()),
        dimension,
        problem,
        counters,
    })
}

/// An index out of range, given twice or missing from a result: each result names one input.
fn index_problem(indices: &[Option<u32>], inputs: u32) -> Option<String> {
    let mut seen = vec![false; inputs as usize];
    for index in indices {
        let Some(i) = *index else {
            return Some("a result names no index".into());
        };
        match seen.get_mut(i as usize) {
            None => return Some(format!("a result's index {i} is past the {inputs} inputs")),
            Some(true) => return Some(format!("two results name index {i}")),
            Some(slot) => *slot = true,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_carry_every_input_and_ask_for_nothing_else() {
        let inputs = [Prompt::Tokens(vec![5, 6]), Prompt::Text("a b".into())];
        let request = PoolingRequest {
            inputs: &inputs,
            model: Some("m"),
        };
        assert_eq!(
            embeddings_body(&request),
            json!({"input": [[5, 6], "a b"], "encoding_format": "float", "model": "m"})
        );
        let docs = [Prompt::Text("one".into()), Prompt::Text("two".into())];
        let body = rerank_body(&PoolingRequest {
            inputs: &docs,
            model: None,
        });
        assert_eq!(body["documents"], json!(["one", "two"]));
        assert_eq!(body["query"], QUERY);
        assert_eq!(body["top_n"], 2);
    }

    #[test]
    fn an_embeddings_answer_gives_its_count_dimension_and_prompt_tokens() {
        let body = br#"{"object":"list","data":[{"index":1,"embedding":[0.1,0.2,0.3]},
            {"index":0,"embedding":[1,2,3]}],"usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        let pooled = parse_answer(body, 2, false).expect("valid");
        assert_eq!(pooled.results, 2);
        assert_eq!(pooled.dimension, Some(3));
        assert_eq!(pooled.problem, None);
        assert_eq!(pooled.counters.prompt_tokens, Some(7));
        // vLLM's rerank usage has only total_tokens.
        let body = br#"{"results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":9}}"#;
        let pooled = parse_answer(body, 1, true).expect("valid");
        assert_eq!(
            (pooled.results, pooled.counters.prompt_tokens),
            (1, Some(9))
        );
    }

    #[test]
    fn wrong_results_are_named_and_a_wrong_shape_is_an_error() {
        let short = br#"{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}"#;
        let pooled = parse_answer(short, 2, false).expect("parsed");
        assert_eq!(
            pooled.problem.as_deref(),
            Some("embeddings of different lengths (1 to 2)")
        );
        assert_eq!(pooled.dimension, None);
        assert_eq!(pooled.counters.prompt_tokens, None);
        let twice = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#;
        let problem = parse_answer(twice, 2, false).expect("parsed").problem;
        assert_eq!(problem.as_deref(), Some("two results name index 0"));
        let past = br#"{"results":[{"index":3,"relevance_score":1.0}]}"#;
        let problem = parse_answer(past, 2, true).expect("parsed").problem;
        assert_eq!(
            problem.as_deref(),
            Some("a result's index 3 is past the 2 inputs")
        );
        assert!(parse_answer(br#"{"results":[]}"#, 1, false).is_err());
        assert!(parse_answer(b"<html>", 1, false).is_err());
        let error = parse_answer(br#"{"error":{"message":"too long"}}"#, 1, false);
        assert_eq!(error, Err("the server's error: too long".into()));
    }

    #[test]
    fn an_embedding_of_anything_but_finite_numbers_is_a_problem() {
        // Booleans, objects and arrays inside a vector (other than the strings and nulls seen).
        let odd = br#"{"data":[{"index":0,"embedding":[0.5,true,{"x":1}]},
            {"index":1,"embedding":[[1],0.25,-3e2]}]}"#;
        let pooled = parse_answer(odd, 2, false).expect("parsed");
        assert_eq!(
            pooled.problem.as_deref(),
            Some("embeddings hold 3 values that are no finite number (strings, nulls, objects)")
        );
        assert_eq!(pooled.dimension, None, "no dimension for a wrong answer");
        // A number too large for a float is no answer at all.
        assert!(parse_answer(br#"{"data":[{"index":0,"embedding":[1e999]}]}"#, 1, false).is_err());
        let fine = br#"{"data":[{"index":0,"embedding":[0.5,-1,2e-3]}]}"#;
        assert_eq!(parse_answer(fine, 1, false).expect("parsed").problem, None);
    }
}
