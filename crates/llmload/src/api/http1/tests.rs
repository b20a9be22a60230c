//! Unit tests of `http1.rs`.

use super::*;
use proptest::prelude::*;

fn decode(framing: Framing, pieces: &[&[u8]]) -> (Vec<u8>, bool) {
    let mut decoder = BodyDecoder::new(framing);
    let mut out = Vec::new();
    for piece in pieces {
        decoder
            .feed(piece, &mut |d| out.extend_from_slice(d))
            .expect("valid framing");
    }
    (out, decoder.done())
}

#[test]
fn chunked_bodies_with_extensions_and_trailers() {
    let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
    assert_eq!(
        decode(Framing::Chunked, &[body]),
        (b"hello world".to_vec(), true)
    );
    let (out, done) = decode(Framing::Chunked, &[b"a\r\n0123456789\r\n"]);
    assert_eq!((out.len(), done), (10, false));
    let mut decoder = BodyDecoder::new(Framing::Chunked);
    assert!(decoder.feed(b"zz\r\n", &mut |_| {}).is_err());
}

#[test]
fn bytes_past_the_end_of_a_body_are_remembered() {
    let overran = |framing: Framing, pieces: &[&[u8]]| {
        let mut decoder = BodyDecoder::new(framing);
        for piece in pieces {
            decoder.feed(piece, &mut |_| {}).expect("valid framing");
        }
        (decoder.done(), decoder.overran())
    };
    let chunked: &[u8] = b"5\r\nhello\r\n0\r\n\r\n";
    assert_eq!(overran(Framing::Chunked, &[chunked]), (true, false));
    assert_eq!(overran(Framing::Chunked, &[chunked, b"HTTP"]), (true, true));
    assert_eq!(
        overran(Framing::Chunked, &[b"5\r\nhello\r\n0\r\n\r\nX"]),
        (true, true)
    );
    assert_eq!(overran(Framing::Length(3), &[b"ab", b"c"]), (true, false));
    assert_eq!(overran(Framing::Length(3), &[b"ab", b"cd"]), (true, true));
}

#[test]
fn length_bodies_stop_at_their_length() {
    assert_eq!(
        decode(Framing::Length(3), &[b"ab", b"cd"]),
        (b"abc".to_vec(), true)
    );
}

#[test]
fn heads_give_status_framing_and_keep_alive() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n";
    let parsed = parse_head(head).expect("valid").expect("complete");
    assert_eq!(parsed.status, 200);
    assert_eq!(parsed.framing, Framing::Chunked);
    assert!(parsed.keep_alive);
    assert_eq!(&head[parsed.length..], b"5\r\n");
    let head =
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 12\r\nconnection: close\r\n\r\n";
    let parsed = parse_head(head).expect("valid").expect("complete");
    assert_eq!(
        (parsed.status, parsed.framing, parsed.keep_alive),
        (503, Framing::Length(12), false)
    );
    let head = b"HTTP/1.0 200 OK\r\n\r\n";
    let parsed = parse_head(head).expect("valid").expect("complete");
    assert_eq!((parsed.framing, parsed.keep_alive), (Framing::Close, false));
    assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nA: b"), Ok(None));
    assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
}

#[test]
fn interim_and_bodiless_heads_smuggling_and_compression() {
    for status in [100, 103] {
        let head = format!("HTTP/1.1 {status} X\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n");
        let parsed = parse_head(head.as_bytes())
            .expect("valid")
            .expect("complete");
        assert!(is_interim(parsed.status), "{status}");
        assert_eq!(parsed.framing, Framing::Length(0));
    }
    assert!(!is_interim(101) && !is_interim(200));
    let parsed = parse_head(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n")
        .expect("valid")
        .expect("complete");
    assert_eq!((parsed.status, parsed.framing), (204, Framing::Length(0)));
    // Two lengths: the same twice is one; two different ones are refused.
    let same = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(
        parse_head(same).expect("valid").expect("complete").framing,
        Framing::Length(5)
    );
    let two = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n";
    assert!(parse_head(two).expect_err("refused").contains("disagree"));
    let gzip = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n";
    assert!(parse_head(gzip)
        .expect_err("refused")
        .contains("Content-Encoding gzip"));
    let plain = b"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: 5\r\n\r\n";
    assert!(parse_head(plain).is_ok());
    // Compressed by the transfer, not the content: other codings than gzip, and in either order.
    for codings in ["br, chunked", "chunked, deflate", "x-zstd,chunked"] {
        let head = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: {codings}\r\n\r\n");
        let error = parse_head(head.as_bytes()).expect_err(codings);
        assert!(error.contains("does not support"), "{codings}: {error}");
    }
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, Chunked\r\n\r\n";
    let head = parse_head(chunked).expect("valid").expect("complete");
    assert_eq!(head.framing, Framing::Chunked);
}

#[test]
fn origins_of_plain_http_urls_only() {
    let headers = [("Authorization".to_owned(), "Bearer k".to_owned())];
    let origin = Origin::parse("http://127.0.0.1:8080/api", &headers, None).expect("http");
    assert_eq!(origin.address, "127.0.0.1:8080");
    assert_eq!(origin.prefix, "/api");
    let lines = "X-Request-Id: a-1\r\n";
    let outgoing = origin.request("/v1/completions", bytes::Bytes::from_static(b"{}"), lines);
    assert!(outgoing.head.ends_with(b"Content-Length: 2\r\n\r\n"));
    let request = String::from_utf8(outgoing.joined()).expect("text");
    assert!(request.starts_with("POST /api/v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
    assert!(request.contains("Authorization: Bearer k\r\nX-Request-Id: a-1\r\n"));
    assert!(request.ends_with("Content-Length: 2\r\n\r\n{}"));
    assert_eq!(
        Origin::parse("http://example.com", &[], None).map(|o| o.address),
        Some("example.com:80".into())
    );
    // https needs the TLS configuration, and then defaults to port 443.
    assert!(Origin::parse("https://example.com", &[], None).is_none());
    let config = crate::api::tls::client_config(&crate::api::tls::TlsOptions::default(), false)
        .expect("configuration");
    let origin = Origin::parse("https://[::1]/v1", &[], Some(&config)).expect("https");
    assert_eq!(
        (origin.address.as_str(), origin.prefix.as_str()),
        ("[::1]:443", "/v1")
    );
    assert!(Origin::parse("ftp://example.com", &[], Some(&config)).is_none());
}

proptest! {
    #[test]
    fn any_split_of_a_chunked_body_gives_the_same_bytes(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..40), 0..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut wire = Vec::new();
        for chunk in &chunks {
            wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            wire.extend_from_slice(chunk);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for point in points {
            pieces.push(&wire[start..point]);
            start = point;
        }
        pieces.push(&wire[start..]);
        let (out, done) = decode(Framing::Chunked, &pieces);
        prop_assert_eq!(out, chunks.concat());
        prop_assert!(done);
    }
}

#[test]
fn an_echoed_request_id_is_kept_printable_and_bounded() {
    let head = b"HTTP/1.1 200 OK\r\nX-Request-Id:  cmpl-7 \r\nContent-Length: 0\r\n\r\n";
    let head = parse_head(head).expect("valid").expect("complete");
    assert_eq!(head.request_id.as_deref(), Some("cmpl-7"));
    assert_eq!(echoed_id(b"a\xffb\x1bc").as_deref(), Some("a?b?c"));
    assert_eq!(echoed_id(b"   "), None);
    let long = vec![b'x'; 10_000];
    assert_eq!(echoed_id(&long).map(|id| id.len()), Some(ECHOED_ID_LEN));
    let none = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let head = parse_head(none).expect("valid").expect("complete");
    assert_eq!(head.request_id, None);
}
