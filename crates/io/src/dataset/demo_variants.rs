//! Variants of the demo capture with a known truth, for what real captures bring
//! (`splat demo --variant`):
//! - `exposure`: every training photo with its own exposure (2^u, u uniform in [-1, 1] stops) and white
//!   balance (each channel times a factor in [0.85, 1.15]), applied to the 8-bit values and clipped, as a
//!   phone's auto-exposure does; the test views (every 8th) keep the neutral appearance.
//! - `mover`: half of the training photos with an object that is somewhere else in each (a shaded
//!   disc, a passer-by), and `masks/NAME.png` for every image leaving it out (the disc grown by 2
//!   pixels; the other masks all white); the test views are clean.
//! - `fisheye`: every photo (test views too) through an OPENCV_FISHEYE lens seeing 170 degrees across
//!   ([`FISHEYE_K`], [`fisheye_camera`]); the corners look past 90 degrees, behind the image plane.
//!
//! Everything is drawn from the demo's seed and the view index, so a variant is the same bits on every
//! run.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_core::lens::Distortion;
use splat_core::{Camera, Projection};

/// What is done to the demo's training photos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DemoVariant {
    #[default]
    Plain,
    Exposure,
    Mover,
    Fisheye,
    /// The plain photos with every training view's pose in the model knocked off
    /// ([`perturbed_poses`]); the true poses in [`TRUE_POSES_FILE`].
    PerturbedPoses,
}

/// The `perturbed-poses` variant's true poses (a COLMAP images.txt in the dataset folder, which
/// `--poses` reads).
pub const TRUE_POSES_FILE: &str = "true_poses.txt";
/// The `perturbed-poses` variant's rotation error range, degrees.
pub const POSE_ROTATION_DEGREES: (f64, f64) = (0.5, 2.0);
/// Its position error range, as fractions of the camera spread (the largest distance of a camera
/// centre from their mean).
pub const POSE_POSITION_SPREAD: (f64, f64) = (0.01, 0.03);

/// The cameras with every training view's pose turned about a random axis by an angle in
/// [`POSE_ROTATION_DEGREES`] and its centre moved in a random direction by [`POSE_POSITION_SPREAD`] of
/// the spread (seeded; test views keep their poses).
pub fn perturbed_poses(cams: &[Camera], seed: u64) -> Vec<Camera> {
    let centres: Vec<[f64; 3]> = cams.iter().map(|c| c.center()).collect();
    let n = centres.len().max(1) as f64;
    let mean: [f64; 3] = std::array::from_fn(|k| centres.iter().map(|c| c[k]).sum::<f64>() / n);
    let spread = centres
        .iter()
        .map(|c| (0..3).map(|k| (c[k] - mean[k]).powi(2)).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9053_0ff5);
    let unit = |rng: &mut ChaCha8Rng| loop {
        let v: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let len = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if (0.1..=1.0).contains(&len) {
            return v.map(|x| x / len);
        }
    };
    cams.iter()
        .enumerate()
        .map(|(i, cam)| {
            let (axis, dir) = (unit(&mut rng), unit(&mut rng));
            let angle = rng
                .random_range(POSE_ROTATION_DEGREES.0..POSE_ROTATION_DEGREES.1)
                .to_radians();
            let dist = spread * rng.random_range(POSE_POSITION_SPREAD.0..POSE_POSITION_SPREAD.1);
            if is_test_view(i) {
                return cam.clone();
            }
            let turn = axis_angle(axis, angle);
            let rotation = splat_core::math::matmul(&turn, &cam.rotation);
            let c = cam.center();
            let centre: [f64; 3] = std::array::from_fn(|k| c[k] + dist * dir[k]);
            let rc = splat_core::math::mat3_vec(&rotation, centre);
            Camera {
                rotation,
                translation: rc.map(|v| -v),
                ..cam.clone()
            }
        })
        .collect()
}

/// The rotation by `angle` about the unit `axis` (Rodrigues).
fn axis_angle(axis: [f64; 3], angle: f64) -> [[f64; 3]; 3] {
    let (s, c) = angle.sin_cos();
    let [x, y, z] = axis;
    let t = 1.0 - c;
    [
        [c + t * x * x, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, c + t * z * z],
    ]
}

/// The `fisheye` variant's lens, OPENCV_FISHEYE's `k1..k4` (a mild barrel; `theta_d` grows at every
/// angle: its slope `1 - 0.06 theta^2 + 0.015 theta^4` has no real root).
pub const FISHEYE_K: [f64; 4] = [-0.02, 0.003, 0.0, 0.0];
/// The `fisheye` variant's horizontal field of view, degrees.
pub const FISHEYE_FOV_DEGREES: f64 = 170.0;

/// The lens of the variant's photos.
pub fn lens(variant: DemoVariant) -> Distortion {
    match variant {
        DemoVariant::Fisheye => Distortion::fisheye(FISHEYE_K),
        _ => Distortion::None,
    }
}

/// The demo camera `cam` with the `fisheye` variant's lens: the equidistant projection (the lens's
/// `theta_d` on top, [`lens`]) with the focal length that puts 85 degrees at the image's side.
pub fn fisheye_camera(cam: &Camera) -> Camera {
    let theta = (0.5 * FISHEYE_FOV_DEGREES).to_radians();
    let theta_d = Distortion::fisheye(FISHEYE_K).distort(theta, 0.0).0;
    let f = 0.5 * cam.width as f64 / theta_d;
    Camera {
        projection: Projection::Equidistant,
        fx: f,
        fy: f,
        ..cam.clone()
    }
}

/// Whether view `i` of the demo is a test view (the loaders hold out every 8th by name).
pub fn is_test_view(i: usize) -> bool {
    i.is_multiple_of(8)
}

/// The per-channel gains of view `i` in the `exposure` variant (1 for test views).
pub fn exposure_gains(seed: u64, i: usize) -> [f64; 3] {
    if is_test_view(i) {
        return [1.0; 3];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xe7b0_5e00 ^ (i as u64) << 20);
    let stops: f64 = rng.random_range(-1.0..1.0);
    std::array::from_fn(|_| 2f64.powf(stops) * rng.random_range(0.85..1.15))
}

/// Applies the variant to view `i`'s photo (`w x h` RGB); returns its mask (one byte per pixel, 255
/// kept) when the variant writes masks.
pub fn vary(
    variant: DemoVariant,
    seed: u64,
    i: usize,
    rgb: &mut [u8],
    w: u32,
    h: u32,
) -> Option<Vec<u8>> {
    match variant {
        DemoVariant::Plain | DemoVariant::Fisheye | DemoVariant::PerturbedPoses => None,
        DemoVariant::Exposure => {
            let g = exposure_gains(seed, i);
            for px in rgb.chunks_exact_mut(3) {
                for c in 0..3 {
                    px[c] = (px[c] as f64 * g[c]).round().clamp(0.0, 255.0) as u8;
                }
            }
            None
        }
        DemoVariant::Mover => Some(paint_mover(seed, i, rgb, w, h)),
    }
}

/// Paints the moving object into training views with an odd index; returns the mask.
fn paint_mover(seed: u64, i: usize, rgb: &mut [u8], w: u32, h: u32) -> Vec<u8> {
    let (w, h) = (w as usize, h as usize);
    let mut mask = vec![255u8; w * h];
    if is_test_view(i) || i.is_multiple_of(2) {
        return mask;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0b1e_c700 ^ (i as u64) << 20);
    let r = rng.random_range(0.15..0.25) * h as f64;
    let cx = rng.random_range(r..w as f64 - r);
    let cy = rng.random_range(r..h as f64 - r);
    let colour = [
        rng.random_range(150.0..230.0),
        rng.random_range(20.0..80.0),
        rng.random_range(20.0..120.0),
    ];
    for y in 0..h {
        for x in 0..w {
            let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
            let d = (dx * dx + dy * dy).sqrt();
            if d < r {
                // Lit from the upper left.
                let shade = 0.6 + 0.4 * (1.0 - ((dx + dy) / (2.0 * r) + 0.5).clamp(0.0, 1.0));
                for c in 0..3 {
                    rgb[(y * w + x) * 3 + c] = (colour[c] * shade).round() as u8;
                }
            }
            if d < r + 2.0 {
                mask[y * w + x] = 0;
            }
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_stays_in_the_stated_ranges_and_spares_test_views() {
        assert_eq!(exposure_gains(7, 8), [1.0; 3]);
        let mut spread = (f64::MAX, f64::MIN);
        for i in (0..64).filter(|&i| !is_test_view(i)) {
            for g in exposure_gains(7, i) {
                assert!((0.5 * 0.85..=2.0 * 1.15).contains(&g), "{g}");
                spread = (spread.0.min(g), spread.1.max(g));
            }
        }
        assert!(spread.0 < 0.6 && spread.1 > 1.7, "{spread:?}");
    }

    #[test]
    fn the_mover_is_masked_where_it_is_painted() {
        let (w, h) = (40u32, 30u32);
        let mut rgb = vec![100u8; (w * h * 3) as usize];
        let before = rgb.clone();
        let mask = vary(DemoVariant::Mover, 7, 3, &mut rgb, w, h).unwrap();
        let painted =
            (0..(w * h) as usize).filter(|&p| rgb[p * 3..p * 3 + 3] != before[p * 3..p * 3 + 3]);
        let mut n = 0;
        for p in painted {
            assert_eq!(mask[p], 0);
            n += 1;
        }
        assert!(n > 50, "{n} pixels painted");
        let mut clean = vec![100u8; (w * h * 3) as usize];
        let m = vary(DemoVariant::Mover, 7, 8, &mut clean, w, h).unwrap();
        assert!(m.iter().all(|&k| k == 255) && clean == before);
    }
}
