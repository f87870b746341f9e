//! Everything that evolves during training, in one place: this is exactly what a checkpoint holds.

use splat_core::Gaussians;

use crate::adam::AdamState;

/// Parameter groups, in the order Adam states are kept.
pub const GROUPS: [&str; 6] = [
    "means",
    "sh_dc",
    "sh_rest",
    "opacity_logits",
    "log_scales",
    "rotations",
];
/// Indices of the SH groups in [`GROUPS`].
pub const SH_DC: usize = 1;
pub const SH_REST: usize = 2;

#[derive(Clone, Debug)]
pub struct TrainState {
    pub gaussians: Gaussians<f32>,
    /// One per entry of [`GROUPS`].
    pub adam: Vec<AdamState>,
    /// Completed iterations.
    pub step: u64,
    pub active_sh_degree: usize,
    /// Densification statistics per Gaussian.
    pub grad_accum: Vec<f32>,
    pub grad_count: Vec<f32>,
    pub max_radii: Vec<f32>,
    /// Mip-Splatting's 3D filter size per Gaussian (empty without `--mip-filter`, see [`crate::mip`]).
    pub filter_3d: Vec<f32>,
    /// The per-image colour models and their Adam state (none without `--appearance`).
    pub appearance: Option<crate::appearance::AppearanceState>,
    /// The training views' pose corrections and their Adam state (none without `--pose-opt`).
    pub poses: Option<crate::pose::PoseState>,
}

/// The flattened parameters of group `g`.
pub fn group_params(gs: &mut Gaussians<f32>, g: usize) -> &mut [f32] {
    match g {
        0 => gs.means.as_flattened_mut(),
        1 => gs.sh_dc.as_flattened_mut(),
        2 => &mut gs.sh_rest,
        3 => &mut gs.opacity_logits,
        4 => gs.log_scales.as_flattened_mut(),
        5 => gs.rotations.as_flattened_mut(),
        _ => unreachable!(),
    }
}

/// Values per Gaussian of group `g`.
pub fn group_width(gs: &Gaussians<f32>, g: usize) -> usize {
    [3, 3, gs.sh_rest_len(), 1, 3, 4][g]
}

impl TrainState {
    pub fn new(gaussians: Gaussians<f32>) -> Self {
        let n = gaussians.len();
        let adam = (0..GROUPS.len())
            .map(|g| AdamState::zeros(n * group_width(&gaussians, g)))
            .collect();
        TrainState {
            gaussians,
            adam,
            step: 0,
            active_sh_degree: 0,
            grad_accum: vec![0.0; n],
            grad_count: vec![0.0; n],
            max_radii: vec![0.0; n],
            filter_3d: Vec::new(),
            appearance: None,
            poses: None,
        }
    }

    pub fn len(&self) -> usize {
        self.gaussians.len()
    }

    pub fn is_empty(&self) -> bool {
        self.gaussians.is_empty()
    }

    /// The scene as files and renderers outside training take it: with the 3D filter baked in.
    pub fn export_gaussians(&self) -> Gaussians<f32> {
        crate::mip::baked(&self.gaussians, &self.filter_3d)
    }
}
