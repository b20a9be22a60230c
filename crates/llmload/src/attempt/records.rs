//! `requests.jsonl`: records appended one flushed line at a time, and read back one line at a
//! time.

use crate::error::Context;
use crate::record::Record;
use std::io::{BufRead, Write};
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

    /// Writes one record and flushes it to the file.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.file, record)?;
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

/// Reads a `requests.jsonl` file one line at a time, handing each record to `f`, so that a long
/// run's file is never held whole. A last line cut short (a run killed while writing it, with no
/// newline after it) is left out; any other line that is not a record is an error.
pub fn for_each_record(path: &Path, mut f: impl FnMut(Record)) -> crate::error::Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line.trim()) {
            Ok(record) => f(record),
            Err(_) if !line.ends_with('\n') => break,
            Err(e) => {
                return Err(e).with_context(|| format!("{}:{number}: not a record", path.display()))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
