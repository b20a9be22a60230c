//! The llmload binary run as a child with a bound on its time, signals sent to it, and the
//! files a folder holds.

use super::*;

/// How an llmload process ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// From start to exit.
    pub elapsed: Duration,
}

/// The llmload binary running as a child; killed if dropped before it ends.
pub(crate) struct Running {
    child: Child,
    started: Instant,
    readers: Option<(JoinHandle<String>, JoinHandle<String>)>,
}

fn read_all(mut from: impl std::io::Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl Running {
    /// Starts `llmload ARGS…` (without `LLMLOAD_API_KEY` from the environment).
    pub(crate) fn start(args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_llmload"))
            .args(args)
            .env_remove("LLMLOAD_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start llmload");
        let stdout = read_all(child.stdout.take().expect("piped stdout"));
        let stderr = read_all(child.stderr.take().expect("piped stderr"));
        Running {
            child,
            started: Instant::now(),
            readers: Some((stdout, stderr)),
        }
    }

    /// Sends the signal `name` (`TERM`, `KILL`, …) with `kill`.
    pub(crate) fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits for the exit; past `limit` the process is killed and the test fails.
    pub(crate) fn wait(mut self, limit: Duration) -> Finished {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll the child") {
                break status;
            }
            if self.started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let (stdout, stderr) = self.output();
                panic!("llmload still ran after {limit:?}\nstdout: {stdout}\nstderr: {stderr}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let elapsed = self.started.elapsed();
        let (stdout, stderr) = self.output();
        Finished {
            code: status.code(),
            stdout,
            stderr,
            elapsed,
        }
    }

    fn output(&mut self) -> (String, String) {
        let (stdout, stderr) = self.readers.take().expect("output read once");
        (
            stdout.join().expect("stdout reader"),
            stderr.join().expect("stderr reader"),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.readers.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `llmload ARGS…`, which must end within `limit`.
pub(crate) fn llmload_within(args: &[&str], limit: Duration) -> Finished {
    Running::start(args).wait(limit)
}

/// Every file under `dir` (none when it does not exist).
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Whether `dir` holds nothing at all (or does not exist).
pub(crate) fn is_empty_or_absent(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none())
}

/// Waits until `condition` holds, for at most `limit`; whether it did.
pub(crate) fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}
