//! Headless Chromium for the tests of `report.html`: the page rendered offline, what Chromium
//! printed (the DOM, a screenshot) and every address it asked for.
#![allow(dead_code)]

use std::path::Path;

/// Chromium's own background requests (updates, sign-in, clock), which are not the page's.
const BROWSER_HOSTS: [&str; 3] = ["google.com/", "googleapis.com/", "gvt1.com/"];

/// Fails, saying how to install it, where Debian's `chromium` is not installed: a test of the
/// page fails rather than pass unseen.
pub(crate) fn assert_installed() {
    let installed = std::process::Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        installed,
        "chromium is not installed: run scripts/test.sh, which installs it"
    );
}

/// Runs headless Chromium on `page` with `args` (`--dump-dom`, `--screenshot=…`,
/// `--window-size=…`) and the network cut off: every request goes to a closed loopback proxy
/// and no name resolves. Returns what it printed and the URLs requested.
pub(crate) fn run(page: &Path, profile: &Path, args: &[&str]) -> (String, Vec<String>) {
    let tag: String = args
        .concat()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(40)
        .collect();
    let netlog = profile.join(format!("netlog-{tag}.json"));
    let output = std::process::Command::new("timeout")
        .args([
            "120",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .args([
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .args(["--disable-background-networking", "--no-first-run"])
        .arg(format!(
            "--user-data-dir={}",
            profile.join("profile").display()
        ))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--virtual-time-budget=3000")
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(output.status.success(), "chromium failed");
    let log = std::fs::read_to_string(&netlog).unwrap_or_default();
    let urls = log
        .split("\"url\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|url| !url.starts_with("file://"))
        .filter(|url| !BROWSER_HOSTS.iter().any(|host| url.contains(host)))
        .map(String::from)
        .collect();
    (String::from_utf8_lossy(&output.stdout).into_owned(), urls)
}
