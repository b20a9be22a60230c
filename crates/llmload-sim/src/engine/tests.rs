//! Engine arithmetic on the virtual clock: every expectation is computed by hand from the
//! profile's parameters, so a change in scheduling or cost shows up as a failed assertion.

use super::*;

fn profile(name: &str) -> Profile {
    let mut profile = Profile::builtin(name).expect("built in");
    profile.jitter = 0.0;
    profile
}

fn request(prompt_tokens: usize, max_tokens: usize) -> SequenceRequest {
    request_from(0, prompt_tokens, max_tokens)
}

/// A prompt whose tokens start at `offset`, so different offsets share no prefix.
fn request_from(offset: u32, prompt_tokens: usize, max_tokens: usize) -> SequenceRequest {
    SequenceRequest {
        prompt: (offset..offset + u32::try_from(prompt_tokens).unwrap_or(u32::MAX)).collect(),
        max_tokens,
        eos_after: None,
        cache_prompt: false,
        slot: None,
        adapter: None,
    }
}

#[test]
fn ttft_alone_is_overhead_plus_prefill() {
    let profile = profile("seed-qwen3-8b");
    let cost = CostModel::from_profile(&profile);
    for prompt in [100, 2048, 8192] {
        let mut sim = Simulation::new(&profile, 1);
        let id = sim.submit(&request(prompt, 4)).expect("fits");
        sim.run_until_idle();
        // Chunks of 2048 prompt tokens, one step each; no sequence decodes meanwhile.
        let expected: f64 = (0..prompt)
            .step_by(2048)
            .map(|start| cost.step_overhead_ms + cost.prefill_ms((prompt - start).min(2048), start))
            .sum();
        let ttft = sim.timeline(id).first_token_ms.expect("generated");
        assert!(
            (ttft - expected).abs() < 1e-6,
            "{prompt}: {ttft} vs {expected}"
        );
        // Then three decode steps of one sequence.
        let decode: f64 = (1..4)
            .map(|k| cost.step_overhead_ms + cost.decode_ms(1, prompt + k))
            .sum();
        let done = sim.timeline(id).finished_ms.expect("finished");
        assert!((done - ttft - decode).abs() < 1e-6);
    }
}

#[test]
fn requests_beyond_the_slots_wait_for_a_slot() {
    let profile = profile("cpu-tiny");
    assert_eq!(profile.slots, 2);
    let mut sim = Simulation::new(&profile, 1);
    let ids: Vec<_> = (0..5)
        .map(|i| sim.submit(&request_from(i * 1000, 200, 20)).expect("fits"))
        .collect();
    sim.run_until_idle();
    let first_free = ids[..2]
        .iter()
        .map(|id| sim.timeline(*id).finished_ms.expect("finished"))
        .fold(f64::INFINITY, f64::min);
    for id in &ids[2..] {
        let timeline = sim.timeline(*id);
        assert!(
            timeline.first_token_ms.expect("ran") > first_free,
            "{timeline:?}"
        );
    }
    for id in &ids[..2] {
        assert!(sim.timeline(*id).first_token_ms.expect("ran") < first_free);
    }
}

#[test]
fn kv_capacity_limits_admission() {
    let mut profile = profile("cpu-tiny");
    profile.slots = 4;
    profile.kv_capacity_tokens = Some(4096);
    let mut sim = Simulation::new(&profile, 1);
    // Each reserves 1500 tokens: two fit in 4096, the third waits although slots are free.
    let ids: Vec<_> = (0..3)
        .map(|i| {
            sim.submit(&request_from(i * 2000, 1000, 500))
                .expect("fits")
        })
        .collect();
    sim.advance_ms(50.0);
    assert_eq!(sim.engine().running(), 2);
    assert_eq!(sim.engine().waiting(), 1);
    sim.run_until_idle();
    let first_done = sim.timeline(ids[0]).finished_ms.expect("finished");
    let third_first = sim.timeline(ids[2]).first_token_ms.expect("ran");
    assert!(third_first > first_done);
    // Every reservation is freed: the ratio is exactly zero.
    assert!(sim.engine().kv_usage_ratio() == 0.0);
}

#[test]
fn prefix_cache_hits_show_as_cached_tokens() {
    let profile = profile("cpu-tiny");
    assert!(profile.prefix_cache);
    let mut sim = Simulation::new(&profile, 1);
    let cached = |cache_prompt| SequenceRequest {
        cache_prompt,
        ..request(1000, 8)
    };
    let first = sim.submit(&cached(true)).expect("fits");
    sim.run_until_idle();
    let second = sim.submit(&cached(true)).expect("fits");
    sim.run_until_idle();
    let without = sim.submit(&cached(false)).expect("fits");
    sim.run_until_idle();
    assert_eq!(sim.timeline(first).cached_tokens, 0);
    // 62 full blocks of 16 tokens = 992 tokens; the last 8 are evaluated.
    assert_eq!(sim.timeline(second).cached_tokens, 992);
    assert_eq!(sim.timeline(without).cached_tokens, 0);
    let ttft = |id| {
        let timeline = sim.timeline(id);
        timeline.first_token_ms.expect("ran") - timeline.submitted_ms
    };
    assert!(ttft(second) < ttft(first) / 5.0);

    let mut disabled = profile.clone();
    disabled.prefix_cache = false;
    let mut sim = Simulation::new(&disabled, 1);
    sim.submit(&cached(true)).expect("fits");
    sim.run_until_idle();
    let again = sim.submit(&cached(true)).expect("fits");
    sim.run_until_idle();
    assert_eq!(sim.timeline(again).cached_tokens, 0);
}

#[test]
fn a_seed_determines_the_jitter() {
    let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
    assert!(profile.jitter > 0.0);
    let run = |seed| {
        let mut sim = Simulation::new(&profile, seed);
        let ids: Vec<_> = (0..6)
            .map(|i| sim.submit(&request_from(i * 3000, 2048, 32)).expect("fits"))
            .collect();
        sim.run_until_idle();
        ids.iter()
            .map(|id| sim.timeline(*id).clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn eos_stops_early_and_zero_output_finishes_at_prefill() {
    let mut sim = Simulation::new(&profile("cpu-tiny"), 1);
    let eos = sim
        .submit(&SequenceRequest {
            eos_after: Some(3),
            ..request(50, 10)
        })
        .expect("fits");
    let empty = sim.submit(&request_from(100, 50, 0)).expect("fits");
    sim.run_until_idle();
    assert_eq!(sim.timeline(eos).generated, 3);
    assert_eq!(sim.timeline(eos).stop, Some(StopReason::Eos));
    assert_eq!(sim.timeline(empty).generated, 0);
    assert_eq!(sim.timeline(empty).stop, Some(StopReason::Limit));
    assert!(sim.timeline(empty).finished_ms.is_some());
    assert_eq!(sim.engine().predicted_tokens_total(), 3);
    assert_eq!(sim.engine().prompt_tokens_total(), 100);
}

#[test]
fn pinned_slots_wait_without_blocking_others() {
    let mut sim = Simulation::new(&profile("cpu-tiny"), 1);
    let pinned = |offset| SequenceRequest {
        slot: Some(1),
        ..request_from(offset, 100, 50)
    };
    let first = sim.submit(&pinned(0)).expect("fits");
    let second = sim.submit(&pinned(1000)).expect("fits");
    let any = sim.submit(&request_from(2000, 100, 50)).expect("fits");
    sim.run_until_idle();
    assert_eq!(sim.timeline(first).slot, Some(1));
    assert_eq!(sim.timeline(second).slot, Some(1));
    assert_eq!(sim.timeline(any).slot, Some(0));
    let first_done = sim.timeline(first).finished_ms.expect("finished");
    assert!(sim.timeline(second).first_token_ms.expect("ran") > first_done);
    assert!(sim.timeline(any).first_token_ms.expect("ran") < first_done);
}

#[test]
fn cancel_frees_the_slot() {
    let profile = profile("cpu-tiny");
    let mut sim = Simulation::new(&profile, 1);
    let long = sim.submit(&request(100, 1000)).expect("fits");
    let other = sim.submit(&request_from(500, 100, 1000)).expect("fits");
    let queued = sim.submit(&request_from(1000, 100, 10)).expect("fits");
    sim.advance_ms(20.0);
    assert_eq!(sim.engine().waiting(), 1);
    assert!(sim.cancel(long));
    assert!(!sim.cancel(long));
    sim.advance_ms(40.0);
    assert!(sim.timeline(queued).finished_ms.is_some());
    assert!(sim.timeline(other).finished_ms.is_none());
}

#[test]
fn impossible_requests_are_rejected() {
    let engine = Engine::new(&profile("cpu-tiny"), 1);
    assert_eq!(engine.check(0, 1, None), Err(Rejection::EmptyPrompt));
    assert!(matches!(
        engine.check(4000, 97, None),
        Err(Rejection::ContextExceeded { .. })
    ));
    assert!(engine.check(4000, 96, None).is_ok());
    assert!(matches!(
        engine.check(10, 10, Some(2)),
        Err(Rejection::NoSuchSlot { slot: 2, slots: 2 })
    ));
}

#[test]
fn an_adapter_adds_its_cost_to_each_decode_step_and_caches_apart() {
    let profile = profile("cpu-tiny");
    let cost = CostModel::from_profile(&profile);
    assert!(cost.adapter_decode_per_seq_ms > 0.0);
    let adapted = |offset| SequenceRequest {
        adapter: Some(0),
        ..request_from(offset, 100, 5)
    };
    // Alone, each: the same prefill, then 4 decode steps of one sequence, each costing the
    // adapter's share more with it.
    let mut plain = Simulation::new(&profile, 1);
    let a = plain.submit(&request(100, 5)).expect("fits");
    plain.run_until_idle();
    let mut lora = Simulation::new(&profile, 1);
    let b = lora.submit(&adapted(0)).expect("fits");
    lora.run_until_idle();
    let (ta, tb) = (plain.timeline(a), lora.timeline(b));
    assert_eq!(ta.first_token_ms, tb.first_token_ms);
    let extra = tb.finished_ms.expect("done") - ta.finished_ms.expect("done");
    assert!((extra - 4.0 * cost.adapter_ms(1)).abs() < 1e-9, "{extra}");
    // The model's cached blocks serve the model, not an adapter; an adapter's serve it.
    let cached = |adapter| SequenceRequest {
        cache_prompt: true,
        adapter,
        ..request_from(500, 100, 2)
    };
    let mut sim = Simulation::new(&profile, 1);
    sim.submit(&cached(None)).expect("fits");
    sim.run_until_idle();
    let first = sim.submit(&cached(Some(1))).expect("fits");
    sim.run_until_idle();
    let again = sim.submit(&cached(Some(1))).expect("fits");
    sim.run_until_idle();
    assert_eq!(sim.timeline(first).cached_tokens, 0);
    assert_eq!(sim.timeline(again).cached_tokens, 96);
}
