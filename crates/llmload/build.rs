//! Orders the release binary's functions: those a load runs (listed in `link/functions.txt`,
//! hottest first, by `scripts/order-functions.sh`) are laid out together at the start of its
//! code. The kernel maps a program's code in 64 KiB windows around each page it touches; with the
//! functions a run needs scattered over the whole binary, nearly all of it ended up resident.
//! Only where the linker is known to be LLD (Rust 1.90 and later link
//! `x86_64-unknown-linux-gnu` with it unless told otherwise); elsewhere the binary is linked
//! as it always was. A name the build no longer has is skipped.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=link/functions.txt");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || ["linker", "fuse-ld", "link-self-contained"]
            .iter()
            .any(|f| flags.contains(f));
    if !release || target != "x86_64-unknown-linux-gnu" || own_linker || !lld_by_default() {
        return;
    }
    let list = format!(
        "{}/link/functions.txt",
        env::var("CARGO_MANIFEST_DIR").unwrap_or_default()
    );
    println!("cargo:rustc-link-arg-bin=llmload=-Wl,--symbol-ordering-file={list}");
    println!("cargo:rustc-link-arg-bin=llmload=-Wl,--no-warn-symbol-ordering");
}

/// Whether this rustc links `x86_64-unknown-linux-gnu` with LLD by default (1.90 and later).
fn lld_by_default() -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (…)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.split_whitespace().nth(1).unwrap_or("").split('.');
    version.next() == Some("1") && version.next().and_then(|m| m.parse::<u32>().ok()) >= Some(90)
}
