//! Parsing and writing single settings: durations, URLs, headers, the extra body, the telemetry
//! source; and how durations and redacted JSON are written into `campaign.json`.

use crate::api::replicas::Balance;
use crate::error::ConfigError;
use crate::secrets::Header;
use crate::telemetry::Source;
use std::time::Duration;

/// A bad flag or campaign-file value: `message` as the one-line error.
pub(super) fn bad<T>(message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(message.into()))
}

pub(super) fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// `--drop-field`: engine fields, each named once.
pub(super) fn drop_fields(given: Vec<String>) -> Result<Vec<String>, ConfigError> {
    let mut fields: Vec<String> = Vec::new();
    for name in given {
        let name = name.trim().to_owned();
        if !crate::api::ENGINE_FIELDS.contains(&name.as_str()) {
            return bad(format!(
                "--drop-field takes {}, not {name:?}: the API's own fields are llmload's",
                crate::api::ENGINE_FIELDS.join(", ")
            ));
        }
        if !fields.contains(&name) {
            fields.push(name);
        }
    }
    Ok(fields)
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
pub(super) fn as_optional_seconds<S: serde::Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// `--url` where one is given ([`validate_url`]): the URL, its credentials and the note, each
/// `None` without one.
pub(super) type CheckedUrl = (Option<String>, Option<String>, Option<String>);

/// [`validate_url`] of `url` where there is one.
pub(super) fn validate_optional_url(url: Option<&str>) -> Result<CheckedUrl, ConfigError> {
    Ok(match url.map(validate_url).transpose()? {
        Some((url, credentials, note)) => (Some(url), credentials, note),
        None => (None, None, None),
    })
}

/// `--url` (once or more), `--balance` and `--session-header`: the first URL checked, every
/// replica's URL, the session header's name.
pub(super) fn urls(
    urls: &[String],
    balance: Option<Balance>,
    session_header: Option<String>,
) -> Result<(CheckedUrl, super::Replicas), ConfigError> {
    let first = validate_optional_url(urls.first().map(String::as_str))?;
    let replicas = super::Replicas {
        urls: replicas(urls, first.1.as_deref(), balance)?,
        balance: balance.unwrap_or_default(),
        session_header: session_header
            .map(|name| self::session_header(&name))
            .transpose()?,
    };
    Ok((first, replicas))
}

/// Several `--url`: each checked as one ([`validate_url`]), none twice, all with the first's
/// credentials (`credentials`); empty with one URL, where `--balance` is refused.
fn replicas(
    urls: &[String],
    credentials: Option<&str>,
    balance: Option<Balance>,
) -> Result<Vec<String>, ConfigError> {
    if urls.len() < 2 {
        // The default, given, balances nothing and changes nothing.
        if let Some(balance) = balance.filter(|b| *b != Balance::default()) {
            return bad(format!(
                "--balance {} needs two or more --url (replicas to spread the load over)",
                balance.name()
            ));
        }
        return Ok(Vec::new());
    }
    if urls.len() > 64 {
        return bad(format!(
            "--url given {} times: at most 64 replicas",
            urls.len()
        ));
    }
    let mut checked: Vec<String> = Vec::with_capacity(urls.len());
    for given in urls {
        let (url, own, _) = validate_url(given)?;
        if own.as_deref() != credentials {
            return bad(format!(
                "--url {}: every replica takes the first --url's credentials (or none)",
                shorten(&crate::secrets::redact_url(&url))
            ));
        }
        if checked.contains(&url) {
            return bad(format!(
                "--url {} is given twice: each replica once",
                shorten(&crate::secrets::redact_url(&url))
            ));
        }
        checked.push(url);
    }
    Ok(checked)
}

/// `--session-header NAME`: a header name HTTP allows, and not one llmload sets itself.
fn session_header(name: &str) -> Result<String, ConfigError> {
    let name = name.trim();
    if !crate::api::http1::is_field_name(name) {
        return bad(format!(
            "--session-header {}: not an HTTP header name",
            shorten(name)
        ));
    }
    let taken = [
        "authorization",
        "x-request-id",
        "traceparent",
        "content-type",
        "host",
    ];
    if taken.contains(&name.to_ascii_lowercase().as_str()) {
        return bad(format!(
            "--session-header {name}: llmload sets that header itself; name another"
        ));
    }
    Ok(name.to_owned())
}

/// `--url`: an `http` or `https` URL with a host, its scheme and host in lower case and its
/// path percent-encoded (one form for every request), without credentials (returned apart),
/// query or fragment (every path is appended to it), and without a trailing `/v1`, the API root
/// `OpenAI`'s clients are given: llmload appends `/v1/…` itself, and says so (the third value).
pub(super) fn validate_url(
    url: &str,
) -> Result<(String, Option<String>, Option<String>), ConfigError> {
    let given = url.trim();
    if !given.contains("://") {
        return bad(format!(
            "--url {}: give the scheme, e.g. http://{}",
            shorten(given),
            shorten(given)
        ));
    }
    let (clean, credentials) = crate::secrets::split_credentials(given);
    let parsed = match url::Url::parse(&clean) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => u,
        Ok(u) => {
            return bad(format!(
                "--url {}: scheme {:?} is not http or https",
                shorten(&clean),
                u.scheme()
            ))
        }
        Err(e) => return bad(format!("--url {}: {e}", shorten(&clean))),
    };
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return bad(format!(
            "--url {}: a base URL takes no query or fragment (`?…`, `#…`): llmload appends \
             its paths to it",
            shorten(
                crate::secrets::redact_url(parsed.as_str())
                    .split(['?', '#'])
                    .next()
                    .unwrap_or("")
            )
        ));
    }
    let mut base = parsed.as_str().trim_end_matches('/').to_owned();
    let mut note = None;
    if let Some(root) = base.strip_suffix("/v1") {
        note = Some(format!(
            "--url {base}: the API root /v1 taken off; llmload adds the paths itself ({root}/v1/…)"
        ));
        base = root.to_owned();
    }
    Ok((base, credentials, note))
}

/// `--extra-body`: a JSON object that sets none of the fields llmload keeps for itself.
pub(super) fn extra_body(
    given: Option<serde_json::Value>,
) -> Result<Option<serde_json::Value>, ConfigError> {
    let Some(value) = given else {
        return Ok(None);
    };
    let Some(fields) = value.as_object() else {
        return bad(
            "--extra-body must be a JSON object, e.g. '{\"chat_template_kwargs\": {\"enable_thinking\": false}}'",
        );
    };
    if let Some(key) = crate::api::RESERVED_FIELDS
        .iter()
        .find(|k| fields.contains_key(**k))
    {
        return bad(format!(
            "--extra-body may not set {key:?}: the prompt, the output length and streaming are \
             llmload's (use --input-tokens, --output-tokens)"
        ));
    }
    Ok(Some(value))
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
pub(super) fn redacted_json<S: serde::Serializer>(
    value: &Option<serde_json::Value>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    value.as_ref().map(crate::secrets::redact_json).serialize(s)
}

/// At most 200 characters of a value echoed in an error.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Fields that frame a request or its connection: the client writes them, never `--header`.
const FRAMING_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
];

/// The `index`-th `--header`; no error shows its value.
fn parse_header(index: usize, header: &str, show: &[String]) -> Result<Header, ConfigError> {
    let n = index + 1;
    let Some((name, value)) = header.split_once(':') else {
        return bad(format!(
            "--header number {n}: expected NAME:VALUE (its text is not shown: it may hold a secret)"
        ));
    };
    let (name, value) = (name.trim(), value.trim());
    if !crate::api::http1::is_field_name(name) {
        return bad(format!(
            "--header number {n}: {:?} is not a header name",
            shorten(name)
        ));
    }
    if FRAMING_HEADERS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
        return bad(format!(
            "--header {name}: llmload sets this field itself (it frames the request or the \
             connection); it cannot be given"
        ));
    }
    if !crate::api::http1::is_field_value(value) {
        return bad(format!(
            "--header {name}: its value holds characters not allowed in a header"
        ));
    }
    Ok(Header::new(name, value, show))
}

/// Every `--header`, parsed (their values shown where `show` names them).
pub(super) fn parse_headers(
    headers: &[String],
    show: &[String],
) -> Result<Vec<Header>, ConfigError> {
    headers
        .iter()
        .enumerate()
        .map(|(i, h)| parse_header(i, h, show))
        .collect()
}

/// What a `--header` that replaces llmload's own request ids means, one note each: the server
/// sees the header's value on every request, and the records keep llmload's ids.
pub(super) fn replaced_ids(headers: &[Header], traceparent: bool) -> Vec<String> {
    let given = |name: &str| headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
    let mut notes = Vec::new();
    if given("x-request-id") {
        notes.push(
            "--header X-Request-Id goes on every request in place of llmload's own ids;              requests.jsonl still records llmload's id of each request (request_id)"
                .to_owned(),
        );
    }
    if traceparent && given("traceparent") {
        notes.push(
            "--header traceparent goes on every request in place of --traceparent's".to_owned(),
        );
    }
    notes
}

pub(super) fn parse_source(text: Option<String>) -> Result<Source, ConfigError> {
    let Some(text) = text else {
        return Ok(Source::Auto);
    };
    let source: Source = text
        .parse()
        .map_err(|e| ConfigError(format!("--telemetry {e}")))?;
    if let Source::Replay(path) = &source {
        crate::telemetry::replay::load(path)
            .map_err(|e| ConfigError(format!("--telemetry {e}")))?;
    }
    Ok(source)
}

pub(crate) fn optional_duration(
    what: &str,
    text: Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    text.map(|t| parse_duration(what, &t)).transpose()
}

/// A duration flag (`90s`, `10m`): one-line error naming `--what` when it is not one.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration, ConfigError> {
    crate::num::duration(text).or_else(|e| bad(format!("--{what} {text:?}: {e} (e.g. 90s, 10m)")))
}
