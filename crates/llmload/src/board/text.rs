//! The exposition formats a scraper reads: Prometheus' text format (0.0.4) and OpenMetrics
//! 1.0. They differ only in a counter's family name (`x_total` in Prometheus' `# TYPE` line, `x` in
//! OpenMetrics'), OpenMetrics' `# UNIT` lines, and its closing `# EOF`.

use std::fmt::Write as _;

/// Which format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// The format a scraper's `Accept` header asks for: OpenMetrics when it names it.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up; its samples are `NAME_total`.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Cumulative buckets, `_sum` and `_count`.
    Histogram,
}

/// Labels of one sample: names and values (values are escaped when written).
pub type Labels<'a> = &'a [(&'a str, &'a str)];

/// Writes families and their samples in one format.
#[derive(Debug)]
pub struct Writer {
    out: String,
    format: Format,
}

impl Writer {
    /// An empty exposition.
    pub fn new(format: Format) -> Writer {
        Writer {
            out: String::with_capacity(16 * 1024),
            format,
        }
    }

    /// A family's header: `name` without `_total`, its unit where its name ends with one.
    pub fn family(&mut self, name: &str, kind: Kind, unit: Option<&str>, help: &str) {
        let (typ, declared) = match (kind, self.format) {
            (Kind::Counter, Format::Prometheus) => ("counter", format!("{name}_total")),
            (Kind::Counter, Format::OpenMetrics) => ("counter", name.to_owned()),
            (Kind::Gauge, _) => ("gauge", name.to_owned()),
            (Kind::Histogram, _) => ("histogram", name.to_owned()),
        };
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {declared} {help}");
        let _ = writeln!(self.out, "# TYPE {declared} {typ}");
        if let (Format::OpenMetrics, Some(unit)) = (self.format, unit) {
            let _ = writeln!(self.out, "# UNIT {declared} {unit}");
        }
    }

    /// One sample: its full name (`x_total`, `x_bucket`, …), labels and value.
    pub fn sample(&mut self, name: &str, labels: Labels<'_>, value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{label}=\"");
                escape_into(v, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        number_into(value, &mut self.out);
        self.out.push('\n');
    }

    /// The exposition, closed as its format wants.
    pub fn finish(mut self) -> String {
        if self.format == Format::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

/// A label value with `\`, `"` and line feeds escaped.
fn escape_into(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value: whole numbers without a fraction (counts stay exact), `+Inf`, `-Inf`, `NaN`.
pub fn number_into(value: f64, out: &mut String) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else if value.fract() == 0.0 && value.abs() < 9.0e15 {
        let _ = write!(out, "{value:.0}");
    } else {
        let _ = write!(out, "{value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_declared_as_each_format_wants_and_values_are_escaped() {
        let mut w = Writer::new(Format::Prometheus);
        w.family(
            "llmload_requests",
            Kind::Counter,
            None,
            "Requests ended.\nBy status.",
        );
        w.sample("llmload_requests_total", &[("case", "a\"b\\c\nd")], 3.0);
        let text = w.finish();
        assert_eq!(
            text,
            "# HELP llmload_requests_total Requests ended.\\nBy status.\n\
             # TYPE llmload_requests_total counter\n\
             llmload_requests_total{case=\"a\\\"b\\\\c\\nd\"} 3\n"
        );
        let mut w = Writer::new(Format::OpenMetrics);
        w.family("llmload_x_seconds", Kind::Histogram, Some("seconds"), "X.");
        w.family("llmload_requests", Kind::Counter, None, "R.");
        w.sample("llmload_requests_total", &[], 0.25);
        let text = w.finish();
        assert!(
            text.contains("# TYPE llmload_x_seconds histogram\n# UNIT llmload_x_seconds seconds\n")
        );
        assert!(text.contains("# TYPE llmload_requests counter\nllmload_requests_total 0.25\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn numbers_are_written_exactly() {
        let cases = [
            (3.0, "3"),
            (0.0, "0"),
            (0.005, "0.005"),
            (1e-7, "0.0000001"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (1e17, "100000000000000000"),
        ];
        for (value, text) in cases {
            let mut out = String::new();
            number_into(value, &mut out);
            assert_eq!(out, text, "{value}");
        }
    }

    #[test]
    fn openmetrics_is_asked_for_by_its_media_type() {
        let prometheus =
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain")), Format::Prometheus);
        assert_eq!(Format::from_accept(None), Format::Prometheus);
    }
}
