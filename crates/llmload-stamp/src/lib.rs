//! Kernel receive stamps on TCP sockets (`SO_TIMESTAMPNS`): when bytes reached this machine, not
//! when a busy process got round to reading them. The simulator anchors its fixed schedule on
//! them, and llmload's client times tokens with them.

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// A lag past this is not believed: the wall clock was stepped between the stamp and the read.
const MAX_BELIEVED_LAG: Duration = Duration::from_secs(10);

/// Asks the kernel to stamp the socket's received segments. The kernel turns stamping on a moment
/// after the first socket asks (a deferred switch), so the very first segments may go unstamped.
/// Returns whether the socket accepted.
pub fn enable<S: AsFd>(socket: &S) -> bool {
    setsockopt(socket, sockopt::ReceiveTimestampns, &true).is_ok()
}

/// One `recvmsg` into `buffer`: the bytes read and, when the kernel stamped them, how long
/// before now the latest segment read had arrived.
pub fn receive<S: AsRawFd>(socket: &S, buffer: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = [io::IoSliceMut::new(buffer)];
    let mut space = nix::cmsg_space!(TimeSpec);
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::empty(),
    )
    .map_err(io::Error::from)?;
    let stamp = msg.cmsgs().ok().and_then(|mut all| {
        all.find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
            _ => None,
        })
    });
    let age = stamp.filter(|_| msg.bytes > 0).and_then(age);
    Ok((msg.bytes, age))
}

/// How long ago (wall clock) the stamp `ts` was taken; `None` when it cannot be believed.
fn age(ts: TimeSpec) -> Option<Duration> {
    let secs = u64::try_from(ts.tv_sec()).ok()?;
    let nanos = u32::try_from(ts.tv_nsec()).ok()?;
    let stamped = UNIX_EPOCH + Duration::new(secs, nanos);
    let age = SystemTime::now()
        .duration_since(stamped)
        .unwrap_or_default();
    (age <= MAX_BELIEVED_LAG).then_some(age)
}

/// The monotonic instant `age` before `now`.
pub fn arrived(now: Instant, age: Option<Duration>) -> Instant {
    age.and_then(|a| now.checked_sub(a)).unwrap_or(now)
}
