//! Images for chat requests (`--images`, `--image-size`): PNGs generated per request, each its
//! own (a server's cache of processed images never serves one), the same for the same seed, sent
//! as `image_url` parts with `data:` URLs.

use super::prompt::splitmix64;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The images of each request of a case: how many, and their size in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ImageSpec {
    /// Images per request.
    pub count: u32,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

/// The largest side an image may have, pixels.
pub const MAX_SIDE: u32 = 4096;

/// The most images one request may carry.
pub const MAX_IMAGES: u32 = 64;

impl ImageSpec {
    /// The case id's part: `img2x224x224`.
    pub fn id_part(self) -> String {
        format!("img{}x{}x{}", self.count, self.width, self.height)
    }

    /// In words: "2 images of 224×224".
    pub fn words(self) -> String {
        let s = if self.count == 1 { "" } else { "s" };
        format!("{} image{s} of {}×{}", self.count, self.width, self.height)
    }
}

impl From<crate::record::Images> for ImageSpec {
    fn from(images: crate::record::Images) -> ImageSpec {
        ImageSpec {
            count: images.count,
            width: images.width,
            height: images.height,
        }
    }
}

impl From<ImageSpec> for crate::record::Images {
    /// The images of `spec`, their cost not known yet.
    fn from(spec: ImageSpec) -> crate::record::Images {
        crate::record::Images {
            count: spec.count,
            width: spec.width,
            height: spec.height,
            tokens: None,
        }
    }
}

/// Parses `WIDTHxHEIGHT` (`224x224`), each side from 1 to [`MAX_SIDE`].
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--image-size {text:?}: WIDTHxHEIGHT in pixels, e.g. 224x224");
    let (w, h) = text.trim().split_once(['x', 'X', '×']).ok_or_else(bad)?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&v| v > 0 && v <= MAX_SIDE)
    };
    match (side(w), side(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!(
            "--image-size {text:?}: each side from 1 to {MAX_SIDE} pixels, e.g. 224x224"
        )),
    }
}

/// Side of the squares an image is drawn in, pixels: coarse enough that the PNG stays small,
/// fine enough that every image differs.
const BLOCK: u32 = 8;

/// The `k`-th image of the request of serial number `serial`, as PNG bytes: squares of
/// [`BLOCK`] pixels, each of a colour drawn from the seed, the serial and `k`.
pub fn png(width: u32, height: u32, seed: u64, serial: u64, k: u32) -> Vec<u8> {
    let never = AtomicBool::new(false);
    png_until(width, height, seed, serial, k, &never).unwrap_or_default()
}

/// Rows drawn and compressed between two looks at the stop flag.
const ROWS_AT_ONCE: u32 = 64;

/// As [`png`], drawn and compressed [`ROWS_AT_ONCE`] rows at a time, given up (`None`) as soon
/// as `stop` is set: a 4096×4096 image takes about a second.
fn png_until(
    width: u32,
    height: u32,
    seed: u64,
    serial: u64,
    k: u32,
    stop: &AtomicBool,
) -> Option<Vec<u8>> {
    use std::io::Write as _;
    let base = splitmix64(seed ^ splitmix64(serial) ^ (u64::from(k) << 48));
    let blocks_across = width.div_ceil(BLOCK);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Writing to memory cannot fail, and the rows are exactly width × height × 3 bytes.
    let mut writer = encoder.write_header().ok()?;
    let mut stream = writer.stream_writer().ok()?;
    let mut rows = Vec::with_capacity(width as usize * ROWS_AT_ONCE as usize * 3);
    for first in (0..height).step_by(ROWS_AT_ONCE as usize) {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        rows.clear();
        for y in first..height.min(first + ROWS_AT_ONCE) {
            for x in 0..width {
                let block = u64::from(y / BLOCK) * u64::from(blocks_across) + u64::from(x / BLOCK);
                let colour = splitmix64(base ^ block).to_le_bytes();
                rows.extend_from_slice(&colour[..3]);
            }
        }
        stream.write_all(&rows).ok()?;
    }
    stream.finish().ok()?;
    drop(writer);
    Some(out)
}

/// `bytes` as a `data:image/png;base64,…` URL.
fn url_of(bytes: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The `k`-th image of request `serial` as a `data:image/png;base64,…` URL.
pub fn data_url(width: u32, height: u32, seed: u64, serial: u64, k: u32) -> String {
    url_of(&png(width, height, seed, serial, k))
}

/// The images of one request of `spec`.
pub fn urls(spec: ImageSpec, seed: u64, serial: u64) -> Vec<String> {
    (0..spec.count)
        .map(|k| data_url(spec.width, spec.height, seed, serial, k))
        .collect()
}

/// Sets its flag when dropped: the work it watches is no longer wanted.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// As [`urls`], made on a blocking thread so that the task waiting for them stays able to
/// answer a stop: dropping the future (a stop signal during setup) stops the work within
/// [`ROWS_AT_ONCE`] rows. `None` only when stopped.
pub async fn urls_off_thread(spec: ImageSpec, seed: u64, serial: u64) -> Option<Vec<String>> {
    let stop = Arc::new(AtomicBool::new(false));
    let watched = Arc::clone(&stop);
    let _stop_on_drop = StopOnDrop(stop);
    tokio::task::spawn_blocking(move || {
        (0..spec.count)
            .map(|k| {
                png_until(spec.width, spec.height, seed, serial, k, &watched).map(|b| url_of(&b))
            })
            .collect()
    })
    .await
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_a_png_of_its_size_the_same_for_a_seed_and_its_own_per_request() {
        let bytes = png(20, 12, 7, 1, 0);
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, after the chunk's length and type.
        assert_eq!(&bytes[16..24], &[0, 0, 0, 20, 0, 0, 0, 12]);
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes.clone()));
        let reader = decoder.read_info().expect("a PNG");
        assert_eq!((reader.info().width, reader.info().height), (20, 12));
        assert_eq!(png(20, 12, 7, 1, 0), bytes);
        assert_ne!(png(20, 12, 7, 2, 0), bytes);
        assert_ne!(png(20, 12, 7, 1, 1), bytes);
        assert_ne!(png(20, 12, 8, 1, 0), bytes);
        let url = data_url(4, 4, 1, 1, 0);
        assert!(
            url.starts_with("data:image/png;base64,iVBORw0KGgo"),
            "{url}"
        );
    }

    #[test]
    fn sizes_are_width_by_height_within_bounds() {
        assert_eq!(parse_size("224x224"), Ok((224, 224)));
        assert_eq!(parse_size(" 640X480 "), Ok((640, 480)));
        assert!(parse_size("224").is_err());
        assert!(parse_size("0x10").is_err());
        assert!(parse_size("5000x10").is_err());
        let spec = ImageSpec {
            count: 2,
            width: 224,
            height: 224,
        };
        assert_eq!(spec.id_part(), "img2x224x224");
        assert_eq!(spec.words(), "2 images of 224×224");
    }
}
