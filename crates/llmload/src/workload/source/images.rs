//! What a request's images cost in prompt tokens, learned at setup from the server itself: the
//! prompt tokens it counts for one short text alone, and with the images of each case (their
//! count and size) twice, with two different sets. Where the two agree, the difference is what
//! those images cost, and every response's prompt count is checked against the text's length
//! plus that cost; where the server reports no count, or the two sets differ, the cost is not
//! known and the responses are unverified.

use super::PromptSource;
use crate::api::Prompt;
use crate::target::Target;
use crate::workload::image::{self, ImageSpec};
use std::collections::BTreeMap;

/// The cost of the images of a case, or why it is not known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageCost {
    /// Prompt tokens the images cost together, as the server's counts showed.
    Tokens(u32),
    /// Why the server's counts did not show it.
    Unknown(String),
}

/// The text the probes send with their images.
const SAMPLE: &str = "Describe the picture.";

/// Seeds of the probes' images, apart from any run's requests.
const PROBE_SEED: u64 = 0x1A6E_5EED;

/// The cost of the images of each of `specs`, from probes: one with the text alone, then two a
/// spec (one-token requests).
pub async fn costs(
    target: &Target,
    specs: &[ImageSpec],
) -> crate::error::Result<BTreeMap<ImageSpec, ImageCost>> {
    let mut costs = BTreeMap::new();
    if specs.is_empty() {
        return Ok(costs);
    }
    let alone = count(target, Vec::new()).await?;
    for &spec in specs {
        if costs.contains_key(&spec) {
            continue;
        }
        let first = count(target, probe_images(spec, 0).await?).await?;
        let second = count(target, probe_images(spec, 1).await?).await?;
        costs.insert(spec, cost(alone, first, second));
    }
    Ok(costs)
}

/// The images of probe `serial` of `spec`, made off the async threads: 64 images of
/// 4096×4096 take about a minute, and a stop signal meanwhile drops this future, which stops
/// their making at once.
async fn probe_images(spec: ImageSpec, serial: u64) -> crate::error::Result<Vec<String>> {
    image::urls_off_thread(spec, PROBE_SEED, serial)
        .await
        .ok_or_else(|| crate::error::Error::Internal("the probe's images were not made".into()))
}

/// The prompt tokens the server counts for the probe's text with `images`.
async fn count(target: &Target, images: Vec<String>) -> crate::error::Result<Option<u32>> {
    let counters = target
        .probe_with(Prompt::Text(SAMPLE.into()), &images)
        .await?;
    Ok(counters.prompt_tokens)
}

/// The images' cost from the counts of the text alone and with two sets of them.
fn cost(alone: Option<u32>, first: Option<u32>, second: Option<u32>) -> ImageCost {
    let (Some(alone), Some(first), Some(second)) = (alone, first, second) else {
        return ImageCost::Unknown(
            "the server reported no prompt-token count for the probes".into(),
        );
    };
    match first.checked_sub(alone) {
        Some(cost) if first == second && cost > 0 => ImageCost::Tokens(cost),
        _ => ImageCost::Unknown(format!(
            "the server counted {alone} prompt tokens for the text alone, {first} and {second} \
             with two sets of the images: no fixed cost"
        )),
    }
}

impl PromptSource {
    /// The same source, with what each image size costs (learned by [`costs`]).
    #[must_use]
    pub fn with_image_costs(mut self, costs: BTreeMap<ImageSpec, ImageCost>) -> PromptSource {
        self.image_costs = costs;
        self
    }

    /// Prompt tokens the images of `spec` cost together; `None` where it is not known.
    pub fn image_tokens(&self, spec: ImageSpec) -> Option<u32> {
        match self.image_costs.get(&spec)? {
            ImageCost::Tokens(t) => Some(*t),
            ImageCost::Unknown(_) => None,
        }
    }

    /// What the images cost, in words for the attempt's files; empty without images.
    pub fn image_counting(&self) -> String {
        let words: Vec<String> = self
            .image_costs
            .iter()
            .map(|(spec, cost)| match cost {
                ImageCost::Tokens(t) => format!("{}: {t} tokens", spec.words()),
                ImageCost::Unknown(why) => format!("{}: not known ({why})", spec.words()),
            })
            .collect();
        if words.is_empty() {
            return String::new();
        }
        format!(
            "; images by the server's counts of probes with and without them ({})",
            words.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_is_the_difference_two_sets_of_images_agree_on() {
        assert_eq!(cost(Some(10), Some(74), Some(74)), ImageCost::Tokens(64));
        assert!(matches!(
            cost(Some(10), Some(74), Some(75)),
            ImageCost::Unknown(why) if why.contains("10 prompt tokens for the text alone, 74 and 75")
        ));
        assert!(matches!(
            cost(Some(10), None, Some(74)),
            ImageCost::Unknown(_)
        ));
        assert!(matches!(
            cost(Some(10), Some(10), Some(10)),
            ImageCost::Unknown(_)
        ));
    }
}
