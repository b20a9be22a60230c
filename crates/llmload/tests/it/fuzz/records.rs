//! The `requests.jsonl` reader.

use super::*;

/// A seconds or milliseconds figure a run can measure: finite, not negative, mostly ordinary.
fn figure() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => 0.0..1e6f64,
        1 => 0.0..1e7f64,
        1 => Just(0.0),
    ]
}

/// A value no run measures: negative, or past any duration.
fn impossible() -> impl Strategy<Value = f64> {
    prop_oneof![-1e308..-1e-9f64, 1e12..1e308f64,]
}

/// Text with anything in it: quotes, backslashes, control and multi-byte characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,16}",
        any::<String>().prop_map(|s| s.chars().take(16).collect())
    ]
}

/// A record with arbitrary values in every field, built from JSON as `requests.jsonl` holds it.
fn record() -> impl Strategy<Value = Record> {
    use prop::option::of;
    let statuses = ["ok", "invalid", "error", "cancelled"];
    let kinds = [
        "cancelled",
        "connect",
        "disconnected",
        "http",
        "invalid",
        "malformed",
        "server_error",
        "timeout",
    ];
    (
        (
            text(),
            any::<bool>(),
            of(any::<u32>()),
            any::<u32>(),
            of(figure()),
            figure(),
        ),
        (of(figure()), of(figure()), of(figure()), of(figure())),
        (
            any::<u32>(),
            any::<u32>(),
            of(any::<u32>()),
            of(any::<u32>()),
            any::<u32>(),
            of(any::<u32>()),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            prop::sample::select(statuses.to_vec()),
            any::<bool>(),
        ),
        (
            of(prop::sample::select(kinds.to_vec())),
            of(text()),
            prop::collection::vec(text(), 0..3),
        ),
        (
            prop::collection::vec(figure(), 0..8),
            prop::collection::vec(any::<u32>(), 0..4),
        ),
    )
        .prop_map(|(a, b, c, d, e, f)| {
            // Marks in their order, as a run writes them: the first token and the end after
            // the send, the TTFT within the end-to-end time.
            let after = |ms: Option<f64>| ms.map(|ms| a.5 + ms / 1e3);
            let (ttft, e2e) = match (b.2, b.3) {
                (Some(x), Some(y)) => (Some(x.min(y)), Some(x.max(y))),
                other => other,
            };
            let value = json!({
                "case": a.0, "phase": if a.1 { "warmup" } else { "measured" }, "round": a.2,
                "index": a.3, "scheduled_s": a.4, "sent_s": a.5,
                "first_token_s": after(b.0), "done_s": after(b.1.map(|d| d.max(b.0.unwrap_or(0.0)))), "ttft_ms": ttft,
                "e2e_ms": e2e,
                "input_tokens": c.0, "requested_output_tokens": c.1, "prompt_tokens": c.2,
                "cached_tokens": c.3, "shared_tokens": c.4, "output_tokens": c.5,
                "token_events": d.0, "streamed_tokens": d.1, "status": d.2, "verified": d.3,
                "error_kind": e.0, "error": e.1, "notes": e.2,
                "event_ms": f.0, "event_tokens": f.1,
            });
            serde_json::from_value(value).expect("the template is a record")
        })
}

/// A file holding `bytes`, in a folder of its own.
fn file_of(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("requests.jsonl");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .expect("the file is written");
    (dir, path)
}

/// Reads `path` with both readers, which must agree.
fn read_both(path: &std::path::Path) -> Result<Result<Vec<Record>, String>, TestCaseError> {
    let mut each = Vec::new();
    let streamed = for_each_record(path, |r| each.push(r)).map_err(|e| e.to_string());
    let read = read_records(path).map_err(|e| e.to_string());
    prop_assert_eq!(streamed.clone().map(|()| each), read.clone());
    Ok(read)
}

/// Lines of records, as `RecordSink` writes them.
fn lines_of(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| serde_json::to_string(r).expect("a record serialises"))
        .collect()
}

/// Whole record lines mixed with blank lines, CRLF endings, garbage and invalid UTF-8.
fn record_file_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        2 => record().prop_map(|r| serde_json::to_vec(&r).expect("a record serialises")),
        1 => record().prop_flat_map(|r| {
            let bytes = serde_json::to_vec(&r).expect("a record serialises");
            let len = bytes.len();
            (Just(bytes), 0..len).prop_map(|(b, cut)| b[..cut].to_vec())
        }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => prop::sample::select(vec![&b""[..], b" \t", b"{}", b"null", b"\xff\xfe", b"\xe2\x89"])
            .prop_map(<[u8]>::to_vec),
    ];
    let ending = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\n\n", b""]);
    prop::collection::vec((line, ending), 0..8).prop_map(|lines| {
        lines
            .into_iter()
            .flat_map(|(l, e)| [l, e.to_vec()].concat())
            .collect()
    })
}

/// The line number of a "…:N: not a record" message.
fn bad_line(message: &str, path: &str) -> Option<usize> {
    let rest = message.strip_prefix(path)?.strip_prefix(':')?;
    let (number, rest) = rest.split_once(':')?;
    rest.starts_with(" not a record")
        .then(|| number.parse().ok())?
}

proptest! {
    /// A file of any bytes: the readers never panic and agree; an error names the file, and a
    /// line that is not a record is named by a line number the file has.
    #[test]
    fn record_files_of_any_bytes_never_panic(
        bytes in prop_oneof![record_file_bytes(), prop::collection::vec(any::<u8>(), 0..2048)],
    ) {
        let (_dir, path) = file_of(&bytes);
        let shown = path.display().to_string();
        if let Err(message) = read_both(&path)? {
            prop_assert!(message.contains(&shown), "{}", message);
            if message.contains("not a record") {
                let number = bad_line(&message, &shown);
                let lines = bytes.split(|&b| b == b'\n').count();
                prop_assert!(number.is_some_and(|n| (1..=lines).contains(&n)), "{}", message);
            }
        }
    }

    /// Every error names the line it is about, whatever the bytes.
    #[test]
    fn record_file_errors_name_the_line(
        bytes in prop_oneof![record_file_bytes(), prop::collection::vec(any::<u8>(), 0..2048)],
    ) {
        let (_dir, path) = file_of(&bytes);
        let shown = path.display().to_string();
        if let Err(message) = read_both(&path)? {
            prop_assert!(bad_line(&message, &shown).is_some(), "{}", message);
        }
    }

    /// Whole records, blank lines among them, then a last line cut short at a character
    /// boundary (a run killed while writing it): exactly the whole records.
    #[test]
    fn whole_records_then_a_cut_line_at_a_char_boundary(
        records in prop::collection::vec(record(), 0..6),
        last in record(),
        cut in any::<Index>(),
        crlf in any::<bool>(),
        blank in prop::option::of(any::<Index>()),
    ) {
        let last = serde_json::to_string(&last).expect("a record serialises");
        let boundaries: Vec<usize> = (0..last.len()).filter(|&i| last.is_char_boundary(i)).collect();
        let cut = boundaries[cut.index(boundaries.len())];
        let bytes = record_file(&records, crlf, blank, &last.as_bytes()[..cut]);
        let (_dir, path) = file_of(&bytes);
        prop_assert_eq!(read_both(&path)?, Ok(records));
    }

    /// Whole records then a last line cut short at any byte, perhaps inside a multi-byte
    /// character of a server's error message: exactly the whole records.
    #[test]
    fn whole_records_then_a_cut_line_anywhere(
        records in prop::collection::vec(record(), 0..6),
        last in record(),
        cut in any::<Index>(),
        crlf in any::<bool>(),
    ) {
        let last = serde_json::to_vec(&last).expect("a record serialises");
        let cut = cut.index(last.len());
        let bytes = record_file(&records, crlf, None, &last[..cut]);
        let (_dir, path) = file_of(&bytes);
        prop_assert_eq!(read_both(&path)?, Ok(records));
    }

    /// A line that is not a record, anywhere but last-and-unterminated, is an error naming the
    /// file and that line.
    #[test]
    fn a_bad_whole_line_is_named(
        records in prop::collection::vec(record(), 0..6),
        bad in "[ -~]{1,40}".prop_filter("not blank", |s| !s.trim().is_empty()),
        at in any::<Index>(),
    ) {
        let mut lines = lines_of(&records);
        let at = at.index(lines.len() + 1);
        lines.insert(at, bad);
        let bytes: Vec<u8> = lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
        let (_dir, path) = file_of(&bytes);
        let expected = format!("{}:{}: not a record", path.display(), at + 1);
        let read = read_both(&path)?;
        prop_assert!(read.as_ref().is_err_and(|m| m.starts_with(&expected)), "{:?}", read);
    }
}

proptest! {
    /// A whole record with one value no run measures (a negative or absurd time, an end before
    /// its send), anywhere in the file: an error naming its line, never a record read.
    #[test]
    fn an_impossible_record_is_named_by_its_line(
        records in prop::collection::vec(record(), 1..6),
        at in any::<Index>(),
        field in prop::sample::select(vec!["sent_s", "ttft_ms", "e2e_ms", "done_s", "event_ms"]),
        value in impossible(),
    ) {
        let mut lines: Vec<Value> = records
            .iter()
            .map(|r| serde_json::to_value(r).expect("a record serialises"))
            .collect();
        let at = at.index(lines.len());
        lines[at][field] = if field == "event_ms" { json!([value]) } else { json!(value) };
        if field == "done_s" {
            // An end before the send, by the send's own measure.
            lines[at]["sent_s"] = json!(value.abs().min(1e6) + 1.0);
            lines[at][field] = json!(0.5);
        }
        let bytes: Vec<u8> = lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
        let (_dir, path) = file_of(&bytes);
        let expected = format!("{}:{}: not a record llmload wrote", path.display(), at + 1);
        let read = read_both(&path)?;
        prop_assert!(read.as_ref().is_err_and(|m| m.starts_with(&expected)), "{:?}", read);
    }
}

/// `records` one a line (CRLF or LF), a blank line perhaps among them, then `last` without a
/// line ending.
fn record_file(records: &[Record], crlf: bool, blank: Option<Index>, last: &[u8]) -> Vec<u8> {
    let mut lines = lines_of(records);
    if let Some(at) = blank {
        lines.insert(at.index(lines.len() + 1), "  ".to_owned());
    }
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut bytes: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}{ending}").into_bytes())
        .collect();
    bytes.extend_from_slice(last);
    bytes
}
