//! The server's own pace, per case: its time per prompt token (prefill) and per generated token
//! (decode), from the timings it reported of each `ok` response. It is the reference a
//! comparison holds the client's change against: where the server's own pace moved as much as
//! the client's figure, the machine or the build moved; where it held, the change is in the path
//! between them (a proxy, a gateway, the network, the client).
//!
//! Per response: the prefill time over the prompt tokens the server processed (llama-server's
//! `prompt_n`, else the prompt tokens less the cached ones), and the decode time (first token to
//! last) over the gaps between the generated tokens (llama-server's `predicted_n`, else the
//! output tokens, less one: the first token comes out of the prefill). The case's pace is the
//! median of those ratios, with the interval its samples' units support (rounds or time blocks
//! resampled, as every distribution's).

use crate::record::{Record, ServerTimings};
use crate::stats::{Distribution, Label, Samples};
use serde::{Deserialize, Serialize};

/// A case's server pace: distributions of per-response ratios, ms per token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pace {
    /// The server's prefill time per prompt token it processed, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms_per_token: Option<Distribution>,
    /// The server's decode time per generated token after the first, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms_per_token: Option<Distribution>,
}

/// A case's pace so far, one response at a time.
#[derive(Clone, Debug, Default)]
pub struct PaceFigures {
    prefill: Samples,
    decode: Samples,
}

/// The server's prefill and decode time per token of one response: `None` for either where the
/// response lacks its time or its tokens.
pub fn of_response(r: &Record, s: &ServerTimings) -> (Option<f64>, Option<f64>) {
    let prompt = s.raw.get("prompt_n").copied().or_else(|| {
        r.prompt_tokens
            .map(|p| f64::from(p.saturating_sub(r.cached_tokens.unwrap_or(0))))
    });
    let generated = s
        .raw
        .get("predicted_n")
        .copied()
        .or_else(|| r.output_tokens.map(f64::from));
    let prefill = s
        .prefill_ms
        .zip(prompt.filter(|n| *n >= 1.0))
        .map(|(ms, n)| ms / n);
    let decode = s
        .decode_ms
        .zip(generated.filter(|n| *n >= 2.0))
        .map(|(ms, n)| ms / (n - 1.0));
    (prefill, decode)
}

impl PaceFigures {
    /// Adds one `ok` response `r` with its server's timings `s`.
    pub fn add(&mut self, r: &Record, s: &ServerTimings, label: Label) {
        let (prefill, decode) = of_response(r, s);
        Samples::push_each(
            [(&mut self.prefill, prefill), (&mut self.decode, decode)],
            label,
        );
    }

    /// The case's pace; `None` where no response gave either ratio.
    pub fn finish(self) -> Option<Pace> {
        let pace = Pace {
            prefill_ms_per_token: self.prefill.distribution(),
            decode_ms_per_token: self.decode.distribution(),
        };
        (pace.prefill_ms_per_token.is_some() || pace.decode_ms_per_token.is_some()).then_some(pace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, TimingSource};
    use crate::stats::interval::Unit;

    /// A llama-server response of `prompt_n` prompt tokens in `prompt_ms` and `predicted_n`
    /// tokens in `predicted_ms`, in round `round`.
    fn llama(prompt: (f64, f64), predicted: (f64, f64)) -> (Record, ServerTimings) {
        let r = ok_record(0.0, None, vec![10.0, 12.0, 14.0]);
        let mut s = ServerTimings::new(TimingSource::LlamaServer);
        (s.prefill_ms, s.ttft_ms, s.decode_ms) =
            (Some(prompt.1), Some(prompt.1), Some(predicted.1));
        s.raw.insert("prompt_n".into(), prompt.0);
        s.raw.insert("predicted_n".into(), predicted.0);
        (r, s)
    }

    #[test]
    fn the_pace_is_recomputed_exactly_from_the_server_s_timings() {
        let mut figures = PaceFigures::default();
        // 64 prompt tokens in 128 ms (2 ms each) and 17 tokens in 160 ms (10 ms per gap); then
        // 32 in 96 (3) and 9 in 96 (12); then 16 in 64 (4) and 5 in 56 (14).
        let responses = [
            ((64.0, 128.0), (17.0, 160.0)),
            ((32.0, 96.0), (9.0, 96.0)),
            ((16.0, 64.0), (5.0, 56.0)),
        ];
        for (i, (prompt, predicted)) in responses.into_iter().enumerate() {
            let (r, s) = llama(prompt, predicted);
            let label = Label {
                unit: Unit::Round,
                outer: 1,
                response: u32::try_from(i).expect("small"),
            };
            figures.add(&r, &s, label);
        }
        let pace = figures.finish().expect("a pace");
        let prefill = pace.prefill_ms_per_token.expect("prefill");
        let decode = pace.decode_ms_per_token.expect("decode");
        assert_eq!(
            (prefill.n, prefill.median, prefill.min, prefill.max),
            (3, 3.0, 2.0, 4.0)
        );
        assert_eq!(
            (decode.n, decode.median, decode.min, decode.max),
            (3, 12.0, 10.0, 14.0)
        );
    }

    #[test]
    fn without_the_server_s_counts_the_record_s_tokens_serve_and_one_token_has_no_decode() {
        // vLLM: no raw counts; 8 prompt tokens (2 cached) in 12 ms; 3 output tokens in 10 ms.
        let r = ok_record(0.0, None, vec![10.0, 12.0, 14.0]);
        let mut s = ServerTimings::new(TimingSource::Vllm);
        (s.prefill_ms, s.decode_ms) = (Some(12.0), Some(10.0));
        let r = Record {
            cached_tokens: Some(2),
            ..r
        };
        assert_eq!(of_response(&r, &s), (Some(2.0), Some(5.0)));
        let one = Record {
            output_tokens: Some(1),
            ..r.clone()
        };
        assert_eq!(of_response(&one, &s), (Some(2.0), None));
        let all_cached = Record {
            cached_tokens: Some(8),
            ..r
        };
        assert_eq!(of_response(&all_cached, &s).0, None);
        assert_eq!(PaceFigures::default().finish(), None);
    }
}
