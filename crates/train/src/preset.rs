//! Presets: what `splat train --preset` sets, and the parts of it chosen from the scene.
//!
//! `original` is the 2023 algorithm and schedule ([`TrainConfig::default`]). `fast`, `balanced` and
//! `quality` combine, in different amounts, three published ways to a good splat sooner
//! (`../shared/docs/fast-training.md`; where each constant comes from: NOTES.md, "Presets"):
//! - **a Gaussian budget reached on a schedule** (Taming 3DGS, DashGaussian): 3DGS-MCMC
//!   ([`crate::mcmc`]) with its cap chosen from the scene ([`scene_budget`]) and its growth per refine
//!   step chosen so the count reaches the cap by half the run ([`growth_to_reach`]), as Taming's and
//!   DashGaussian's counts reach theirs when densification ends at half the run;
//! - **coarse to fine** ([`crate::resolution`]): the first fifth of the run at 1/4 size, the second at
//!   1/2, the rest at full size (OpenSplat's and splatfacto's two halvings, at fractions of the run
//!   instead of every 3,000 steps), the coarsest level limited so the short side keeps 64 pixels;
//! - **fewer steps**, the schedule (refinement, SH degree) scaled to them.
//!
//! Visible-only Adam (`--visible-adam`, [`TrainConfig::visible_adam`]) is not in the presets: on the
//! scenes here it saved no time on the CPU (Adam is 7% of a step and nearly every Gaussian is in every
//! view) and cost 0.6 dB on the demo, whose views each see part of the room (NOTES.md, "Presets").
//!
//! A preset is a [`TrainConfig`] (the scene-free part, [`Preset::config`]) plus a [`SceneFit`]
//! applied once the dataset is loaded ([`SceneFit::apply`]); a flag the user gives overrides either.

use serde::{Deserialize, Serialize};

use crate::config::{ResolutionLevel, Strategy, TrainConfig};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Fast,
    #[default]
    Balanced,
    Quality,
    Original,
}

/// The numbers that make a preset.
struct Spec {
    iterations: u64,
    /// The Gaussian budget as a multiple of [`scene_budget`]'s.
    budget_scale: f64,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Fast => "fast",
            Preset::Balanced => "balanced",
            Preset::Quality => "quality",
            Preset::Original => "original",
        }
    }

    fn spec(self) -> Spec {
        let (iterations, budget_scale) = match self {
            Preset::Fast => (2_000, 0.5),
            Preset::Balanced => (5_000, 1.0),
            Preset::Quality => (15_000, 2.0),
            Preset::Original => (30_000, 0.0),
        };
        Spec {
            iterations,
            budget_scale,
        }
    }

    /// The preset's number of steps.
    pub fn iterations(self) -> u64 {
        self.spec().iterations
    }

    /// The scene-free part of the preset for a run of `iterations` steps (the preset's own when
    /// `None`): the schedule scales with the steps. `original` is the default configuration.
    pub fn config(self, iterations: Option<u64>) -> TrainConfig {
        let n = iterations.unwrap_or(self.iterations()).max(1);
        let base = TrainConfig {
            iterations: n,
            ..TrainConfig::default()
        };
        if self == Preset::Original {
            return base;
        }
        let mut cfg = TrainConfig {
            strategy: Strategy::Mcmc,
            // gsplat's MCMC refines from step 500 to 25,000 of 30,000 every 100 steps.
            densify_from: 500.min(n / 10),
            densify_until: n * 5 / 6,
            densify_interval: 100,
            // The original raises the degree every 1,000 of 30,000 steps, so degree 3 is on for 90%
            // of the run; a short run keeps that fraction.
            sh_degree_interval: 1_000.min((n / 10).max(1)),
            ..base
        };
        cfg.resolution_schedule = coarse_to_fine(n, 4);
        cfg
    }

    /// What the preset chooses from the scene (`None` for `original`).
    pub fn scene_fit(self) -> Option<SceneFit> {
        (self != Preset::Original).then(|| SceneFit {
            budget_scale: Some(self.spec().budget_scale),
            growth: true,
            resolution: true,
        })
    }
}

/// The coarse-to-fine levels of a run of `n` steps whose coarsest factor is `coarsest` (a power of
/// two): each halving of the factor takes an equal share of the first 2/5 of the run.
pub fn coarse_to_fine(n: u64, coarsest: u32) -> Vec<ResolutionLevel> {
    let halvings = coarsest.max(1).ilog2() as u64;
    if halvings == 0 {
        return Vec::new();
    }
    let full_from = n * 2 / 5;
    (0..=halvings)
        .map(|k| ResolutionLevel {
            from: if k == 0 { 0 } else { full_from * k / halvings },
            downscale: coarsest >> k,
        })
        .collect()
}

/// What a run's training views look like, for the choices made from the scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneFacts {
    pub views: usize,
    /// Mean pixels of a training view.
    pub mean_pixels: f64,
    /// Mean pixels of a training view that show the scene: those not exactly the background colour
    /// (an object captured on an empty background, such as NeRF-synthetic's, shows it in a third).
    pub mean_shown_pixels: f64,
    /// The shortest side of any training view.
    pub min_side: u32,
    /// Points the run starts from.
    pub initial_points: usize,
}

impl SceneFacts {
    /// The facts of `views` composited on `background`.
    pub fn of(
        views: &[splat_io::dataset::View],
        background: [f32; 3],
        initial_points: usize,
    ) -> Self {
        let count = views.len().max(1) as f64;
        let pixels: f64 = (views.iter())
            .map(|v| v.camera.width as f64 * v.camera.height as f64)
            .sum();
        let bg = background.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
        let shown: usize = (views.iter())
            .map(|v| v.image.data.chunks_exact(3).filter(|p| **p != bg).count())
            .sum();
        SceneFacts {
            views: views.len(),
            mean_pixels: pixels / count,
            mean_shown_pixels: shown as f64 / count,
            min_side: (views.iter())
                .map(|v| v.camera.width.min(v.camera.height))
                .min()
                .unwrap_or(0),
            initial_points,
        }
    }
}

/// Gaussians per pixel of a view, per square root of the number of views ([`scene_budget`]).
pub const BUDGET_PER_PIXEL: f64 = 0.14;

/// The fewest Gaussians a budget asks for.
pub const MIN_BUDGET: usize = 10_000;

/// The Gaussian budget of a scene: `BUDGET_PER_PIXEL x pixels of a view that show the scene x
/// sqrt(views)`. A view's pixels bound the detail one view can show (pixels of empty background need
/// no Gaussian); views from new directions show more of the scene, but neighbouring views mostly show
/// the same surfaces again, hence the square root. The constant is
/// where 3DGS-MCMC at a third of the original's count matched fern and cup (BENCHMARKS.md); it gives
/// 0.5-3 M Gaussians for Mip-NeRF 360 captures at 1/4 size (200-300 views of ~1 M pixels), the range
/// of gsplat's MCMC runs there.
pub fn scene_budget(facts: &SceneFacts) -> usize {
    let b = BUDGET_PER_PIXEL * facts.mean_shown_pixels * (facts.views as f64).sqrt();
    (b.round() as usize).max(MIN_BUDGET)
}

/// MCMC's growth per refine step that takes `from` Gaussians to `to` in `refines` refine steps,
/// within [5%, 20%]: gsplat's 5% is the least (the original rate), DashGaussian's 20% a densification
/// the most.
pub fn growth_to_reach(from: usize, to: usize, refines: u64) -> f64 {
    if from == 0 || to <= from || refines == 0 {
        return 0.05;
    }
    let g = (to as f64 / from as f64).powf(1.0 / refines as f64) - 1.0;
    g.clamp(0.05, 0.20)
}

/// The parts of a preset chosen from the scene once it is loaded; a part the user set by hand is
/// left out (`None` / `false`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneFit {
    /// The MCMC cap: this times [`scene_budget`].
    pub budget_scale: Option<f64>,
    /// The growth per refine step that reaches the cap by half the run.
    pub growth: bool,
    /// The coarse-to-fine levels for the views' size.
    pub resolution: bool,
}

impl SceneFit {
    /// Writes the scene's choices into `cfg`; returns what was chosen, for the user.
    pub fn apply(&self, cfg: &mut TrainConfig, facts: &SceneFacts) -> Vec<String> {
        let mut said = Vec::new();
        if let Some(scale) = self.budget_scale {
            let budget = ((scene_budget(facts) as f64 * scale).round() as usize).max(MIN_BUDGET);
            cfg.mcmc.cap_max = budget;
            said.push(format!(
                "a budget of {budget} Gaussians ({scale} x {BUDGET_PER_PIXEL} x {:.0} pixels showing the scene x sqrt({} views))",
                facts.mean_shown_pixels, facts.views
            ));
        }
        if self.growth && cfg.strategy == Strategy::Mcmc {
            let half = cfg.iterations / 2;
            let refines = match cfg.densify_interval {
                0 => 0,
                i => half.saturating_sub(cfg.densify_from) / i,
            };
            let start = facts.initial_points.min(cfg.mcmc.cap_max);
            cfg.mcmc.growth = growth_to_reach(start, cfg.mcmc.cap_max, refines);
            said.push(format!(
                "growth {:.1}% a refine step",
                100.0 * cfg.mcmc.growth
            ));
        }
        if self.resolution && !cfg.resolution_schedule.is_empty() {
            let coarsest = coarsest_factor(facts.min_side);
            cfg.resolution_schedule = coarse_to_fine(cfg.iterations, coarsest);
            let levels: Vec<String> = (cfg.resolution_schedule.iter())
                .map(|l| format!("1/{} from step {}", l.downscale, l.from))
                .collect();
            if !levels.is_empty() {
                said.push(format!("resolution {}", levels.join(", ")));
            }
        }
        said
    }
}

/// The short side the coarsest level keeps.
pub const MIN_COARSE_SIDE: u32 = 64;

/// The largest of 4, 2, 1 that keeps a short side of `min_side` at [`MIN_COARSE_SIDE`] pixels or more.
pub fn coarsest_factor(min_side: u32) -> u32 {
    [4, 2]
        .into_iter()
        .find(|f| min_side / f >= MIN_COARSE_SIDE)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn original_is_the_default() {
        assert_eq!(Preset::Original.config(None), TrainConfig::default());
        assert!(Preset::Original.scene_fit().is_none());
        let short = Preset::Original.config(Some(7000));
        assert_eq!(
            short,
            TrainConfig {
                iterations: 7000,
                ..TrainConfig::default()
            }
        );
    }

    #[test]
    fn levels_halve_over_the_first_two_fifths() {
        let l = coarse_to_fine(5000, 4);
        let pairs: Vec<(u64, u32)> = l.iter().map(|l| (l.from, l.downscale)).collect();
        assert_eq!(pairs, vec![(0, 4), (1000, 2), (2000, 1)]);
        assert_eq!(coarse_to_fine(100, 1), vec![]);
        let c = Preset::Fast.config(Some(1000));
        assert_eq!((c.downscale_at(1), c.downscale_at(199)), (4, 4));
        assert_eq!((c.downscale_at(200), c.downscale_at(400)), (2, 1));
    }

    #[test]
    fn coarsest_level_keeps_64_pixels() {
        assert_eq!(coarsest_factor(378), 4);
        assert_eq!(coarsest_factor(150), 2);
        assert_eq!(coarsest_factor(100), 1);
    }

    #[test]
    fn budget_follows_pixels_and_views() {
        let fern = SceneFacts {
            views: 17,
            mean_pixels: 504.0 * 378.0,
            mean_shown_pixels: 504.0 * 378.0,
            min_side: 378,
            initial_points: 10_091,
        };
        let b = scene_budget(&fern);
        assert!((105_000..115_000).contains(&b), "{b}");
        let more_views = SceneFacts { views: 68, ..fern };
        assert_eq!(scene_budget(&more_views), 2 * b);
        let tiny = SceneFacts {
            views: 1,
            mean_shown_pixels: 100.0,
            ..fern
        };
        assert_eq!(scene_budget(&tiny), MIN_BUDGET);
    }

    #[test]
    fn growth_reaches_the_budget_by_half_the_run() {
        let g = growth_to_reach(10_000, 110_000, 20);
        let mut n = 10_000f64;
        for _ in 0..20 {
            n = (n * (1.0 + g)).floor();
        }
        assert!((100_000.0..=110_000.0).contains(&n), "{n}");
        assert_eq!(growth_to_reach(10_000, 5_000, 20), 0.05);
        assert_eq!(growth_to_reach(1_000, 1_000_000, 5), 0.20);
        let mut cfg = Preset::Balanced.config(None);
        let fern = SceneFacts {
            views: 17,
            mean_pixels: 504.0 * 378.0,
            mean_shown_pixels: 504.0 * 378.0,
            min_side: 378,
            initial_points: 10_091,
        };
        let said = Preset::Balanced.scene_fit().unwrap().apply(&mut cfg, &fern);
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!(cfg.mcmc.cap_max, scene_budget(&fern));
        assert!(cfg.mcmc.growth > 0.05 && cfg.mcmc.growth < 0.20);
    }

    #[test]
    fn background_pixels_need_no_budget() {
        use splat_core::camera::Camera;
        use splat_io::dataset::{Rgb8Image, View};
        let (w, h) = (40u32, 30u32);
        // A white background with a 10 x 6 grey object (one of its pixels white too: not counted).
        let mut data = vec![255u8; (w * h * 3) as usize];
        for y in 10..16 {
            for x in 5..15 {
                let i = ((y * w + x) * 3) as usize;
                data[i..i + 3].copy_from_slice(&[120, 130, 140]);
            }
        }
        data[((12 * w + 7) * 3) as usize..][..3].fill(255);
        let camera = Camera::look_at([0.0, 0.0, -4.0], [0.0; 3], [0.0, 1.0, 0.0], 60.0, w, h);
        let image = Rgb8Image {
            width: w,
            height: h,
            data,
        };
        let views = vec![View {
            name: "v".into(),
            camera,
            image,
            mask: None,
            display_jpeg: None,
        }];
        let white = SceneFacts::of(&views, [1.0; 3], 5);
        assert_eq!((white.mean_pixels, white.mean_shown_pixels), (1200.0, 59.0));
        assert_eq!(
            (white.min_side, white.initial_points, white.views),
            (30, 5, 1)
        );
        let black = SceneFacts::of(&views, [0.0; 3], 5);
        assert_eq!(black.mean_shown_pixels, 1200.0);
    }
}
