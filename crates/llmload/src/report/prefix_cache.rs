//! The page's section on a shared system prompt: per case, the share of its tokens the server
//! served from its prefix cache.

use super::page::{Block, Section};
use super::Report;

/// A line per case with a shared system prompt; none when no case had one.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let lines: Vec<String> = report
        .summary
        .cases
        .iter()
        .filter_map(|case| {
            let p = case.prefix_cache.as_ref()?;
            Some(format!(
                "{}: {} shared tokens, {:.1}% from the prefix cache (Σ {} of {} tokens); {} of \
                 {} responses hit (n = {})",
                case.id,
                p.shared_tokens,
                p.hit_rate * 100.0,
                p.cached_tokens,
                u64::from(p.n) * u64::from(p.shared_tokens),
                p.responses_hit,
                p.n,
                p.n
            ))
        })
        .collect();
    let resets: Vec<String> = report
        .summary
        .cases
        .iter()
        .filter_map(|case| {
            let r = case.prefix_cache_reset.as_ref()?;
            Some(match &r.refused {
                None => format!("{}: dropped before the case ({})", case.id, r.how),
                Some(why) => format!(
                    "{}: not dropped: the server refused ({}: {why}); the case ran on whatever \
                     its cache held",
                    case.id, r.how
                ),
            })
        })
        .collect();
    if lines.is_empty() && resets.is_empty() {
        return None;
    }
    let mut section = Section::new("prefix-cache", "Prefix cache");
    if !lines.is_empty() {
        section.note(
            "Shared system prompt: the share of its tokens served from the prefix cache, from \
             the server's cached-token counters over the ok responses.",
        );
        section.push(Block::List(lines));
    }
    if !resets.is_empty() {
        section.note("--reset-prefix-cache: what the server did when asked before each case.");
        section.push(Block::List(resets));
    }
    Some(section)
}
