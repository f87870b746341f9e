//! The end of a finished run on rank 0: the final checkpoint, `point_cloud.ply` (the 3D filter, if
//! any, baked in), with `--pose-opt` the refined poses (`cameras.json`, `images.txt`), the evaluation
//! with its `renders/`, `metrics.json` and `report.html`.

use splat_core::Gaussians;
use splat_io::write_atomic;
use splat_render::Backend;

use super::files::{io_err, stopped_by_write, write_json};
use super::{MakeBackend, Running, REPORT_FILE, REPORT_TRAIN_VIEWS};
use crate::eval::{evaluate, means, ViewMetrics};
use crate::metrics::{CurvePoint, Metrics};
use crate::report::ReportView;

impl Running<'_> {
    /// Writes the outputs of a run whose steps all ran, and returns its metrics.
    /// `make_backend` makes the evaluation's backend.
    pub(super) fn write_outputs(
        mut self,
        make_backend: MakeBackend<'_>,
    ) -> Result<Metrics, super::RunError> {
        // The last steps can outrun a checkpoint still being written: the run's outputs are written only
        // once every earlier write is known to have succeeded, as if the loop had seen the failure.
        self.worker.drain();
        let step = self.trainer.state.step;
        if self.worker.has_failed() {
            return Err(stopped_by_write(self.worker.finish(), self.dir, step));
        }
        self.trainer.sync();
        let train_seconds = self.train_seconds();
        let this_run = train_seconds - self.prior_seconds;
        let record = self.record.take().expect("rank 0 keeps the record");
        record.checkpoint(&self.worker, &self.trainer.state, train_seconds);

        // Files and renderers outside training have no 3D filter.
        let gaussians = self.trainer.state.export_gaussians();
        let ply_path = self.dir.join("point_cloud.ply");
        let ply_gaussians = gaussians.clone();
        self.worker.submit(move || {
            splat_io::write_ply(&ply_path, &ply_gaussians).map_err(|e| e.to_string())
        });
        if self.trainer.cfg.pose_opt {
            let refined = self.trainer.refined_cameras();
            super::poses::write_poses(self.dir, &self.ds.train, &refined, &self.ds.test)?;
        }
        let mut backend = make_backend();
        let (view_metrics, report_views, split) = self.evaluate(backend.as_mut(), &gaussians)?;
        let test_time_poses = self.test_time_poses(backend.as_mut(), &gaussians, split);
        let (dir, worker) = (self.dir, self.worker);
        worker
            .finish()
            .map_err(|e| stopped_by_write(Err(e), dir, step))?;
        let (psnr, ssim) = means(&view_metrics);
        let psnr_over_time = match self.curve.take() {
            Some(mut curve) => {
                curve.add(CurvePoint {
                    seconds: train_seconds,
                    step,
                    psnr,
                    ssim,
                    gaussians: gaussians.len(),
                });
                curve.points
            }
            None => Vec::new(),
        };
        let metrics = Metrics {
            psnr,
            ssim,
            cc_psnr: crate::eval::mean_cc_psnr(&view_metrics),
            num_gaussians: gaussians.len(),
            iterations: step,
            train_seconds,
            its_per_second: (step - self.first_step) as f64 / this_run.max(1e-9),
            split: split.into(),
            backend: self.trainer.backend_name().to_string(),
            skipped_steps: self.trainer.skipped_steps,
            views: view_metrics,
            psnr_over_time,
            time_budget: self.budget.clone(),
            test_time_poses,
        };
        write_json(&dir.join("metrics.json"), &metrics)?;
        let report = dir.join(REPORT_FILE);
        let html = crate::report::report_html(&metrics, &record.history.points, &report_views);
        write_atomic(&report, html.as_bytes()).map_err(io_err(&report))?;
        Ok(metrics)
    }

    /// With `--test-pose-steps` and a test split: the test views scored again from poses refined with
    /// the scene frozen ([`crate::eval_pose`]).
    fn test_time_poses(
        &self,
        backend: &mut dyn Backend,
        gaussians: &Gaussians<f32>,
        split: &str,
    ) -> Option<crate::metrics::TestTimePoses> {
        let steps = self.trainer.cfg.test_pose_steps;
        if steps == 0 || split != "test" {
            return None;
        }
        let (test, bg) = (&self.ds.test, self.ds.background);
        let degree = self.trainer.state.active_sh_degree;
        let cams = crate::eval_pose::refine_test_poses(backend, gaussians, test, bg, degree, steps);
        let m = evaluate(backend, gaussians, test, Some(&cams), bg, degree, |_, _| {});
        let moved: Vec<crate::pose::PoseError> = (test.iter().zip(&cams))
            .map(|(v, c)| crate::pose::PoseError::between(c, &v.camera))
            .collect();
        let (psnr, ssim) = means(&m);
        Some(crate::metrics::TestTimePoses {
            steps,
            psnr,
            ssim,
            cc_psnr: crate::eval::mean_cc_psnr(&m),
            rotation_deg: moved.iter().map(|e| e.rotation_deg).collect(),
            position: moved.iter().map(|e| e.position).collect(),
        })
    }

    /// Evaluates `gaussians` on the test views (the training views without a split), writing each
    /// test render into `renders/` in the background; returns the metrics, the views the report shows
    /// and the split's name.
    fn evaluate(
        &self,
        backend: &mut dyn Backend,
        gaussians: &Gaussians<f32>,
    ) -> Result<(Vec<ViewMetrics>, Vec<ReportView>, &'static str), super::RunError> {
        let (views, split) = self.ds.eval_views();
        let renders = self.dir.join("renders");
        if split == "test" {
            std::fs::create_dir_all(&renders).map_err(io_err(&renders))?;
        }
        let mut report_views = Vec::new();
        // Every test view goes into the report; without a test split, at most REPORT_TRAIN_VIEWS evenly
        // spaced training views (the page would otherwise grow with the dataset).
        let report_every = if split == "test" {
            1
        } else {
            views.len().div_ceil(REPORT_TRAIN_VIEWS).max(1)
        };
        let mut evaluated = 0usize;
        // Without a test split the training views are scored from the poses they were trained with.
        let refined =
            (split == "train" && self.trainer.cfg.pose_opt).then(|| self.trainer.refined_cameras());
        let view_metrics = evaluate(
            backend,
            gaussians,
            views,
            refined.as_deref(),
            self.ds.background,
            self.trainer.state.active_sh_degree,
            |view, img| {
                if evaluated.is_multiple_of(report_every) {
                    report_views.push(ReportView::new(&view.name, &view.image, img));
                }
                evaluated += 1;
                if split == "test" {
                    let path = renders.join(view.render_file_name());
                    let (w, h, img) = (view.camera.width, view.camera.height, img.to_vec());
                    self.worker.submit(move || {
                        splat_io::images::save_png(&path, w, h, &img).map_err(|e| e.to_string())
                    });
                }
            },
        );
        Ok((view_metrics, report_views, split))
    }
}
