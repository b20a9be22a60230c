use super::*;
use crate::workload::graph::parse;

#[test]
fn the_same_spec_makes_the_same_graph_and_another_seed_another() {
    let spec: Spec = "sessions=4,loops=2-5,seed=7".parse().expect("a spec");
    assert_eq!(lines(&spec), lines(&spec));
    let other: Spec = "sessions=4,loops=2-5,seed=8".parse().expect("a spec");
    assert_ne!(lines(&spec), lines(&other));
}

#[test]
fn a_made_graph_reads_back_with_every_check_of_a_file() {
    let spec: Spec = "sessions=6,loops=3-6,fanout_every=2,fanout=2-4,sub_loops=1-3,compact=3"
        .parse()
        .expect("a spec");
    let graph = parse(&lines(&spec)).expect("the graph reads back");
    assert_eq!(graph.sessions.len(), 6);
    for s in &graph.sessions {
        let main: Vec<&crate::workload::graph::GraphCall> =
            s.calls.iter().filter(|c| !c.name.contains('/')).collect();
        // The first call, 3 to 6 loop calls, the answer.
        assert!((5..=8).contains(&main.len()), "{}", main.len());
        assert_eq!(s.calls[s.final_call].name, "answer");
        // Fan-outs at loop calls 2, 4, 6: 2 to 4 sub-agents, each 1 to 3 calls, all after the
        // same call, on fresh contexts.
        for k in [2, 4, 6] {
            let name = format!("m{}", k + 1);
            let Some(at) = s.calls.iter().position(|c| c.name == name) else {
                continue;
            };
            let firsts: Vec<&crate::workload::graph::GraphCall> = s
                .calls
                .iter()
                .filter(|c| c.name.starts_with(&format!("{name}/")) && c.name.ends_with("/c1"))
                .collect();
            assert!((2..=4).contains(&firsts.len()), "{name}: {}", firsts.len());
            assert!(firsts.iter().all(|c| c.context.is_none()));
            let parents: Vec<&Vec<usize>> = firsts.iter().map(|c| &c.after).collect();
            assert!(
                parents.windows(2).all(|p| p[0] == p[1]),
                "fanned out together"
            );
            // The agent's call after them waits for every sub-agent's last call.
            assert_eq!(s.calls[at].after.len(), firsts.len(), "{name}");
        }
        // Compaction: every third call of the agent from its last fresh context starts another.
        let fresh = main.iter().filter(|c| c.context.is_none()).count();
        assert!(
            fresh >= 2,
            "the first call and at least one compaction: {fresh}"
        );
    }
}

#[test]
fn a_compacted_context_holds_the_system_prompt_and_the_summary() {
    let spec: Spec = "sessions=1,loops=4,fanout_every=0,compact=2,system=100,summary=40,task=10"
        .parse()
        .expect("a spec");
    let graph = parse(&lines(&spec)).expect("reads back");
    let calls = &graph.sessions[0].calls;
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["m1", "m2", "m3", "m4", "m5", "answer"]);
    assert_eq!((calls[0].new_tokens, calls[0].context), (110, None));
    assert_eq!(calls[1].context, Some(0));
    // After 2 calls on one context, the third starts a fresh one: system + summary.
    assert_eq!((calls[2].new_tokens, calls[2].context), (140, None));
    assert_eq!(calls[3].context, Some(2));
    assert_eq!((calls[4].new_tokens, calls[4].context), (140, None));
    assert_eq!(calls[5].context, Some(4));
}

#[test]
fn a_bad_spec_is_refused_by_name() {
    for (spec, said) in [
        ("loops=5-2", "the high end is below the low end"),
        ("width=3", "not a key of --dag-synth"),
        ("sessions", "write KEY=VALUE"),
        ("tool=soon", "tool=soon"),
        ("output=0", "at least 1"),
        ("sub_loops=0", "at least 1 call"),
        ("loops=20000", "a whole number from 0 to 10000"),
    ] {
        let e = spec.parse::<Spec>().expect_err(spec);
        assert!(e.contains(said), "{spec}: {e}");
    }
}
