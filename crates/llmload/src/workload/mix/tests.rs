use super::*;

fn mix(text: &str) -> ModelMix {
    ModelMix::parse(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .unwrap_or_else(|| panic!("{text}: not a mix"))
}

fn error(text: &str) -> String {
    match ModelMix::parse(text) {
        Err(e) => e,
        Ok(m) => panic!("{text}: accepted as {m:?}"),
    }
}

#[test]
fn one_name_is_a_name_colons_and_all() {
    assert_eq!(ModelMix::parse("Qwen3-8B"), Ok(None));
    assert_eq!(ModelMix::parse("llama3:8b"), Ok(None));
    assert_eq!(ModelMix::parse(" base:70 "), Ok(None));
}

#[test]
fn weights_become_shares_in_the_order_given() {
    let m = mix("base:70, adapter-a:20,adapter-b:10");
    let names: Vec<&str> = m.names().collect();
    assert_eq!(names, ["base", "adapter-a", "adapter-b"]);
    let shares: Vec<f64> = m.models().iter().map(|m| m.share).collect();
    for (share, want) in shares.iter().zip([0.7, 0.2, 0.1]) {
        assert!((share - want).abs() < 1e-12, "{shares:?}");
    }
    // A name with a colon of its own keeps it: the weight is after the last one.
    let m = mix("llama3:8b:3,llama3:70b:1");
    assert_eq!(m.models()[0].model, "llama3:8b");
    assert!((m.models()[1].share - 0.25).abs() < 1e-12);
    assert!((mix("a:0.5,b:1.5").models()[0].share - 0.25).abs() < 1e-12);
}

#[test]
fn weights_at_the_edges_of_a_float_still_share_the_load() {
    // Each weight finite, their sum not; and weights too small to sum to anything normal.
    for text in [
        "a:1.7e308,b:1.7e308,c:3.4e307",
        "a:2e-308,b:2e-308,c:4e-309",
    ] {
        let shares: Vec<f64> = mix(text).models().iter().map(|m| m.share).collect();
        assert!(
            shares.iter().all(|s| s.is_finite() && *s > 0.0),
            "{text}: {shares:?}"
        );
        assert!(
            (shares.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "{text}: {shares:?}"
        );
        assert!((shares[0] - shares[1]).abs() < 1e-12 && shares[2] < shares[0]);
    }
}

#[test]
fn bad_mixes_are_refused_in_one_line() {
    for (text, says) in [
        ("base:70,adapter-a", "each model of a mix takes its weight"),
        ("base:70,adapter-a:0", "weights are numbers above 0"),
        ("base:70,adapter-a:-5", "weights are numbers above 0"),
        ("base:70,adapter-a:inf", "weights are numbers above 0"),
        ("base:70,adapter-a:NaN", "weights are numbers above 0"),
        ("base:70,adapter-a:lots", "is not a number"),
        ("base:70,base:30", "is named twice"),
        ("base:70,:30", "names no model"),
        ("base:70,,a:1", "each model of a mix takes its weight"),
    ] {
        let e = error(text);
        assert!(e.contains(says), "{text}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    let many: Vec<String> = (0..=MAX_MODELS).map(|i| format!("m{i}:1")).collect();
    assert!(error(&many.join(",")).contains("more than 256"));
}

/// Draws `n` requests' models with `seed`: how many went to each, in the mix's order.
fn tally(m: &ModelMix, seed: u64, n: u64) -> Vec<u64> {
    let mut counts = vec![0; m.models().len()];
    for serial in 0..n {
        let name = m.pick(seed, serial);
        let i = m
            .names()
            .position(|x| x == name)
            .expect("a model of the mix");
        counts[i] += 1;
    }
    counts
}

#[test]
fn draws_follow_the_weights_within_binomial_bounds() {
    let m = mix("base:70,adapter-a:20,adapter-b:10");
    let n = 20_000;
    for seed in [0, 1, 7, 0xdead_beef] {
        let counts = tally(&m, seed, n);
        for (count, model) in counts.iter().zip(m.models()) {
            let expected = n as f64 * model.share;
            let sd = (expected * (1.0 - model.share)).sqrt();
            // 5 standard deviations: a correct draw fails this about once in 3 million.
            assert!(
                (*count as f64 - expected).abs() < 5.0 * sd,
                "seed {seed}: {counts:?} for {:?}",
                m.models()
            );
        }
    }
}

#[test]
fn draws_are_exactly_reproducible_from_the_seed() {
    let m = mix("base:70,adapter-a:20,adapter-b:10");
    let run = |seed| -> Vec<&str> { (0..500).map(|s| m.pick(seed, s)).collect() };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
    // A session's draw is its own: the same seed and id give the same model.
    let sessions = |seed| -> Vec<&str> { (0..200).map(|id| m.pick_session(seed, id)).collect() };
    assert_eq!(sessions(5), sessions(5));
    assert!(sessions(5).contains(&"adapter-b"));
}

#[test]
fn warmups_go_to_each_model_in_turn() {
    let m = mix("base:70,adapter-a:20,adapter-b:10");
    let warm: Vec<&str> = (0..4).map(|i| m.warmup(i)).collect();
    assert_eq!(warm, ["base", "adapter-a", "adapter-b", "base"]);
}
