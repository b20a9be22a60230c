//! Escaping of text for HTML element content and quoted attribute values, in `report.html` and
//! in the SVG drawn by hand for it.

/// Escapes text for HTML (and SVG) element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<b a="x">&'</b>"#),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;&lt;/b&gt;"
        );
    }
}
