//! What a sweep found, marked on the charts over load: the saturation point `C_sat` and the
//! recommended cap, as dashed vertical lines with a label, and a sentence for the caption that
//! says what was marked (or why nothing was).

use crate::report::plot::{text, text_width, tick, ChartError};
use crate::summary::Summary;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The colour of the `C_sat` line.
pub const SATURATION: RGBColor = RGBColor(0, 0, 0);
/// The colour of the recommended-cap line.
pub const CAP: RGBColor = RGBColor(44, 130, 44);

/// `C_sat` and the recommended cap of a sweep, as loads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marks {
    /// The saturating load, when the sweep placed one (not where its range is bounded on one
    /// side only).
    pub saturation: Option<f64>,
    /// The recommended cap, when there is a `C_sat`.
    pub cap: Option<f64>,
    /// The range of loads a placed `C_sat` may be, in words (` (range 8–10)`), or empty.
    pub saturation_range: String,
    /// `C_sat` in words as every view writes it (`8 (range 8–10)`, `not placed (6 or more)`).
    pub saturation_text: String,
    /// What the sweep said about `C_sat` (its method, or why there is none).
    pub saturation_method: String,
    /// Whether the loads are rates (requests/s) rather than concurrencies.
    pub rate: bool,
}

impl Marks {
    /// The marks of `summary`'s sweep; `None` when the attempt was no sweep.
    pub fn of(summary: &Summary) -> Option<Marks> {
        let sweep = summary.sweep.as_ref()?;
        let a = &sweep.analysis;
        Some(Marks {
            saturation: a.saturation.placed(),
            cap: a.recommended_cap.value,
            saturation_range: super::saturation::range(&a.saturation),
            saturation_text: super::saturation::value(&a.saturation),
            saturation_method: a.saturation.method.clone(),
            rate: sweep.axis != crate::summary::sweep::Axis::Concurrency,
        })
    }

    /// A load as the charts label it: `4` or `2.5/s`.
    pub fn load(&self, value: f64) -> String {
        if self.rate {
            format!("{}/s", tick(&value))
        } else {
            tick(&value)
        }
    }

    /// The caption's sentence about the marks.
    pub fn caption(&self) -> String {
        match (self.saturation, self.cap) {
            (Some(c), Some(cap)) => format!(
                " Dashed lines: the sweep's saturation point C_sat = {}{} (black) and its \
                 recommended cap = {} (green); C_sat is {}.",
                self.load(c),
                self.saturation_range,
                self.load(cap),
                self.saturation_method,
            ),
            (Some(c), None) => format!(
                " Dashed line: the sweep's saturation point C_sat = {}{}; it is {}.",
                self.load(c),
                self.saturation_range,
                self.saturation_method
            ),
            (None, Some(cap)) => format!(
                " Dashed line: the sweep's recommended cap = {} (green); C_sat is {}, so no line \
                 marks it: {}.",
                self.load(cap),
                self.saturation_text,
                self.saturation_method
            ),
            _ => format!(
                " The sweep found no saturation point, so none is marked: {}.",
                self.saturation_method
            ),
        }
    }
}

/// Draws a dashed vertical line at `x` from the bottom to `top` of `chart`, with `label` at its
/// top (right of the line, or left when near the right edge).
pub fn vertical<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x: f64,
    top: f64,
    label: &str,
    color: RGBColor,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    chart.draw_series(DashedLineSeries::new(
        [(x, 0.0), (x, top)],
        6,
        4,
        color.stroke_width(2),
    ))?;
    let x_range = chart.x_range();
    let near_right = x > x_range.start + 0.75 * (x_range.end - x_range.start);
    let dx = if near_right {
        -text_width(label) - 6
    } else {
        5
    };
    let style = text(&color);
    chart.draw_series(std::iter::once(
        EmptyElement::at((x, top)) + Text::new(label.to_owned(), (dx, 4), style),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_sweep_gives_marks_and_a_run_gives_none() {
        assert_eq!(Marks::of(&fixture::report().summary), None);
        let marks = Marks::of(&fixture::sweep_report().summary).expect("a sweep");
        assert_eq!(marks.saturation, Some(4.0));
        assert_eq!(marks.cap, Some(3.0));
        assert!(!marks.rate);
        let caption = marks.caption();
        assert!(caption.contains("C_sat = 4"), "{caption}");
        assert!(caption.contains("recommended cap = 3"), "{caption}");
    }

    #[test]
    fn no_saturation_says_why() {
        let marks = Marks {
            saturation_method: "throughput was still rising".into(),
            rate: true,
            ..Marks::default()
        };
        assert!(marks.caption().contains("no saturation point"));
        assert!(marks.caption().contains("still rising"));
        assert_eq!(marks.load(2.5), "2.5/s");
    }
}
