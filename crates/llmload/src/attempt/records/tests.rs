//! Unit tests of `attempt/records.rs`.

use super::*;
use crate::record::ok_record;

#[test]
fn a_last_line_cut_short_is_left_out_but_a_bad_line_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("requests.jsonl");
    let line = serde_json::to_string(&ok_record(1.0, None, vec![5.0, 7.0])).expect("json");
    std::fs::write(&path, format!("{line}\n{line}\n{}", &line[..40])).expect("write");
    assert_eq!(read_records(&path).expect("readable").len(), 2);
    std::fs::write(&path, format!("{line}\n{}\n{line}\n", &line[..40])).expect("write");
    let error = read_records(&path).expect_err("a bad line in the middle");
    assert!(
        format!("{error:#}").contains(":2: not a record"),
        "{error:#}"
    );
}
