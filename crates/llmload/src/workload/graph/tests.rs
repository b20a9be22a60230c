use super::*;

/// The repository's example: four sessions of a plan, three research calls fanned out after it
/// (100 ms), each extending the plan's context, and an answer after all three (200 ms).
const EXAMPLE: &str = include_str!("../../../../../docs/examples/agents.jsonl");

#[test]
fn the_example_reads_as_four_sessions_of_a_fan_out_and_a_fan_in() {
    let graph = parse(EXAMPLE).expect("the example");
    assert_eq!(graph.sessions.len(), 4);
    assert_eq!((graph.most_calls(), graph.calls()), (5, 20));
    let s = &graph.sessions[0];
    assert_eq!(s.name, "task-1");
    let names: Vec<&str> = s.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["plan", "research-1", "research-2", "research-3", "answer"]
    );
    assert_eq!(s.calls[1].after, [0]);
    assert_eq!(s.calls[1].wait, Duration::from_millis(100));
    assert_eq!(s.calls[1].context, Some(0));
    assert_eq!(s.calls[4].after, [1, 2, 3]);
    assert_eq!(s.calls[4].wait, Duration::from_millis(200));
    assert_eq!(s.final_call, 4);
    assert!(s.calls[0].extended && !s.calls[1].extended);
    // The answer: the plan's 96 tokens, its 16-token answer and 48 of its own; 16 out.
    assert_eq!(graph.longest(), (160, 16));
    assert_eq!(s.calls[0].context, None);
}

#[test]
fn ids_may_be_numbers_and_the_final_answer_is_the_last_call_none_waits_for() {
    let graph = parse(
        "{\"session\": 7, \"call\": 1, \"new_tokens\": 10, \"output_tokens\": 2}\n\n\
         {\"session\": 7, \"call\": 2, \"after\": [1], \"new_tokens\": 5, \"output_tokens\": 2}\n\
         {\"session\": 7, \"call\": 3, \"after\": [1], \"context\": 1, \"new_tokens\": 5, \
          \"output_tokens\": 2}\n\
         {\"session\": \"b\", \"call\": \"x\", \"new_tokens\": 3, \"output_tokens\": 1}\n",
    )
    .expect("a graph");
    let names: Vec<&str> = graph.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["7", "b"]);
    // Calls 2 and 3 both end the session; the later in the file is its final answer.
    assert_eq!(graph.sessions[0].final_call, 2);
    assert_eq!(graph.sessions[1].final_call, 0);
}

#[test]
fn a_graph_that_cannot_run_is_refused_with_its_line() {
    let call = |session: &str, call: &str, rest: &str| {
        format!(
            "{{\"session\": \"{session}\", \"call\": \"{call}\", \"new_tokens\": 4, \
             \"output_tokens\": 2{rest}}}\n"
        )
    };
    let cases = [
        (String::new(), "no call in the file"),
        ("not json\n".to_owned(), "line 1:"),
        (
            call("s", "a", ", \"colour\": 1"),
            "line 1: unknown field `colour`",
        ),
        (
            call("s", "a", "") + &call("s", "a", ""),
            "line 2: call \"a\" of session \"s\" appears twice (first on line 1)",
        ),
        (
            call("s", "a", ", \"after\": [\"z\"]"),
            "line 1: call \"a\" names \"z\" in after, not a call of session \"s\"",
        ),
        (
            call("s", "a", ", \"after\": [\"b\"]") + &call("s", "b", ", \"after\": [\"a\"]"),
            "waits for itself through its after",
        ),
        (
            call("s", "a", "")
                + &call("s", "b", "")
                + &call("s", "c", ", \"after\": [\"a\"], \"context\": \"b\""),
            "line 3: call \"c\"'s context \"b\" is not a call it waits for",
        ),
        (
            call("s", "a", ", \"wait_ms\": -1"),
            "line 1: wait_ms must be",
        ),
        (
            "{\"session\": \"s\", \"call\": \"a\", \"new_tokens\": 0, \"output_tokens\": 2}\n"
                .to_owned(),
            "line 1: new_tokens and output_tokens must be above 0",
        ),
        (call("s", "", ""), "line 1: a call id must be 1 to 128"),
        (
            call("s", "a", ", \"final\": true") + &call("s", "b", ", \"final\": true"),
            "line 2: session \"s\" has a second call marked final",
        ),
    ];
    for (text, said) in cases {
        let error = parse(&text).expect_err(&text);
        assert!(error.contains(said), "{text}: {error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }
}

#[test]
fn a_context_reached_through_other_calls_is_allowed() {
    let graph = parse(
        "{\"session\": \"s\", \"call\": \"a\", \"new_tokens\": 4, \"output_tokens\": 2}\n\
         {\"session\": \"s\", \"call\": \"b\", \"after\": [\"a\"], \"new_tokens\": 4, \
          \"output_tokens\": 2}\n\
         {\"session\": \"s\", \"call\": \"c\", \"after\": [\"b\"], \"context\": \"a\", \
          \"new_tokens\": 4, \"output_tokens\": 2}\n",
    )
    .expect("a graph");
    assert_eq!(graph.sessions[0].calls[2].context, Some(0));
}

/// The repository's example of the KV-cache tester's agentic traces: a request, two sub-agents
/// spawned after it (one of two requests, one of one), and a last request after both.
const AGENT_TRACE: &str = include_str!("../../../../../docs/examples/agent-trace.json");

/// The repository's example of AIPerf's trace rows with sessions.
const AIPERF_SESSIONS: &str = include_str!("../../../../../docs/examples/aiperf-sessions.jsonl");

#[test]
fn an_agent_trace_reads_as_sub_agents_fanned_out_and_joined() {
    let graph = parse(AGENT_TRACE).expect("the tester's layout");
    assert_eq!(graph.sessions.len(), 1);
    let s = &graph.sessions[0];
    assert_eq!(s.name, "coding-1");
    let names: Vec<&str> = s.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["r1", "sa1/r1", "sa1/r2", "sa2/r1", "r2"]);
    // The sub-agents start after the request before them, each on a fresh context.
    for k in [1, 3] {
        assert_eq!(s.calls[k].after, [0], "{}", s.calls[k].name);
        assert_eq!(s.calls[k].context, None);
        assert_eq!(s.calls[k].wait, Duration::ZERO);
    }
    assert_eq!((s.calls[1].new_tokens, s.calls[1].output_tokens), (64, 12));
    // Its second request holds the first's 64 + 12 and 24 of its own, 0.1 s after it.
    assert_eq!(s.calls[2].after, [1]);
    assert_eq!(s.calls[2].context, Some(1));
    assert_eq!(s.calls[2].new_tokens, 24);
    assert_eq!(s.calls[2].wait, Duration::from_millis(100));
    // The last request waits for its predecessor and both sub-agents, then its think time.
    assert_eq!(s.calls[4].after, [0, 2, 3]);
    assert_eq!(s.calls[4].wait, Duration::from_millis(200));
    assert_eq!(s.calls[4].context, Some(0));
    assert_eq!(s.calls[4].new_tokens, 160 - 96 - 16);
    assert_eq!(s.final_call, 4);
    // The same conversation on one line (JSONL, one conversation a line) reads the same.
    let value: serde_json::Value = serde_json::from_str(AGENT_TRACE).expect("JSON");
    assert_eq!(parse(&format!("{value}\n")).expect("one line"), graph);
}

#[test]
fn aiperf_rows_read_as_sessions_of_turns_after_their_delays() {
    let graph = parse(AIPERF_SESSIONS).expect("AIPerf's rows");
    let names: Vec<&str> = graph.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["chat-1", "chat-2", "row-5"]);
    let chat = &graph.sessions[0];
    assert_eq!(chat.calls.len(), 2);
    assert_eq!(chat.calls[1].after, [0]);
    assert_eq!(chat.calls[1].wait, Duration::from_millis(150));
    // 128 tokens hold the first turn's 80 and its 16-token answer: 32 of its own.
    assert_eq!(chat.calls[1].context, Some(0));
    assert_eq!(chat.calls[1].new_tokens, 32);
    // 40 tokens cannot hold the first turn's 64 + 16: a fresh prompt of 40.
    let other = &graph.sessions[1].calls[1];
    assert_eq!((other.context, other.new_tokens), (None, 40));
    assert_eq!(other.wait, Duration::from_millis(100));
    assert_eq!(graph.sessions[2].calls.len(), 1);
}

#[test]
fn other_tools_rows_that_carry_text_or_lack_lengths_are_refused_by_line() {
    let text =
        parse("{\"session_id\": \"s\", \"turns\": [{\"text\": \"hi\"}]}\n").expect_err("text rows");
    assert!(
        text.starts_with("line 1: AIPerf's multi_turn rows carry text"),
        "{text}"
    );
    let missing = parse(
        "{\"session_id\": \"s\", \"input_length\": 10, \"output_length\": 2}\n\
         {\"session_id\": \"s\", \"input_length\": 10}\n",
    )
    .expect_err("no output length");
    assert!(
        missing.starts_with("line 2: llmload replays lengths"),
        "{missing}"
    );
    let request = parse("{\"id\": \"c\", \"requests\": [{\"in\": 5}]}\n").expect_err("no out");
    assert!(
        request.contains("request r1 of conversation \"c\" needs \"in\" and \"out\""),
        "{request}"
    );
    let empty = parse("{\"id\": \"c\", \"requests\": []}\n").expect_err("no request");
    assert!(empty.contains("has no request"), "{empty}");
}
