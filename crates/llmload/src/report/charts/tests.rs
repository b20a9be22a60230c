//! Tests of the chart renderers.

use super::*;
use crate::fixture;

#[test]
fn only_complete_cases_are_plotted_per_input_length() {
    let summary = fixture::report().summary;
    let lines = series(&summary, &Lengths::default());
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].label, "64 input tokens");
    assert_eq!(lines[0].cases.len(), 2);
    assert_eq!(lines[1].cases.len(), 1, "in256-c2 is incomplete");
}

#[test]
fn every_chart_is_one_svg_and_names_its_samples() {
    let summary = fixture::report().summary;
    for figure in [
        latency(&summary, &Lengths::default()),
        throughput(&summary, &Lengths::default()),
        latency_throughput(&summary, &Lengths::default()),
    ] {
        let svg = figure.svg.expect("drawn");
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(!svg.contains("http"));
        assert!(figure.caption.contains("n = "), "{}", figure.caption);
        assert!(figure.caption.contains("1 incomplete case"));
    }
}

#[test]
fn a_sweep_marks_c_sat_and_the_cap_where_it_measured_them() {
    let summary = fixture::sweep_report().summary;
    let figure = throughput(&summary, &Lengths::default());
    let svg = figure.svg.expect("drawn");
    assert!(
        svg.contains("C_sat = 4") && svg.contains("cap = 3"),
        "both lines"
    );
    assert!(figure.caption.contains("C_sat = 4"), "{}", figure.caption);
    // The cap (3) was not a measured load: the curve has a C_sat line only, and says why.
    let figure = latency_throughput(&summary, &Lengths::default());
    let svg = figure.svg.expect("drawn");
    assert!(svg.contains("C_sat = 4"));
    assert!(!svg.contains("cap = 3"));
    assert!(
        figure.caption.contains("cap (3) was not measured"),
        "{}",
        figure.caption
    );
    let plain = throughput(&fixture::report().summary, &Lengths::default())
        .svg
        .expect("drawn");
    assert!(!plain.contains("C_sat"), "no sweep, no marks");
}
