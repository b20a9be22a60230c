//! The plan in words, for the terminal: the question, then per prompt length each attempt's
//! answer with the case that supports it, then what to run where the measurements fall short.

use super::curve::CurveAnswer;
use super::support::Support;
use super::{LengthAnswer, Plan, Question};
use crate::fmt::number;
use crate::fmt::{seconds, thousands};
use std::fmt::Write;

/// Renders `plan` as text.
pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    question(&mut out, &plan.question);
    for length in &plan.lengths {
        self::length(&mut out, length, &plan.question);
    }
    if let Some(cap) = plan.cap_for_longest {
        let _ = writeln!(
            out,
            "\nA cap that keeps the budget even when every request carries the longest prompt: {}. \
             For a mix of lengths, measure the mix itself (--input-tokens choice:{}@SHARE,{}@SHARE).",
            number(cap),
            plan.question.prompt_tokens,
            plan.question.max_prompt_tokens.unwrap_or(plan.question.prompt_tokens)
        );
    }
    if plan.covered {
        out.push_str("\nThe measurements cover the question.\n");
    } else {
        out.push_str("\nThe measurements do not cover the whole question.\n");
        out.push_str(
            "`llmload capacity` answers it from scratch: it searches the load for the TTFT \
             budget itself (--slo ttft_p99<BUDGET), decided at a confidence.\n",
        );
    }
    if !plan.commands.is_empty() {
        out.push_str("To measure what is missing or narrow the answer, run:\n");
        for command in &plan.commands {
            let _ = writeln!(out, "  {command}");
        }
    }
    out
}

fn question(out: &mut String, q: &Question) {
    let max = q.max_prompt_tokens.map_or(String::new(), |m| {
        format!(" (typical), up to {} (maximum)", thousands(m))
    });
    let tpot = q.tpot_ms.map_or(String::new(), |t| {
        format!(", {} TPOT ≤ {t} ms", q.percentile.name())
    });
    let _ = writeln!(
        out,
        "Question: prompts of {} tokens{max}, {} output tokens; budget {} TTFT ≤ {}{tpot}, no \
         failed responses.",
        thousands(q.prompt_tokens),
        thousands(q.output_tokens),
        q.percentile.name(),
        seconds(Some(q.ttft_ms)),
    );
    out.push_str(
        "Each attempt is answered on its own (never pooled); a load counts only if it and every \
         smaller measured load keep the budget.\n",
    );
}

fn length(out: &mut String, l: &LengthAnswer, q: &Question) {
    let role = if l.role == "typical" {
        "Typical"
    } else {
        "Maximum"
    };
    let _ = writeln!(
        out,
        "\n{role} prompt, {} tokens:",
        thousands(l.prompt_tokens)
    );
    if let Some(gap) = &l.gap {
        let _ = writeln!(out, "  Not covered: {gap}.");
    }
    for curve in &l.curves {
        self::curve(out, curve, q);
    }
}

/// "concurrency 4" or "2 requests/s".
fn load(curve: &CurveAnswer, value: f64) -> String {
    if curve.shape == "open loop" {
        format!("{} requests/s", number(value))
    } else {
        format!("concurrency {}", number(value))
    }
}

fn curve(out: &mut String, c: &CurveAnswer, q: &Question) {
    let loads: Vec<String> = c.loads.iter().map(|&l| number(l)).collect();
    let _ = writeln!(
        out,
        "  Attempt {} ({}{}): {}, loads {} measured.",
        c.attempt,
        c.attempt_id,
        if c.simulated {
            ", SIMULATED target"
        } else {
            ""
        },
        c.shape,
        if loads.is_empty() {
            "none".into()
        } else {
            loads.join(", ")
        },
    );
    match (&c.support, &c.first_miss) {
        (Some(s), miss) => {
            let _ = writeln!(
                out,
                "    Largest load keeping the budget: {}{}.",
                load(c, s.load),
                match (c.limit, miss) {
                    ("above", _) => " — every load measured keeps it, so the limit is higher \
                                     than measured"
                        .to_owned(),
                    (_, Some(m)) => format!(
                        " ({} misses it: {}{})",
                        load(c, m.load),
                        m.why_not.as_deref().unwrap_or(""),
                        m.caveat
                            .as_ref()
                            .map_or(String::new(), |c| format!("; {c}"))
                    ),
                    _ => String::new(),
                }
            );
            expected(out, s, q);
        }
        (None, Some(m)) => {
            let _ = writeln!(
                out,
                "    No load measured keeps the budget: at the smallest, {}, {}.",
                load(c, m.load),
                m.why_not.as_deref().unwrap_or("")
            );
            if c.command.is_none() {
                out.push_str(
                    "    One request at a time already misses it: no concurrency setting meets \
                     this budget at this prompt length on this server.\n",
                );
            }
        }
        (None, None) => out.push_str("    No case of this length completed.\n"),
    }
    if let Some(cap) = c.sweep_cap {
        let lower = c.largest_load.is_some_and(|l| cap < l);
        let range = match (c.sweep_cap_low, c.sweep_cap_high) {
            (Some(l), Some(h)) => format!(" (range {}–{})", number(l), number(h)),
            (Some(l), None) => format!(" (range {} or more)", number(l)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "    The sweep's recommended cap ({} × C_sat) is {}{range}{}.",
            crate::summary::saturation::CAP_SHARE,
            number(cap),
            if lower {
                ", lower than the budget allows: run at the cap"
            } else {
                ""
            }
        );
    }
    if let Some(r) = c.recommended_load {
        let _ = writeln!(out, "    Recommended: {}.", load(c, r));
    }
    for note in &c.notes {
        let _ = writeln!(out, "    Note: {note}.");
    }
    if let Some(w) = &c.wanted {
        let _ = writeln!(out, "    Wanted load: {}.", w.text);
        if !w.cases.is_empty() {
            let _ = writeln!(
                out,
                "    It rests on case{} {}, n = {} responses{}.",
                if w.cases.len() == 1 { "" } else { "s" },
                w.cases.join(" and "),
                w.n,
                if w.caveats.is_empty() {
                    String::new()
                } else {
                    format!("; {}", w.caveats.join("; "))
                }
            );
        }
    }
}

fn expected(out: &mut String, s: &Support, q: &Question) {
    let p = q.percentile.name();
    let interval = match (s.ttft_low_ms, s.ttft_high_ms) {
        (Some(low), Some(high)) => format!(
            " (95 % interval {}–{})",
            seconds(Some(low)),
            seconds(Some(high))
        ),
        _ => String::new(),
    };
    // The median once, where it is the percentile asked.
    let median = if q.percentile == super::Percentile::P50 {
        String::new()
    } else {
        format!("p50 {}, ", seconds(s.ttft_p50_ms))
    };
    let _ = writeln!(
        out,
        "    Expected there: TTFT {median}{p} {}{interval}{}; aggregate throughput {}.",
        seconds(s.ttft_ms),
        s.tpot_ms
            .filter(|_| q.tpot_ms.is_some())
            .map_or(String::new(), |t| format!(", TPOT {p} {t:.1} ms")),
        s.throughput_tps
            .map_or("–".into(), |t| format!("{t:.2} tokens/s")),
    );
    let _ = writeln!(
        out,
        "    Supported by: case {}, n = {} responses{}{}.",
        s.case_id,
        s.n,
        if s.rounds > 0 {
            format!(
                " in {} round{}",
                s.rounds,
                if s.rounds == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        },
        s.caveat
            .as_ref()
            .map_or(String::new(), |c| format!("; {c}"))
    );
    if s.server_prefill_ms_per_token.is_some() || s.server_decode_ms_per_token.is_some() {
        let ms = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.3} ms"));
        let _ = writeln!(
            out,
            "    The server's own pace there: prefill {} per prompt token, decode {} per token \
             (its timings; a re-measurement whose pace differs ran on a machine or build that \
             moved).",
            ms(s.server_prefill_ms_per_token),
            ms(s.server_decode_ms_per_token)
        );
    }
    if !s.between_runs.is_empty() {
        let _ = writeln!(out, "    Between runs: {}.", s.between_runs);
    }
}
