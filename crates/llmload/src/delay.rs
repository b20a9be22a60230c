//! `llmload delay-proxy` (hidden): a TCP proxy that holds what the client sends for a delay
//! that may change over time, before passing it on to the server; what the server sends comes
//! back as it is. It makes a target slower by a known amount (a candidate 200 ms slower), or
//! makes a target's speed wander (a sine) or jump (a square wave) the way a shared machine
//! drifts, for the tests and benchmarks of `llmload ab`'s paired gate.
//!
//! Each connection's bytes towards the server keep their order: a chunk read at `t` is written
//! at `t + delay(t)` or after the chunk before it, whichever is later. A request sent in one
//! burst therefore reaches the server `delay(t)` later, whatever its size.

use crate::config::ConfigError;
use crate::error::{Context, Error};
use std::f64::consts::TAU;
use std::io::Write as _;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// The largest chunk read at once, bytes.
const CHUNK: usize = 16 << 10;
/// Chunks of one connection held at once, at most (the reader waits beyond).
const HELD: usize = 64;
/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `llmload delay-proxy`: the server, the port, and the delay over time.
#[derive(Clone, Debug, clap::Args)]
pub struct DelayOptions {
    /// The server to pass connections on to, `http://HOST:PORT`.
    #[arg(value_name = "UPSTREAM")]
    pub upstream: String,
    /// Port to listen on on 127.0.0.1 [default: a free one, printed on the first line of stdout]
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// A constant delay, e.g. 200ms.
    #[arg(long, value_name = "DURATION", default_value = "0ms")]
    pub delay: String,
    /// A delay that wanders from 0 to this on a sine (period --period), e.g. 300ms.
    #[arg(long, value_name = "DURATION", default_value = "0ms")]
    pub wander: String,
    /// The sine's period.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub period: String,
    /// A delay added in every other stretch of --jump-every, e.g. 250ms.
    #[arg(long, value_name = "DURATION", default_value = "0ms")]
    pub jump: String,
    /// The length of each stretch with and without --jump.
    #[arg(long, value_name = "DURATION", default_value = "3s")]
    pub jump_every: String,
}

/// The delay at each moment since the proxy started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelaySchedule {
    /// Always added.
    pub constant: Duration,
    /// The sine's height: from 0 at the start to this at half the period.
    pub wander: Duration,
    /// The sine's period.
    pub period: Duration,
    /// Added in every other stretch (the second, fourth, …).
    pub jump: Duration,
    /// The length of a stretch.
    pub jump_every: Duration,
}

impl DelaySchedule {
    /// The schedule `options` give; a bad duration is a usage error.
    pub fn of(options: &DelayOptions) -> Result<DelaySchedule, ConfigError> {
        let parse = crate::config::parse_duration;
        let schedule = DelaySchedule {
            constant: parse("delay", &options.delay)?,
            wander: parse("wander", &options.wander)?,
            period: parse("period", &options.period)?,
            jump: parse("jump", &options.jump)?,
            jump_every: parse("jump-every", &options.jump_every)?,
        };
        if schedule.period.is_zero() || schedule.jump_every.is_zero() {
            return Err(ConfigError(
                "--period and --jump-every need a length above 0".into(),
            ));
        }
        Ok(schedule)
    }

    /// The delay `since` the start.
    pub fn at(&self, since: Duration) -> Duration {
        let phase = since.as_secs_f64() / self.period.as_secs_f64();
        let wander = self.wander.mul_f64((1.0 - (TAU * phase).cos()) / 2.0);
        let stretch = since.as_nanos() / self.jump_every.as_nanos().max(1);
        let jump = if stretch % 2 == 1 {
            self.jump
        } else {
            Duration::ZERO
        };
        self.constant + wander + jump
    }
}

/// `llmload delay-proxy`: listens, prints its address, and passes connections on until
/// stopped (Ctrl-C or SIGTERM).
pub async fn serve_until_stopped(options: &DelayOptions) -> crate::error::Result<()> {
    let schedule = DelaySchedule::of(options)?;
    let upstream = options
        .upstream
        .strip_prefix("http://")
        .ok_or_else(|| ConfigError(format!("{}: an http:// URL", options.upstream)))?
        .trim_end_matches('/')
        .to_owned();
    let listener = TcpListener::bind(("127.0.0.1", options.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", options.port))?;
    let address = listener.local_addr().context("the proxy's address")?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{address}")
        .and_then(|()| stdout.flush())
        .context("writing to stdout")?;
    let start = Instant::now();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (client, _) = accepted.context("accepting a connection")?;
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    // A connection that fails ends alone; the proxy goes on.
                    let _ = pass_on(client, &upstream, schedule, start).await;
                });
            }
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

/// One connection: the client's bytes held for the schedule's delay, the server's passed back.
async fn pass_on(
    client: TcpStream,
    upstream: &str,
    schedule: DelaySchedule,
    start: Instant,
) -> crate::error::Result<()> {
    let server = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(upstream))
        .await
        .map_err(|_| Error::Target(format!("{upstream}: no connection within 10 s")))?
        .with_context(|| format!("connecting to {upstream}"))?;
    client.set_nodelay(true).context("TCP_NODELAY")?;
    server.set_nodelay(true).context("TCP_NODELAY")?;
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let (send, mut receive) = tokio::sync::mpsc::channel::<(Instant, Vec<u8>)>(HELD);
    let inbound = async move {
        let mut buffer = vec![0u8; CHUNK];
        loop {
            let n = client_read.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            let now = Instant::now();
            let due = now + schedule.at(now - start);
            if send.send((due, buffer[..n].to_vec())).await.is_err() {
                return Ok(());
            }
        }
    };
    let outbound = async move {
        while let Some((due, bytes)) = receive.recv().await {
            tokio::time::sleep_until(due).await;
            server_write.write_all(&bytes).await?;
        }
        server_write.shutdown().await
    };
    let returning = async move {
        tokio::io::copy(&mut server_read, &mut client_write).await?;
        client_write.shutdown().await
    };
    let (read, written, returned) = tokio::join!(inbound, outbound, returning);
    read.and(written)
        .and(returned)
        .context("passing a connection on")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_delay_wanders_on_a_sine_and_jumps_every_other_stretch() {
        let schedule = DelaySchedule {
            constant: ms(100),
            wander: ms(300),
            period: Duration::from_secs(8),
            jump: ms(250),
            jump_every: Duration::from_secs(3),
        };
        // At the start: the constant alone.
        assert_eq!(schedule.at(Duration::ZERO), ms(100));
        // Half a period in (4 s): the whole wander, and the jump (stretch 1 of 3 s each).
        assert_eq!(schedule.at(Duration::from_secs(4)), ms(650));
        // A whole period in (8 s): no wander; stretch 2 has no jump.
        let at8 = schedule.at(Duration::from_secs(8));
        assert!(at8.abs_diff(ms(100)) < Duration::from_micros(1), "{at8:?}");
        // A quarter in (2 s): half the wander, no jump.
        let at2 = schedule.at(Duration::from_secs(2));
        assert!(at2.abs_diff(ms(250)) < Duration::from_micros(1), "{at2:?}");
    }
}
