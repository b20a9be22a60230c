//! The connection under a streamed exchange: plain TCP, or TLS driven by hand over it; every
//! read is timed by the kernel's receive stamp either way.
//!
//! TLS is rustls's connection state fed from the same stamped reads as plain HTTP: ciphertext is
//! read with [`read`], which gives the kernel stamp of the latest segment read, and the
//! plaintext it decrypts to takes that stamp. A token's time on `https://` is therefore when the
//! last segment of the TLS record that carried it reached this machine. The handshake is done
//! when the connection is opened, before any request goes on it, so it is never part of a
//! latency. Memory stays bounded: one read buffer, rustls's buffers under their limits, and
//! plaintext drained before more ciphertext is taken in. How late each stamped read came is
//! tallied in [`READ_LAG`] for the self-check.

use llmload_stamp as stamp;
use nix::sys::socket::{recv, MsgFlags};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use std::io::{self, Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The most plaintext, and the most ciphertext, a TLS connection queues for sending.
const SEND_LIMIT: usize = 64 * 1024;

/// Who a TLS connection goes to: the configuration, and the name the certificate must carry.
#[derive(Clone, Debug)]
pub struct TlsPeer {
    /// The client configuration (roots, `--insecure`).
    pub config: Arc<ClientConfig>,
    /// The server name (SNI, and what the certificate is checked against).
    pub name: ServerName<'static>,
}

/// How long a new connection took to set up, before any request went on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// From asking for the connection to its TCP handshake done (the name looked up first).
    pub connect: Duration,
    /// `https://`: from the TCP connection to the TLS handshake done.
    pub tls: Option<Duration>,
}

/// One connection to the target.
#[derive(Debug)]
pub struct Conn {
    tcp: TcpStream,
    tls: Option<Box<Tls>>,
    /// How the connection was set up, until the first request on it takes it.
    setup: Option<Setup>,
    /// Responses that ended cleanly on it.
    responses: u32,
}

/// The TLS side of a connection.
#[derive(Debug)]
struct Tls {
    session: ClientConnection,
    /// Ciphertext as read from the socket.
    incoming: Vec<u8>,
    /// Ciphertext on its way to the socket.
    outgoing: Vec<u8>,
    /// When the ciphertext read last arrived: the time of the plaintext it decrypted to.
    arrived: Instant,
}

impl Conn {
    /// Connects to `address` (`host:port`), with receive stamps and without Nagle's delay; over
    /// `tls`, the handshake is done before it returns.
    pub async fn open(address: &str, tls: Option<&TlsPeer>) -> io::Result<Conn> {
        let start = Instant::now();
        let tcp = TcpStream::connect(address).await?;
        let connected = Instant::now();
        let connect = connected.duration_since(start);
        // Requests must leave at once, not wait for Nagle's algorithm.
        tcp.set_nodelay(true)?;
        // Without kernel stamps (an exotic kernel), reads are timed when they return.
        stamp::enable(&tcp);
        let Some(peer) = tls else {
            return Ok(Conn {
                tcp,
                tls: None,
                setup: Some(Setup { connect, tls: None }),
                responses: 0,
            });
        };
        let mut session = ClientConnection::new(peer.config.clone(), peer.name.clone())
            .map_err(io::Error::other)?;
        session.set_buffer_limit(Some(SEND_LIMIT));
        let mut conn = Conn {
            tcp,
            tls: Some(Box::new(Tls {
                session,
                incoming: vec![0; READ_BUFFER],
                outgoing: Vec::new(),
                arrived: Instant::now(),
            })),
            setup: None,
            responses: 0,
        };
        conn.handshake().await?;
        conn.setup = Some(Setup {
            connect,
            tls: Some(connected.elapsed()),
        });
        Ok(conn)
    }

    /// Counts a response that ended cleanly on the connection.
    pub fn served(&mut self) {
        self.responses = self.responses.saturating_add(1);
    }

    /// Responses that ended cleanly on the connection.
    pub fn responses(&self) -> u32 {
        self.responses
    }

    /// How the connection was set up, for the first request on it only: `None` after that (a
    /// kept-alive connection costs its next request nothing).
    pub fn take_setup(&mut self) -> Option<Setup> {
        self.setup.take()
    }

    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    async fn handshake(&mut self) -> io::Result<()> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return Ok(());
        };
        while tls.session.is_handshaking() {
            tls.flush(&mut self.tcp).await?;
            if !tls.session.is_handshaking() {
                break;
            }
            let (n, _) = read(&self.tcp, &mut tls.incoming).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection during the TLS handshake",
                ));
            }
            tls.absorb(n)?;
        }
        tls.flush(&mut self.tcp).await
    }

    /// Writes all of `bytes`.
    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.send_parts(bytes, &[]).await
    }

    /// Writes all of `head`, then all of `body`, without joining them: one vectored write where
    /// the socket takes both at once.
    pub async fn send_parts(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return write_parts(&mut self.tcp, head, body).await;
        };
        for mut rest in [head, body] {
            while !rest.is_empty() {
                // The writer takes what fits under the send limit; the rest after a flush.
                let mut n = tls.session.writer().write(rest)?;
                if n == 0 {
                    tls.flush(&mut self.tcp).await?;
                    n = tls.session.writer().write(rest)?;
                    // Flushed, the queue is empty: a writer that takes nothing will never take
                    // more.
                    if n == 0 {
                        return Err(io::ErrorKind::WriteZero.into());
                    }
                }
                rest = &rest[n..];
            }
        }
        tls.flush(&mut self.tcp).await
    }

    /// Reads what has arrived into `buffer`, waiting for at least one byte; 0 at the end of the
    /// stream (a TLS `close_notify`, or the connection closed without one). Returns the count
    /// and when the bytes arrived, as [`read`] does; over TLS, when the ciphertext that
    /// delivered them arrived.
    pub async fn read(&mut self, buffer: &mut [u8]) -> io::Result<(usize, Instant)> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return read(&self.tcp, buffer).await;
        };
        loop {
            if let Some(read) = tls.plaintext(buffer) {
                return read;
            }
            tls.take_in(&mut self.tcp).await?;
        }
    }

    /// [`Conn::read`] into this thread's shared buffer ([`read_with`]): `take` gets what arrived
    /// and when, or `(&[], now)` at the end of the stream, and its answer is returned. Over TLS
    /// the ciphertext still goes through the connection's own buffer; the plaintext is handed on
    /// from the shared one.
    pub async fn read_with<T>(
        &mut self,
        mut take: impl FnMut(&[u8], Instant) -> T,
    ) -> io::Result<T> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return read_with(&self.tcp, take).await;
        };
        loop {
            let handed = SHARED.with_borrow_mut(|buffer| {
                let read = tls.plaintext(buffer)?;
                Some(read.map(|(n, at)| take(&buffer[..n], at)))
            });
            if let Some(handed) = handed {
                return handed;
            }
            tls.take_in(&mut self.tcp).await?;
        }
    }

    /// Whether an idle connection can carry another request: the server has not closed it and
    /// sent nothing nobody asked for. Some servers (llama-server) close a connection after each
    /// stream without saying so; a TLS server may say so with `close_notify`.
    ///
    /// The socket itself is asked (a `recv` that does not wait), not tokio's record of its
    /// readiness: the last read of the response cleared that record, and the server's close,
    /// arriving a moment later, is not in it until the runtime's reactor has turned, which a
    /// request taking the connection at once beats.
    pub fn is_reusable(&mut self) -> bool {
        let Some(tls) = self.tls.as_deref_mut() else {
            let mut probe = [0u8; 1];
            return matches!(
                receive_now(&self.tcp, &mut probe, MsgFlags::MSG_PEEK),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock
            );
        };
        // Neither plaintext nobody asked for nor an end (`close_notify`, or closed without it).
        let quiet = |tls: &mut Tls| {
            matches!(
                tls.session.reader().read(&mut [0u8; 1]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock
            )
        };
        match receive_now(&self.tcp, &mut tls.incoming, MsgFlags::empty()) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => quiet(tls),
            // Bytes that must be looked into: TLS messages after the handshake (session
            // tickets) keep the connection usable.
            Ok(n) if n > 0 && tls.absorb(n).is_ok() => quiet(tls),
            // Closed or broken.
            _ => false,
        }
    }
}

/// One `recv` on `tcp` that never waits (`WouldBlock` when nothing is there), with `flags`.
fn receive_now(tcp: &TcpStream, buffer: &mut [u8], flags: MsgFlags) -> io::Result<usize> {
    recv(tcp.as_raw_fd(), buffer, flags | MsgFlags::MSG_DONTWAIT).map_err(io::Error::from)
}

impl Tls {
    /// Hands the first `n` bytes of `incoming` to rustls and decrypts them; 0 bytes is the
    /// connection's end. The plaintext waiting was drained first, so it cannot pass rustls's
    /// bound (a read buffer of ciphertext decrypts to less).
    fn absorb(&mut self, n: usize) -> io::Result<()> {
        let mut rest = &self.incoming[..n];
        loop {
            let taken = self.session.read_tls(&mut rest)?;
            self.session
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // Nothing taken: the end of the connection was handed in, or a `close_notify` came
            // and whatever follows it is ignored.
            if rest.is_empty() || taken == 0 {
                return Ok(());
            }
        }
    }

    /// The plaintext waiting, read into `buffer` as [`Conn::read`] returns it; `None` when
    /// there is none yet.
    fn plaintext(&mut self, buffer: &mut [u8]) -> Option<io::Result<(usize, Instant)>> {
        match self.session.reader().read(buffer) {
            Ok(0) => Some(Ok((0, Instant::now()))),
            Ok(n) => Some(Ok((n, self.arrived))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            // Closed without `close_notify`: a closed connection, as over plain TCP.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Some(Ok((0, Instant::now()))),
            Err(e) => Some(Err(e)),
        }
    }

    /// No plaintext left: the next ciphertext from `tcp`, decrypted, its arrival kept; then any
    /// answer it asks for (a key update) written.
    async fn take_in(&mut self, tcp: &mut TcpStream) -> io::Result<()> {
        let (n, arrived) = read(tcp, &mut self.incoming).await?;
        self.arrived = arrived;
        self.absorb(n)?;
        self.flush(tcp).await
    }

    /// Writes out all the ciphertext rustls has queued.
    async fn flush(&mut self, tcp: &mut TcpStream) -> io::Result<()> {
        while self.session.wants_write() {
            self.outgoing.clear();
            self.session.write_tls(&mut self.outgoing)?;
            tcp.write_all(&self.outgoing).await?;
        }
        Ok(())
    }
}

/// Writes all of `head` and then all of `body` to `tcp`, both offered to each write.
async fn write_parts(tcp: &mut TcpStream, mut head: &[u8], mut body: &[u8]) -> io::Result<()> {
    while !head.is_empty() || !body.is_empty() {
        let n = tcp
            .write_vectored(&[io::IoSlice::new(head), io::IoSlice::new(body)])
            .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let from_head = n.min(head.len());
        head = &head[from_head..];
        body = &body[n - from_head..];
    }
    Ok(())
}

/// Bytes read from the socket at a time.
pub const READ_BUFFER: usize = 4096;

thread_local! {
    /// The read buffer of every stream on this thread ([`read_with`]): a stream holds no receive
    /// memory of its own while it waits, only while its bytes are handed on, which no other
    /// stream of the thread can interleave with (the hand-on never waits).
    static SHARED: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; READ_BUFFER]);
}

/// Reads what has arrived into `buffer`, waiting for at least one byte; 0 at the end of the
/// stream. Returns the count and when the bytes arrived: the kernel's receive stamp of the latest
/// segment read, else the moment the read returned. A short read drained the socket: readiness
/// is cleared at once, so the next call waits for new bytes instead of spending a `recv` to learn
/// there are none.
pub async fn read(stream: &TcpStream, buffer: &mut [u8]) -> io::Result<(usize, Instant)> {
    loop {
        stream.readable().await?;
        if let Some(read) = read_now(stream, buffer) {
            return read;
        }
    }
}

/// [`read`] into this thread's shared buffer, handing what arrived and when to `take` before
/// anything else can use the buffer: `take`'s answer, `take(&[], now)` at the end of the stream.
/// `take` is called once, and must not read a connection itself.
pub async fn read_with<T>(
    stream: &TcpStream,
    mut take: impl FnMut(&[u8], Instant) -> T,
) -> io::Result<T> {
    loop {
        stream.readable().await?;
        let handed = SHARED.with_borrow_mut(|buffer| {
            read_now(stream, buffer).map(|read| read.map(|(n, at)| take(&buffer[..n], at)))
        });
        if let Some(handed) = handed {
            return handed;
        }
    }
}

/// One stamped read of what `stream` holds, readiness permitting: `None` when it turned out to
/// hold nothing yet (the readiness cleared, to be waited for again).
fn read_now(stream: &TcpStream, buffer: &mut [u8]) -> Option<io::Result<(usize, Instant)>> {
    let mut got = None;
    let outcome = stream.try_io(Interest::READABLE, || {
        let (n, age) = stamp::receive(stream, buffer)?;
        got = Some((n, age));
        if n > 0 && n < buffer.len() {
            // Drained: report "would block" so that the readiness is cleared.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(())
    });
    match (outcome, got) {
        (_, Some((n, age))) => Some(Ok((n, arrival(age)))),
        (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => None,
        (Err(e), None) => Some(Err(e)),
        (Ok(()), None) => Some(Ok((0, Instant::now()))),
    }
}

/// When bytes read `age` after they arrived (per the kernel) came in, on the monotonic clock;
/// the read lag is recorded.
fn arrival(age: Option<Duration>) -> Instant {
    let now = Instant::now();
    if let Some(lag) = age {
        READ_LAG.record(lag);
    }
    stamp::arrived(now, age)
}

/// How late llmload read the bytes the kernel had received: per read, the wall-clock time of the
/// read minus the kernel's stamp. Process-wide counters, read and reset by the self-check.
#[derive(Debug)]
pub struct ReadLag {
    reads: AtomicU64,
    total_ns: AtomicU64,
    max_ns: AtomicU64,
    over_1ms: AtomicU64,
}

/// The process's read-lag counters.
pub static READ_LAG: ReadLag = ReadLag {
    reads: AtomicU64::new(0),
    total_ns: AtomicU64::new(0),
    max_ns: AtomicU64::new(0),
    over_1ms: AtomicU64::new(0),
};

/// Read lag over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LagTally {
    /// Stamped reads.
    pub reads: u64,
    /// Mean lag, ms.
    pub mean_ms: f64,
    /// Largest lag, ms.
    pub max_ms: f64,
    /// Reads more than 1 ms late.
    pub over_1ms: u64,
}

impl ReadLag {
    fn record(&self, lag: Duration) {
        let ns = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX);
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.total_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
        if ns > 1_000_000 {
            self.over_1ms.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The tally since the last call, and a fresh start.
    pub fn take(&self) -> LagTally {
        let reads = self.reads.swap(0, Ordering::Relaxed);
        let total = self.total_ns.swap(0, Ordering::Relaxed);
        let max = self.max_ns.swap(0, Ordering::Relaxed);
        let over_1ms = self.over_1ms.swap(0, Ordering::Relaxed);
        LagTally {
            reads,
            mean_ms: if reads > 0 {
                total as f64 / reads as f64 / 1e6
            } else {
                0.0
            },
            max_ms: max as f64 / 1e6,
            over_1ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::tls::{client_config, TlsOptions};
    use rustls::pki_types::PrivateKeyDer;
    use tokio::io::{AsyncReadExt, AsyncWrite};
    use tokio_rustls::{server::TlsStream, TlsAcceptor};

    /// A plain TCP connection to a listener on loopback: both ends.
    async fn plain_pair() -> (Conn, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let (conn, accepted) = tokio::join!(Conn::open(&address, None), listener.accept());
        (conn.expect("connect"), accepted.expect("accept").0)
    }

    /// A TLS connection to a TLS server on loopback with a certificate made here: both ends.
    async fn tls_pair() -> (Conn, TlsStream<TcpStream>) {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).expect("cert");
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, made.cert.pem()).expect("write");
        let options = TlsOptions {
            ca_cert: Some(ca),
            insecure: false,
        };
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![made.cert.der().clone()],
            PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into()),
        )
        .expect("server configuration");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let peer = TlsPeer {
            config: client_config(&options, false).expect("client configuration"),
            name: ServerName::try_from("127.0.0.1").expect("name"),
        };
        let accept = async {
            let (tcp, _) = listener.accept().await.expect("accept");
            TlsAcceptor::from(Arc::new(server))
                .accept(tcp)
                .await
                .expect("server handshake")
        };
        let (conn, server) = tokio::join!(Conn::open(&address, Some(&peer)), accept);
        (conn.expect("client handshake"), server)
    }

    /// Bytes the server wrote while the client was busy for 80 ms are timed when they arrived,
    /// not when the read returned. The kernel turns stamping on for everyone a moment after the
    /// first socket asks (a deferred switch), so the first segments may go unstamped: a few
    /// tries.
    /// Through the caller's buffer (`read`), or the thread's shared one (`read_with`).
    async fn timed_at_arrival(
        conn: &mut Conn,
        server: &mut (impl AsyncWrite + Unpin),
        shared: bool,
    ) {
        let mut lags = Vec::new();
        for _ in 0..20 {
            let before = Instant::now();
            server.write_all(b"data: early\n\n").await.expect("write");
            server.flush().await.expect("flush");
            // The client is busy for 80 ms before it reads: the bytes are already there.
            std::thread::sleep(Duration::from_millis(80));
            let mut buffer = [0u8; 64];
            let (n, arrived) = if shared {
                conn.read_with(|bytes, at| {
                    buffer[..bytes.len()].copy_from_slice(bytes);
                    (bytes.len(), at)
                })
                .await
                .expect("read")
            } else {
                conn.read(&mut buffer).await.expect("read")
            };
            let returned = Instant::now();
            assert_eq!(&buffer[..n], b"data: early\n\n");
            // The wall-clock stamp converted to the monotonic clock: within a little of the
            // truth, never before the bytes were sent.
            assert!(
                arrived >= before - Duration::from_millis(2),
                "{arrived:?} {before:?}"
            );
            lags.push(returned.duration_since(arrived));
            if lags.last().is_some_and(|l| *l >= Duration::from_millis(75)) {
                return;
            }
        }
        panic!("every read was timed when it returned, not at arrival: {lags:?}");
    }

    /// A body longer than the shared buffer comes through `read_with` whole and in order, a
    /// read at most a buffer long; after the server closes, `take` gets the end (no bytes).
    async fn stream_through_the_shared_buffer(
        conn: &mut Conn,
        server: &mut (impl AsyncWrite + Unpin),
    ) {
        let body: Vec<u8> = (0..=250u8).cycle().take(3 * READ_BUFFER + 17).collect();
        server.write_all(&body).await.expect("write");
        server.shutdown().await.expect("close");
        let mut got = Vec::new();
        loop {
            let n = conn
                .read_with(|bytes, _| {
                    got.extend_from_slice(bytes);
                    bytes.len()
                })
                .await
                .expect("read");
            assert!(n <= READ_BUFFER, "{n}");
            if n == 0 {
                break;
            }
        }
        assert_eq!(got, body);
    }

    #[tokio::test]
    async fn bytes_are_timed_when_they_arrived_not_when_they_were_read() {
        let (mut conn, mut server) = plain_pair().await;
        assert!(!conn.is_tls());
        let setup = conn
            .take_setup()
            .expect("a new connection says how it was set up");
        assert_eq!(setup.tls, None, "no handshake over plain TCP");
        assert_eq!(
            conn.take_setup(),
            None,
            "only the first request pays for the setup"
        );
        timed_at_arrival(&mut conn, &mut server, false).await;
        timed_at_arrival(&mut conn, &mut server, true).await;
        stream_through_the_shared_buffer(&mut conn, &mut server).await;
    }

    #[tokio::test]
    async fn tls_plaintext_is_timed_when_its_ciphertext_arrived_not_when_it_was_read() {
        let (mut conn, mut server) = tls_pair().await;
        assert!(conn.is_tls());
        let setup = conn
            .take_setup()
            .expect("a new connection says how it was set up");
        assert!(setup.tls.is_some(), "the TLS handshake is timed apart");
        assert_eq!(
            conn.take_setup(),
            None,
            "only the first request pays for the setup"
        );
        timed_at_arrival(&mut conn, &mut server, false).await;
        timed_at_arrival(&mut conn, &mut server, true).await;
        stream_through_the_shared_buffer(&mut conn, &mut server).await;
    }

    /// A head and a body arrive whole and in order, each larger than one write can take.
    async fn sent_in_two_parts(conn: &mut Conn, server: &mut (impl AsyncReadExt + Unpin)) {
        let head: Vec<u8> = (0..=250u8).cycle().take(3 * SEND_LIMIT + 7).collect();
        let body: Vec<u8> = (0..=240u8)
            .rev()
            .cycle()
            .take(160 * SEND_LIMIT + 3)
            .collect();
        let (sent, received) = tokio::join!(conn.send_parts(&head, &body), async {
            let mut got = vec![0u8; head.len() + body.len()];
            // Read slowly at first, so that the kernel's buffers fill and writes come up short.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let read = server.read_exact(&mut got);
            tokio::time::timeout(Duration::from_secs(60), read)
                .await
                .map(|_| got)
        });
        sent.expect("send");
        let received = received.expect("every byte sent arrives");
        assert!(received == [head, body].concat(), "in order");
    }

    #[tokio::test]
    async fn a_head_and_a_body_go_out_whole_and_in_order_over_tcp_and_tls() {
        let (mut conn, mut server) = plain_pair().await;
        sent_in_two_parts(&mut conn, &mut server).await;
        let (mut conn, mut server) = tls_pair().await;
        sent_in_two_parts(&mut conn, &mut server).await;
    }

    #[tokio::test]
    async fn requests_go_through_and_a_close_notify_is_the_end_of_the_connection() {
        let (mut conn, mut server) = tls_pair().await;
        // Larger than the send limit: written in several passes.
        let request = vec![b'x'; 3 * SEND_LIMIT + 5];
        let (sent, received) = tokio::join!(conn.send(&request), async {
            let mut got = vec![0u8; request.len()];
            server.read_exact(&mut got).await.map(|_| got)
        });
        sent.expect("send");
        assert_eq!(received.expect("receive"), request);
        assert!(conn.is_reusable(), "an idle connection is reusable");
        server.write_all(b"last").await.expect("write");
        server.shutdown().await.expect("close_notify");
        let mut buffer = [0u8; 64];
        let (n, _) = conn.read(&mut buffer).await.expect("read");
        assert_eq!(&buffer[..n], b"last");
        assert_eq!(conn.read(&mut buffer).await.expect("end").0, 0);
        assert!(!conn.is_reusable(), "a closed connection is not reused");
    }
}
