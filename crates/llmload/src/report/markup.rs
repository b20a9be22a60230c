//! Escaping, once per format, of every string a writer puts on the page (a model name, a URL, a
//! server's error text among them): for HTML element content and quoted attribute values (in
//! `report.html` and in the SVG drawn by hand for it), and for Markdown (`report.md`). Both
//! write out the characters a terminal or a viewer would act on ([`printable`]).

pub use crate::console::printable;

/// Escapes text for HTML (and SVG) element content and quoted attribute values, with every
/// control character written out as its code (`\u{1b}`).
pub fn escape(text: &str) -> String {
    let text = printable(text);
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

/// Escapes text for Markdown: control characters written out, and `<` escaped so that no
/// viewer reads a tag into it.
pub fn markdown(text: &str) -> String {
    printable(text).replace('<', "\\<")
}

/// Escapes a Markdown table cell: as [`markdown`], and `|` escaped so that it stays in its cell.
pub fn markdown_cell(text: &str) -> String {
    markdown(text).replace('|', "\\|")
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

    #[test]
    fn controls_are_written_out_in_every_format() {
        let hostile = "m\u{1b}[2J\u{7}\u{202e}\u{200b}\u{feff}<script>|";
        for text in [escape(hostile), markdown_cell(hostile)] {
            assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}', '\u{200b}', '\u{feff}']));
            assert!(
                text.contains("\\u{1b}[2J\\u{7}\\u{202e}\\u{200b}\\u{feff}"),
                "{text}"
            );
            assert!(!text.replace("\\<", "").contains('<'), "{text}");
        }
        assert!(markdown_cell(hostile).ends_with("\\<script>\\|"));
    }
}
