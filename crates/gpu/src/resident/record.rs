//! Recording a resident step: the template (everything that is the same every step, with holes) and
//! the holes' per-step work (the view's selection, the overflow check, the loss rows, and the tail:
//! commit, statistics, opacity reset, Adam). Stage marks let `splat bench` time each stage.

use super::*;

impl GpuResident {
    /// Records a step. With `only: None`, the parts that are the same for every step (the template,
    /// made once per scene and list and replayed), with a hole ([`Recorder::hole`]) where step-specific
    /// work goes; with `at: Some((s, step, adam_steps))` and `only: Some(hole)`, that hole's work for
    /// step `s` of the submission.
    pub(super) fn record_step(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        at: Option<(usize, &PlannedStep, &mut [u64; 6])>,
        only: Option<u32>,
    ) {
        let (s, draw, degree) = at
            .as_ref()
            .map_or((0, 0, 0), |(s, step, _)| (*s, step.draw, step.sh_degree));
        let ctx = &*self.ctx;
        let images = self.images.as_ref().expect("views uploaded");
        let scene = self.scene.as_ref().expect("state loaded");
        let list = self.list.as_ref().expect("list made");
        let grid = &images.grid;
        let n = scene.n as u32;
        let tiles = grid.num_tiles() as u32;
        let pixels = grid.width * grid.height;
        let stride_words = (uniform_stride(ctx) / 16) as u32;
        let (project_chunks, backward_chunks) = scene.chunks();
        let coeffs = active_coeffs(degree, scene.stored_degree) as u32;
        let p = BookParams {
            a: [s as u32, list.capacity, n, images.views],
            b: [
                splat_train::random::seed_word(constants.config.seed),
                0,
                draw as u32,
                tiles,
            ],
            c: [
                (project_chunks + backward_chunks) as u32,
                stride_words,
                pixels,
                0,
            ],
            d: [0, coeffs, images.views_per_part, 0],
        };
        let book = |enc: &mut dyn Recorder,
                    kernel: &Kernel,
                    bindings: &[(u32, &wgpu::Buffer)],
                    groups: u32| {
            kernel.dispatch_bytes(ctx, enc, bytemuck::bytes_of(&p), bindings, groups)
        };
        let status = &self.status;

        match only {
            None => {
                enc.stage(STAGE_PROJECT);
                enc.hole(HOLE_SELECT);
                self.record_after_select(enc, constants, p);
            }
            Some(HOLE_SELECT) => book(
                enc,
                &self.k.select,
                &[
                    (1, status),
                    (2, &images.cameras),
                    (3, &scene.block_counts),
                    (4, &scene.staging),
                ],
                1,
            ),
            Some(HOLE_OVERFLOW) => {
                book(enc, &self.k.overflow, &[(1, status), (8, &scene.counts)], 1)
            }
            Some(hole) => self.record_late_hole(enc, constants, at, hole, p),
        }
    }

    /// The template from the select hole on (see [`Self::record_step`]), as the step's stages.
    fn record_after_select(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        p: BookParams,
    ) {
        // The SH degree is the projection's business; rasterizing reads the background and cut-offs.
        let mut settings = RenderSettings::new(0);
        settings.background = constants.background;
        let t = Template {
            ctx: &self.ctx,
            images: self.images.as_ref().expect("views uploaded"),
            scene: self.scene.as_ref().expect("state loaded"),
            list: self.list.as_ref().expect("list made"),
            loss: self.loss_bufs.as_ref().expect("views uploaded"),
            status: &self.status,
            settings,
            lambda_dssim: constants.config.lambda_dssim,
            p,
        };
        self.record_view(enc, &t);
        self.record_project(enc, &t);
        let sorted = self.record_bin(enc, &t);
        let inputs = RasterInputs {
            ranges: &self.ranges,
            ids: &sorted[2],
            means2d: &t.scene.projected[0],
            conics: &t.scene.projected[1],
            opacities: &t.scene.projected[5],
            colors: &t.scene.projected[6],
        };
        self.record_forward_and_loss(enc, &t, &inputs);
        self.record_raster_backward(enc, &t, &inputs);
        enc.stage(STAGE_PROJECT_BWD);
        // Whether every gradient (and the loss) is finite; the gradients themselves are formed again
        // and applied by the tail's Adam (`project_bwd_adam.rs`).
        self.backward().record_check(
            t.ctx,
            enc,
            &self.fused_buffers(t.scene),
            (t.scene.n, t.scene.backward_chunk),
            &t.scene.backward_uniform,
            &t.loss.sums,
            3 * t.images.grid.height,
        );
        enc.hole(HOLE_TAIL);
    }

    /// The view's camera blocks (written by the select hole) into the uniforms, its target image.
    fn record_view(&self, enc: &mut dyn Recorder, t: &Template<'_>) {
        let (scene, images) = (t.scene, t.images);
        let (project_chunks, backward_chunks) = scene.chunks();
        let stride = uniform_stride(t.ctx) as u64;
        let project_bytes = project_chunks as u64 * stride;
        enc.copy(&scene.staging, 0, &scene.project_uniform, 0, project_bytes);
        enc.copy(
            &scene.staging,
            project_bytes,
            &scene.backward_uniform,
            0,
            backward_chunks as u64 * stride,
        );
        let pixels = images.grid.width * images.grid.height;
        t.book(
            enc,
            &self.k.unpack,
            &[
                (1, t.status),
                (5, &images.packed[0]),
                (6, &images.lut),
                (7, &self.target),
                (13, &images.packed[1]),
                (14, &images.packed[2]),
                (15, &images.packed[3]),
            ],
            groups_for(pixels),
        );
    }

    /// Projects every Gaussian (chunked under the uniform's limits).
    fn record_project(&self, enc: &mut dyn Recorder, t: &Template<'_>) {
        let scene = t.scene;
        let mut bindings: Vec<(u32, &wgpu::Buffer, usize)> = vec![
            (1, &scene.params[0], 3),
            (2, &scene.params[4], 3),
            (3, &scene.params[5], 4),
            (4, &scene.params[3], 1),
            (5, &scene.params[1], 3),
            (6, &scene.params[2], scene.rest),
        ];
        bindings.extend(
            scene
                .projected
                .iter()
                .enumerate()
                .map(|(k, b)| (7 + k as u32, b, OUTPUT_WORDS[k])),
        );
        record_chunked_with(
            t.ctx,
            enc,
            &self.project.pipeline,
            &self.project.layout,
            scene.n,
            scene.project_chunk,
            &scene.project_uniform,
            &bindings,
        );
    }

    /// Counts, emits and sorts the intersections into the capacity-sized list and finds each tile's
    /// range; returns the sorted list (keys, values, ids).
    fn record_bin<'t>(&self, enc: &mut dyn Recorder, t: &Template<'t>) -> &'t [wgpu::Buffer; 3] {
        let (ctx, scene, list, grid) = (t.ctx, t.scene, t.list, &t.images.grid);
        let n = scene.n as u32;
        let tiles = grid.num_tiles() as u32;
        let input = BinInputs {
            radii: &scene.projected[3],
            rects: &scene.projected[4],
            depths: &scene.projected[2],
            means2d: &scene.projected[0],
            conics: &scene.projected[1],
            opacities: &scene.projected[5],
            alpha_min: t.settings.cutoffs.alpha_min as f32,
        };
        let params = [n, grid.tiles_x, input.alpha_min.to_bits(), list.capacity];
        enc.stage(STAGE_BIN);
        enc.clear(&scene.counts);
        let mut bindings = input.bindings().to_vec();
        bindings.push((4, &scene.counts));
        self.bin
            .count
            .dispatch(ctx, enc, params, &bindings, groups_for(n));
        self.scan
            .record_planned(ctx, enc, &scene.counts, &scene.count_scan, n + 1);
        enc.hole(HOLE_OVERFLOW);
        let a = &list.a;
        let atomic = self.raster.sums == BackwardSums::Atomic;
        bindings.extend([
            (3, input.depths),
            (5, &a[0]),
            (6, &a[1]),
            (7, if atomic { &a[2] } else { &list.emitted }),
        ]);
        self.bin
            .emit
            .dispatch(ctx, enc, params, &bindings, groups_for(n));
        let c = list.capacity;
        // The sort and the ranges take the step's intersections from the scan's last entry: nothing past
        // them is sorted or read. For the records' gather the sort also writes where each entry went.
        let live = LiveCount {
            buffer: &scene.counts,
            index: n,
        };
        let with = SortWith {
            inverse: (!atomic).then_some(Inverse {
                emitted: &list.emitted,
                inverse: &list.inverse,
            }),
            live: Some(live),
        };
        let in_b = self.bin.sort.record(
            ctx,
            enc,
            &list.sort,
            c,
            sort_key_bits(tiles),
            &list.a,
            &list.b,
            &with,
        );
        let sorted = if in_b { &list.b } else { &list.a };
        enc.clear(&self.ranges);
        let params = [c, tiles, n + 1, 0];
        self.bin.ranges.dispatch_indirect(
            ctx,
            enc,
            bytemuck::cast_slice(&params),
            &[(1, &sorted[0]), (2, &self.ranges), (3, live.buffer)],
            list.sort.live_entry_groups(),
        );
        sorted
    }

    /// Rasterizes the view and records the loss against its target (the metrics hole after it).
    fn record_forward_and_loss(
        &self,
        enc: &mut dyn Recorder,
        t: &Template<'_>,
        inputs: &RasterInputs<'_>,
    ) {
        let grid = &t.images.grid;
        enc.stage(STAGE_RASTER_FWD);
        let mut fwd = inputs.bindings().to_vec();
        fwd.extend([(7, &self.image), (8, &self.final_t), (9, &self.n_contrib)]);
        record_pass(
            t.ctx,
            enc,
            &self.raster.forward,
            bytemuck::bytes_of(&raster_params(grid, &t.settings, 0)),
            &fwd,
            (grid.tiles_x, grid.tiles_y, 1),
        );
        enc.stage(STAGE_LOSS);
        (self.loss).record(
            t.ctx,
            enc,
            &self.image,
            &self.target,
            t.loss,
            t.lambda_dssim,
        );
        enc.hole(HOLE_METRICS);
    }

    /// The rasterize backward into each Gaussian's projected gradients: atomic sums, or records per
    /// intersection gathered per Gaussian in emission (tile) order through the sort's inverse.
    fn record_raster_backward(
        &self,
        enc: &mut dyn Recorder,
        t: &Template<'_>,
        inputs: &RasterInputs<'_>,
    ) {
        let (ctx, scene, list, grid) = (t.ctx, t.scene, t.list, &t.images.grid);
        let n = scene.n as u32;
        enc.stage(STAGE_RASTER_BWD);
        let mut tiles_b = inputs.bindings().to_vec();
        tiles_b.extend([(7, &self.final_t), (8, &self.n_contrib), (9, &t.loss.grad)]);
        let rp = raster_params(grid, &t.settings, n);
        let tile_groups = (grid.tiles_x, grid.tiles_y, 1);
        if self.raster.sums == BackwardSums::Atomic {
            enc.clear(&scene.projected_grads);
            tiles_b.push((16, &scene.projected_grads));
            let pipeline = self.raster.backward_atomic();
            record_pass(
                ctx,
                enc,
                pipeline,
                bytemuck::bytes_of(&rp),
                &tiles_b,
                tile_groups,
            );
            return;
        }
        for r in &list.records {
            enc.clear(r);
        }
        let records = [
            (10, &list.records[0]),
            (16, &list.records[1]),
            (17, &list.records[2]),
        ];
        tiles_b.extend(records);
        let pipeline = &self.raster.backward_tiles;
        record_pass(
            ctx,
            enc,
            pipeline,
            bytemuck::bytes_of(&rp),
            &tiles_b,
            tile_groups,
        );
        let (x, y) = ctx.dispatch_size(groups_for(n));
        let mut gather = records.to_vec();
        gather.extend([
            (11, &scene.projected[3]),
            (15, &scene.projected_grads),
            (18, &scene.counts),
            (19, &list.inverse),
        ]);
        record_pass(
            ctx,
            enc,
            &self.raster.backward_gather_indexed,
            bytemuck::bytes_of(&rp),
            &gather,
            (x, y, 1),
        );
    }

    /// The metrics and tail holes of step `s` (see [`Self::record_step`]): its loss rows into the block's
    /// metrics; the finite check's commit, statistics, opacity reset and Adam.
    fn record_late_hole(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        at: Option<(usize, &PlannedStep, &mut [u64; 6])>,
        hole: u32,
        p: BookParams,
    ) {
        let ctx = &*self.ctx;
        let (s, step, adam_steps) = at.expect("a step");
        let images = self.images.as_ref().expect("views uploaded");
        let scene = self.scene.as_ref().expect("state loaded");
        let loss = self.loss_bufs.as_ref().expect("views uploaded");
        let grid = &images.grid;
        let n = scene.n as u32;
        let status = &self.status;
        if hole == HOLE_METRICS {
            let row_bytes = 3 * grid.height as u64 * 4;
            enc.copy(
                &loss.sums,
                0,
                &self.metrics,
                s as u64 * row_bytes,
                row_bytes,
            );
            return;
        }
        assert_eq!(hole, HOLE_TAIL, "hole {hole}");
        enc.stage(STAGE_DENSIFY);
        self.k
            .commit
            .dispatch_bytes(ctx, enc, bytemuck::bytes_of(&p), &[(1, status)], 1);
        let radii = &scene.projected[3];
        if step.stats {
            let sp = StatsParams {
                n: [n, 0, 0, 0],
                half: [0.5 * grid.width as f32, 0.5 * grid.height as f32, 0.0, 0.0],
            };
            let (x, y) = ctx.dispatch_size(groups_for(n));
            record_pass(
                ctx,
                enc,
                &self.stats.pipeline,
                bytemuck::bytes_of(&sp),
                &[
                    (1, radii),
                    (2, &scene.projected_grads),
                    (3, &scene.stats[0]),
                    (4, &scene.stats[1]),
                    (5, &scene.stats[2]),
                    (6, status),
                ],
                (x, y, 1),
            );
        }
        enc.stage(STAGE_ADAM);
        // A densifying step resets after its edit (`run_block`).
        if step.reset_opacity && !step.densify {
            self.record_reset(enc, scene);
        }
        if let Some(position_lr) = step.position_lr {
            let lrs = constants.lrs(position_lr);
            let config = &constants.config;
            let mcmc = (step.regularize).then(|| {
                let n = scene.n.max(1) as f64;
                [
                    config.mcmc.opacity_reg / n,
                    config.mcmc.scale_reg / (3.0 * n),
                ]
            });
            let mut adam = AdamStep {
                betas: config.adam_betas(),
                eps: splat_train::adam::EPS,
                visible_only: config.visible_adam,
                regularizer: mcmc.unwrap_or([0.0; 2]),
                ..AdamStep::none()
            };
            for (g, t) in adam_steps.iter_mut().enumerate() {
                if adam_applies(step, g) {
                    *t += 1;
                    adam.groups[g] = Some((lrs[g], *t));
                }
            }
            self.backward().record_apply(
                ctx,
                enc,
                &self.fused_buffers(scene),
                (scene.n, scene.backward_chunk),
                &scene.backward_uniform,
                &adam,
            );
        }
        if let Some(position_lr) = step.noise_lr {
            self.record_noise(enc, constants, scene, (step.step, position_lr));
        }
    }

    fn backward(&self) -> &GpuProjectBackwardAdam {
        self.backward
            .as_ref()
            .expect("an engine without it is unsupported")
    }

    /// What the fused projection backward and Adam read and update.
    fn fused_buffers<'a>(&'a self, scene: &'a Scene) -> FusedBuffers<'a> {
        FusedBuffers {
            params: &scene.params,
            m: &scene.m,
            v: &scene.v,
            radii: &scene.projected[3],
            conics: &scene.projected[1],
            opacities: &scene.projected[5],
            clamped: &scene.projected[7],
            projected_grads: &scene.projected_grads,
            status: &self.status,
            rest: scene.rest,
        }
    }
}

/// What the template's stages read: the engine's buffers for the loaded views, scene and list, the
/// rasterizer's settings and the loss weight, and the book-keeping kernels' parameters.
struct Template<'r> {
    ctx: &'r GpuContext,
    images: &'r Images,
    scene: &'r Scene,
    list: &'r List,
    loss: &'r LossBuffers,
    status: &'r wgpu::Buffer,
    settings: RenderSettings,
    lambda_dssim: f64,
    p: BookParams,
}

impl Template<'_> {
    /// Records a book-keeping kernel (`resident.wgsl`) with the step's parameters.
    fn book(
        &self,
        enc: &mut dyn Recorder,
        kernel: &Kernel,
        bindings: &[(u32, &wgpu::Buffer)],
        groups: u32,
    ) {
        kernel.dispatch_bytes(self.ctx, enc, bytemuck::bytes_of(&self.p), bindings, groups)
    }
}
