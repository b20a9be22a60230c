//! Human views of a summary: one pure renderer per format, `fn render(&Summary) -> String`.

pub mod markdown;
