//! The training views' pose corrections in the step ([`crate::pose`], `--pose-opt`): each view renders
//! from its corrected camera, its backward's pose gradient is chained to its correction, and every
//! correction takes an Adam step with the scene's.

use splat_core::Camera;

use super::Trainer;
use crate::pose::{self, PoseState, PER_VIEW};

impl<'a> Trainer<'a> {
    /// Gives the state the run's pose corrections: kept from a checkpoint with as many views, otherwise
    /// every view at its given pose (none without `--pose-opt`).
    pub(super) fn with_poses(mut self) -> Self {
        let views = self.views.len();
        if !self.cfg.pose_opt {
            self.state.poses = None;
        } else if self.state.poses.as_ref().is_none_or(|p| p.views != views) {
            self.state.poses = Some(PoseState::new(views));
        }
        self.pose_grads = vec![
            0.0;
            if self.cfg.pose_opt {
                views * PER_VIEW
            } else {
                0
            }
        ];
        self
    }

    /// Training view `vi`'s camera at the current training resolution, with its correction.
    pub(super) fn training_camera(&self, vi: usize) -> Camera {
        let base = &self.scaled.of(self.views)[vi].camera;
        match &self.state.poses {
            Some(p) => pose::refine(base, &p.of_view(vi)),
            None => base.clone(),
        }
    }

    /// Every training view's camera at full size with its correction (the given poses without
    /// `--pose-opt`).
    pub fn refined_cameras(&self) -> Vec<Camera> {
        self.views
            .iter()
            .enumerate()
            .map(|(vi, v)| match &self.state.poses {
                Some(p) => pose::refine(&v.camera, &p.of_view(vi)),
                None => v.camera.clone(),
            })
            .collect()
    }

    /// Chains the pose gradient of the view just rendered (`vi`) to its correction's gradient.
    pub(super) fn add_pose_grads(&mut self, vi: usize) {
        let Some(p) = &self.state.poses else { return };
        let base = &self.views[vi].camera;
        let g = pose::embedding_grads(base, &p.of_view(vi), &self.buffers.pose_grads);
        for (out, v) in self.pose_grads[vi * PER_VIEW..].iter_mut().zip(g) {
            *out += v as f32;
        }
    }

    pub(super) fn clear_pose_grads(&mut self) {
        self.pose_grads.fill(0.0);
    }

    pub(super) fn pose_grads_finite(&self) -> bool {
        self.pose_grads.iter().all(|v| v.is_finite())
    }

    /// Every correction's Adam step at iteration `it`, with gsplat's weight decay; none before the
    /// run's `pose_opt_start`.
    pub(super) fn optimize_poses(&mut self, it: u64) {
        let Some(p) = self.state.poses.as_mut() else {
            return;
        };
        if it < self.cfg.pose_opt_start {
            return;
        }
        for (g, &e) in self.pose_grads.iter_mut().zip(&p.params) {
            *g += (pose::WEIGHT_DECAY * e as f64) as f32;
        }
        let lr = pose::learning_rate(
            self.cfg.pose_opt_lr,
            it,
            self.cfg.iterations,
            self.cfg.batch,
        );
        let betas = (crate::adam::BETA1, crate::adam::BETA2);
        p.adam
            .update_with_betas(&mut p.params, &self.pose_grads, lr, betas);
        let views = self.views;
        pose::hold_mean_motion(|i| &views[i].camera, views.len(), &mut p.params);
    }
}
