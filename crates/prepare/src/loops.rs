//! Loop pairs for sequential matching without a vocabulary tree.
//!
//! COLMAP's loop detection retrieves similar frames with a vocabulary tree, a file Debian's package
//! does not ship (and `splat prepare` fetches nothing). Instead each frame is reduced to a 32 x 24
//! luminance thumbnail, normalised to zero mean and unit length; for every frame the [`PER_FRAME`]
//! frames most correlated with it, among those outside the sequential window, are proposed as pairs.
//! COLMAP then matches and geometrically verifies them like any other pair, so a wrong proposal costs
//! matching time, never a wrong pose. This closes the loop of a walk around an object, where the last
//! frames see what the first ones saw.

use std::path::Path;

use rayon::prelude::*;

use crate::PrepareError;

/// Proposed pairs per frame.
pub const PER_FRAME: usize = 3;
const THUMB: (u32, u32) = (32, 24);

/// A frame's thumbnail, zero mean and unit length (all zero for a flat image).
pub fn thumbnail(path: &Path) -> Result<Vec<f32>, PrepareError> {
    let img = image::open(path).map_err(|e| PrepareError::io(path, std::io::Error::other(e)))?;
    let small = img
        .resize_exact(THUMB.0, THUMB.1, image::imageops::FilterType::Triangle)
        .to_luma32f();
    let mut v = small.into_raw();
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    v.iter_mut().for_each(|x| *x -= mean);
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-6 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    Ok(v)
}

/// Pairs `(i, j)`, `i < j`, of frames further apart than `window` whose thumbnails correlate most:
/// up to [`PER_FRAME`] per frame, without repeats, sorted.
pub fn loop_pairs(thumbs: &[Vec<f32>], window: usize) -> Vec<(usize, usize)> {
    let n = thumbs.len();
    let mut pairs: Vec<(usize, usize)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut scored: Vec<(f32, usize)> = (0..n)
                .filter(|&j| i.abs_diff(j) > window)
                .map(|j| {
                    let c: f32 = thumbs[i].iter().zip(&thumbs[j]).map(|(a, b)| a * b).sum();
                    (c, j)
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored
                .into_iter()
                .take(PER_FRAME)
                .map(move |(_, j)| (i.min(j), i.max(j)))
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_that_look_alike_are_paired() {
        // 30 frames on a loop: frame i looks like a ramp shifted by i (mod 30); frames 0 and 29 are
        // neighbours on the loop but far apart in time.
        let thumbs: Vec<Vec<f32>> = (0..30)
            .map(|i| {
                let mut v: Vec<f32> = (0..64)
                    .map(|k| {
                        ((k as f32 + i as f32 * 64.0 / 30.0) * std::f32::consts::TAU / 64.0).sin()
                    })
                    .collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= n);
                v
            })
            .collect();
        let pairs = loop_pairs(&thumbs, 10);
        assert!(pairs.contains(&(0, 29)), "{pairs:?}");
        assert!(pairs.iter().all(|&(i, j)| j - i > 10 && i < j));
        assert!(pairs.len() <= 30 * PER_FRAME);
        assert!(loop_pairs(&thumbs[..5], 10).is_empty());
    }
}
