//! `--images` and `--image-size`: generated images in chat requests, a case per count and size.

use super::parse::bad;
use super::{Config, WorkloadOptions};
use crate::api::Api;
use crate::error::ConfigError;
use crate::workload::image::{parse_size, ImageSpec, MAX_IMAGES};

/// The images of each case (count 0: a case without), `--images` × `--image-size`; empty
/// without `--images`.
pub(super) fn resolve(
    api: Option<Api>,
    w: &WorkloadOptions,
) -> Result<Vec<ImageSpec>, ConfigError> {
    let Some(counts) = w.images.clone() else {
        if w.image_size.is_some() {
            return bad("--image-size needs --images (how many per request)");
        }
        return Ok(Vec::new());
    };
    if api != Some(Api::Chat) {
        return bad("--images needs --api chat: images go in chat messages as image_url parts");
    }
    if counts.is_empty() || counts.iter().any(|&n| n > MAX_IMAGES) {
        return bad(format!(
            "--images takes one or more counts from 0 to {MAX_IMAGES}"
        ));
    }
    let sizes = w
        .image_size
        .clone()
        .unwrap_or_else(|| vec!["224x224".into()]);
    let sizes = sizes
        .iter()
        .map(|t| parse_size(t))
        .collect::<Result<Vec<_>, String>>()
        .map_err(ConfigError)?;
    let mut specs = Vec::new();
    for &count in &counts {
        for &(width, height) in &sizes {
            let spec = ImageSpec {
                count,
                width: if count == 0 { 0 } else { width },
                height: if count == 0 { 0 } else { height },
            };
            if !specs.contains(&spec) {
                specs.push(spec);
            }
        }
    }
    // Only cases without images: none at all.
    if specs.iter().all(|s| s.count == 0) {
        return Ok(Vec::new());
    }
    Ok(specs)
}

/// Refuses what images do not go with: conversations and datasets bring their own messages.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    if config.images.is_empty() {
        return Ok(());
    }
    if config.load.session.is_some() || config.dataset.is_some() || config.load.trace.is_some() {
        return bad("--images does not go with --turns, --dataset or --trace");
    }
    if config.load.stages.is_some() && config.images.len() > 1 {
        return bad("a staged run takes one --images and one --image-size");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(images: Option<Vec<u32>>, sizes: Option<&[&str]>) -> WorkloadOptions {
        WorkloadOptions {
            images,
            image_size: sizes.map(|v| v.iter().map(|&t| t.to_owned()).collect()),
            ..WorkloadOptions::default()
        }
    }

    fn resolve(w: &WorkloadOptions) -> Result<Vec<ImageSpec>, ConfigError> {
        super::resolve(Some(Api::Chat), w)
    }

    #[test]
    fn counts_cross_sizes_and_a_count_of_zero_is_one_case_without() {
        let specs = resolve(&settings(Some(vec![0, 2]), Some(&["32x32", "64x48"]))).expect("valid");
        let ids: Vec<String> = specs.iter().map(|s| s.id_part()).collect();
        assert_eq!(ids, ["img0x0x0", "img2x32x32", "img2x64x48"]);
        assert_eq!(
            resolve(&settings(Some(vec![0]), None)).ok(),
            Some(Vec::new())
        );
        let default = resolve(&settings(Some(vec![1]), None)).expect("valid");
        assert_eq!((default[0].width, default[0].height), (224, 224));
        assert!(resolve(&settings(None, Some(&["32x32"]))).is_err());
        assert!(resolve(&settings(Some(vec![65]), None)).is_err());
        assert!(resolve(&settings(Some(vec![1]), Some(&["32"]))).is_err());
        let one = settings(Some(vec![1]), None);
        assert!(super::resolve(Some(Api::Completions), &one).is_err());
    }
}
