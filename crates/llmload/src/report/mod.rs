//! Human views of a summary: one pure renderer per format, `fn render(&Summary) -> String`
//! (`report.html`, which also draws the records, takes the whole [`Report`]).

pub mod charts;
pub mod compare;
pub mod csv;
#[cfg(test)]
pub(crate) mod fixture;
pub mod gpu;
pub mod html;
pub mod load;
pub mod markdown;
pub mod marks;
pub mod plot;
mod rebuild;
pub mod timeline;

pub use load::{regenerate, rewrite, write_html, Report};
