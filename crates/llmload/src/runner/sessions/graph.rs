//! A session of a graph (`--dag`): its calls go out as their parents end. A call is due its
//! wait after the last of the calls it waits for ends (a root at the session's arrival, or at
//! once); calls due together go together (fan-out). Each call builds its prompt as soon as its
//! parents have ended, on its own future, then sleeps to its due instant, so that siblings'
//! preparation never delays one another. Its prompt extends its context call's conversation
//! (that call's prompt and answer) with its own new tokens, or opens a fresh one.
//!
//! A call that fails ends its session: no call is started after it (what follows would not be
//! the same work), and those in flight finish and are recorded.

use super::{serials, Sessions};
use crate::api::client::Exchange;
use crate::error::Context;
use crate::record::{GraphCall, RequestMeta, TurnMeta};
use crate::workload::graph::{GraphReplay, GraphSession};
use crate::workload::session::History;
use crate::workload::source::{Answer, Conversation};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

/// A call that ended `ok`: when, and its conversation with its answer where another call
/// extends it.
struct Ended {
    done: Instant,
    conversation: Option<Conversation>,
}

/// A call sent and ended: its index, what the runner records, and its conversation so far.
type Sent = (usize, RequestMeta, Exchange, Conversation);

impl Sessions<'_> {
    /// The `index`-th session of the case: the file's sessions in turn.
    pub(super) async fn graph_session(
        &self,
        replay: &GraphReplay,
        index: u64,
        arrival: Option<Instant>,
    ) -> crate::error::Result<()> {
        let sessions = &replay.graph.sessions;
        let session = &sessions[crate::num::index(index % sessions.len() as u64)];
        let id = self.first_id + index;
        let model = self
            .mix
            .as_ref()
            .map(|mix| mix.pick_session(self.seed, id).to_owned());
        let n = session.calls.len();
        let mut ended: Vec<Option<Ended>> = (0..n).map(|_| None).collect();
        let mut started = vec![false; n];
        let mut failed = false;
        let mut running = FuturesUnordered::new();
        loop {
            if !failed && !self.cancel.is_cancelled() {
                for (k, call) in session.calls.iter().enumerate() {
                    let parents: Option<Vec<Instant>> = call
                        .after
                        .iter()
                        .map(|&p| ended[p].as_ref().map(|e| e.done))
                        .collect();
                    let Some(parents) = parents.filter(|_| !started[k]) else {
                        continue;
                    };
                    started[k] = true;
                    let due = match parents.into_iter().max() {
                        Some(last) => Some(last + replay.wait(call)),
                        None => arrival,
                    };
                    // The context has ended: it is among the calls this one waits for.
                    let conversation = match call.context {
                        Some(p) => ended[p]
                            .as_ref()
                            .and_then(|e| e.conversation.clone())
                            .context("a context call's conversation was not kept")?,
                        None => self.prompts.conversation(self.target),
                    };
                    let place = Place {
                        replay,
                        session,
                        index,
                        k,
                    };
                    running.push(self.graph_call(place, conversation, due, model.as_deref()));
                }
            }
            let Some(sent) = running.next().await else {
                break;
            };
            let Some((k, meta, mut exchange, mut conversation)) = sent? else {
                continue;
            };
            let done = exchange.done.filter(|_| exchange.failure.is_none());
            let answer = exchange.answer.take();
            let output = meta.output_tokens;
            // The runner holds the receiver until every session has ended.
            let _ = self.ended.send((meta, exchange));
            let Some(done) = done else {
                failed = true;
                continue;
            };
            let call = &session.calls[k];
            let conversation = if call.extended {
                let answer = match (self.spec.history, answer) {
                    (History::AsGenerated, Some(text)) => Answer::Generated(text),
                    _ => Answer::Placeholder(output),
                };
                let serial = self.call_serial(index, k) + 1;
                self.prompts
                    .answer(self.target, &mut conversation, answer, serial, self.seed)
                    .await
                    .with_context(|| {
                        format!("the answer of call {:?} of session {id}", call.name)
                    })?;
                Some(conversation)
            } else {
                None
            };
            ended[k] = Some(Ended { done, conversation });
        }
        Ok(())
    }

    /// The first serial number of call `k` of the `index`-th session: two a call (its message,
    /// its answer's placeholder).
    fn call_serial(&self, index: u64, k: usize) -> u64 {
        self.serial + index * serials(self.spec.turns) + 2 * k as u64
    }

    /// Builds call `place.k`'s prompt on `conversation`, waits until `due`, sends it; `None`
    /// when the run stopped before it went out.
    async fn graph_call(
        &self,
        place: Place<'_>,
        mut conversation: Conversation,
        due: Option<Instant>,
        model: Option<&str>,
    ) -> crate::error::Result<Option<Sent>> {
        let Place {
            replay,
            session,
            index,
            k,
        } = place;
        let id = self.first_id + index;
        let call = &session.calls[k];
        let built = self
            .prompts
            .turn(
                self.target,
                &mut conversation,
                call.new_tokens,
                self.call_serial(index, k),
                self.seed,
            )
            .await
            .with_context(|| format!("call {:?} of session {id}", call.name))?;
        let request_id = self.ids.as_ref().map(|ids| ids.next());
        let names = |ks: &[usize]| ks.iter().map(|&p| session.calls[p].name.clone()).collect();
        let turn = TurnMeta {
            session: id,
            turn: crate::num::count(k + 1),
            turns: crate::num::count(session.calls.len()),
            history_tokens: built.history_tokens,
        };
        let mut meta = self.meta(index, &built, call.output_tokens, due, turn);
        meta.graph = Some(Box::new(GraphCall {
            session: session.name.clone(),
            call: call.name.clone(),
            after: names(&call.after),
            context: call.context.map(|p| session.calls[p].name.clone()),
            wait_ms: replay.wait(call).as_secs_f64() * 1e3,
            final_answer: k == session.final_call,
        }));
        meta.request_id = request_id.as_ref().map(|r| r.id.clone());
        meta.model = model.map(str::to_owned);
        let keep = self.spec.history == History::AsGenerated && call.extended;
        let mut body = self.body(&built.prompt, call.output_tokens, keep, model);
        body.id = request_id;
        body.session = Some(id);
        if let Some(at) = due {
            tokio::select! {
                () = tokio::time::sleep_until(at) => {}
                () = self.cancel.cancelled() => {}
            }
        }
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        let (meta, exchange) = self.send(meta, body).await?;
        Ok(Some((k, meta, exchange, conversation)))
    }
}

/// Which call of which session.
#[derive(Clone, Copy)]
struct Place<'a> {
    replay: &'a GraphReplay,
    session: &'a GraphSession,
    index: u64,
    k: usize,
}
