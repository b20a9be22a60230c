//! What must never reach a file or the terminal: the credentials of a URL (`user:password@`),
//! and header values that may be secrets. Header values are shown only for a short list of
//! harmless names, and for those the user names with `--show-header`; every other value is
//! written as [`REDACTED`]. The API key is never written at all (only whether one was given).

use serde::ser::SerializeTuple;
use serde::{Serialize, Serializer};

/// What a hidden value is written as.
pub const REDACTED: &str = "[redacted]";

/// Header names whose values are shown: none of them carries a credential.
pub const SHOWN_HEADERS: [&str; 9] = [
    "accept",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "content-type",
    "user-agent",
    "x-request-id",
    "x-correlation-id",
    "traceparent",
];

/// One request header and whether its value may be shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The name, as given.
    pub name: String,
    /// The value, sent on every request.
    pub value: String,
    /// Whether the value may be written and printed.
    pub shown: bool,
}

impl Header {
    /// `name: value`, shown when the name is harmless or one of `show` (any case).
    pub fn new(name: &str, value: &str, show: &[String]) -> Header {
        let shown = SHOWN_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
            || show.iter().any(|h| h.eq_ignore_ascii_case(name));
        Header {
            name: name.to_owned(),
            value: value.to_owned(),
            shown,
        }
    }

    /// The value as it may be written.
    pub fn shown_value(&self) -> &str {
        if self.shown {
            &self.value
        } else {
            REDACTED
        }
    }
}

/// Written as `[name, value]`, the value redacted unless shown.
impl Serialize for Header {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut pair = s.serialize_tuple(2)?;
        pair.serialize_element(&self.name)?;
        pair.serialize_element(self.shown_value())?;
        pair.end()
    }
}

/// Whether a field name looks like it holds a credential.
fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "authorization",
        "credential",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// `value` with every value under a secret-looking key (`api_key`, `token`, …) redacted.
pub fn redact_json(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| {
                let shown = if secret_key(k) {
                    serde_json::Value::String(REDACTED.into())
                } else {
                    redact_json(v)
                };
                (k.clone(), shown)
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        serde_json::Value::Array(items) => items.iter().map(redact_json).collect(),
        other => other.clone(),
    }
}

/// The credentials of a URL, split off: the URL without them, and `user:password` when it had
/// any. Text that is not a URL comes back with anything between `//` and `@` removed.
pub fn split_credentials(url: &str) -> (String, Option<String>) {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let user = percent_decode(parsed.username());
            let password = parsed.password().map(percent_decode).unwrap_or_default();
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            let clean = if url.ends_with('/') {
                parsed.to_string()
            } else {
                parsed.to_string().trim_end_matches('/').to_owned()
            };
            (clean, Some(format!("{user}:{password}")))
        }
        Ok(_) => (url.to_owned(), None),
        Err(_) => (strip_userinfo(url), None),
    }
}

/// `url` with its credentials removed, for messages and files.
pub fn redact_url(url: &str) -> String {
    split_credentials(url).0
}

/// Removes `…@` after `//` up to the first `/`, `?` or `#` from text that does not parse.
fn strip_userinfo(text: &str) -> String {
    let Some(start) = text.find("//").map(|i| i + 2) else {
        return text.to_owned();
    };
    let end = text[start..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| start + i);
    match text[start..end].rfind('@') {
        Some(at) => format!("{}{}", &text[..start], &text[start + at + 1..]),
        None => text.to_owned(),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `Authorization: Basic` value of `user:password`.
pub fn basic_auth(credentials: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url_and_text_that_is_not_a_url() {
        let (clean, credentials) = split_credentials("http://alice:s%40cret@gpu-box:8000/v1");
        assert_eq!(clean, "http://gpu-box:8000/v1");
        assert_eq!(credentials.as_deref(), Some("alice:s@cret"));
        assert_eq!(redact_url("http://gpu-box:8000"), "http://gpu-box:8000");
        assert_eq!(redact_url("ftp://bob:pw@host/x"), "ftp://host/x");
        assert_eq!(redact_url("not a url://bob:pw@host"), "not a url://host");
        assert_eq!(basic_auth("alice:s@cret"), "Basic YWxpY2U6c0BjcmV0");
    }

    #[test]
    fn only_harmless_or_chosen_headers_are_shown() {
        let show = vec!["X-Team".to_owned()];
        let json = |h: &Header| serde_json::to_string(h).unwrap_or_default();
        assert_eq!(
            json(&Header::new("Authorization", "Bearer x", &show)),
            r#"["Authorization","[redacted]"]"#
        );
        assert_eq!(
            json(&Header::new("X-Api-Key", "k", &show)),
            r#"["X-Api-Key","[redacted]"]"#
        );
        assert_eq!(
            json(&Header::new("x-team", "infra", &show)),
            r#"["x-team","infra"]"#
        );
        assert_eq!(
            json(&Header::new("User-Agent", "ci", &[])),
            r#"["User-Agent","ci"]"#
        );
    }

    #[test]
    fn secret_looking_fields_of_a_body_are_redacted_at_any_depth() {
        let body = serde_json::json!({"temperature": 0, "metadata": {"api_key": "k", "user": "u"},
            "tools": [{"auth_token": "t"}]});
        let shown = redact_json(&body);
        assert_eq!(shown["temperature"], 0);
        assert_eq!(shown["metadata"]["api_key"], REDACTED);
        assert_eq!(shown["metadata"]["user"], "u");
        assert_eq!(shown["tools"][0]["auth_token"], REDACTED);
    }
}
