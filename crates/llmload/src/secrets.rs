//! What must never reach a file or the terminal: the credentials of a URL (`user:password@`),
//! and header values that may be secrets. Header values are shown only for a short list of
//! harmless names, and for those the user names with `--show-header`; every other value is
//! written as [`REDACTED`]. The API key is never written at all (only whether one was given).
//!
//! A server may echo what it was sent (the request head in an error body, a key in an in-stream
//! error), so every secret llmload sends is also held by a [`Scrubber`], installed once for the
//! process, through which every file and every line on the terminal passes.

use serde::ser::SerializeTuple;
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::sync::OnceLock;

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
    match url::Url::parse(url) {
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

/// Secrets shorter than this are not searched for: a value of one to three characters would
/// match ordinary text everywhere, and is no credential.
const MIN_SECRET_LEN: usize = 4;

/// Every secret sent, in each form a server could echo it in: as sent, inside a JSON string,
/// inside HTML, and percent-encoded. [`Scrubber::scrub`] writes each as [`REDACTED`].
#[derive(Clone, Debug, Default)]
pub struct Scrubber {
    /// Longest first, so that a secret holding another is replaced whole.
    patterns: Vec<String>,
}

impl Scrubber {
    /// A scrubber of `secrets` (empty or too short ones left out).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Scrubber {
        let mut patterns: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_LEN {
                continue;
            }
            let json = serde_json::to_string(secret).unwrap_or_default();
            let forms = [
                secret.to_owned(),
                json.trim_matches('"').to_owned(),
                html_escaped(secret),
                percent_encoded(secret),
            ];
            for form in forms {
                if !patterns.contains(&form) {
                    patterns.push(form);
                }
            }
        }
        patterns.sort_by_key(|p| std::cmp::Reverse(p.len()));
        Scrubber { patterns }
    }

    /// Whether there is anything to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `text` with every secret written as [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for pattern in &self.patterns {
            if memchr::memmem::find(text.as_bytes(), pattern.as_bytes()).is_some() {
                text = Cow::Owned(text.replace(pattern.as_str(), REDACTED));
            }
        }
        text
    }
}

static SCRUBBER: OnceLock<Scrubber> = OnceLock::new();

/// Makes `scrubber` the process's: every file and terminal line from now on passes through it.
/// Only the first call counts (one run, one set of secrets).
pub fn install(scrubber: Scrubber) {
    let _ = SCRUBBER.set(scrubber);
}

/// `text` through the process's scrubber (unchanged before one is installed).
pub fn scrub(text: &str) -> Cow<'_, str> {
    match SCRUBBER.get() {
        Some(scrubber) => scrubber.scrub(text),
        None => Cow::Borrowed(text),
    }
}

/// The string values under secret-looking keys of `value`, at any depth (what [`redact_json`]
/// hides).
pub fn secret_values(value: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![(false, value)];
    while let Some((secret, v)) = pending.pop() {
        match v {
            serde_json::Value::Object(fields) => {
                pending.extend(fields.iter().map(|(k, v)| (secret || secret_key(k), v)));
            }
            serde_json::Value::Array(items) => pending.extend(items.iter().map(|v| (secret, v))),
            serde_json::Value::String(s) if secret => found.push(s.clone()),
            other if secret => found.push(other.to_string()),
            _ => {}
        }
    }
    found
}

fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn percent_encoded(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_secret_is_scrubbed_and_short_values_are_not_searched() {
        let scrubber = Scrubber::new(["sk-\"quoted\" <key>&", "abc", ""]);
        let text = r#"echo: Bearer sk-"quoted" <key>& / {"k":"sk-\"quoted\" <key>&"} / sk-&quot;quoted&quot; &lt;key&gt;&amp; / sk-%22quoted%22%20%3Ckey%3E%26 / abc"#;
        assert_eq!(
            scrubber.scrub(text),
            r#"echo: Bearer [redacted] / {"k":"[redacted]"} / [redacted] / [redacted] / abc"#
        );
        assert!(matches!(scrubber.scrub("clean"), Cow::Borrowed(_)));
        assert!(Scrubber::new(["abc"]).is_empty());
    }

    #[test]
    fn secret_values_are_those_under_secret_keys_at_any_depth() {
        let body = serde_json::json!({"temperature": 0, "metadata": {"api_key": "k1", "user": "u"},
            "tools": [{"auth": {"token": "t2"}}], "credentials": {"id": 7}});
        let mut found = secret_values(&body);
        found.sort();
        assert_eq!(found, ["7", "k1", "t2"]);
    }

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
