//! Buffers passed between stages. Every stage writes into a caller-owned buffer, resizing it to the
//! problem size; capacity is kept, so a steady-state loop allocates nothing once buffers have grown.

use splat_core::{Footprint, Gaussians, Real, TileRect};

/// Thresholds of the blending rule. [`Cutoffs::ORIGINAL`] is the original 3DGS rule and the default;
/// [`Cutoffs::SMOOTH`] switches the discontinuous cuts off, which only gradient tests use (the rendered
/// function is then smooth almost everywhere, so finite differences can check it anywhere).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cutoffs {
    /// A Gaussian is skipped at a pixel where its alpha is below this (1/255).
    pub alpha_min: f64,
    /// Alpha is clamped to at most this (0.99).
    pub alpha_max: f64,
    /// Blending stops before a step that would bring transmittance below this (1e-4).
    pub transmittance_min: f64,
}

impl Cutoffs {
    pub const ORIGINAL: Cutoffs = Cutoffs {
        alpha_min: 1.0 / 255.0,
        alpha_max: 0.99,
        transmittance_min: 1e-4,
    };
    pub const SMOOTH: Cutoffs = Cutoffs {
        alpha_min: 0.0,
        alpha_max: 1.0,
        transmittance_min: 0.0,
    };
}

impl Default for Cutoffs {
    fn default() -> Self {
        Cutoffs::ORIGINAL
    }
}

/// What a render needs besides the scene and the camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderSettings {
    /// Colour added with the final transmittance.
    pub background: [f32; 3],
    /// SH degree used for colour (at most the scene's degree; training raises it over time).
    pub sh_degree: usize,
    pub cutoffs: Cutoffs,
    /// Whether project backward writes the SH coefficients' gradients (default). A trainer that steps on
    /// one view at a time turns it off: those gradients are `basis_k(view dir) x masked colour gradient`
    /// ([`crate::sh::sh_dc_grad`], [`crate::sh::sh_rest_grad`]), which its optimizer forms from the
    /// colour gradients as it updates, and the gradient buffer then holds no SH part (192 bytes per
    /// Gaussian at degree 3).
    pub sh_grads: bool,
    /// Whether rasterize backward also sums, per Gaussian, the absolute values of each pixel's 2D-mean
    /// gradient ([`ProjectedGrads::abs_grad_means2d`], AbsGS's densification statistic).
    pub absgrad: bool,
    /// Whether project backward also returns the gradient of the camera's pose ([`PoseGrads`]).
    pub pose_grads: bool,
}

impl RenderSettings {
    pub fn new(sh_degree: usize) -> Self {
        RenderSettings {
            background: [0.0; 3],
            sh_degree,
            cutoffs: Cutoffs::ORIGINAL,
            sh_grads: true,
            absgrad: false,
            pose_grads: false,
        }
    }
}

/// Output of the project stage (and SH), one entry per Gaussian. A Gaussian is visible when `radii > 0`;
/// the other fields of a culled Gaussian are unspecified.
#[derive(Clone, Debug, Default)]
pub struct Projected<F> {
    /// Projected centre in continuous pixel coordinates.
    pub means2d: Vec<[F; 2]>,
    /// Inverse of the dilated 2D covariance, `(a, b, c)` of `[[a, b], [b, c]]`.
    pub conics: Vec<[F; 3]>,
    /// Camera-space z.
    pub depths: Vec<F>,
    /// `ceil(3 sqrt(largest eigenvalue))` in pixels; 0 when culled.
    pub radii: Vec<u32>,
    /// The bounding rectangle of the tiles the Gaussian is listed in: those of its 3-sigma square that its
    /// `alpha >= alpha_min` box reaches (possibly none for a visible Gaussian, see
    /// `project::visible_box`). It is listed in those of them its ellipse reaches ([`Projected::tiles`]).
    pub tile_rects: Vec<TileRect>,
    /// `sigmoid(opacity_logit)`.
    pub opacities: Vec<F>,
    /// View-dependent RGB after the +0.5 offset and the clamp at 0.
    pub colors: Vec<[F; 3]>,
    /// Channels whose colour was clamped at 0 (their gradient is zero).
    pub color_clamped: Vec<[bool; 3]>,
    /// The blending rule's `alpha_min` the tiles are cut at ([`Footprint`]); 0 lists every tile of a rect.
    pub alpha_min: f64,
}

impl<F: Real> Projected<F> {
    pub fn len(&self) -> usize {
        self.radii.len()
    }

    pub fn is_empty(&self) -> bool {
        self.radii.is_empty()
    }

    pub fn num_visible(&self) -> usize {
        self.radii.iter().filter(|&&r| r > 0).count()
    }

    /// Gaussian `i`'s exact `alpha >= alpha_min` ellipse, in f32 whatever `F` (as every backend tests it).
    pub fn footprint(&self, i: usize) -> Footprint {
        let f = |v: F| v.as_f64() as f32;
        Footprint::new(
            self.means2d[i].map(f),
            self.conics[i].map(f),
            f(self.opacities[i]),
            self.alpha_min as f32,
        )
    }

    /// The tiles `(tx, ty)` visible Gaussian `i` is listed in, row by row: those of its rect its
    /// footprint reaches. Every backend's bin lists exactly these.
    pub fn tiles(&self, i: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let rect = self.tile_rects[i];
        let footprint = (self.radii[i] > 0 && !rect.is_empty()).then(|| self.footprint(i));
        footprint.into_iter().flat_map(move |f| {
            (rect.y0..rect.y1)
                .flat_map(move |ty| (rect.x0..rect.x1).map(move |tx| (tx, ty)))
                .filter(move |&(tx, ty)| f.reaches(tx, ty))
        })
    }

    /// All arrays as one splittable range.
    pub fn slices_mut(&mut self) -> ProjectedSlices<'_, F> {
        ProjectedSlices {
            start: 0,
            means2d: &mut self.means2d,
            conics: &mut self.conics,
            depths: &mut self.depths,
            radii: &mut self.radii,
            tile_rects: &mut self.tile_rects,
            opacities: &mut self.opacities,
            colors: &mut self.colors,
            color_clamped: &mut self.color_clamped,
        }
    }

    /// Resizes every array to `n`, keeping capacity.
    pub fn resize(&mut self, n: usize) {
        self.means2d.resize(n, [F::zero(); 2]);
        self.conics.resize(n, [F::zero(); 3]);
        self.depths.resize(n, F::zero());
        self.radii.resize(n, 0);
        self.tile_rects.resize(n, TileRect::default());
        self.opacities.resize(n, F::zero());
        self.colors.resize(n, [F::zero(); 3]);
        self.color_clamped.resize(n, [false; 3]);
    }
}

/// A range `start..start + len` of a [`Projected`]'s arrays, borrowed mutably; `split_at` hands disjoint
/// ranges to threads.
pub struct ProjectedSlices<'a, F> {
    pub start: usize,
    pub means2d: &'a mut [[F; 2]],
    pub conics: &'a mut [[F; 3]],
    pub depths: &'a mut [F],
    pub radii: &'a mut [u32],
    pub tile_rects: &'a mut [TileRect],
    pub opacities: &'a mut [F],
    pub colors: &'a mut [[F; 3]],
    pub color_clamped: &'a mut [[bool; 3]],
}

impl<'a, F> ProjectedSlices<'a, F> {
    pub fn len(&self) -> usize {
        self.radii.len()
    }

    pub fn is_empty(&self) -> bool {
        self.radii.is_empty()
    }

    /// `[start, start + mid)` and the rest.
    pub fn split_at(self, mid: usize) -> (Self, Self) {
        let (m0, m1) = self.means2d.split_at_mut(mid);
        let (c0, c1) = self.conics.split_at_mut(mid);
        let (d0, d1) = self.depths.split_at_mut(mid);
        let (r0, r1) = self.radii.split_at_mut(mid);
        let (t0, t1) = self.tile_rects.split_at_mut(mid);
        let (o0, o1) = self.opacities.split_at_mut(mid);
        let (k0, k1) = self.colors.split_at_mut(mid);
        let (q0, q1) = self.color_clamped.split_at_mut(mid);
        (
            ProjectedSlices {
                start: self.start,
                means2d: m0,
                conics: c0,
                depths: d0,
                radii: r0,
                tile_rects: t0,
                opacities: o0,
                colors: k0,
                color_clamped: q0,
            },
            ProjectedSlices {
                start: self.start + mid,
                means2d: m1,
                conics: c1,
                depths: d1,
                radii: r1,
                tile_rects: t1,
                opacities: o1,
                colors: k1,
                color_clamped: q1,
            },
        )
    }
}

/// Output of the bin stage: the (tile, depth)-sorted list of Gaussian ids and each tile's range in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bins {
    /// Gaussian ids, grouped by tile (ascending), front to back within a tile.
    pub gaussian_ids: Vec<u32>,
    /// Per tile, `[start, end)` into `gaussian_ids`.
    pub tile_ranges: Vec<[u32; 2]>,
}

impl Bins {
    pub fn num_intersections(&self) -> usize {
        self.gaussian_ids.len()
    }
}

/// Output of the rasterize forward stage.
#[derive(Clone, Debug, Default)]
pub struct RasterOutput<F> {
    pub width: u32,
    pub height: u32,
    /// Row-major RGB, `height * width * 3`.
    pub image: Vec<F>,
    /// Transmittance left after the last blended Gaussian, per pixel (the backward recovers T from it).
    pub final_transmittance: Vec<F>,
    /// Per pixel, the number of entries of its tile's list up to and including the last one blended.
    pub n_contrib: Vec<u32>,
}

impl<F: Real> RasterOutput<F> {
    /// Resizes for an image, keeping capacity. Contents are left as they were: the stage writes every pixel.
    pub fn resize(&mut self, width: u32, height: u32) {
        let n = width as usize * height as usize;
        self.width = width;
        self.height = height;
        self.image.resize(n * 3, F::zero());
        self.final_transmittance.resize(n, F::zero());
        self.n_contrib.resize(n, 0);
    }

    /// Fills every output with NaN (and `n_contrib` with `u32::MAX`) so that unwritten pixels show.
    pub fn poison(&mut self) {
        self.image.fill(F::nan());
        self.final_transmittance.fill(F::nan());
        self.n_contrib.fill(u32::MAX);
    }
}

/// Gradients with respect to the outputs of the project stage, one entry per Gaussian.
#[derive(Clone, Debug, Default)]
pub struct ProjectedGrads<F> {
    /// Gradient with respect to the 2D mean in pixels; its norm drives densification.
    pub grad_means2d: Vec<[F; 2]>,
    pub grad_conics: Vec<[F; 3]>,
    pub grad_colors: Vec<[F; 3]>,
    /// With respect to the activated opacity.
    pub grad_opacities: Vec<F>,
    /// With [`RenderSettings::absgrad`]: per Gaussian, the sum over pixels of `|d L / d mean2d|`
    /// taken per component at each pixel; empty otherwise.
    pub abs_grad_means2d: Vec<[F; 2]>,
}

impl<F: Real> ProjectedGrads<F> {
    /// Resizes to `n` Gaussians and zeroes every gradient.
    pub fn reset(&mut self, n: usize) {
        self.grad_means2d.clear();
        self.grad_means2d.resize(n, [F::zero(); 2]);
        self.grad_conics.clear();
        self.grad_conics.resize(n, [F::zero(); 3]);
        self.grad_colors.clear();
        self.grad_colors.resize(n, [F::zero(); 3]);
        self.grad_opacities.clear();
        self.grad_opacities.resize(n, F::zero());
        self.abs_grad_means2d.clear();
    }

    /// [`ProjectedGrads::reset`], with the absolute-gradient sums sized (and zeroed) when `absgrad`.
    pub fn reset_for(&mut self, n: usize, absgrad: bool) {
        self.reset(n);
        if absgrad {
            self.abs_grad_means2d.resize(n, [F::zero(); 2]);
        }
    }
}

/// The gradient of the loss with respect to the camera's pose: its world-to-camera rotation `R` (every
/// entry as a free variable) and translation `t`, in `f64` whatever the render's precision (a sum over
/// every visible Gaussian).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoseGrads {
    pub rotation: [[f64; 3]; 3],
    pub translation: [f64; 3],
}

impl PoseGrads {
    /// `self + other`.
    pub fn plus(mut self, other: PoseGrads) -> PoseGrads {
        for r in 0..3 {
            for c in 0..3 {
                self.rotation[r][c] += other.rotation[r][c];
            }
            self.translation[r] += other.translation[r];
        }
        self
    }

    /// The 12 values, rotation row by row then translation.
    pub fn to_array(&self) -> [f64; 12] {
        let r = self.rotation.as_flattened();
        std::array::from_fn(|k| if k < 9 { r[k] } else { self.translation[k - 9] })
    }

    /// The inverse of [`PoseGrads::to_array`].
    pub fn from_array(v: &[f64; 12]) -> PoseGrads {
        PoseGrads {
            rotation: std::array::from_fn(|r| std::array::from_fn(|c| v[3 * r + c])),
            translation: [v[9], v[10], v[11]],
        }
    }
}

/// Gradients with respect to every optimized parameter, in the shape of the scene itself.
pub type GaussianGrads<F = f32> = Gaussians<F>;

/// A range `start..start + len` of a [`GaussianGrads`]' arrays, borrowed mutably; `split_at` hands
/// disjoint ranges to threads.
pub struct GaussianGradSlices<'a, F> {
    pub start: usize,
    /// SH rest values per Gaussian.
    pub rest_len: usize,
    pub means: &'a mut [[F; 3]],
    pub log_scales: &'a mut [[F; 3]],
    pub rotations: &'a mut [[F; 4]],
    pub opacity_logits: &'a mut [F],
    pub sh_dc: &'a mut [[F; 3]],
    pub sh_rest: &'a mut [F],
}

impl<'a, F> GaussianGradSlices<'a, F> {
    /// All of `grads` as one range.
    pub fn new(grads: &'a mut GaussianGrads<F>) -> Self
    where
        F: Real,
    {
        // No SH part when the caller forms it (`RenderSettings::sh_grads` off).
        let rest_len = if grads.sh_rest.is_empty() {
            0
        } else {
            grads.sh_rest_len()
        };
        GaussianGradSlices {
            start: 0,
            rest_len,
            means: &mut grads.means,
            log_scales: &mut grads.log_scales,
            rotations: &mut grads.rotations,
            opacity_logits: &mut grads.opacity_logits,
            sh_dc: &mut grads.sh_dc,
            sh_rest: &mut grads.sh_rest,
        }
    }

    pub fn len(&self) -> usize {
        self.means.len()
    }

    pub fn is_empty(&self) -> bool {
        self.means.is_empty()
    }

    /// `[start, start + mid)` and the rest.
    pub fn split_at(self, mid: usize) -> (Self, Self) {
        let (m0, m1) = self.means.split_at_mut(mid);
        let (s0, s1) = self.log_scales.split_at_mut(mid);
        let (r0, r1) = self.rotations.split_at_mut(mid);
        let (o0, o1) = self.opacity_logits.split_at_mut(mid);
        let (d0, d1) = self
            .sh_dc
            .split_at_mut(if self.sh_dc.is_empty() { 0 } else { mid });
        let (h0, h1) = self.sh_rest.split_at_mut(mid * self.rest_len);
        (
            GaussianGradSlices {
                start: self.start,
                rest_len: self.rest_len,
                means: m0,
                log_scales: s0,
                rotations: r0,
                opacity_logits: o0,
                sh_dc: d0,
                sh_rest: h0,
            },
            GaussianGradSlices {
                start: self.start + mid,
                rest_len: self.rest_len,
                means: m1,
                log_scales: s1,
                rotations: r1,
                opacity_logits: o1,
                sh_dc: d1,
                sh_rest: h1,
            },
        )
    }
}

/// Resizes a gradient container to the shape of `like` and zeroes it; without the SH parts unless
/// `settings.sh_grads`.
pub fn reset_grads<F: Real, G: Real>(
    grads: &mut GaussianGrads<F>,
    like: &Gaussians<G>,
    settings: &RenderSettings,
) {
    let n = like.len();
    grads.sh_degree = like.sh_degree;
    grads.means.clear();
    grads.means.resize(n, [F::zero(); 3]);
    grads.log_scales.clear();
    grads.log_scales.resize(n, [F::zero(); 3]);
    grads.rotations.clear();
    grads.rotations.resize(n, [F::zero(); 4]);
    grads.opacity_logits.clear();
    grads.opacity_logits.resize(n, F::zero());
    let (dc, rest) = if settings.sh_grads {
        (n, n * like.sh_rest_len())
    } else {
        (0, 0)
    };
    grads.sh_dc.clear();
    grads.sh_dc.resize(dc, [F::zero(); 3]);
    grads.sh_rest.clear();
    grads.sh_rest.resize(rest, F::zero());
}
