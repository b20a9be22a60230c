//! What to try when the server cannot be reached or does not serve the API asked for: one
//! clause after the error, on the mistakes a first run makes (nothing listening on the port,
//! `https://` to a plain HTTP server or the reverse, `--api` naming an endpoint the server does
//! not have).

use crate::api::fetch::FetchError;
use crate::api::Api;

/// The clause after a failed setup request to `url` (`; …`), or nothing.
pub(super) fn fetch_hint(error: &FetchError, url: &str) -> String {
    let tls = url.starts_with("https://");
    match error {
        FetchError::Connect { error, .. } => {
            if error.kind() == std::io::ErrorKind::ConnectionRefused {
                return "; is the server running, and listening on this port? (nothing \
                        accepted the connection)"
                    .into();
            }
            let said = error.to_string().to_ascii_lowercase();
            let plain_answer = [
                "corrupt message",
                "invalidcontenttype",
                "wrong version number",
            ]
            .iter()
            .any(|w| said.contains(w));
            if tls && plain_answer {
                return format!(
                    "; the server answered the TLS handshake with plain HTTP: try {}",
                    swap_scheme(url)
                );
            }
            String::new()
        }
        FetchError::Broken(_) | FetchError::Malformed(_) if !tls => {
            format!("; if the server expects TLS, try {}", swap_scheme(url))
        }
        _ => String::new(),
    }
}

/// The clause after a generation answered 404 on `api`'s path: the path, and the other APIs.
pub(super) fn not_found_hint(api: Api) -> String {
    let others: Vec<&str> = <Api as clap::ValueEnum>::value_variants()
        .iter()
        .filter(|a| **a != api)
        .map(|a| a.name())
        .collect();
    format!(
        "; the server has no {} (--api {}): try --api {}",
        api.path(),
        api.name(),
        others.join(", ")
    )
}

/// `url` with `http://` and `https://` swapped.
fn swap_scheme(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("https://") {
        format!("http://{rest}")
    } else if let Some(rest) = url.strip_prefix("http://") {
        format!("https://{rest}")
    } else {
        url.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_first_run_mistake_gets_its_hint() {
        let refused = FetchError::Connect {
            address: "127.0.0.1:9".into(),
            error: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            hint: "",
        };
        assert!(fetch_hint(&refused, "http://127.0.0.1:9").contains("is the server running"));
        let plain = FetchError::Connect {
            address: "127.0.0.1:8080".into(),
            error: std::io::Error::other("received corrupt message of type InvalidContentType"),
            hint: "",
        };
        assert_eq!(
            fetch_hint(&plain, "https://127.0.0.1:8080"),
            "; the server answered the TLS handshake with plain HTTP: try http://127.0.0.1:8080"
        );
        let garbled = FetchError::Malformed("not an HTTP answer".into());
        assert_eq!(
            fetch_hint(&garbled, "http://127.0.0.1:8443"),
            "; if the server expects TLS, try https://127.0.0.1:8443"
        );
        assert_eq!(fetch_hint(&garbled, "https://127.0.0.1:8443"), "");
        let hint = not_found_hint(Api::Chat);
        assert!(
            hint.starts_with(
                "; the server has no /v1/chat/completions (--api chat): try --api llamacpp, \
                 completions,"
            ),
            "{hint}"
        );
        assert!(!hint.contains("chat,"), "{hint}");
    }
}
