//! Coarse to fine: the training views at a fraction of their size early in a run
//! ([`crate::config::TrainConfig::resolution_schedule`]).
//!
//! A step costs about its Gaussian-pixel pairs (BENCHMARKS.md), so a step at half the size costs about a
//! quarter; early in a run the Gaussians are large and few and the low frequencies are what the
//! gradients fix, so the small images lose little (DashGaussian, OpenSplat and splatfacto train the first
//! steps at 1/4 size; `../shared/docs/fast-training.md`). A view at factor `f` is the photo averaged over
//! `f x f` blocks (the size rounded down; an antialiasing box filter) with the intrinsics divided by
//! `f`, which is exact for this renderer's pixel centres at `i + 0.5`: pixel `j` of the small image
//! covers pixels `f j .. f j + f` of the photo, whose centre `f (j + 0.5)` maps to `j + 0.5`.
//!
//! Nothing else changes with the resolution: the densification statistic is the 2D-mean gradient in
//! normalized device coordinates, scaled by half the current render's width and height
//! ([`crate::densify::view_stats`]), so its 0.0002 threshold means the same at every size (as gsplat
//! scales it), and the 3D filter is computed from the full-size cameras, the rate the result is seen at.

use splat_io::dataset::imageload::downscale;
use splat_io::dataset::View;

/// `view` at `1 / factor` of its size.
pub fn downscale_view(view: &View, factor: u32) -> View {
    let f = factor.max(1);
    let image = downscale(&view.image, f);
    let mut camera = view.camera.clone();
    let s = 1.0 / f as f64;
    camera.width = image.width;
    camera.height = image.height;
    camera.fx *= s;
    camera.fy *= s;
    camera.cx *= s;
    camera.cy *= s;
    let mask = (view.mask.as_ref()).map(|m| m.resampled(|g| downscale(g, f)));
    View {
        name: view.name.clone(),
        camera,
        image,
        mask,
        display_jpeg: None,
    }
}

/// The training views at the current level's factor (kept until the level changes; at factor 1
/// the dataset's own views are used and nothing is kept).
#[derive(Default)]
pub struct ScaledViews {
    pub downscale: u32,
    pub views: Vec<View>,
}

impl ScaledViews {
    /// Makes the views at `factor` current (rebuilt only when the factor changes).
    pub fn set(&mut self, full: &[View], factor: u32) {
        let factor = factor.max(1);
        if factor == self.downscale.max(1) {
            return;
        }
        self.downscale = factor;
        self.views = if factor == 1 {
            Vec::new()
        } else {
            full.iter().map(|v| downscale_view(v, factor)).collect()
        };
    }

    /// The views to train on: the scaled ones, or `full` at factor 1.
    pub fn of<'v>(&'v self, full: &'v [View]) -> &'v [View] {
        if self.downscale > 1 {
            &self.views
        } else {
            full
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use splat_core::camera::Camera;
    use splat_io::dataset::Rgb8Image;

    fn view(w: u32, h: u32) -> View {
        let mut camera = Camera::look_at([0.0, 0.0, -4.0], [0.0; 3], [0.0, 1.0, 0.0], 60.0, w, h);
        camera.cx = 0.43 * w as f64;
        let data = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        View {
            name: "v".into(),
            camera,
            image: Rgb8Image {
                width: w,
                height: h,
                data,
            },
            mask: None,
            display_jpeg: None,
        }
    }

    fn project(c: &Camera, p: [f64; 3]) -> [f64; 2] {
        let r = &c.rotation;
        let q: [f64; 3] = std::array::from_fn(|i| {
            r[i][0] * p[0] + r[i][1] * p[1] + r[i][2] * p[2] + c.translation[i]
        });
        [c.fx * q[0] / q[2] + c.cx, c.fy * q[1] / q[2] + c.cy]
    }

    /// The small camera sees a world point at the small pixel that the photo's block around its
    /// pixel averages into.
    #[test]
    fn intrinsics_follow_the_pixel_blocks() {
        let v = view(101, 77);
        let s = downscale_view(&v, 4);
        assert_eq!((s.camera.width, s.camera.height), (25, 19));
        assert_eq!((s.image.width, s.image.height), (25, 19));
        for p in [[0.3, -0.2, 0.5], [-0.7, 0.4, -0.1]] {
            let big = project(&v.camera, p);
            let small = project(&s.camera, p);
            assert!((big[0] / 4.0 - small[0]).abs() < 1e-9, "{big:?} {small:?}");
            assert!((big[1] / 4.0 - small[1]).abs() < 1e-9, "{big:?} {small:?}");
        }
        // Pixel (2, 1) of the small image is the mean of the photo's block x 8..12, y 4..8.
        let mut sum = 0u32;
        for y in 4..8 {
            for x in 8..12 {
                sum += v.image.data[((y * 101 + x) * 3) as usize] as u32;
            }
        }
        assert_eq!(s.image.data[((25 + 2) * 3) as usize] as u32, (sum + 8) / 16);
    }

    #[test]
    fn views_are_rebuilt_only_on_a_change() {
        let full = vec![view(64, 48), view(64, 48)];
        let mut scaled = ScaledViews::default();
        scaled.set(&full, 1);
        assert!(std::ptr::eq(scaled.of(&full), full.as_slice()));
        scaled.set(&full, 2);
        assert_eq!(scaled.of(&full)[1].camera.width, 32);
        let before = scaled.views.as_ptr();
        scaled.set(&full, 2);
        assert_eq!(scaled.views.as_ptr(), before);
        scaled.set(&full, 1);
        assert!(scaled.views.is_empty() && std::ptr::eq(scaled.of(&full), full.as_slice()));
    }
}
