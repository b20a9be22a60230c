//! A TCP connection whose reads keep the kernel's arrival stamp of the latest bytes, so that a
//! request's fixed schedule starts when its last byte reached the machine, not when the busy
//! simulator got round to reading it.

use llmload_stamp as stamp;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// When the latest bytes of a connection arrived (shared with its request handler).
pub(crate) type Arrival = Arc<Mutex<Option<Instant>>>;

/// A connection that records [`Arrival`] on every read.
pub(crate) struct Stamped {
    inner: TcpStream,
    arrival: Arrival,
}

impl Stamped {
    /// Wraps `inner`, asking the kernel for receive stamps.
    pub(crate) fn new(inner: TcpStream) -> (Stamped, Arrival) {
        stamp::enable(&inner);
        let arrival = Arrival::default();
        (
            Stamped {
                inner,
                arrival: Arc::clone(&arrival),
            },
            arrival,
        )
    }
}

impl AsyncRead for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let inner = &this.inner;
            match inner.try_io(Interest::READABLE, || stamp::receive(inner, unfilled)) {
                Ok((n, age)) => {
                    if n > 0 {
                        if let Ok(mut arrival) = this.arrival.lock() {
                            *arrival = Some(stamp::arrived(Instant::now(), age));
                        }
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // Not readable after all: wait for readiness again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Stamped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_request_is_timed_when_it_arrived_not_when_it_was_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let (client, accepted) = tokio::join!(TcpStream::connect(address), listener.accept());
        let (mut client, (server, _)) = (client.expect("connect"), accepted.expect("accept"));
        let (mut server, arrival) = Stamped::new(server);
        // The kernel turns stamping on a moment after the first socket asks: a few tries.
        let mut waits = Vec::new();
        for _ in 0..20 {
            let before = Instant::now();
            client
                .write_all(b"POST / HTTP/1.1\r\n\r\n")
                .await
                .expect("write");
            // The simulator is busy for 80 ms before it reads.
            std::thread::sleep(Duration::from_millis(80));
            let mut buffer = [0u8; 64];
            let n = server.read(&mut buffer).await.expect("read");
            assert_eq!(&buffer[..n], b"POST / HTTP/1.1\r\n\r\n");
            let arrived = arrival.lock().expect("lock").expect("a read was recorded");
            assert!(
                arrived >= before - Duration::from_millis(2),
                "not before it was sent"
            );
            waits.push(Instant::now().duration_since(arrived));
            if waits
                .last()
                .is_some_and(|w| *w >= Duration::from_millis(75))
            {
                return;
            }
        }
        panic!("every read was timed when it returned, not at arrival: {waits:?}");
    }
}
