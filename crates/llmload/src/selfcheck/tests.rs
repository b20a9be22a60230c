//! Unit tests of `selfcheck.rs`.

use super::*;

#[test]
fn proc_stat_lines_give_cpu_seconds() {
    let line = "1234 (tokio rt (x)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4";
    assert_eq!(cpu_seconds(line), Some(3.0));
    assert_eq!(cpu_seconds("garbage"), None);
}

#[tokio::test]
async fn the_sampler_reads_this_process() {
    let stop = CancellationToken::new();
    let task = tokio::spawn(sample(Duration::from_millis(20), stop.clone(), None));
    tokio::time::sleep(Duration::from_millis(110)).await;
    stop.cancel();
    let samples = task.await.expect("sampler");
    assert!(samples.len() >= 3, "{samples:?}");
    if std::path::Path::new("/proc/self/stat").exists() {
        assert!(samples.iter().all(|s| s.cpu_cores.is_some()));
    }
}
