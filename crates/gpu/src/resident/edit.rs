//! Densification and opacity resets on the device: the edit (`densify_edit.wgsl`: classify, three scans,
//! scatter), its host fallback, and the reset.

use super::*;

/// The 4x16-byte uniform of `densify_edit.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct EditParams {
    a: [u32; 4],
    b: [u32; 4],
    c: [f32; 4],
    d: [f32; 4],
}

/// The classification of a densification: each Gaussian's kind, the scanned keep flags, the kept
/// survivors, clones and split parents with the candidates, and the clones and splits made.
struct Classified {
    kind: wgpu::Buffer,
    keeps: [wgpu::Buffer; 3],
    kept: [u32; 4],
    made: (usize, usize),
}

/// The edit's uniform for `step`: thresholds in the units `densify_edit.wgsl` compares.
fn edit_params(constants: &BlockConstants, step: u64, n: usize) -> EditParams {
    let cfg = &constants.config;
    let late = step > cfg.opacity_reset_interval;
    let flags = late as u32
        | ((cfg.prune_world_scale > 0.0) as u32) << 1
        | (cfg.prune_screen_radius.is_some() as u32) << 2;
    EditParams {
        a: [n as u32, 0, 0, step as u32],
        b: [splat_train::random::seed_word(cfg.seed), 0, 0, flags],
        c: [
            cfg.densify_grad_threshold as f32,
            (cfg.percent_dense * constants.extent) as f32,
            cfg.min_opacity as f32,
            (cfg.prune_world_scale * constants.extent) as f32,
        ],
        d: [
            cfg.prune_screen_radius.unwrap_or(0.0) as f32,
            (1.6f32).ln(),
            0.0,
            0.0,
        ],
    }
}

impl GpuResident {
    /// Records the opacity reset of `scene` (skipped by a halted step).
    pub(super) fn record_reset(&self, enc: &mut dyn Recorder, scene: &Scene) {
        let ctx = &*self.ctx;
        let p = EditParams {
            a: [scene.n as u32, 0, 0, 0],
            d: [0.0, 0.0, splat_core::logit(0.01f32), 0.0],
            ..Default::default()
        };
        let (x, y) = ctx.dispatch_size(groups_for(scene.n as u32));
        record_pass(
            ctx,
            enc,
            &self.k.reset,
            bytemuck::bytes_of(&p),
            &[
                (19, &scene.params[3]),
                (20, &scene.m[3]),
                (21, &scene.v[3]),
                (22, &self.status),
            ],
            (x, y, 1),
        );
    }

    /// 3DGS-MCMC's position noise after step `step`'s update, with `position_lr` (the next step's, as
    /// the host reads it) times `noise_lr` (`splat_train::mcmc::inject_noise`; nothing on a halted
    /// step).
    pub(super) fn record_noise(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        scene: &Scene,
        (step, position_lr): (u64, f64),
    ) {
        let ctx = &*self.ctx;
        let m = &constants.config.mcmc;
        let p = EditParams {
            a: [scene.n as u32, 0, 0, step as u32],
            b: [
                splat_train::random::seed_word(constants.config.seed),
                0,
                0,
                0,
            ],
            c: [
                (position_lr * m.noise_lr) as f32,
                m.noise_gate_sharpness as f32,
                m.noise_gate_opacity as f32,
                0.0,
            ],
            ..Default::default()
        };
        let (x, y) = ctx.dispatch_size(groups_for(scene.n as u32));
        record_pass(
            ctx,
            enc,
            &self.k.noise,
            bytemuck::bytes_of(&p),
            &[
                (4, &scene.params[4]),
                (5, &scene.params[3]),
                (17, &scene.params[5]),
                (22, &self.status),
                (23, &scene.params[0]),
            ],
            (x, y, 1),
        );
    }

    /// Clone, split and prune on the device after step `step` (its statistics added), as
    /// `splat_train::densify::densify_and_prune`: classify every Gaussian and read back how many of
    /// each kind are kept, then scatter the kept ones into new buffers. Falls back to the host's edit
    /// when the Gaussian budget must choose among candidates or a group would not fit one binding.
    pub fn densify(
        &mut self,
        constants: &BlockConstants,
        step: u64,
    ) -> Result<DensifyReport, String> {
        let cfg = &constants.config;
        let scene = self.scene.as_ref().expect("state loaded");
        let n = scene.n;
        let mut p = edit_params(constants, step, n);
        let classified = self.classify(&p)?;
        let [survivors, clones_kept, split_kept, candidates] = classified.kept;
        let new_n = (survivors + clones_kept + 2 * split_kept) as usize;
        let over_budget = cfg
            .max_gaussians
            .is_some_and(|cap| n + candidates as usize > cap);
        // The edit binds whole groups, old and new.
        let widest = (scene.rest.max(4) * 4) as u64;
        let max = self.ctx.limits.max_storage_buffer_binding_size;
        if over_budget || n.max(new_n) as u64 * widest > max || new_n == 0 {
            return self.densify_on_host(constants, step);
        }
        p.b[1] = survivors;
        p.b[2] = clones_kept;
        let [params, m, v] = self.scatter(&mut p, &classified, new_n);
        let old = self.scene.take().expect("state loaded");
        let (degree, steps) = (old.stored_degree, old.adam_steps);
        self.template = None;
        self.scene = Some(self.build_scene(new_n, degree, params, m, v, steps, Some(old))?);
        let (cloned, split) = classified.made;
        Ok(DensifyReport {
            cloned,
            split,
            pruned: n - split + cloned + 2 * split - new_n,
        })
    }

    /// Classifies every Gaussian (`densify_edit.wgsl`'s `classify`: kept, cloned, split, pruned),
    /// scans the three keep flags into destinations and reads back the counts.
    fn classify(&self, p: &EditParams) -> Result<Classified, String> {
        let ctx = &*self.ctx;
        let scene = self.scene.as_ref().expect("state loaded");
        let n = scene.n;
        let kind = ctx.storage("densify kind", n as u64 * 4);
        let keeps = [0, 1, 2].map(|_| ctx.storage("densify keep", (n as u64 + 1) * 4));
        let counters = ctx.storage("densify counters", 16);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("densify"),
            });
        let (x, y) = ctx.dispatch_size(groups_for(n as u32 + 1));
        record_pass(
            ctx,
            &mut enc,
            &self.k.classify,
            bytemuck::bytes_of(p),
            &[
                (1, &scene.stats[0]),
                (2, &scene.stats[1]),
                (3, &scene.stats[2]),
                (4, &scene.params[4]),
                (5, &scene.params[3]),
                (6, &kind),
                (7, &keeps[0]),
                (8, &keeps[1]),
                (9, &keeps[2]),
                (10, &counters),
            ],
            (x, y, 1),
        );
        let plan = ScanPlan::new(ctx, n as u32 + 1);
        for k in &keeps {
            self.scan
                .record_planned(ctx, &mut enc, k, &plan, n as u32 + 1);
        }
        let totals = ctx.storage("densify totals", 24);
        for (i, k) in keeps.iter().enumerate() {
            enc.copy_buffer_to_buffer(k, n as u64 * 4, &totals, i as u64 * 4, 4);
        }
        enc.copy_buffer_to_buffer(&counters, 0, &totals, 12, 12);
        ctx.submit(enc);
        // The read-back: how large the edited set is (and the counts for the budget and the report).
        let t: Vec<u32> = ctx.read(&totals, 6).map_err(gpu_err)?;
        Ok(Classified {
            kind,
            keeps,
            kept: [t[0], t[1], t[2], t[3]],
            made: (t[4] as usize, t[5] as usize),
        })
    }

    /// Writes the kept, cloned and split Gaussians of every group, with their moments, into new
    /// buffers of `new_n`; returns them (parameters, first and second moments, in group order).
    fn scatter(
        &self,
        p: &mut EditParams,
        classified: &Classified,
        new_n: usize,
    ) -> [Vec<wgpu::Buffer>; 3] {
        let ctx = &*self.ctx;
        let scene = self.scene.as_ref().expect("state loaded");
        let (kind, keeps) = (&classified.kind, &classified.keeps);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("densify scatter"),
            });
        let widths = [3, 3, scene.rest, 1, 3, 4];
        let mut out = [0, 1, 2].map(|_| Vec::with_capacity(6));
        for (g, &w) in widths.iter().enumerate() {
            let bytes = (new_n * w * 4) as u64;
            let (dst, dm, dv) = (
                ctx.storage(GROUPS[g], bytes),
                ctx.storage("adam m", bytes),
                ctx.storage("adam v", bytes),
            );
            if w > 0 {
                p.a[1] = w as u32;
                p.a[2] = match g {
                    0 => 1,
                    4 => 2,
                    _ => 0,
                };
                let (x, y) = ctx.dispatch_size(groups_for(scene.n as u32));
                record_pass(
                    ctx,
                    &mut enc,
                    &self.k.scatter,
                    bytemuck::bytes_of(p),
                    &[
                        (6, kind),
                        (7, &keeps[0]),
                        (8, &keeps[1]),
                        (9, &keeps[2]),
                        (11, &scene.params[g]),
                        (12, &scene.m[g]),
                        (13, &scene.v[g]),
                        (14, &dst),
                        (15, &dm),
                        (16, &dv),
                        (17, &scene.params[5]),
                        (18, &scene.params[4]),
                    ],
                    (x, y, 1),
                );
            }
            for (o, b) in out.iter_mut().zip([dst, dm, dv]) {
                o.push(b);
            }
        }
        ctx.submit(enc);
        out
    }

    /// The host's edit: the state read back, edited, loaded again.
    pub(super) fn densify_on_host(
        &mut self,
        constants: &BlockConstants,
        step: u64,
    ) -> Result<DensifyReport, String> {
        let degree = self.scene.as_ref().expect("state loaded").stored_degree;
        let mut state = TrainState::new(splat_core::Gaussians::new(degree));
        self.store(&mut state)?;
        let report = splat_train::densify::densify_and_prune(
            &mut state,
            &constants.config,
            constants.extent,
            step,
        );
        self.load(&state)?;
        Ok(report)
    }

    /// The opacity reset as its own submission (after a densification).
    pub(super) fn reset_now(&mut self) {
        let scene = self.scene.as_ref().expect("state loaded");
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("opacity reset"),
            });
        self.ctx
            .queue
            .write_buffer(&self.status, 0, &[0u8; STATUS_WORDS * 4]);
        self.record_reset(&mut enc, scene);
        self.ctx.submit(enc);
    }
}
