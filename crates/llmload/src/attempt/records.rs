//! `requests.jsonl`: records appended one flushed line at a time, and read back one line at a
//! time.

use crate::error::Context;
use crate::record::Record;
use std::io::{BufRead, Read, Write};
use std::path::Path;

/// Appends records to `requests.jsonl`, one flushed line per record.
pub struct RecordSink {
    file: std::io::BufWriter<std::fs::File>,
}

impl RecordSink {
    /// Creates (or appends to) the file at `path`.
    pub fn create(path: &Path) -> std::io::Result<RecordSink> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(RecordSink {
            file: std::io::BufWriter::new(file),
        })
    }

    /// Writes one record and flushes it to the file, every secret sent scrubbed from it (a
    /// server may have echoed one into an error).
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let line = serde_json::to_string(record)?;
        self.file
            .write_all(crate::secrets::scrub(&line).as_bytes())?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }
}

/// Reads every record of a `requests.jsonl` file.
pub fn read_records(path: &Path) -> crate::error::Result<Vec<Record>> {
    let mut records = Vec::new();
    for_each_record(path, |r| records.push(r))?;
    Ok(records)
}

/// The longest line read back: a record of ten million token events is about 100 MB.
const MAX_LINE_BYTES: u64 = 512 << 20;

/// Reads a `requests.jsonl` file one line at a time, handing each record to `f`, so that a long
/// run's file is never held whole. A last line cut short (a run killed while writing it, with no
/// newline after it, even inside a character) is left out; any other line that is not a record,
/// or whose values no request can have ([`Record::check`]), is an error naming its number.
pub fn for_each_record(path: &Path, mut f: impl FnMut(Record)) -> crate::error::Result<()> {
    let file = crate::files::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            break;
        }
        let whole = line.ends_with(b"\n");
        if !whole && u64::try_from(line.len()).unwrap_or(u64::MAX) > MAX_LINE_BYTES {
            return Err(crate::error::Error::Target(format!(
                "{}:{number}: a line longer than {MAX_LINE_BYTES} bytes: not a record",
                path.display()
            )));
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<Record>(line.trim_ascii()) {
            Ok(record) => {
                // An impossible record is named, never counted.
                record.check().map_err(|why| {
                    crate::error::Error::Target(format!(
                        "{}:{number}: not a record llmload wrote: {why}",
                        path.display()
                    ))
                })?;
                f(record);
            }
            Err(_) if !whole => break,
            Err(e) => {
                return Err(e).with_context(|| format!("{}:{number}: not a record", path.display()))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
