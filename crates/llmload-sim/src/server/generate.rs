//! A generation request from parse to answer: serial number and faults, validation, EOS draw,
//! submission to the engine (or to the request's own clock under a fixed or zero-cost schedule),
//! then a stream or one JSON object.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::{Response, StatusCode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::events::{EventContext, MALFORMED_EVENT};
use super::reply::{bytes_response, event_stream, ApiError, Body};
use super::request::{self, Api, Generation};
use super::stream::{Clock, Source, TokenStream};
use super::State;
use crate::driver::Progress;
use crate::engine::{SequenceRequest, StopReason};
use crate::fault::FaultPlan;
use crate::profile::Served;
use crate::Schedule;
use tokio::time::Instant;

/// What the connection does with a generation request.
pub(crate) enum Outcome {
    /// Send this response.
    Respond(Response<Body>),
    /// Close the connection without answering (drop fault on a non-streaming request).
    Drop,
}

/// Handles one generation request on `api`, whose last byte arrived at `arrived`.
pub(crate) async fn generate(
    state: &Arc<State>,
    api: Api,
    body: &Bytes,
    arrived: Instant,
) -> Outcome {
    match run(state, api, body, arrived).await {
        Ok(outcome) => outcome,
        Err(error) => Outcome::Respond(error.into_response()),
    }
}

async fn run(
    state: &Arc<State>,
    api: Api,
    body: &Bytes,
    arrived: Instant,
) -> Result<Outcome, ApiError> {
    // Every generation request gets a serial number, well-formed or not, so `index=` and
    // `every=` count requests as the server received them.
    let (serial, kinds) = state.faults.next();
    let generating = super::Generating::start(&state.generating);
    let mut generation = request::parse(api, body, &state.tokenizer, &state.profile)?;
    if state.hosted {
        generation.ignore_eos = false;
        generation.min_tokens = 0;
        generation.include_usage = false;
        generation.continuous_usage = false;
    }
    // vLLM's answer to a model it does not serve.
    let adapter = match state.profile.adapter_of(generation.model.as_deref()) {
        Served::Model => None,
        Served::Adapter(i) => Some(i),
        Served::Unknown => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "The model `{}` does not exist.",
                    generation.model.as_deref().unwrap_or_default()
                ),
            ))
        }
    };
    let prompt_tokens = generation.prompt.len();
    let remaining = state
        .profile
        .slot_context_tokens
        .saturating_sub(prompt_tokens);
    let max_tokens = generation.max_tokens.unwrap_or(remaining);
    let plan = FaultPlan::resolve(&kinds, prompt_tokens, max_tokens);
    if let Some(status) = plan.status {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(ApiError::new(
            status,
            format!("injected fault: HTTP {status}"),
        ));
    }
    state
        .engine
        .check(prompt_tokens, max_tokens, generation.slot)
        .map_err(|rejection| ApiError::bad_request(rejection.to_string()))?;
    let mut context = state.event_context(api, serial, &generation, &plan);
    context.corrupt = plan
        .corrupt
        .map(|(in_flight, after)| (after, in_flight, Arc::clone(&state.generating)));
    context.in_flight = Some(Arc::new(generating));
    let eos_after = plan
        .eos_after
        .or_else(|| state.draw_eos(serial, &generation));
    if state.schedule != Schedule::Engine {
        let tokens = eos_after.map_or(max_tokens, |eos| eos.min(max_tokens));
        let clock = Clock {
            arrival: arrived,
            schedule: state.schedule,
            tokens,
            stop: if tokens < max_tokens {
                StopReason::Eos
            } else {
                StopReason::Limit
            },
            slot: generation.slot.unwrap_or(0),
            per_event: plan.tokens_per_event.max(1),
            time_scale: state.time_scale,
        };
        return respond(context, Source::Clock(clock), generation.stream, &plan).await;
    }
    let sequence = SequenceRequest {
        eos_after,
        prompt: generation.prompt,
        max_tokens,
        cache_prompt: generation.cache_prompt,
        slot: generation.slot,
        adapter,
    };
    let progress = state
        .engine
        .submit(serial, sequence)
        .await
        .map_err(|stopped| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, stopped.to_string()))?;
    respond(context, Source::Engine(progress), generation.stream, &plan).await
}

/// A stream of the source's tokens, or (not streaming) one body once it has finished.
async fn respond(
    context: EventContext,
    source: Source,
    stream: bool,
    plan: &FaultPlan,
) -> Result<Outcome, ApiError> {
    if let Some(delay) = plan.first_byte_delay {
        tokio::time::sleep(delay).await;
    }
    if stream {
        let body = TokenStream::new(context, source, plan).into_body();
        return Ok(Outcome::Respond(event_stream(body)));
    }
    let finished = match source {
        Source::Engine(mut progress) => wait_for_finish(&mut progress).await?,
        Source::Clock(clock) => {
            let last = clock.tokens.saturating_sub(1);
            if let Some(offset) = clock.schedule.token_offset(last) {
                tokio::time::sleep_until(clock.arrival + offset).await;
            }
            clock.progress(clock.tokens)
        }
    };
    complete(&context, &finished, plan).await
}

/// The answer of a non-streaming request, with its faults.
async fn complete(
    context: &EventContext,
    progress: &Progress,
    plan: &FaultPlan,
) -> Result<Outcome, ApiError> {
    if plan.drop_after.is_some() {
        return Ok(Outcome::Drop);
    }
    if let Some((_, duration)) = plan.stall {
        tokio::time::sleep(duration).await;
    }
    let body = if plan.malformed_after.is_some() {
        MALFORMED_EVENT
            .trim_start_matches("data: ")
            .trim_end()
            .to_owned()
    } else {
        context.complete_body(progress)
    };
    Ok(Outcome::Respond(bytes_response(
        StatusCode::OK,
        "application/json",
        body,
    )))
}

pub(crate) async fn wait_for_finish(
    progress: &mut tokio::sync::watch::Receiver<Progress>,
) -> Result<Progress, ApiError> {
    loop {
        let current = *progress.borrow_and_update();
        if current.finish.is_some() {
            return Ok(current);
        }
        if progress.changed().await.is_err() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the engine stopped before the request finished",
            ));
        }
    }
}

/// A key of `prompt`'s tokens (FNV-1a): a greedy request's text is drawn from it.
fn prompt_key(prompt: &[u32]) -> u64 {
    prompt.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &token| {
        (hash ^ u64::from(token)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl State {
    /// What the events of this request need to know.
    fn event_context(
        &self,
        api: Api,
        serial: u64,
        generation: &Generation,
        plan: &FaultPlan,
    ) -> EventContext {
        EventContext {
            api,
            serial,
            seed: self.seed,
            created_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
            // An adapter's responses name it, as vLLM's do.
            model: generation
                .model
                .clone()
                .filter(|m| self.profile.adapters.contains(m))
                .unwrap_or_else(|| self.profile.model.clone()),
            prompt_tokens: generation.prompt.len(),
            return_tokens: generation.return_tokens,
            include_usage: generation.include_usage,
            continuous_usage: generation.continuous_usage,
            reasoning_tokens: plan
                .reasoning_tokens
                .filter(|_| api == Api::Chat && !generation.thinking_off)
                .unwrap_or(0),
            time_scale: self.time_scale,
            fake_cached_tokens: plan.fake_cached_tokens,
            text_key: if generation.greedy {
                prompt_key(&generation.prompt)
            } else {
                serial
            },
            corrupt: None,
            corrupt_from: std::sync::OnceLock::new(),
            in_flight: None,
        }
    }

    /// Tokens before the model's own EOS: geometric with the profile's `eos_probability`, not
    /// before `min_tokens`, seeded by the simulator's seed and the request's serial number.
    fn draw_eos(&self, serial: u64, generation: &Generation) -> Option<usize> {
        let probability = self.profile.eos_probability;
        if generation.ignore_eos || probability <= 0.0 {
            return None;
        }
        let mut rng = StdRng::seed_from_u64(self.seed ^ serial.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let uniform: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        let tokens = (uniform.ln() / (1.0 - probability).ln()).floor();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a whole number of tokens, at least 0 and capped at 1e12; the cast saturates \
                      where usize is narrower"
        )]
        let tokens = tokens.min(1e12) as usize;
        Some(generation.min_tokens + tokens)
    }
}
