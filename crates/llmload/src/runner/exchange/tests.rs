//! Unit tests of `runner/exchange.rs`.

use super::*;

fn counters(p: u32, c: u32, o: u32) -> Counters {
    Counters {
        prompt_tokens: Some(p),
        cached_tokens: Some(c),
        output_tokens: Some(o),
    }
}

#[test]
fn verification_accepts_exact_uncached_responses() {
    let v = verify(&counters(128, 0, 32), 32, 128, 32, 0);
    assert!(v.verified && v.problems.is_empty() && v.notes.is_empty());
}

#[test]
fn verification_rejects_each_contradiction() {
    assert_eq!(
        verify(&counters(129, 0, 32), 32, 128, 32, 0).problems.len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 64, 32), 32, 128, 32, 0)
            .problems
            .len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 0, 7), 7, 128, 32, 0).problems.len(),
        1
    );
    assert_eq!(
        verify(&counters(100, 5, 7), 7, 128, 32, 0).problems.len(),
        3
    );
}

#[test]
fn missing_counters_leave_the_response_unverified() {
    let v = verify(&Counters::default(), 32, 128, 32, 0);
    assert!(!v.verified && v.problems.is_empty());
    let v = verify(&Counters::default(), 31, 128, 32, 0);
    assert_eq!(v.problems.len(), 1);
}

#[test]
fn stream_and_counter_disagreement_is_noted() {
    let v = verify(&counters(128, 0, 32), 30, 128, 32, 0);
    assert!(v.problems.is_empty() && v.notes.len() == 1);
}
