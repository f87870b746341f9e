//! The scene: Gaussians as a structure of arrays.
//!
//! Each Gaussian has a mean, log-scales (`scale = exp(log_scale)`), an unnormalized rotation quaternion
//! `(w, x, y, z)`, an opacity logit (`opacity = sigmoid(logit)`) and spherical-harmonics colour coefficients
//! of degree 0..=3. The DC coefficient is `sh_dc`; the others (`K - 1` per channel, `K = (degree + 1)^2`)
//! are in `sh_rest`, laid out `[gaussian][coefficient][channel]`. These are exactly the optimized
//! parameters, stored the way the INRIA PLY stores them.

use crate::Real;

/// Number of SH coefficients per channel for a degree: 1, 4, 9 or 16.
pub const fn sh_coeffs_for_degree(degree: usize) -> usize {
    (degree + 1) * (degree + 1)
}

/// Largest supported SH degree.
pub const MAX_SH_DEGREE: usize = 3;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Gaussians<F = f32> {
    pub means: Vec<[F; 3]>,
    pub log_scales: Vec<[F; 3]>,
    /// Unnormalized `(w, x, y, z)`.
    pub rotations: Vec<[F; 4]>,
    pub opacity_logits: Vec<F>,
    pub sh_dc: Vec<[F; 3]>,
    /// `[gaussian][coefficient 1..K][channel]`, flattened.
    pub sh_rest: Vec<F>,
    /// SH degree of the stored coefficients (0..=3).
    pub sh_degree: usize,
    /// Trained with the anti-aliasing filter (Mip-Splatting's 2D filter, gsplat's `antialiased` mode):
    /// a renderer scales each opacity by `sqrt(det(Σ2D) / det(Σ2D + 0.3 I))` after the 0.3 px dilation.
    /// The PLY stores it as `comment antialiased 1`, SPZ as header flag 0x1, SOG as `"antialias": true`.
    pub antialiased: bool,
}

impl<F: Real> Gaussians<F> {
    /// Per-axis median of the means: a centre that ignores far outliers (the origin when empty).
    pub fn median_mean(&self) -> [f64; 3] {
        if self.means.is_empty() {
            return [0.0; 3];
        }
        std::array::from_fn(|k| {
            let mut v: Vec<f64> = self.means.iter().map(|m| m[k].as_f64()).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
    }

    /// The `q`-quantile (0..=1) of the means' distances from `center`, at least 1e-3 (1 when empty).
    pub fn distance_quantile(&self, center: [f64; 3], q: f64) -> f64 {
        if self.means.is_empty() {
            return 1.0;
        }
        let mut d: Vec<f64> = self
            .means
            .iter()
            .map(|m| {
                (0..3)
                    .map(|k| (m[k].as_f64() - center[k]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        d.sort_by(f64::total_cmp);
        let i = ((d.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        d[i].max(1e-3)
    }

    /// An empty scene with the given SH degree.
    pub fn new(sh_degree: usize) -> Self {
        assert!(sh_degree <= MAX_SH_DEGREE, "SH degree {sh_degree} > 3");
        Gaussians {
            sh_degree,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.means.len()
    }

    pub fn is_empty(&self) -> bool {
        self.means.is_empty()
    }

    /// SH coefficients per channel, `K`.
    pub fn sh_coeffs(&self) -> usize {
        sh_coeffs_for_degree(self.sh_degree)
    }

    /// Number of `sh_rest` values per Gaussian, `3 (K - 1)`.
    pub fn sh_rest_len(&self) -> usize {
        3 * (self.sh_coeffs() - 1)
    }

    /// The `sh_rest` values of Gaussian `i`, `[coefficient][channel]`.
    pub fn sh_rest_of(&self, i: usize) -> &[F] {
        let n = self.sh_rest_len();
        &self.sh_rest[i * n..(i + 1) * n]
    }

    /// Appends one Gaussian. `sh_rest` must hold `3 (K - 1)` values.
    pub fn push(
        &mut self,
        mean: [F; 3],
        log_scale: [F; 3],
        rotation: [F; 4],
        opacity_logit: F,
        sh_dc: [F; 3],
        sh_rest: &[F],
    ) {
        assert_eq!(sh_rest.len(), self.sh_rest_len(), "sh_rest length");
        self.means.push(mean);
        self.log_scales.push(log_scale);
        self.rotations.push(rotation);
        self.opacity_logits.push(opacity_logit);
        self.sh_dc.push(sh_dc);
        self.sh_rest.extend_from_slice(sh_rest);
    }

    /// The scene at another SH degree: higher coefficients dropped, missing ones zero.
    pub fn with_sh_degree(&self, degree: usize) -> Self {
        assert!(degree <= MAX_SH_DEGREE, "SH degree {degree} > 3");
        let (old, new) = (self.sh_rest_len(), 3 * (sh_coeffs_for_degree(degree) - 1));
        let mut sh_rest = Vec::with_capacity(self.len() * new);
        for i in 0..self.len() {
            let r = self.sh_rest_of(i);
            sh_rest.extend((0..new).map(|j| if j < old { r[j] } else { F::zero() }));
        }
        Gaussians {
            sh_rest,
            sh_degree: degree,
            ..self.clone()
        }
    }

    /// Checks that every array has the length the count and degree imply.
    pub fn check_consistent(&self) -> Result<(), String> {
        let n = self.len();
        let checks = [
            ("log_scales", self.log_scales.len(), n),
            ("rotations", self.rotations.len(), n),
            ("opacity_logits", self.opacity_logits.len(), n),
            ("sh_dc", self.sh_dc.len(), n),
            ("sh_rest", self.sh_rest.len(), n * self.sh_rest_len()),
        ];
        for (name, got, want) in checks {
            if got != want {
                return Err(format!("{name} has {got} values, expected {want}"));
            }
        }
        if self.sh_degree > MAX_SH_DEGREE {
            return Err(format!("SH degree {} > {MAX_SH_DEGREE}", self.sh_degree));
        }
        Ok(())
    }

    /// Converts every parameter to another scalar type.
    pub fn cast<G: Real>(&self) -> Gaussians<G> {
        let c = |x: F| G::c(x.as_f64());
        Gaussians {
            means: self.means.iter().map(|v| v.map(c)).collect(),
            log_scales: self.log_scales.iter().map(|v| v.map(c)).collect(),
            rotations: self.rotations.iter().map(|v| v.map(c)).collect(),
            opacity_logits: self.opacity_logits.iter().map(|&v| c(v)).collect(),
            sh_dc: self.sh_dc.iter().map(|v| v.map(c)).collect(),
            sh_rest: self.sh_rest.iter().map(|&v| c(v)).collect(),
            sh_degree: self.sh_degree,
            antialiased: self.antialiased,
        }
    }
}

/// `1 / (1 + exp(-x))`.
#[inline]
pub fn sigmoid<F: Real>(x: F) -> F {
    F::one() / (F::one() + (-x).exp())
}

/// `log(p / (1 - p))`.
#[inline]
pub fn logit<F: Real>(p: F) -> F {
    (p / (F::one() - p)).ln()
}
