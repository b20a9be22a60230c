//! Reading a file the user names, bounded by the read itself: a size that the file system
//! reports says nothing of a device or a pipe (`/dev/zero`, `<(cmd)`), which would be read until
//! memory runs out.

use std::io::Read as _;
use std::path::Path;

/// The file's bytes, or `Ok(None)` when it holds more than `max`: at most `max + 1` are read.
pub fn read_at_most(path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::read_at_most;

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
    }
}
