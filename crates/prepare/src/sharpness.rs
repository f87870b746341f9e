//! How sharp a frame is, and which frames of a video to drop for blur.
//!
//! The measure is the variance of the Laplacian of the luminance (Pech-Pacheco et al. 2000): motion
//! blur and defocus remove high frequencies, and the 4-neighbour Laplacian is what is left of them.
//! It is comparable between frames of one video (same size, same scene), not between captures, so a
//! frame is judged only against its neighbours: of each run of [`RUN`] consecutive frames the
//! blurriest is dropped.

/// Frames per run; one of each run is dropped.
pub const RUN: usize = 5;

/// Variance of the 4-neighbour Laplacian of the luminance of an 8-bit RGB image.
pub fn laplacian_variance(width: u32, height: u32, rgb: &[u8]) -> f64 {
    let (w, h) = (width as usize, height as usize);
    if w < 3 || h < 3 {
        return 0.0;
    }
    let luma: Vec<f64> = rgb
        .chunks_exact(3)
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .collect();
    let (mut sum, mut sum_sq, mut n) = (0.0, 0.0, 0.0);
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            let l = luma[i - 1] + luma[i + 1] + luma[i - w] + luma[i + w] - 4.0 * luma[i];
            sum += l;
            sum_sq += l * l;
            n += 1.0;
        }
    }
    let mean = sum / n;
    sum_sq / n - mean * mean
}

/// Indices of the frames to keep: all but the least sharp of each run of [`RUN`] (a last, shorter run
/// of at least two frames loses its blurriest too). Ties drop the later frame.
pub fn keep_sharpest(sharpness: &[f64]) -> Vec<usize> {
    let mut keep = Vec::with_capacity(sharpness.len());
    for (run, chunk) in sharpness.chunks(RUN).enumerate() {
        let start = run * RUN;
        let drop = (chunk.len() >= 2).then(|| {
            // NaN counts as the blurriest.
            let key = |v: f64| if v.is_nan() { f64::NEG_INFINITY } else { v };
            let mut worst = 0;
            for (i, &s) in chunk.iter().enumerate() {
                if key(s) <= key(chunk[worst]) {
                    worst = i;
                }
            }
            worst
        });
        keep.extend(
            (0..chunk.len())
                .filter(|&i| Some(i) != drop)
                .map(|i| start + i),
        );
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checker(w: u32, h: u32, blur: usize) -> Vec<u8> {
        let sharp: Vec<f64> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if (x / 4 + y / 4) % 2 == 0 {
                    230.0
                } else {
                    20.0
                }
            })
            .collect();
        // A horizontal box blur of radius `blur`: motion blur.
        let mut out = Vec::new();
        for y in 0..h as usize {
            for x in 0..w as usize {
                let lo = x.saturating_sub(blur);
                let hi = (x + blur).min(w as usize - 1);
                let v: f64 = (lo..=hi).map(|xx| sharp[y * w as usize + xx]).sum::<f64>()
                    / (hi - lo + 1) as f64;
                out.extend([v as u8; 3]);
            }
        }
        out
    }

    #[test]
    fn blur_lowers_the_measure() {
        let s: Vec<f64> = [0, 1, 3]
            .iter()
            .map(|&b| laplacian_variance(64, 48, &checker(64, 48, b)))
            .collect();
        assert!(s[0] > s[1] && s[1] > s[2], "{s:?}");
        assert_eq!(laplacian_variance(64, 48, &[128; 64 * 48 * 3]), 0.0);
    }

    #[test]
    fn the_blurriest_of_each_run_is_dropped() {
        let s = [5.0, 1.0, 6.0, 7.0, 8.0, 9.0, 9.0, 2.0, 9.0, 9.0, 4.0, 3.0];
        assert_eq!(keep_sharpest(&s), vec![0, 2, 3, 4, 5, 6, 8, 9, 10]);
        assert_eq!(keep_sharpest(&[1.0]), vec![0]);
        assert_eq!(keep_sharpest(&[f64::NAN, 1.0, 2.0]), vec![1, 2]);
        assert!(keep_sharpest(&[]).is_empty());
    }
}
