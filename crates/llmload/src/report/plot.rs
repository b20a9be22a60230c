//! Drawing helpers shared by the report's charts: an SVG canvas in a String, the error a chart
//! can end in, the palette, axis labels and legends. plotters does the drawing; nothing here
//! assembles SVG by hand.

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A drawing area of an SVG chart.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("the chart could not be drawn: {0}")]
pub struct ChartError(String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> ChartError {
        ChartError(e.to_string())
    }
}

/// One chart of the report.
#[derive(Debug)]
pub struct Figure {
    /// Heading, plain text.
    pub title: String,
    /// The chart as an `<svg>` element, or why it could not be drawn.
    pub svg: Result<String, ChartError>,
    /// What was plotted and the sample sizes, plain text.
    pub caption: String,
}

/// Every chart's canvas is this wide, px: the page's column in a wide window. In an 800 px
/// window the column is about 750 px, and the chart is drawn at about 0.78 of its size.
pub const WIDTH: u32 = 960;

/// Chart text, as plotters sizes it: its SVG backend writes a font-size of the size ÷ 1.24, so
/// 20 is 16.1 px of the canvas, about 12.6 px as rendered in an 800 px window and never less
/// than 12 px at any window at least that wide.
pub const TEXT: u32 = 20;

/// Chart and panel titles, as plotters sizes them (19.4 px of the canvas).
pub const TITLE: u32 = 24;

/// The widest a character of chart text ([`TEXT`], sans-serif) is drawn, px of the canvas, to
/// keep a label clear of what is beside it.
pub const CHAR: i32 = 11;

/// Chart text in `color`.
pub fn text(color: &RGBColor) -> TextStyle<'_> {
    TextStyle::from(("sans-serif", TEXT).into_font()).color(color)
}

/// The width of `label` as chart text, at most, px.
pub fn text_width(label: &str) -> i32 {
    CHAR.saturating_mul(i32::try_from(label.chars().count()).unwrap_or(i32::MAX))
}

/// The mesh of `chart` with its labels and axis names at [`TEXT`] px; the caller adds what
/// they say and draws it.
pub fn axes<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.label_style(("sans-serif", TEXT))
        .axis_desc_style(("sans-serif", TEXT));
    mesh
}

/// A noun of a caption in its singular and its plural.
pub type Noun = (&'static str, &'static str);

/// `k` and the noun in its number: "1 case", "3 cases".
pub fn count(k: usize, noun: Noun) -> String {
    format!("{k} {}", if k == 1 { noun.0 } else { noun.1 })
}

/// Line colours (Tableau 10), one per input length.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The SVG namespace attribute, which inline SVG needs not.
const NAMESPACE: &str = r#" xmlns="http://www.w3.org/2000/svg""#;

/// Draws into a fresh SVG of `size` pixels and returns it as an element to inline in HTML.
pub fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    // Inline SVG needs no namespace, and the page then names no external address at all.
    if let Some(at) = out.find(NAMESPACE) {
        out.replace_range(at..at + NAMESPACE.len(), "");
    }
    Ok(out)
}

/// Writes `message` in the middle of an empty chart.
pub fn empty(area: &Area, message: &str) -> Result<(), ChartError> {
    let (w, h) = area.dim_in_pixel();
    let style = TextStyle::from(("sans-serif", TITLE).into_font())
        .pos(Pos::new(HPos::Center, VPos::Center));
    let half = |n: u32| i32::try_from(n / 2).unwrap_or(i32::MAX);
    area.draw_text(message, &style, (half(w), half(h)))?;
    Ok(())
}

/// Milliseconds shown in seconds once the largest value passes 2 s.
#[derive(Clone, Copy)]
pub struct TimeAxis {
    /// Milliseconds per axis unit.
    pub divisor: f64,
    /// The axis unit, `ms` or `s`.
    pub unit: &'static str,
}

impl TimeAxis {
    /// The axis for values up to `max_ms`.
    pub fn for_max_ms(max_ms: f64) -> TimeAxis {
        if max_ms > 2000.0 {
            TimeAxis {
                divisor: 1e3,
                unit: "s",
            }
        } else {
            TimeAxis {
                divisor: 1.0,
                unit: "ms",
            }
        }
    }
}

/// An axis label without trailing zeros ("200", "0.25").
pub fn tick(value: &f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A label only at whole numbers, for an axis of counts.
pub fn whole(value: &f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else {
        String::new()
    }
}

/// The top of an axis whose largest value is `max`, with some room above it.
pub fn upper(max: f64) -> f64 {
    if max > 0.0 {
        max * 1.1
    } else {
        1.0
    }
}

/// Draws the series labels of `chart` at `position`.
pub fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    position: SeriesLabelPosition,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", TEXT))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_drop_trailing_zeros() {
        assert_eq!(tick(&200.0), "200");
        assert_eq!(tick(&0.25), "0.25");
        assert_eq!(tick(&0.0), "0");
        assert_eq!(whole(&4.0), "4");
        assert_eq!(whole(&2.5), "");
    }

    #[test]
    fn a_count_names_its_noun_in_its_number() {
        assert_eq!(count(1, ("round", "rounds")), "1 round");
        assert_eq!(count(0, ("case", "cases")), "0 cases");
        assert_eq!(count(2, ("case", "cases")), "2 cases");
    }
}
