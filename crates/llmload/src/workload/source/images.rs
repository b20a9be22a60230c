//! What an image costs in prompt tokens, learned at setup from the server itself: the prompt
//! tokens it counts for one text alone, with one image and with two of a size. Where the two
//! steps agree, that step is what each image of the size costs, and every response's prompt
//! count is checked against the text's length plus its images' cost; where the server reports no
//! count, or the steps differ, the cost is not known and the responses are unverified.

use super::PromptSource;
use crate::api::Prompt;
use crate::target::Target;
use crate::workload::image::{self, ImageSpec};
use std::collections::BTreeMap;

/// The cost of one image of a size, or why it is not known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageCost {
    /// Prompt tokens per image, as the server's counts showed.
    Tokens(u32),
    /// Why the server's counts did not show it.
    Unknown(String),
}

/// The text the probes send with their images.
const SAMPLE: &str = "Describe the picture.";

/// Seeds of the probes' images, apart from any run's requests.
const PROBE_SEED: u64 = 0x1A6E_5EED;

/// The cost of an image of each size in `specs`, from probes (three one-token requests a size).
pub async fn costs(
    target: &Target,
    specs: &[ImageSpec],
) -> crate::error::Result<BTreeMap<(u32, u32), ImageCost>> {
    let mut costs = BTreeMap::new();
    for spec in specs {
        let size = (spec.width, spec.height);
        if costs.contains_key(&size) {
            continue;
        }
        let images: Vec<String> = (0..2)
            .map(|k| image::data_url(size.0, size.1, PROBE_SEED, 0, k))
            .collect();
        let mut counts = Vec::with_capacity(3);
        for n in 0..=2 {
            let counters = target
                .probe_with(Prompt::Text(SAMPLE.into()), &images[..n])
                .await?;
            counts.push(counters.prompt_tokens);
        }
        costs.insert(size, cost(&counts));
    }
    Ok(costs)
}

/// The cost per image from the counts of 0, 1 and 2 images.
fn cost(counts: &[Option<u32>]) -> ImageCost {
    let [Some(none), Some(one), Some(two)] = counts[..] else {
        return ImageCost::Unknown(
            "the server reported no prompt-token count for the probes".into(),
        );
    };
    match (one.checked_sub(none), two.checked_sub(one)) {
        (Some(first), Some(second)) if first == second && first > 0 => ImageCost::Tokens(first),
        _ => ImageCost::Unknown(format!(
            "the server counted {none}, {one} and {two} prompt tokens for 0, 1 and 2 images: \
             no fixed cost per image"
        )),
    }
}

impl PromptSource {
    /// The same source, with what each image size costs (learned by [`costs`]).
    #[must_use]
    pub fn with_image_costs(mut self, costs: BTreeMap<(u32, u32), ImageCost>) -> PromptSource {
        self.image_costs = costs;
        self
    }

    /// Prompt tokens the images of `spec` cost together; `None` where it is not known.
    pub fn image_tokens(&self, spec: ImageSpec) -> Option<u32> {
        match self.image_costs.get(&(spec.width, spec.height))? {
            ImageCost::Tokens(t) => Some(t.saturating_mul(spec.count)),
            ImageCost::Unknown(_) => None,
        }
    }

    /// What the images cost, in words for the attempt's files; empty without images.
    pub fn image_counting(&self) -> String {
        let words: Vec<String> = self
            .image_costs
            .iter()
            .map(|((w, h), cost)| match cost {
                ImageCost::Tokens(t) => format!("{w}×{h}: {t} tokens each"),
                ImageCost::Unknown(why) => format!("{w}×{h}: not known ({why})"),
            })
            .collect();
        if words.is_empty() {
            return String::new();
        }
        format!(
            "; images by the server's counts of probes with 0, 1 and 2 images ({})",
            words.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_is_the_step_the_counts_agree_on() {
        assert_eq!(
            cost(&[Some(10), Some(74), Some(138)]),
            ImageCost::Tokens(64)
        );
        assert!(matches!(
            cost(&[Some(10), Some(74), Some(140)]),
            ImageCost::Unknown(why) if why.contains("10, 74 and 140")
        ));
        assert!(matches!(
            cost(&[Some(10), None, None]),
            ImageCost::Unknown(_)
        ));
        assert!(matches!(
            cost(&[Some(10), Some(10), Some(10)]),
            ImageCost::Unknown(_)
        ));
    }
}
