//! The engine fields a server refuses. llmload adds fields of the engines' own to every
//! generation body (`ignore_eos`, `min_tokens`, `cache_prompt`, `stream_options`: the
//! [`ENGINE_FIELDS`]); a strict server (a `FastAPI` app that forbids unknown fields, such as
//! `transformers serve`) answers every such request `422`. A server of no known kind is asked one
//! one-token generation at setup: where it refuses it with `400` or `422`, the fields it refuses
//! are those its answer names, or else (one retry without any of them succeeding) those found one
//! at a time. With `--best-effort` the run goes on without them, every record saying so; without,
//! it stops at setup with one line naming the fields and the flag that leaves them out.

use super::Target;
use crate::api::client::Failure;
use crate::api::{Api, Prompt, ENGINE_FIELDS, LENGTH_FIELDS};
use crate::error::Error;
use tokio_util::sync::CancellationToken;

/// A refusal of a one-token generation: its status and what the server said, in one line.
struct Refusal {
    status: u16,
    said: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = crate::api::fetch::Status(self.status);
        if self.said.is_empty() {
            write!(f, "HTTP {status}")
        } else {
            write!(f, "HTTP {status}: {}", self.said)
        }
    }
}

impl Target {
    /// Whether the server may refuse the engine fields: any but llama-server, vLLM and llmload's
    /// simulator (which take them), on an API whose body carries them.
    fn may_refuse_fields(&self) -> bool {
        self.endpoint.api != Api::Llamacpp
            && !super::is_llama_server(&self.server)
            && !self.is_simulator()
            && self.server["models"]["data"][0]["owned_by"].as_str() != Some("vllm")
    }

    /// The engine fields a generation body carries, those already dropped left out.
    fn engine_fields_sent(&self) -> Vec<String> {
        let body = self.body(&self.one_token(&Prompt::Text(String::new())));
        ENGINE_FIELDS
            .iter()
            .filter(|f| body.get(**f).is_some())
            .map(|f| (*f).to_owned())
            .collect()
    }

    /// A one-token generation without the fields `without` (besides those already dropped):
    /// its refusal where the server answered `400` or `422`.
    async fn refusal(&self, without: &[String]) -> Option<Refusal> {
        let prompt = Prompt::Text("Hello".into());
        let mut body = self.body(&self.one_token(&prompt));
        crate::api::drop_fields(&mut body, without);
        let body = crate::api::Body::from_json(&body);
        let exchange = self.endpoint.stream(body, &CancellationToken::new()).await;
        match exchange.failure? {
            Failure::Http { status, body } if matches!(status, 400 | 422) => {
                Some(Refusal { status, said: body })
            }
            _ => None,
        }
    }

    /// Checks at setup that a server of no known kind takes the engine fields llmload sends
    /// (one one-token generation; more only where it refuses them without naming which). Where it
    /// refuses some: with `best_effort` they are left out from then on and
    /// [`Target::dropped_note`] says so; without, the one-line error names them and the flag.
    /// Fields left out by `--drop-field` are noted as such.
    pub async fn check_fields(&mut self, best_effort: bool) -> crate::error::Result<()> {
        if !self.drop_fields.is_empty() {
            self.dropped_note = Some(dropped_note(&self.drop_fields, "(--drop-field)"));
        }
        if !self.may_refuse_fields() {
            return Ok(());
        }
        let sent = self.engine_fields_sent();
        let Some(refusal) = self.refusal(&[]).await else {
            return Ok(());
        };
        let mut refused: Vec<String> = sent
            .iter()
            .filter(|f| names(&refusal.said, f))
            .cloned()
            .collect();
        if refused.is_empty() && !sent.is_empty() && self.refusal(&sent).await.is_none() {
            // Not named, but the request passes without them: each added back alone.
            for field in &sent {
                let others: Vec<String> = sent.iter().filter(|f| *f != field).cloned().collect();
                if self.refusal(&others).await.is_some() {
                    refused.push(field.clone());
                }
            }
        }
        if refused.is_empty() {
            // Not the fields: the run says what the server answers.
            return Ok(());
        }
        let list = refused.join(", ");
        if !best_effort {
            let length = refused.iter().any(|f| LENGTH_FIELDS.contains(&f.as_str()));
            return Err(Error::Target(format!(
                "the server at {} refuses {list}, which llmload sends to fix the output length \
                 and keep its cache out ({refusal}): to measure it without them, pass \
                 --drop-field {}{}",
                self.endpoint.base_url,
                refused.join(","),
                if length {
                    " --best-effort (each output then as long as the server makes it, every \
                     response labelled)"
                } else {
                    ""
                }
            )));
        }
        self.drop_fields.extend(refused.iter().cloned());
        self.dropped_note = Some(dropped_note(
            &self.drop_fields,
            &format!("under --best-effort: the server refuses them ({refusal})"),
        ));
        Ok(())
    }
}

/// The note every record of a run without `fields` carries: which, and `why`.
fn dropped_note(fields: &[String], why: &str) -> String {
    let length = fields.iter().any(|f| LENGTH_FIELDS.contains(&f.as_str()));
    format!(
        "sent without {} {why}{}",
        fields.join(", "),
        if length {
            "; the output may stop before the asked length"
        } else {
            ""
        }
    )
}

/// Whether `text` names `field` as a word of its own (not inside a longer name).
fn names(text: &str, field: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(field).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(word)
            && !text[at + field.len()..].chars().next().is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_named_as_a_word_of_its_own() {
        let said = "body.ignore_eos: Extra inputs are not permitted; body.min_tokens: Extra \
                    inputs are not permitted";
        assert!(names(said, "ignore_eos"));
        assert!(names(said, "min_tokens"));
        assert!(!names(said, "cache_prompt"));
        assert!(names(
            "Unrecognized request argument supplied: stream_options",
            "stream_options"
        ));
        assert!(!names("unknown field `my_ignore_eos`", "ignore_eos"));
        assert!(!names("ignore_eos_extra is not allowed", "ignore_eos"));
    }

    #[test]
    fn the_note_says_what_was_left_out_and_what_it_does() {
        let fields = ["cache_prompt".to_owned()];
        assert_eq!(
            dropped_note(&fields, "(--drop-field)"),
            "sent without cache_prompt (--drop-field)"
        );
        let fields = ["ignore_eos".to_owned(), "min_tokens".to_owned()];
        assert_eq!(
            dropped_note(&fields, "(--drop-field)"),
            "sent without ignore_eos, min_tokens (--drop-field); the output may stop before the \
             asked length"
        );
    }
}
