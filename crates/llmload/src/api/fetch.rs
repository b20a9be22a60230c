//! Whole answers: the setup requests (`/health`, `/props`, `/v1/models`, `/tokenize`, …), the
//! `/metrics` scrapes and the clock's polls. They go over the same connections, are written by
//! the same request writer and read by the same response parser as the streams
//! ([`super::http1`]), so that a server one path accepts the other accepts too: interim heads are
//! skipped, two lengths that disagree are refused, and the URL's path is sent as one form.

use super::conn::Conn;
use super::http1::{self, BodyDecoder, Framing, Method, Origin};
use std::io;
use tokio::time::Instant;

/// A whole answer.
#[derive(Debug)]
pub struct Answer {
    /// Status code (never an interim one).
    pub status: u16,
    /// The body, decoded from its framing.
    pub body: Vec<u8>,
    /// The `Location`, where the server sent one.
    pub location: Option<String>,
    /// The `Date`, where the server sent one.
    pub date: Option<String>,
}

/// Why a request got no whole answer.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No connection (or no TLS session) could be opened.
    #[error("cannot connect to {address}: {error}{hint}")]
    Connect {
        /// `host:port`.
        address: String,
        /// What the system or TLS said.
        error: io::Error,
        /// What to do when a certificate was refused.
        hint: &'static str,
    },
    /// The deadline passed; the phase it passed in.
    #[error("no answer by the deadline ({0})")]
    Deadline(&'static str),
    /// The connection broke or closed before the answer was whole.
    #[error("{0}")]
    Broken(String),
    /// Not HTTP as llmload reads it.
    #[error("{0}")]
    Malformed(String),
    /// The answer is larger than the bound.
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
}

/// Why one try ended without an answer: on a kept connection, a close before any answer means
/// it had gone stale.
enum Tried {
    Stale,
    Failed(FetchError),
}

impl Origin {
    /// `method` of `path`, with `body` as JSON where there is one: the whole answer of at most
    /// `limit` bytes, by `deadline` (connection and TLS handshake included). Redirects are
    /// answers like any other (the caller follows none). On a kept-alive connection the server
    /// had closed unseen, the request goes once more on a new one.
    pub async fn fetch(
        &self,
        method: Method,
        path: &str,
        body: Option<&[u8]>,
        limit: usize,
        deadline: Instant,
    ) -> Result<Answer, FetchError> {
        let request = self.request_for(method, path, "*/*", body);
        let (conn, reused) = self.connect_by(deadline, false).await?;
        let responses = conn.responses();
        match self.exchange(conn, reused, &request, limit, deadline).await {
            Ok(answer) => Ok(answer),
            Err(Tried::Failed(e)) => Err(e),
            Err(Tried::Stale) => {
                self.closed_after(responses);
                let (conn, _) = self.connect_by(deadline, true).await?;
                match self.exchange(conn, false, &request, limit, deadline).await {
                    Ok(answer) => Ok(answer),
                    Err(Tried::Failed(e)) => Err(e),
                    Err(Tried::Stale) => Err(FetchError::Broken(
                        "the server closed the connection before answering".into(),
                    )),
                }
            }
        }
    }

    /// A kept connection (and `true`) or a new one (`fresh`: always a new one), by `deadline`.
    async fn connect_by(&self, deadline: Instant, fresh: bool) -> Result<(Conn, bool), FetchError> {
        let opened = async {
            if fresh {
                self.fresh_connection().await.map(|c| (c, false))
            } else {
                self.connection().await
            }
        };
        match tokio::time::timeout_at(deadline, opened).await {
            Err(_) => Err(FetchError::Deadline(if self.is_tls() {
                "stalled connecting or in the TLS handshake"
            } else {
                "stalled connecting"
            })),
            Ok(Err(error)) => Err(FetchError::Connect {
                address: self.address.clone(),
                hint: super::tls::hint(&error),
                error,
            }),
            Ok(Ok(opened)) => Ok(opened),
        }
    }

    /// One request on one connection, read to the end of its answer; the connection kept for the
    /// next when the answer allows it.
    async fn exchange(
        &self,
        mut conn: Conn,
        reused: bool,
        request: &[u8],
        limit: usize,
        deadline: Instant,
    ) -> Result<Answer, Tried> {
        let stale_or = |failure: FetchError| {
            if reused {
                Tried::Stale
            } else {
                Tried::Failed(failure)
            }
        };
        let waiting = FetchError::Deadline("waiting for the answer");
        match tokio::time::timeout_at(deadline, conn.send(request)).await {
            Err(_) => return Err(Tried::Failed(waiting)),
            Ok(Err(e)) => return Err(stale_or(FetchError::Broken(format!("request failed: {e}")))),
            Ok(Ok(())) => {}
        }
        let read = read_answer(&mut conn, limit, reused);
        let (head, body, clean) = match tokio::time::timeout_at(deadline, read).await {
            Err(_) => return Err(Tried::Failed(waiting)),
            Ok(read) => read?,
        };
        if clean && head.keep_alive {
            self.keep(conn);
        }
        Ok(Answer {
            status: head.status,
            body,
            location: head.location,
            date: head.date,
        })
    }
}

/// Reads a response to the end of its body: its head, its body, and whether the connection
/// ended the body cleanly (nothing after it).
async fn read_answer(
    conn: &mut Conn,
    limit: usize,
    reused: bool,
) -> Result<(http1::Head, Vec<u8>, bool), Tried> {
    let mut buffer = vec![0u8; http1::READ_BUFFER];
    let mut filled = 0;
    let head = loop {
        let n = match conn.read(&mut buffer[filled..]).await {
            Ok((0, _)) | Err(_) if filled == 0 => {
                let failure =
                    FetchError::Broken("the server closed the connection before answering".into());
                return Err(if reused {
                    Tried::Stale
                } else {
                    Tried::Failed(failure)
                });
            }
            Ok((0, _)) => {
                return Err(Tried::Failed(FetchError::Broken(
                    "connection closed inside the response head".into(),
                )))
            }
            Ok((n, _)) => n,
            Err(e) => {
                return Err(Tried::Failed(FetchError::Broken(format!(
                    "read failed: {e}"
                ))))
            }
        };
        filled += n;
        let mut found = None;
        while let Some(head) = http1::parse_head(&buffer[..filled])
            .map_err(|e| Tried::Failed(FetchError::Malformed(e)))?
        {
            buffer.copy_within(head.length..filled, 0);
            filled -= head.length;
            // Interim heads (100, 103) come before the answer proper.
            if !http1::is_interim(head.status) {
                found = Some(head);
                break;
            }
        }
        if let Some(head) = found {
            break head;
        }
        if filled == buffer.len() {
            buffer.resize(filled * 2, 0);
        }
    };
    if let Framing::Length(n) = head.framing {
        if n > u64::try_from(limit).unwrap_or(u64::MAX) {
            return Err(Tried::Failed(FetchError::TooLarge(limit)));
        }
    }
    let mut decoder = BodyDecoder::new(head.framing);
    let mut body = Vec::new();
    take(&mut decoder, &buffer[..filled], &mut body, limit)?;
    while !decoder.done() {
        let n = match conn.read(&mut buffer).await {
            Ok((n, _)) => n,
            Err(e) => {
                return Err(Tried::Failed(FetchError::Broken(format!(
                    "read failed: {e}"
                ))))
            }
        };
        if n == 0 {
            if head.framing == Framing::Close {
                break;
            }
            return Err(Tried::Failed(FetchError::Broken(
                "the connection closed inside the answer's body".into(),
            )));
        }
        take(&mut decoder, &buffer[..n], &mut body, limit)?;
    }
    let clean = decoder.done() && !decoder.overran();
    Ok((head, body, clean))
}

/// Decodes `bytes` onto `body`, which may not grow past `limit`.
fn take(
    decoder: &mut BodyDecoder,
    bytes: &[u8],
    body: &mut Vec<u8>,
    limit: usize,
) -> Result<(), Tried> {
    let mut over = false;
    decoder
        .feed(bytes, &mut |data| {
            if body.len() + data.len() > limit {
                over = true;
            } else if !over {
                body.extend_from_slice(data);
            }
        })
        .map_err(|e| Tried::Failed(FetchError::Malformed(e)))?;
    if over {
        return Err(Tried::Failed(FetchError::TooLarge(limit)));
    }
    Ok(())
}

/// A status code, written with its reason phrase where it is a common one (`401 Unauthorized`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u16);

impl Status {
    /// `2xx`.
    pub fn is_success(self) -> bool {
        (200..300).contains(&self.0)
    }

    /// `3xx`.
    pub fn is_redirection(self) -> bool {
        (300..400).contains(&self.0)
    }

    /// `4xx`.
    pub fn is_client_error(self) -> bool {
        (400..500).contains(&self.0)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reason = match self.0 {
            200 => "OK",
            201 => "Created",
            204 => "No Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            413 => "Payload Too Large",
            422 => "Unprocessable Entity",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => return write!(f, "{}", self.0),
        };
        write!(f, "{} {reason}", self.0)
    }
}

#[cfg(test)]
mod tests;
