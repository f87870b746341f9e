//! One training step on the host, as the list of its stages ([`Trainer::host_step`]): schedule, render
//! each view with its loss and backward (and its densification statistics), sum over views and ranks,
//! check, regularize, densify, optimize, refine. What the stages hand on is a [`StepWork`].

use std::time::Instant;

use splat_core::Gaussians;
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::RenderSettings;

use super::outcome::{Diverged, StageTimes, StepStats, MAX_CONSECUTIVE_SKIPS};
use super::plan::{degree_at, StepPlan};
use super::{Trainer, MIP_FILTER_INTERVAL};
use crate::adam::ShGradSource;
use crate::config::Strategy;
use crate::densify;
use crate::loss::LossValue;
use crate::mcmc;
use crate::state::{group_params, GROUPS, SH_DC, SH_REST};

/// What a host step carries from stage to stage.
pub(super) struct StepWork {
    pub plan: StepPlan,
    /// One view on one rank: the per-view buffers hold the step's gradients and Adam forms the SH
    /// gradients ([`crate::adam::AdamState::update_formed`]); otherwise they are summed into
    /// `Trainer::batch_grads`.
    pub single: bool,
    /// Loss, L1, SSIM and training PSNR summed over the step's views.
    pub sums: [f64; 4],
    pub stats: StepStats,
}

impl<'a> Trainer<'a> {
    /// Runs one iteration on the host: `batch` views (this rank's share of them), gradients summed over
    /// views and ranks, one update.
    pub(super) fn host_step(&mut self) -> Result<StepStats, Diverged> {
        let mut work = self.schedule();
        self.clear_statistics(&work);
        self.render_views(&mut work);
        self.reduce_across_ranks(&mut work);
        // Gradients computed, nothing applied yet.
        crate::testhook::pause_point("step", work.plan.it);
        if !self.gradients_finite(&work) {
            return self.skip(work);
        }
        self.consecutive_skips = 0;
        let t = Instant::now();
        self.regularize(&work);
        self.densify(&mut work);
        work.stats.times.densify += t.elapsed();
        self.optimize(&mut work);
        self.refine(&mut work);
        Ok(self.finish_step(work))
    }

    /// Raises the SH degree when due and plans the iteration.
    fn schedule(&mut self) -> StepWork {
        let it = self.state.step + 1;
        self.state.active_sh_degree = degree_at(&self.cfg, it, self.state.active_sh_degree);
        (self.scaled).set(self.views, self.cfg.downscale_at(it));
        let plan = StepPlan::new(&self.cfg, it, self.background == [1.0; 3]);
        StepWork {
            plan,
            single: self.cfg.batch.max(1) == 1 && self.collective.size() == 1,
            sums: [0.0; 4],
            stats: StepStats {
                step: it,
                ..Default::default()
            },
        }
    }

    /// Zeroes the step's densification statistics (their buffers keep their capacity).
    fn clear_statistics(&mut self, work: &StepWork) {
        if !work.plan.stats {
            return;
        }
        self.step_stats.clear(self.state.len());
    }

    /// Renders this rank's views of the step, each with its loss, backward and statistics; with more
    /// than one view the gradients are summed into `batch_grads`.
    fn render_views(&mut self, work: &mut StepWork) {
        let (rank, ranks) = (self.collective.rank(), self.collective.size());
        if self.cfg.visible_adam {
            self.seen.clear();
            self.seen.resize(self.state.len(), 0.0);
        }
        self.clear_appearance_grads();
        self.clear_pose_grads();
        let mut local_views = 0;
        for j in 0..self.cfg.batch.max(1) {
            let vi = self.view_of(work.plan.it, j);
            if j % ranks != rank {
                continue;
            }
            let (lv, psnr) = self.view_pass(vi, !work.single, &mut work.stats.times);
            for (s, v) in work.sums.iter_mut().zip([lv.loss, lv.l1, lv.ssim, psnr]) {
                *s += v;
            }
            let t = Instant::now();
            self.add_view_statistics(work, vi);
            self.mark_seen();
            if !work.single {
                if local_views == 0 {
                    copy_grads(&mut self.batch_grads, &self.buffers.grads);
                } else {
                    add_grads(&mut self.batch_grads, &self.buffers.grads);
                }
            }
            work.stats.times.densify += t.elapsed();
            local_views += 1;
        }
        if !work.single && local_views == 0 {
            // More ranks than views: this rank contributes zeros.
            copy_grads(&mut self.batch_grads, &self.buffers.grads);
            zero_grads(&mut self.batch_grads);
        }
    }

    /// Renders view `vi`, computes its loss and backpropagates it into `self.buffers`. Without
    /// `sh_grads` the SH gradients are left for Adam to form
    /// ([`crate::adam::AdamState::update_formed`]).
    fn view_pass(&mut self, vi: usize, sh_grads: bool, times: &mut StageTimes) -> (LossValue, f64) {
        let view = &self.scaled.of(self.views)[vi];
        view.image.to_f32(&mut self.target);
        // A copy (plain numbers, with the view's pose correction): the loss below borrows the trainer
        // mutably.
        let cam = &self.training_camera(vi);
        let mut settings = RenderSettings::new(self.state.active_sh_degree);
        settings.background = self.background;
        settings.sh_grads = sh_grads;
        settings.pose_grads = self.cfg.pose_opt;
        settings.absgrad = self.cfg.absgrad && self.cfg.strategy == Strategy::Default;
        let filtered = !self.state.filter_3d.is_empty();
        if filtered {
            // Rendered and differentiated with the effective values; restored below.
            let st = &mut self.state;
            crate::mip::apply(&mut st.gaussians, &st.filter_3d, &mut self.mip_saved);
        }
        let g = &self.state.gaussians;
        splat_render::render(self.backend.as_mut(), g, cam, &settings, &mut self.buffers);
        times.add_render(&self.buffers.timings);
        let (w, h) = (cam.width as usize, cam.height as usize);
        let t_loss = Instant::now();
        let (lv, train_psnr) = self.photometric(vi, w, h);
        times.loss += t_loss.elapsed();
        splat_render::backward(
            self.backend.as_mut(),
            &self.state.gaussians,
            cam,
            &settings,
            &self.grad_image,
            &mut self.buffers,
        );
        times.add_render(&self.buffers.timings[self.buffers.timings.len().min(3)..]);
        self.add_pose_grads(vi);
        if filtered {
            self.restore_filtered();
        }
        (lv, train_psnr)
    }

    /// Puts back the raw log-scales and opacities after a 3D-filtered view and carries the gradients
    /// through the filter.
    fn restore_filtered(&mut self) {
        let st = &mut self.state;
        crate::mip::restore(&mut st.gaussians, &self.mip_saved);
        let grads = &mut self.buffers.grads;
        crate::mip::chain_gradients(
            &st.gaussians.log_scales,
            &st.gaussians.opacity_logits,
            &st.filter_3d,
            &mut grads.log_scales,
            &mut grads.opacity_logits,
        );
    }

    /// Adds the densification statistics of the view just rendered.
    fn add_view_statistics(&mut self, work: &StepWork, vi: usize) {
        if !work.plan.stats {
            return;
        }
        let cam = &self.scaled.of(self.views)[vi].camera;
        let b = &self.buffers;
        let size = (cam.width, cam.height);
        (self.step_stats).add_view(&b.projected, &b.projected_grads, self.cfg.absgrad, size);
    }

    /// With visible-only Adam, marks the Gaussians the view just rendered sees.
    fn mark_seen(&mut self) {
        if !self.cfg.visible_adam {
            return;
        }
        let radii = &self.buffers.projected.radii;
        for (s, &r) in self.seen.iter_mut().zip(radii) {
            if r > 0 {
                *s = 1.0;
            }
        }
    }

    /// Sums gradients, statistics and losses over the ranks and takes the means of the losses.
    fn reduce_across_ranks(&mut self, work: &mut StepWork) {
        if !work.single {
            let t = Instant::now();
            for gi in 0..GROUPS.len() {
                self.collective
                    .sum_f32(group_params(&mut self.batch_grads, gi));
            }
            if work.plan.stats {
                let st = &mut self.step_stats;
                self.collective.sum_f32(&mut st.norms);
                self.collective.sum_f32(&mut st.counts);
                self.collective.max_f32(&mut st.radii);
            }
            if self.cfg.visible_adam {
                self.collective.max_f32(&mut self.seen);
            }
            self.collective.sum_f32(&mut self.appearance_grads);
            self.collective.sum_f32(&mut self.pose_grads);
            self.collective.sum_f64(&mut work.sums);
            work.stats.times.densify += t.elapsed();
        }
        let views = self.cfg.batch.max(1) as f64;
        let s = &mut work.stats;
        s.loss = work.sums[0] / views;
        s.l1 = work.sums[1] / views;
        s.ssim = work.sums[2] / views;
        s.psnr = work.sums[3] / views;
    }

    /// Whether the loss and every gradient the update will use are finite.
    fn gradients_finite(&self, work: &StepWork) -> bool {
        let grads_ok = if work.single {
            // The SH gradients Adam will form are basis x colour gradient with |basis| < 1.2.
            let colors = self.buffers.projected_grads.grad_colors.as_flattened();
            all_finite(&self.buffers.grads) && colors.iter().all(|c| c.is_finite())
        } else {
            all_finite(&self.batch_grads)
        };
        work.stats.loss.is_finite()
            && grads_ok
            && self.appearance_grads_finite()
            && self.pose_grads_finite()
    }

    /// A step whose loss or gradients are not finite changes nothing (counted in `skipped_steps`); too
    /// many in a row is an error.
    fn skip(&mut self, work: StepWork) -> Result<StepStats, Diverged> {
        let it = work.plan.it;
        self.skipped_steps += 1;
        self.consecutive_skips += 1;
        self.state.step = it;
        if self.consecutive_skips >= MAX_CONSECUTIVE_SKIPS {
            return Err(Diverged {
                step: it,
                consecutive: self.consecutive_skips,
                total: self.skipped_steps,
            });
        }
        let mut stats = work.stats;
        stats.skipped = true;
        stats.num_gaussians = self.state.len();
        Ok(stats)
    }

    /// MCMC's opacity and scale regularizers' gradients. The reported loss stays the photometric one
    /// (the resident path reports the same).
    fn regularize(&mut self, work: &StepWork) {
        if !work.plan.mcmc {
            return;
        }
        let (opacity_reg, scale_reg) = (self.cfg.mcmc.opacity_reg, self.cfg.mcmc.scale_reg);
        let views = self.cfg.batch.max(1) as f64;
        let grads = step_grads(work.single, &mut self.buffers.grads, &mut self.batch_grads);
        mcmc::add_regularizer(&self.state.gaussians, opacity_reg, scale_reg, views, grads);
    }

    /// Adds the step's statistics; clones, splits and prunes when due; resets opacities when due.
    fn densify(&mut self, work: &mut StepWork) {
        let plan = work.plan;
        if !plan.stats {
            return;
        }
        self.step_stats.apply(&mut self.state);
        if plan.densify {
            work.stats.densified = Some(densify::densify_and_prune(
                &mut self.state,
                &self.cfg,
                self.extent,
                plan.it,
            ));
            if self.cfg.mip_filter {
                // Before the opacity reset, which reads the sizes.
                self.update_filter();
            }
        }
        if plan.reset_opacity {
            densify::reset_opacity(&mut self.state);
            work.stats.opacity_reset = true;
        }
    }

    /// The Adam step of every group (opacities not on a reset step).
    fn optimize(&mut self, work: &mut StepWork) {
        let t = Instant::now();
        if work.plan.updates() {
            let lrs = self.learning_rates(work.plan.it);
            if work.single {
                self.optimize_sh_formed(work.plan.it, &lrs);
            }
            let betas = self.cfg.adam_betas();
            let (single, reset) = (work.single, work.stats.opacity_reset);
            let grads = step_grads(single, &mut self.buffers.grads, &mut self.batch_grads);
            let seen = self.cfg.visible_adam.then_some(&self.seen[..]);
            let n = self.state.len();
            for (gi, &lr) in lrs.iter().enumerate().take(GROUPS.len()) {
                if (gi == 3 && reset) || (single && (gi == SH_DC || gi == SH_REST)) {
                    continue;
                }
                let grad = group_params(grads, gi);
                let params = group_params(&mut self.state.gaussians, gi);
                let adam = &mut self.state.adam[gi];
                match seen {
                    Some(seen) => {
                        let width = params.len().checked_div(n).unwrap_or(0);
                        adam.update_visible(params, grad, width, lr, betas, seen);
                    }
                    None => adam.update_with_betas(params, grad, lr, betas),
                }
            }
            self.optimize_appearance(work.plan.it);
            self.optimize_poses(work.plan.it);
        }
        work.stats.times.adam = t.elapsed();
    }

    /// Learning rates in [`GROUPS`] order at iteration `it`.
    fn learning_rates(&self, it: u64) -> [f64; 6] {
        let cfg = &self.cfg;
        [
            self.position_lr(it),
            cfg.sh_dc_lr,
            cfg.sh_rest_lr,
            cfg.opacity_lr,
            cfg.scale_lr,
            cfg.rotation_lr,
        ]
    }

    /// One view on one rank: Adam forms the SH gradients from the colour gradients as it updates
    /// (saves 192 bytes per Gaussian). Before the means: the gradients need the means the step rendered
    /// with.
    fn optimize_sh_formed(&mut self, it: u64, lrs: &[f64; 6]) {
        let betas = self.cfg.adam_betas();
        // The camera the step rendered from (its pose correction is updated after this).
        let camera = &self.training_camera(self.view_of(it, 0));
        let g = &mut self.state.gaussians;
        let rest_len = g.sh_rest_len();
        let src = ShGradSource {
            means: &g.means,
            center: CameraParams::<f32>::new(camera).center,
            coeffs: active_coeffs(self.state.active_sh_degree, g.sh_degree),
            radii: &self.buffers.projected.radii,
            clamped: &self.buffers.projected.color_clamped,
            grad_colors: &self.buffers.projected_grads.grad_colors,
        };
        let (dc, rest) = (g.sh_dc.as_flattened_mut(), &mut g.sh_rest);
        let adam = &mut self.state.adam;
        let seen = self.cfg.visible_adam.then_some(&self.seen[..]);
        let (dc_lr, rest_lr) = (lrs[SH_DC], lrs[SH_REST]);
        adam[SH_DC].update_formed(dc, 3, dc_lr, betas, seen, &|i, o| src.dc(i, o));
        adam[SH_REST].update_formed(rest, rest_len, rest_lr, betas, seen, &|i, o| src.rest(i, o));
    }

    /// MCMC's relocation and growth when due and its position noise; the 3D filter's periodic update.
    fn refine(&mut self, work: &mut StepWork) {
        let it = work.plan.it;
        if work.plan.mcmc {
            let t = Instant::now();
            let (cfg, seed) = (&self.cfg.mcmc, self.cfg.seed);
            if work.plan.refine {
                work.stats.refined = Some(mcmc::refine(&mut self.state, cfg, seed, it));
            }
            // The learning rate of the next step, as gsplat reads it after its scheduler step.
            let lr = self.position_lr(it + 1);
            mcmc::inject_noise(&mut self.state.gaussians, &self.cfg.mcmc, lr, seed, it);
            work.stats.times.densify += t.elapsed();
        }
        // Mip-Splatting: after every refine, and every 100 steps once densification has stopped (not
        // in the last 100).
        let periodic = it >= self.cfg.densify_until
            && it.is_multiple_of(MIP_FILTER_INTERVAL)
            && it + MIP_FILTER_INTERVAL < self.cfg.iterations;
        if self.cfg.mip_filter && (work.stats.refined.is_some() || periodic) {
            self.update_filter();
        }
    }

    fn finish_step(&mut self, work: StepWork) -> StepStats {
        self.state.step = work.plan.it;
        let mut stats = work.stats;
        stats.num_gaussians = self.state.len();
        stats
    }
}

/// The gradients the update applies: one view's on one rank, else the sum over the step's views and
/// ranks.
fn step_grads<'g>(
    single: bool,
    view: &'g mut Gaussians<f32>,
    summed: &'g mut Gaussians<f32>,
) -> &'g mut Gaussians<f32> {
    if single {
        view
    } else {
        summed
    }
}

fn all_finite(g: &Gaussians<f32>) -> bool {
    let sum = |v: &[f32]| v.iter().fold(0.0f32, |a, &b| a + b * 0.0);
    // x * 0 is NaN exactly when x is NaN or infinite, so one pass per group finds any non-finite value.
    [
        sum(g.means.as_flattened()),
        sum(g.log_scales.as_flattened()),
        sum(g.rotations.as_flattened()),
        sum(&g.opacity_logits),
        sum(g.sh_dc.as_flattened()),
        sum(&g.sh_rest),
    ]
    .iter()
    .all(|v| v.is_finite())
}

/// `dst = src`, field by field so the buffers' capacity is reused (a derived `clone_from` would
/// allocate a whole new value).
fn copy_grads(dst: &mut Gaussians<f32>, src: &Gaussians<f32>) {
    dst.sh_degree = src.sh_degree;
    dst.means.clone_from(&src.means);
    dst.log_scales.clone_from(&src.log_scales);
    dst.rotations.clone_from(&src.rotations);
    dst.opacity_logits.clone_from(&src.opacity_logits);
    dst.sh_dc.clone_from(&src.sh_dc);
    dst.sh_rest.clone_from(&src.sh_rest);
}

/// `dst += src`, group by group (same sizes).
fn add_grads(dst: &mut Gaussians<f32>, src: &Gaussians<f32>) {
    let add = |d: &mut [f32], s: &[f32]| {
        for (a, b) in d.iter_mut().zip(s) {
            *a += *b;
        }
    };
    add(dst.means.as_flattened_mut(), src.means.as_flattened());
    add(
        dst.log_scales.as_flattened_mut(),
        src.log_scales.as_flattened(),
    );
    add(
        dst.rotations.as_flattened_mut(),
        src.rotations.as_flattened(),
    );
    add(&mut dst.opacity_logits, &src.opacity_logits);
    add(dst.sh_dc.as_flattened_mut(), src.sh_dc.as_flattened());
    add(&mut dst.sh_rest, &src.sh_rest);
}

fn zero_grads(g: &mut Gaussians<f32>) {
    g.means.fill([0.0; 3]);
    g.log_scales.fill([0.0; 3]);
    g.rotations.fill([0.0; 4]);
    g.opacity_logits.fill(0.0);
    g.sh_dc.fill([0.0; 3]);
    g.sh_rest.fill(0.0);
}
