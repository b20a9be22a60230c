//! How a run is watched: `--metrics-listen` and `--metrics-linger` (where the live `/metrics`
//! endpoint listens, and how long it stays after the run), `--no-live` and `--heartbeat`. None
//! changes what is measured, so none is written to `campaign.json` (the shards of one attempt
//! on one machine listen on different ports and are still one configuration).

use super::parse::{bad, parse_duration};
use super::WatchOptions;
use crate::error::ConfigError;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// How the run is watched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watch {
    /// `/metrics`, when asked for.
    pub metrics: Option<MetricsConfig>,
    /// The live view on a terminal (else the progress line).
    pub live: bool,
    /// `--heartbeat`: how often a progress line is printed when stderr is not a terminal;
    /// `None` when off.
    pub heartbeat: Option<Duration>,
}

/// How often the heartbeat is printed when `--heartbeat` is not given.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(30);

/// The watch options resolved.
pub(super) fn watch(options: &WatchOptions) -> Result<Watch, ConfigError> {
    Ok(Watch {
        metrics: metrics(
            options.metrics_listen.as_deref(),
            options.metrics_linger.as_deref(),
        )?,
        live: !options.no_live.unwrap_or(false),
        heartbeat: match options.heartbeat.as_deref() {
            None => Some(HEARTBEAT),
            Some(text) => Some(parse_duration("heartbeat", text)?).filter(|d| !d.is_zero()),
        },
    })
}

/// The live `/metrics` endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Where it listens.
    pub addr: SocketAddr,
    /// How long it stays up after the run.
    pub linger: Duration,
}

impl MetricsConfig {
    /// Whether only this machine can reach it.
    pub fn loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }
}

/// `--metrics-listen ADDR` and `--metrics-linger DURATION` resolved: off without an address; a
/// linger without one is refused (it would keep nothing up).
pub(super) fn metrics(
    listen: Option<&str>,
    linger: Option<&str>,
) -> Result<Option<MetricsConfig>, ConfigError> {
    let Some(listen) = listen else {
        return match linger {
            Some(_) => bad("--metrics-linger needs --metrics-listen"),
            None => Ok(None),
        };
    };
    Ok(Some(MetricsConfig {
        addr: listen_addr(listen)?,
        linger: linger.map_or(Ok(Duration::ZERO), |l| parse_duration("metrics-linger", l))?,
    }))
}

/// `PORT` (this machine: 127.0.0.1), `localhost:PORT`, or `IP:PORT` (`[::1]:PORT` for IPv6).
/// A host name other than `localhost`, and `:PORT` with no host, are refused: where a listener
/// is reachable from must never be a guess.
fn listen_addr(text: &str) -> Result<SocketAddr, ConfigError> {
    let help = "give PORT (this machine only), 127.0.0.1:PORT, or an address to serve beyond \
                this machine, such as 0.0.0.0:PORT";
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        if let Ok(port) = port.parse::<u16>() {
            return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
        }
    }
    text.parse::<SocketAddr>()
        .or_else(|_| bad(format!("--metrics-listen {text:?}: not an address: {help}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_listens_on_loopback_and_other_addresses_only_when_given_in_full() {
        let m = metrics(Some("9464"), None).expect("valid").expect("on");
        assert_eq!(m.addr.to_string(), "127.0.0.1:9464");
        assert!(m.loopback());
        assert_eq!(m.linger, Duration::ZERO);
        let m = metrics(Some("localhost:0"), Some("30s"))
            .expect("valid")
            .expect("on");
        assert_eq!(m.addr.to_string(), "127.0.0.1:0");
        assert_eq!(m.linger, Duration::from_secs(30));
        let m = metrics(Some("[::1]:9464"), None)
            .expect("valid")
            .expect("on");
        assert!(m.loopback());
        let m = metrics(Some("0.0.0.0:9464"), None)
            .expect("valid")
            .expect("on");
        assert!(!m.loopback(), "all interfaces, asked for in full");
        for refused in [":9464", "example.com:9464", "70000", "localhost", "0.0.0.0"] {
            let e = metrics(Some(refused), None).expect_err(refused);
            assert!(e.0.starts_with("--metrics-listen"), "{e}");
        }
        assert_eq!(metrics(None, None).ok(), Some(None));
        assert!(
            metrics(None, Some("10s")).is_err(),
            "a linger with nothing to keep up"
        );
        assert!(metrics(Some("9464"), Some("soon")).is_err());
    }
}
