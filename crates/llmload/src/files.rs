//! Reading a file the user names, bounded by the read itself and by a deadline: a size that the
//! file system reports says nothing of a device or a pipe (`/dev/zero`, `<(cmd)`), which would be
//! read until memory runs out, and a FIFO that no one writes to would hold a plain `open` for
//! ever. Every input file llmload reads (a campaign, a corpus, a trace or dataset, an attempt's
//! files, another tool's results, a thresholds file) is opened here.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::time::{Duration, Instant};

/// The most bytes read of an input file whose own bound is not smaller: 512 MiB.
pub const MAX_INPUT_BYTES: u64 = 512 << 20;

/// How long a pipe or a FIFO may stay silent (no writer yet, or a writer that says nothing)
/// before its read is given up.
pub const SILENCE: Duration = Duration::from_secs(10);

/// A file opened for reading without blocking on a FIFO that has no writer. A regular file
/// reads as usual; a pipe, FIFO, socket or device is read without blocking, and a stream that
/// stays silent for [`SILENCE`] (no writer ever came, or it says nothing) is given up.
pub struct Input {
    file: std::fs::File,
    /// Not a regular file: a read that finds nothing waits, within `silence`.
    stream: bool,
    /// The longest a stream may stay silent.
    silence: Duration,
    /// Whether any byte has been read: before the first, an end of file on a FIFO means that
    /// no writer has come yet.
    started: bool,
}

/// How often a silent stream is looked at again.
const LOOK_AGAIN: Duration = Duration::from_millis(5);

/// Opens `path` for reading: a FIFO is opened without waiting for a writer.
pub fn open(path: &Path) -> std::io::Result<Input> {
    open_with(path, SILENCE)
}

fn open_with(path: &Path, silence: Duration) -> std::io::Result<Input> {
    // `O_NONBLOCK` changes nothing for a regular file's reads; a FIFO's open returns at once.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    Ok(Input {
        file,
        stream: kind.is_fifo() || kind.is_char_device() || kind.is_socket(),
        silence,
        started: false,
    })
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.stream {
            return self.file.read(buf);
        }
        let deadline = Instant::now() + self.silence;
        loop {
            let silent = match self.file.read(buf) {
                // A FIFO with no writer yet reads as ended, as one whose writer has gone.
                Ok(0) => !self.started && !buf.is_empty(),
                Ok(n) => {
                    self.started = true;
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
                Err(e) => return Err(e),
            };
            if !silent {
                return Ok(0);
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "nothing to read for {} s (a pipe or FIFO with no writer?)",
                        self.silence.as_secs_f64()
                    ),
                ));
            }
            std::thread::sleep(LOOK_AGAIN);
        }
    }
}

/// The file's bytes, or `Ok(None)` when it holds more than `max`: at most `max + 1` are read.
pub fn read_at_most(path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    read_at_most_from(open(path)?, max)
}

fn read_at_most_from(input: Input, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    input.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// The bytes of an input file of at most [`MAX_INPUT_BYTES`]; a larger one (or an endless
/// device) is an error that says so, of the kind `InvalidData`.
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    read_at_most(path, MAX_INPUT_BYTES)?.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "more than the {} MiB an input file may hold",
                MAX_INPUT_BYTES >> 20
            ),
        )
    })
}

/// The text of an input file of at most [`MAX_INPUT_BYTES`]: [`std::fs::read_to_string`]
/// bounded, and never left waiting on a FIFO.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Paths being written (a temporary file before its rename, a merge's folder before it is
/// moved into place), removed by [`remove_scratch_for_exit`] when a stop signal ends the
/// process, or by [`remove_scratch`] when the command fails.
static SCRATCH: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

fn scratch_list() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    SCRATCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Notes that `path` is being written and is not yet in its place.
pub fn scratch(path: &Path) {
    scratch_list().push(path.to_path_buf());
}

/// Notes that `path` is in its place (or gone): a stop no longer removes it.
pub fn done_with(path: &Path) {
    scratch_list().retain(|p| p != path);
}

/// Removes every path still being written (a file, or a folder with all it holds): what a
/// command that failed had begun. Returns how many were removed.
pub fn remove_scratch() -> usize {
    remove_listed(&mut scratch_list())
}

/// As [`remove_scratch`], for a stop signal that ends the process: the list stays held until
/// the process has ended, so that no write begun meanwhile can be noted and left half-done.
pub fn remove_scratch_for_exit() -> usize {
    let mut list = scratch_list();
    let removed = remove_listed(&mut list);
    std::mem::forget(list);
    removed
}

/// Removes every path of `list` (a folder with all it holds), emptying it; how many were.
fn remove_listed(list: &mut Vec<std::path::PathBuf>) -> usize {
    list.drain(..)
        .filter(|p| {
            if p.is_dir() {
                std::fs::remove_dir_all(p).is_ok()
            } else {
                std::fs::remove_file(p).is_ok()
            }
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_never_ends_is_cut_at_the_bound() {
        let zero = std::path::Path::new("/dev/zero");
        assert!(read_at_most(zero, 1 << 16).expect("readable").is_none());
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").expect("write");
        assert_eq!(
            read_at_most(&path, 5).expect("readable"),
            Some(b"12345".to_vec())
        );
        assert!(read_at_most(&path, 4).expect("readable").is_none());
        assert_eq!(read_text(&path).expect("text"), "12345");
    }

    #[test]
    fn an_endless_device_is_refused_at_the_input_bound_in_words() {
        // /dev/urandom: another endless device than /dev/zero, and not UTF-8 either.
        let error = read_text(Path::new("/dev/urandom")).expect_err("endless");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("512 MiB"), "{error}");
    }

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        path
    }

    #[test]
    fn a_fifo_with_no_writer_is_given_up_at_its_deadline() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = fifo(dir.path());
        let started = Instant::now();
        let input = open_with(&path, Duration::from_millis(200)).expect("opens at once");
        let error = read_at_most_from(input, 1024).expect_err("no writer");
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(30), "never hangs");
    }

    #[test]
    fn what_is_still_being_written_is_removed_on_a_stop_and_nothing_else() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (temp, staged, placed) = (
            dir.path().join(".x.tmp"),
            dir.path().join(".attempt.partial"),
            dir.path().join("report.md"),
        );
        std::fs::write(&temp, "half").expect("write");
        std::fs::create_dir(&staged).expect("mkdir");
        std::fs::write(staged.join("requests.jsonl"), "{}").expect("write");
        std::fs::write(&placed, "whole").expect("write");
        scratch(&placed);
        done_with(&placed);
        assert!(
            !scratch_list().contains(&placed),
            "a placed file is no scratch"
        );
        scratch(&temp);
        assert!(scratch_list().contains(&temp));
        done_with(&temp);
        // (On a list of its own: the process-wide one is other tests' too.)
        let removed = remove_listed(&mut vec![temp.clone(), staged.clone()]);
        assert_eq!(removed, 2);
        assert!(!temp.exists() && !staged.exists() && placed.exists());
    }

    #[test]
    fn a_fifo_whose_writer_comes_later_is_read_whole() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = fifo(dir.path());
        let input = open_with(&path, Duration::from_secs(20)).expect("opens at once");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                std::fs::write(path, b"{\"a\": 1}\n").expect("write");
            })
        };
        let read = read_at_most_from(input, 1024).expect("read");
        writer.join().expect("writer");
        assert_eq!(read, Some(b"{\"a\": 1}\n".to_vec()));
    }
}
