//! A server's (or a proxy's) error body, reduced to what can be said in one line: an HTML page
//! to its title, a JSON error to its message, anything else to its first printable characters;
//! never the raw page, which would otherwise reach the terminal and `report.md` (where it
//! renders as live HTML).

/// The most characters kept of what a body says.
const KEPT: usize = 300;

/// What `body` says, in one line of at most [`KEPT`] characters, without markup or control
/// characters; empty for an empty (or blank) body.
pub fn reduce(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(64 * 1024)]);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    if is_html(text) {
        let said = element(text, "title")
            .or_else(|| element(text, "h1"))
            .map(|t| one_line(&strip_tags(t)))
            .filter(|t| !t.is_empty());
        return match said {
            Some(title) => format!("an HTML page titled \"{}\"", cut(&title)),
            None => "an HTML page with no title".into(),
        };
    }
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
        let message = [
            &json["error"]["message"],
            &json["error"],
            &json["message"],
            &json["detail"],
        ]
        .into_iter()
        .find_map(|v| v.as_str().map(str::to_owned));
        if let Some(message) = message.or_else(|| validation_errors(&json["detail"])) {
            return cut(&one_line(&message));
        }
    }
    cut(&one_line(text))
}

/// A validation error's list of problems (`FastAPI`'s 422: `{"detail": [{"loc": ["body",
/// "ignore_eos"], "msg": "Extra inputs are not permitted"}, …]}`), each as `body.ignore_eos:
/// Extra inputs are not permitted`, joined by `; `.
fn validation_errors(detail: &serde_json::Value) -> Option<String> {
    let problems: Vec<String> = detail
        .as_array()?
        .iter()
        .filter_map(|item| {
            let msg = item["msg"].as_str()?;
            let loc: Vec<String> = item["loc"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|part| {
                    part.as_str()
                        .map_or_else(|| part.to_string(), str::to_owned)
                })
                .collect();
            Some(if loc.is_empty() {
                msg.to_owned()
            } else {
                format!("{}: {msg}", loc.join("."))
            })
        })
        .collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Whether `text` is an HTML page (or a fragment of one).
pub fn is_html(text: &str) -> bool {
    let head: String = text
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html")
        || (head.starts_with('<')
            && ["<html", "<head", "<body", "<title", "<h1", "<center"]
                .iter()
                .any(|tag| head.contains(tag)))
}

/// The text inside the first `<tag …>…</tag>` of `html`, case-insensitively.
fn element<'a>(html: &'a str, tag: &str) -> Option<&'a str> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find(&format!("<{tag}"))?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start
        + lower[start..]
            .find(&format!("</{tag}"))
            .unwrap_or(lower.len() - start);
    html.get(start..end)
}

/// `html` without its tags, its common entities decoded.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&nbsp;", " ")
        .replace("&lt;", "‹")
        .replace("&gt;", "›")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// `text` on one line: whitespace runs (line ends included) as one space; other controls are
/// written out by [`cut`].
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text a server wrote (an error event's message, a model's name, an error body), as llmload
/// keeps and prints it: on one line, every run of whitespace a single space (LF, CR, VT, FF,
/// NEL and the Unicode line and paragraph separators alike, so that no server can start a line
/// of llmload's output), `<` and `>` written as look-alikes (no markup survives into a
/// Markdown or HTML report) and every other control written out as an escape.
pub fn flatten(text: &str) -> String {
    let out: String = one_line(text)
        .chars()
        .map(|c| match c {
            '<' => '‹',
            '>' => '›',
            c => c,
        })
        .collect();
    crate::console::printable(&out).into_owned()
}

/// At most [`KEPT`] characters of `text`, an ellipsis where it was cut, [`flatten`]ed.
fn cut(text: &str) -> String {
    let mut out: String = text.chars().take(KEPT).collect();
    if text.chars().count() > KEPT {
        out.push('…');
    }
    flatten(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_end_a_server_can_send_becomes_one_space() {
        // CR, LF, CRLF, VT, FF, NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR, and tabs beside them.
        let forged = "busy\r\nllmload: case 2 ok\u{b}x\u{c}y\u{85}z\u{2028}w\u{2029}v\t\t u";
        let flat = flatten(forged);
        assert_eq!(flat, "busy llmload: case 2 ok x y z w v u");
        assert_eq!(flat.lines().count(), 1);
        // Other controls are written out, not acted on; markup cannot open.
        assert_eq!(
            flatten("\u{7}bell\u{202e}rlo <i>"),
            "\\u{7}bell\\u{202e}rlo ‹i›"
        );
    }

    #[test]
    fn an_html_page_is_its_title() {
        let nginx = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
            <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n\
            </body>\r\n</html>\r\n";
        assert_eq!(reduce(nginx), "an HTML page titled \"502 Bad Gateway\"");
        let haproxy = b"<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond \
            in time.\n</body></html>\n";
        assert_eq!(
            reduce(haproxy),
            "an HTML page titled \"504 Gateway Time-out\""
        );
        let bare = b"<!DOCTYPE html><html><body><p>down</p></body></html>";
        assert_eq!(reduce(bare), "an HTML page with no title");
        let script = b"<html><title>x<script>alert(1)</script></title></html>";
        assert_eq!(reduce(script), "an HTML page titled \"xalert(1)\"");
    }

    #[test]
    fn json_is_its_message_and_text_one_line() {
        assert_eq!(
            reduce(br#"{"error":{"message":"model not loaded","code":503}}"#),
            "model not loaded"
        );
        assert_eq!(reduce(br#"{"detail":"Unprocessable"}"#), "Unprocessable");
        let pydantic = br#"{"detail":[{"type":"extra_forbidden","loc":["body","ignore_eos"],
            "msg":"Extra inputs are not permitted","input":true},{"type":"extra_forbidden",
            "loc":["body","min_tokens"],"msg":"Extra inputs are not permitted","input":8}]}"#;
        assert_eq!(
            reduce(pydantic),
            "body.ignore_eos: Extra inputs are not permitted; body.min_tokens: Extra inputs are \
             not permitted"
        );
        assert_eq!(
            reduce(br#"{"error":"bad <b>request</b>"}"#),
            "bad ‹b›request‹/b›"
        );
        assert_eq!(
            reduce(b"upstream\r\nconnect error\x1b[2J"),
            "upstream connect error\\u{1b}[2J"
        );
        assert_eq!(reduce(b"  \r\n"), "");
        let long = "x".repeat(500);
        assert_eq!(reduce(long.as_bytes()).chars().count(), KEPT + 1);
    }
}
