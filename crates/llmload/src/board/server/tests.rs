use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn server() -> Server {
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("address");
    Server::bind(addr, Board::new(crate::board::flight::Flight::new()))
        .await
        .expect("binds")
}

/// Sends `request` raw and reads the answer to its end (the server closes every connection).
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream.write_all(request).await.expect("writes");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn get_metrics_is_served_in_the_format_asked_for_and_nothing_else_is() {
    let server = server().await;
    let addr = server.addr();
    let plain = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(plain.starts_with("HTTP/1.1 200 OK\r\n"), "{plain}");
    assert!(
        plain.contains("content-type: text/plain; version=0.0.4"),
        "{plain}"
    );
    assert!(plain.contains("llmload_requests_in_flight 0\n"), "{plain}");
    let om = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
    )
    .await;
    assert!(om.contains("application/openmetrics-text"), "{om}");
    assert!(om.ends_with("# EOF\n"), "{om}");
    let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && !head.contains("llmload_"),
        "{head}"
    );
    let post = exchange(
        addr,
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    )
    .await;
    assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
    assert!(post.contains("allow: GET, HEAD"), "{post}");
    let other = exchange(addr, b"GET /../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(other.starts_with("HTTP/1.1 404 "), "{other}");
    server.stop().await;
}

#[tokio::test]
async fn a_request_head_past_the_bound_is_refused() {
    let server = server().await;
    let mut request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 64 * 1024));
    request.extend(b"\r\n\r\n");
    let answer = exchange(server.addr(), &request).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
        "no metrics for an oversized head: {answer:.200}"
    );
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_finishes_its_head_is_cut_off_at_the_deadline() {
    let server = server().await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\n")
        .await
        .expect("writes");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(DEADLINE * 2, stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the server closed the connection within its deadline"
    );
    assert!(!String::from_utf8_lossy(&answer).contains("llmload_"));
    server.stop().await;
}

#[tokio::test]
async fn connections_past_the_bound_are_closed_unanswered_and_the_rest_are_served() {
    let server = server().await;
    let addr = server.addr();
    // CONNECTIONS idle clients hold every place.
    let mut idle = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut s = TcpStream::connect(addr).await.expect("connects");
        s.write_all(b"GET /met").await.expect("writes");
        idle.push(s);
    }
    // Let the server accept them all before the next one comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(refused, "", "closed unanswered");
    drop(idle);
    // Their places come back once their connections end.
    let mut answer = String::new();
    for _ in 0..50 {
        answer = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        if !answer.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    server.stop().await;
}
