//! The fast CPU backend: the same image function and gradients as the reference, organized for the
//! hardware. Project and project-backward are the reference stages (about 1% of a step); binning is a
//! counting sort with per-tile depth sorts; both rasterize stages run tile rows in parallel (rayon), gather
//! each tile's Gaussians into a compact array first, and drop Gaussians whose alpha is below 1/255 on every
//! pixel centre of the tile (a conservative test, see [`rasterize::tile_cull`]), which removes most of the
//! work without changing a single output bit of the forward.
//!
//! The backward writes one gradient record per (tile, Gaussian) intersection, then sums each Gaussian's
//! records in intersection order. That order is fixed, so results are deterministic and independent of the
//! thread count, and no atomics are needed.

pub mod bin;
mod cull;
pub mod peak;
pub mod rasterize;
pub mod simd;

use splat_core::{Camera, Gaussians, TileGrid};

use crate::backend::Backend;
use crate::project::CameraParams;
use crate::sh::active_coeffs;
use crate::types::{
    reset_grads, Bins, GaussianGradSlices, GaussianGrads, PoseGrads, Projected, ProjectedGrads,
    ProjectedSlices, RasterOutput, RenderSettings,
};
use crate::{project, project_bwd};
pub use simd::SimdLevel;

/// Reusable scratch of the fast backend.
#[derive(Debug)]
pub struct CpuBackend {
    /// Which kernels rasterize.
    pub simd: SimdLevel,
    bands: Vec<rasterize::BandScratch>,
    backward: rasterize::BackwardScratch,
    culls: rasterize::CullTable,
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// The widest vector kernels this CPU runs (or the level `SPLAT_SIMD` names).
    pub fn new() -> Self {
        Self::with_simd(SimdLevel::from_env().unwrap_or_else(SimdLevel::detect))
    }

    /// A specific kernel level (tests force each one); an unsupported level falls back to portable.
    pub fn with_simd(simd: SimdLevel) -> Self {
        CpuBackend {
            simd,
            bands: Vec::new(),
            backward: rasterize::BackwardScratch::default(),
            culls: rasterize::CullTable::default(),
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn project(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        out: &mut Projected<f32>,
    ) {
        out.resize(gaussians.len());
        out.alpha_min = settings.cutoffs.alpha_min;
        let ctx = project::ProjectContext::new(gaussians, camera, settings);
        split_range(
            out.slices_mut(),
            &|s: &ProjectedSlices<'_, f32>| s.len(),
            &|s, mid| s.split_at(mid),
            &|s| project::project_range(gaussians, &ctx, s),
            |(), ()| (),
        );
    }

    fn bin(&mut self, projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins) {
        bin::bin(projected, grid, out);
    }

    fn rasterize_forward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        out: &mut RasterOutput<f32>,
    ) {
        rasterize::forward(
            self.simd,
            projected,
            bins,
            grid,
            settings,
            &mut self.culls,
            &mut self.bands,
            out,
        );
    }

    fn rasterize_backward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        raster: &RasterOutput<f32>,
        grad_image: &[f32],
        out: &mut ProjectedGrads<f32>,
    ) {
        rasterize::backward(
            self.simd,
            projected,
            bins,
            grid,
            settings,
            raster,
            grad_image,
            &mut self.culls,
            &mut self.backward,
            &mut self.bands,
            out,
        );
    }

    fn project_backward(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        out: &mut GaussianGrads<f32>,
    ) -> PoseGrads {
        reset_grads(out, gaussians, settings);
        let cam = CameraParams::<f32>::new(camera);
        let inputs = project_bwd::BackwardInputs {
            gaussians,
            cam: &cam,
            coeffs: active_coeffs(settings.sh_degree, gaussians.sh_degree),
            projected,
            grads,
            pose: settings.pose_grads,
        };
        split_range(
            GaussianGradSlices::new(out),
            &|s: &GaussianGradSlices<'_, f32>| s.len(),
            &|s, mid| s.split_at(mid),
            &|s| project_bwd::project_backward_range(&inputs, s),
            PoseGrads::plus,
        )
    }
}

/// Gaussians per task of the per-Gaussian stages.
const GAUSSIANS_PER_TASK: usize = 2048;

/// Runs `work` on disjoint ranges of `s` in parallel (recursive halving with `rayon::join`: no
/// allocation, and each Gaussian's result does not depend on the split) and combines the ranges'
/// results with `join` in range order (the split depends on the length only, so the sums are the same
/// bits on any number of threads).
fn split_range<S: Send, R: Send>(
    s: S,
    len: &(dyn Fn(&S) -> usize + Sync),
    split: &(dyn Fn(S, usize) -> (S, S) + Sync),
    work: &(dyn Fn(S) -> R + Sync),
    join: fn(R, R) -> R,
) -> R {
    let n = len(&s);
    if n <= GAUSSIANS_PER_TASK {
        return work(s);
    }
    let (a, b) = split(s, n / 2);
    let (ra, rb) = rayon::join(
        || split_range(a, len, split, work, join),
        || split_range(b, len, split, work, join),
    );
    join(ra, rb)
}
