//! `splat train`'s preset, and its densification and filter flags: the strategy and its constants, absgrad, the 2D
//! antialiasing filter, the 3D smoothing filter.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use splat_train::config::{McmcConfig, Strategy, ABSGRAD_THRESHOLD, MCMC_REFINE_UNTIL};
use splat_train::preset::{Preset, SceneFit};
use splat_train::TrainConfig;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// The original adaptive density control: clone, split, prune, opacity resets.
    #[default]
    Default,
    /// 3DGS-MCMC: dead Gaussians relocated, growth of 5% a refine step up to --cap-max, noise on
    /// positions, opacity and scale regularizers (no pruning, cloning, splitting or resets).
    Mcmc,
}

/// `--preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PresetArg {
    /// 2,000 steps; fern images_8 on a 2-vCPU host: 26.8 dB in 98 s (the original's 7,000 steps: 26.2
    /// dB in 1,218 s).
    Fast,
    /// 5,000 steps; fern images_8: 28.4 dB in 503 s.
    Balanced,
    /// 15,000 steps and twice balanced's budget; fern images_8: 29.0 dB in 4,096 s (on a busy host), the
    /// best this project has reached on fern and cup.
    Quality,
    /// The 2023 algorithm and schedule (30,000 steps).
    Original,
}

impl PresetArg {
    pub fn preset(self) -> Preset {
        match self {
            PresetArg::Fast => Preset::Fast,
            PresetArg::Balanced => Preset::Balanced,
            PresetArg::Quality => Preset::Quality,
            PresetArg::Original => Preset::Original,
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct StrategyArgs {
    /// Densification strategy (docs/strategies.md says which trains better per Gaussian)
    /// [default: the preset's: mcmc, or default with --preset original].
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// Default strategy: stop densification from growing beyond this many Gaussians.
    #[arg(long)]
    pub max_gaussians: Option<usize>,
    /// Prune Gaussians larger than this times the scene extent (after the first opacity reset), as the
    /// original does with 0.1; 0 disables it. See NOTES.md for its effect on forward-facing scenes.
    #[arg(long, default_value_t = 0.1)]
    pub prune_world_scale: f64,
    /// First step after which densification (mcmc: refinement) runs [default: the preset's; original
    /// 500].
    #[arg(long)]
    pub densify_from: Option<u64>,
    /// Step from which densification stops [default: the preset's; original 15000, or 25000 with
    /// --strategy mcmc].
    #[arg(long)]
    pub densify_until: Option<u64>,
    /// Densify (mcmc: refine) every N steps [default: 100].
    #[arg(long)]
    pub densify_interval: Option<u64>,
    /// Densify Gaussians whose mean screen-space gradient is at least this [default: 0.0002; with
    /// --absgrad 0.0008].
    #[arg(long)]
    pub densify_grad_threshold: Option<f64>,
    /// Reset opacities every N steps while densifying (original: 3000; 0 never).
    #[arg(long, default_value_t = TrainConfig::default().opacity_reset_interval)]
    pub opacity_reset_interval: u64,
    /// Default strategy: densify on the sum over pixels of the absolute 2D-mean gradients (AbsGS)
    /// instead of the norm of their sum.
    #[arg(long)]
    pub absgrad: bool,
    /// Train an antialiased scene (Mip-Splatting's 2D filter, gsplat's `antialiased` mode): opacities
    /// are scaled by sqrt(det(Sigma2D) / det(Sigma2D + 0.3 I)), so splats smaller than a pixel fade
    /// instead of being blown up to the 0.3 px dilation; renders at other resolutions alias less. The
    /// result says so (PLY `comment antialiased 1`, SPZ and SOG flags) and every splat renderer and the
    /// viewer draw it that way.
    #[arg(long)]
    pub antialiased: bool,
    /// Mip-Splatting's 3D smoothing filter: no Gaussian gets smaller than the training cameras
    /// resolve (sqrt(0.2) x depth / focal length, from the nearest camera that sees it), so zooming in
    /// or rendering at higher resolution shows no thin artifacts. Baked into the exported files.
    #[arg(long)]
    pub mip_filter: bool,
    /// mcmc: the most Gaussians; growth stops there, and a start with more points begins from a
    /// random subset of this many [default: the presets choose it from the scene (see --preset);
    /// 1000000 with --preset original --strategy mcmc].
    #[arg(long)]
    pub cap_max: Option<usize>,
    /// mcmc: opacity at or below which a Gaussian is dead and relocated.
    #[arg(long, default_value_t = McmcConfig::default().min_opacity)]
    pub mcmc_min_opacity: f64,
    /// mcmc: fraction of the count added each refine step [default: the presets choose the rate that
    /// reaches the cap by half the run, within 0.05-0.2; 0.05 with --preset original].
    #[arg(long)]
    pub mcmc_growth: Option<f64>,
    /// mcmc: position noise, times the position learning rate.
    #[arg(long, default_value_t = McmcConfig::default().noise_lr)]
    pub mcmc_noise_lr: f64,
    /// mcmc: sharpness k of the noise gate sigmoid(-k (opacity - t)).
    #[arg(long, default_value_t = McmcConfig::default().noise_gate_sharpness)]
    pub mcmc_noise_gate_sharpness: f64,
    /// mcmc: the noise gate's opacity t.
    #[arg(long, default_value_t = McmcConfig::default().noise_gate_opacity)]
    pub mcmc_noise_gate_opacity: f64,
    /// mcmc: loss weight of the mean opacity.
    #[arg(long, default_value_t = McmcConfig::default().opacity_reg)]
    pub mcmc_opacity_reg: f64,
    /// mcmc: loss weight of the mean scale.
    #[arg(long, default_value_t = McmcConfig::default().scale_reg)]
    pub mcmc_scale_reg: f64,
    /// mcmc: opacity of the initial Gaussians.
    #[arg(long, default_value_t = McmcConfig::default().init_opacity)]
    pub mcmc_init_opacity: f64,
    /// mcmc: initial scale as a fraction of the original's (RMS distance to the 3 nearest points).
    #[arg(long, default_value_t = McmcConfig::default().init_scale)]
    pub mcmc_init_scale: f64,
}

impl StrategyArgs {
    /// Writes the flags given into `train` (which holds the preset's values) and takes out of `fit`
    /// what the user chose by hand; refuses combinations that mean nothing.
    pub fn apply(&self, train: &mut TrainConfig, fit: &mut Option<SceneFit>) -> Result<()> {
        self.check()?;
        if let Some(s) = self.strategy {
            let mcmc = s == StrategyArg::Mcmc;
            if mcmc != (train.strategy == Strategy::Mcmc) {
                // The other strategy's own schedule, as its flag alone gives it.
                train.strategy = if mcmc {
                    Strategy::Mcmc
                } else {
                    Strategy::Default
                };
                train.densify_until = if mcmc {
                    MCMC_REFINE_UNTIL
                } else {
                    TrainConfig::default().densify_until
                };
            }
        }
        let mcmc = train.strategy == Strategy::Mcmc;
        if mcmc && self.max_gaussians.is_some() {
            bail!(
                "--max-gaussians is for the default strategy; --strategy mcmc grows to --cap-max"
            );
        }
        if mcmc && self.absgrad {
            bail!("--absgrad is for the default strategy (mcmc has no gradient threshold)");
        }
        train.max_gaussians = self.max_gaussians;
        train.prune_world_scale = self.prune_world_scale;
        set(&mut train.densify_from, self.densify_from);
        set(&mut train.densify_until, self.densify_until);
        set(&mut train.densify_interval, self.densify_interval);
        train.opacity_reset_interval = self.opacity_reset_interval;
        train.absgrad = self.absgrad;
        train.antialiased = self.antialiased;
        train.mip_filter = self.mip_filter;
        train.densify_grad_threshold = self.densify_grad_threshold.unwrap_or(if self.absgrad {
            ABSGRAD_THRESHOLD
        } else {
            TrainConfig::default().densify_grad_threshold
        });
        let m = &mut train.mcmc;
        set(&mut m.cap_max, self.cap_max);
        set(&mut m.growth, self.mcmc_growth);
        m.min_opacity = self.mcmc_min_opacity;
        m.noise_lr = self.mcmc_noise_lr;
        m.noise_gate_sharpness = self.mcmc_noise_gate_sharpness;
        m.noise_gate_opacity = self.mcmc_noise_gate_opacity;
        m.opacity_reg = self.mcmc_opacity_reg;
        m.scale_reg = self.mcmc_scale_reg;
        m.init_opacity = self.mcmc_init_opacity;
        m.init_scale = self.mcmc_init_scale;
        if let Some(f) = fit.as_mut() {
            if self.cap_max.is_some() || !mcmc {
                f.budget_scale = None;
            }
            f.growth &= self.mcmc_growth.is_none() && mcmc;
        }
        Ok(())
    }

    /// The values' own ranges.
    fn check(&self) -> Result<()> {
        if self.cap_max == Some(0) {
            bail!("--cap-max must be at least 1");
        }
        let unit = |name: &str, v: f64| -> Result<()> {
            if !(v > 0.0 && v < 1.0) {
                bail!("{name} must be in (0, 1), got {v}");
            }
            Ok(())
        };
        unit("--mcmc-min-opacity", self.mcmc_min_opacity)?;
        unit("--mcmc-init-opacity", self.mcmc_init_opacity)?;
        for (name, v) in [
            ("--mcmc-growth", self.mcmc_growth.unwrap_or(0.0)),
            ("--mcmc-noise-lr", self.mcmc_noise_lr),
            (
                "--mcmc-noise-gate-sharpness",
                self.mcmc_noise_gate_sharpness,
            ),
            ("--mcmc-noise-gate-opacity", self.mcmc_noise_gate_opacity),
            ("--mcmc-opacity-reg", self.mcmc_opacity_reg),
            ("--mcmc-scale-reg", self.mcmc_scale_reg),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                bail!("{name} must be a finite number at least 0, got {v}");
            }
        }
        if !(self.mcmc_init_scale.is_finite() && self.mcmc_init_scale > 0.0) {
            bail!(
                "--mcmc-init-scale must be above 0, got {}",
                self.mcmc_init_scale
            );
        }
        if let Some(t) = self.densify_grad_threshold {
            if !(t.is_finite() && t > 0.0) {
                bail!("--densify-grad-threshold must be above 0, got {t}");
            }
        }
        Ok(())
    }
}

/// `dst = value` when the flag was given.
fn set<T: Copy>(dst: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *dst = v;
    }
}
