use super::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// A server on a free loopback port that answers every request of every connection with
/// `answer`, and closes the connection after it when `close`; the request heads it got.
async fn serve(
    answer: &'static [u8],
    close: bool,
) -> (Origin, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    let _ = tx.send(String::from_utf8_lossy(&buffer[..n]).into_owned());
                    if stream.write_all(answer).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    let headers = [("X-Team".to_owned(), "a".to_owned())];
    let origin = Origin::parse(&format!("http://{address}/base"), &headers, None).expect("origin");
    (origin, rx)
}

fn soon() -> Instant {
    Instant::now() + std::time::Duration::from_secs(5)
}

#[tokio::test]
async fn interim_heads_are_skipped_and_chunked_bodies_decoded_on_a_kept_connection() {
    let answer: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let (origin, mut heads) = serve(answer, false).await;
    for _ in 0..2 {
        let got = origin
            .fetch(Method::Post, "/tokenize", Some(b"{}"), 100, soon())
            .await
            .expect("an answer");
        assert_eq!((got.status, got.body.as_slice()), (200, &b"abcde"[..]));
        assert_eq!(got.date.as_deref(), Some("Sun, 06 Nov 1994 08:49:37 GMT"));
    }
    let first = heads.recv().await.expect("a request");
    assert!(
        first.starts_with("POST /base/tokenize HTTP/1.1\r\n"),
        "{first}"
    );
    assert!(first.contains("\r\nX-Team: a\r\n") && first.contains("Content-Length: 2\r\n\r\n{}"));
    // The second was answered too, on the connection kept from the first.
    assert!(heads.recv().await.is_some());
}

#[tokio::test]
async fn bodies_past_the_bound_misframed_heads_and_cut_bodies_are_errors() {
    let (origin, _) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", false).await;
    let got = origin.fetch(Method::Get, "/x", None, 10, soon()).await;
    assert!(matches!(got, Err(FetchError::TooLarge(10))), "{got:?}");
    let (origin, _) = serve(b"HTTP/1.1 200 OK\r\n\r\n0123456789abcdef", true).await;
    let got = origin.fetch(Method::Get, "/x", None, 10, soon()).await;
    assert!(
        matches!(got, Err(FetchError::TooLarge(10))),
        "to the close: {got:?}"
    );
    let (origin, _) = serve(b"HTTP/1.1 200 OK\r\n\r\n01234", true).await;
    let got = origin.fetch(Method::Get, "/x", None, 10, soon()).await;
    assert_eq!(got.expect("read to the close").body, b"01234");
    let (origin, _) = serve(
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        false,
    )
    .await;
    let got = origin.fetch(Method::Get, "/x", None, 10, soon()).await;
    assert!(matches!(got, Err(FetchError::Malformed(_))), "{got:?}");
    let (origin, _) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", true).await;
    let got = origin.fetch(Method::Get, "/x", None, 10, soon()).await;
    assert!(matches!(got, Err(FetchError::Broken(_))), "{got:?}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_fails_at_the_deadline_naming_the_wait() {
    let (origin, _) = serve(b"", false).await;
    let got = origin
        .fetch(
            Method::Get,
            "/x",
            None,
            10,
            Instant::now() + std::time::Duration::from_secs(3),
        )
        .await;
    assert!(
        matches!(got, Err(FetchError::Deadline("waiting for the answer"))),
        "{got:?}"
    );
}

#[test]
fn statuses_read_as_their_codes_and_reasons() {
    assert_eq!(Status(401).to_string(), "401 Unauthorized");
    assert_eq!(Status(599).to_string(), "599");
    assert!(Status(302).is_redirection() && !Status(302).is_success());
    assert!(Status(422).is_client_error() && Status(204).is_success());
}
