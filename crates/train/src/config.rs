//! Training hyperparameters; defaults are the original 3DGS ones (and, for `--strategy mcmc`, those of
//! 3DGS-MCMC as gsplat's `MCMCStrategy` sets them).

use serde::{Deserialize, Serialize};

/// How the set of Gaussians changes during training.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The original adaptive density control: clone, split, prune, opacity resets ([`crate::densify`]).
    #[default]
    Default,
    /// 3DGS-MCMC: relocate dead Gaussians, grow 5% a refine step up to a cap, noise on positions,
    /// opacity and scale regularizers ([`crate::mcmc`]).
    Mcmc,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Default => "default",
            Strategy::Mcmc => "mcmc",
        }
    }
}

/// The constants of `--strategy mcmc` (defaults: gsplat's `MCMCStrategy` and its trainer's MCMC
/// settings). Its refine schedule is `densify_from`, `densify_until` and `densify_interval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McmcConfig {
    /// Growth stops at this many Gaussians.
    pub cap_max: usize,
    /// Gaussians at or below this opacity are dead (relocated); also the floor of a relocated opacity.
    pub min_opacity: f64,
    /// Position noise scale, times the current position learning rate.
    pub noise_lr: f64,
    /// Each refine step adds this fraction of the current count (until the cap).
    pub growth: f64,
    /// The position noise's gate `sigmoid(-k (o - t))`: `k`.
    pub noise_gate_sharpness: f64,
    /// The gate's `t`: Gaussians well above this opacity barely move.
    pub noise_gate_opacity: f64,
    /// Loss weight of the mean opacity.
    pub opacity_reg: f64,
    /// Loss weight of the mean scale (over the three axes).
    pub scale_reg: f64,
    /// Opacity of the initial Gaussians.
    pub init_opacity: f64,
    /// Initial scale as a fraction of the original's (the RMS distance to the 3 nearest points).
    pub init_scale: f64,
}

impl Default for McmcConfig {
    fn default() -> Self {
        McmcConfig {
            cap_max: 1_000_000,
            min_opacity: 0.005,
            noise_lr: 5e5,
            growth: 0.05,
            noise_gate_sharpness: 100.0,
            noise_gate_opacity: 0.005,
            opacity_reg: 0.01,
            scale_reg: 0.01,
            init_opacity: 0.5,
            init_scale: 0.1,
        }
    }
}

/// One level of a coarse-to-fine schedule: from iteration `from` on (until the next level), the
/// training views are `downscale` times smaller in each dimension (block averages of the photos, the
/// intrinsics divided by the factor; see [`TrainConfig::downscale_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolutionLevel {
    pub from: u64,
    pub downscale: u32,
}

/// `densify_until`'s default for `--strategy mcmc` (gsplat's `refine_stop_iter`).
pub const MCMC_REFINE_UNTIL: u64 = 25_000;

/// AbsGS's densification threshold for the absolute-gradient statistic (gsplat's recommendation).
pub const ABSGRAD_THRESHOLD: f64 = 0.0008;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainConfig {
    pub iterations: u64,
    pub seed: u64,
    /// Highest SH degree; the active degree rises by one every `sh_degree_interval` steps.
    pub sh_degree: usize,
    pub sh_degree_interval: u64,
    /// Cap on the number of Gaussians densification may reach.
    pub max_gaussians: Option<usize>,
    /// Position learning rate, times the scene extent, decaying log-linearly over `position_lr_steps`
    /// (default: the whole run).
    pub position_lr_init: f64,
    pub position_lr_final: f64,
    pub position_lr_steps: Option<u64>,
    pub sh_dc_lr: f64,
    pub sh_rest_lr: f64,
    pub opacity_lr: f64,
    pub scale_lr: f64,
    pub rotation_lr: f64,
    pub lambda_dssim: f64,
    pub densify_from: u64,
    pub densify_until: u64,
    pub densify_interval: u64,
    pub densify_grad_threshold: f64,
    pub percent_dense: f64,
    pub opacity_reset_interval: u64,
    pub min_opacity: f64,
    /// Prune Gaussians whose world-space max scale exceeds this times the extent (after the first
    /// opacity reset, as the original); 0 disables it.
    pub prune_world_scale: f64,
    /// Prune Gaussians whose screen radius exceeded this many pixels since the last densification
    /// (after the first opacity reset). The original code resets the radii just before this test, so it
    /// never fires there; `None` (the default) reproduces that behaviour.
    pub prune_screen_radius: Option<f64>,
    /// Views per optimizer step. With B > 1 the schedule above counts views, not steps (see
    /// [`TrainConfig::per_step`]), and Adam runs with the learning rates times sqrt(B) and the
    /// momenta raised to the power B.
    pub batch: usize,
    pub strategy: Strategy,
    pub mcmc: McmcConfig,
    /// Densify on the sum over pixels of the absolute 2D-mean gradients (AbsGS) instead of the norm of
    /// their sum; `densify_grad_threshold` is then in those units (default [`ABSGRAD_THRESHOLD`]).
    pub absgrad: bool,
    /// Train an antialiased scene (Mip-Splatting's 2D filter: opacities times the compensation
    /// `rho`, see `splat_render::project`); the result says so in its files.
    pub antialiased: bool,
    /// Mip-Splatting's 3D smoothing filter from the training cameras ([`crate::mip`]).
    pub mip_filter: bool,
    /// Coarse to fine: the training resolution by iteration, levels in increasing `from`; empty (the
    /// original): full size throughout. Evaluation is always at full size.
    pub resolution_schedule: Vec<ResolutionLevel>,
    /// Visible-only Adam (gsplat's `visible_adam`, the original's `sparse_adam`): a Gaussian no view of
    /// the step sees (projected radius 0) keeps its parameters and both moments; the step count, and
    /// so the bias correction, advances for all.
    pub visible_adam: bool,
    /// A colour model per training image trained with the scene ([`crate::appearance`]).
    pub appearance: crate::appearance::AppearanceKind,
    /// Refine every training view's pose with the scene ([`crate::pose`]).
    pub pose_opt: bool,
    /// The pose corrections' base learning rate ([`crate::pose::learning_rate`]): gsplat's 1e-5 by
    /// default, for poses a fraction of a degree off.
    pub pose_opt_lr: f64,
    /// The first step at which the pose corrections move ([`crate::pose::START_STEP`], LichtFeld
    /// Studio's 500): before it the scene is too young for its pose gradient to mean anything.
    pub pose_opt_start: u64,
    /// After training, also score the test views from poses refined with the scene frozen for this
    /// many steps each ([`crate::eval_pose`]); 0: not.
    pub test_pose_steps: u64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            iterations: 30_000,
            seed: 0,
            sh_degree: 3,
            sh_degree_interval: 1000,
            max_gaussians: None,
            position_lr_init: 1.6e-4,
            position_lr_final: 1.6e-6,
            position_lr_steps: None,
            sh_dc_lr: 0.0025,
            sh_rest_lr: 0.0025 / 20.0,
            opacity_lr: 0.025,
            scale_lr: 0.005,
            rotation_lr: 0.001,
            lambda_dssim: 0.2,
            densify_from: 500,
            densify_until: 15_000,
            densify_interval: 100,
            densify_grad_threshold: 0.0002,
            percent_dense: 0.01,
            opacity_reset_interval: 3000,
            min_opacity: 0.005,
            prune_world_scale: 0.1,
            prune_screen_radius: None,
            batch: 1,
            strategy: Strategy::Default,
            mcmc: McmcConfig::default(),
            absgrad: false,
            antialiased: false,
            mip_filter: false,
            resolution_schedule: Vec::new(),
            visible_adam: false,
            appearance: Default::default(),
            pose_opt: false,
            pose_opt_lr: crate::pose::LEARNING_RATE,
            pose_opt_start: crate::pose::START_STEP,
            test_pose_steps: 0,
        }
    }
}

impl TrainConfig {
    /// The schedule in optimizer steps for a batch of B views, following Grendel (Zhao et al. 2024,
    /// "On Scaling Up 3D Gaussian Splatting Training"): every quantity given in iterations counts
    /// views seen, so a run of 30,000 iterations with B = 4 takes 7,500 steps and densifies every
    /// 25 steps; learning rates are multiplied by sqrt(B) (gradients of B views are summed, and
    /// with independent per-view gradients their norm grows as sqrt(B)) and Adam's momenta become
    /// beta^B, so that the moments decay per view as they do with B = 1. B = 1 returns the config
    /// unchanged.
    pub fn per_step(&self) -> TrainConfig {
        let b = self.batch.max(1) as u64;
        if b == 1 {
            return self.clone();
        }
        let steps = |n: u64| n / b;
        let interval = |n: u64| if n == 0 { 0 } else { (n / b).max(1) };
        let lr = (b as f64).sqrt();
        TrainConfig {
            iterations: self.iterations.div_ceil(b),
            sh_degree_interval: interval(self.sh_degree_interval),
            position_lr_init: self.position_lr_init * lr,
            position_lr_final: self.position_lr_final * lr,
            position_lr_steps: self.position_lr_steps.map(|s| s.div_ceil(b)),
            sh_dc_lr: self.sh_dc_lr * lr,
            sh_rest_lr: self.sh_rest_lr * lr,
            opacity_lr: self.opacity_lr * lr,
            scale_lr: self.scale_lr * lr,
            rotation_lr: self.rotation_lr * lr,
            densify_from: steps(self.densify_from),
            densify_until: steps(self.densify_until),
            densify_interval: interval(self.densify_interval),
            opacity_reset_interval: interval(self.opacity_reset_interval),
            resolution_schedule: (self.resolution_schedule.iter())
                .map(|l| ResolutionLevel {
                    from: steps(l.from),
                    ..*l
                })
                .collect(),
            ..self.clone()
        }
    }

    /// The most Gaussians the run can hold: the MCMC cap, else `max_gaussians`.
    pub fn gaussian_cap(&self) -> Option<usize> {
        match self.strategy {
            Strategy::Mcmc => Some(self.mcmc.cap_max),
            Strategy::Default => self.max_gaussians,
        }
    }

    /// The factor by which iteration `it` trains below the images' size (1: full size).
    pub fn downscale_at(&self, it: u64) -> u32 {
        (self.resolution_schedule.iter())
            .take_while(|l| l.from <= it)
            .last()
            .map_or(1, |l| l.downscale.max(1))
    }

    /// Adam's (beta1, beta2) for this batch size.
    pub fn adam_betas(&self) -> (f64, f64) {
        let b = self.batch.max(1) as i32;
        (crate::adam::BETA1.powi(b), crate::adam::BETA2.powi(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_one_is_the_original_schedule() {
        let c = TrainConfig::default();
        assert_eq!(c.per_step(), c);
        assert_eq!(c.adam_betas(), (0.9, 0.999));
    }

    #[test]
    fn batch_four_counts_views() {
        let c = TrainConfig {
            batch: 4,
            ..TrainConfig::default()
        };
        let s = c.per_step();
        assert_eq!(s.iterations, 7_500);
        assert_eq!(
            (s.densify_from, s.densify_until, s.densify_interval),
            (125, 3_750, 25)
        );
        assert_eq!((s.opacity_reset_interval, s.sh_degree_interval), (750, 250));
        assert!((s.opacity_lr - 0.05).abs() < 1e-12);
        let (b1, b2) = c.adam_betas();
        assert!((b1 - 0.6561).abs() < 1e-12 && (b2 - 0.999f64.powi(4)).abs() < 1e-15);
    }
}
