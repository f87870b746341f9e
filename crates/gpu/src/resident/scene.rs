//! The device buffers of a scene (parameters, moments, per-Gaussian work buffers) and of the
//! intersection list, and what they weigh.

use super::*;

impl GpuResident {
    /// The scene for `n` Gaussians of `degree` with these parameters and moments (in [`GROUPS`] order),
    /// zero statistics and new work buffers for `n` (`old`'s are dropped first).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_scene(
        &self,
        n: usize,
        degree: usize,
        params: Vec<wgpu::Buffer>,
        m: Vec<wgpu::Buffer>,
        v: Vec<wgpu::Buffer>,
        adam_steps: [u64; 6],
        old: Option<Scene>,
    ) -> Result<Scene, String> {
        let ctx = &*self.ctx;
        if n == 0 {
            return Err("no Gaussians to train".into());
        }
        let rest = 3 * ((degree + 1) * (degree + 1) - 1);
        // The widest whole-bound per-Gaussian buffer: the projected gradients, 36 bytes.
        let most = max_gaussians(ctx);
        if n > most {
            return Err(format!(
                "{n} Gaussians exceed the resident path's per-binding limit ({} bytes)",
                ctx.limits.max_storage_buffer_binding_size
            ));
        }
        // Work buffers hold exactly `n`: a densification makes new ones (and records its steps again
        // anyway); the old ones go first, so they never coexist with the new.
        drop(old);
        let projected: Vec<wgpu::Buffer> = OUTPUT_WORDS
            .iter()
            .map(|&w| ctx.storage("projected", (n * w * 4) as u64))
            .collect();
        let counts = ctx.storage("tile counts", (n as u64 + 1) * 4);
        let count_scan = ScanPlan::new(ctx, n as u32 + 1);
        let projected_grads = ctx.storage("projected grads", (n * 9 * 4) as u64);
        let stats = [0, 1, 2].map(|_| ctx.storage("densification statistics", n as u64 * 4));
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("statistics"),
            });
        for b in &stats {
            enc.clear_buffer(b, 0, None);
        }
        ctx.submit(enc);
        let project_chunk = GpuProject::chunk_len(ctx, rest);
        let backward_chunk = GpuProjectBackwardAdam::chunk_len(ctx, rest);
        let (pc, bc) = (n.div_ceil(project_chunk), n.div_ceil(backward_chunk));
        let stride = uniform_stride(ctx);
        let uniform = |label, chunks: usize| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (chunks * stride) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let flags = self.antialiased as u32;
        let counts_of = |chunk: usize, chunks: usize| {
            (0..chunks).map(move |c| [chunk.min(n - c * chunk) as u32, 0, rest as u32, flags])
        };
        let block_counts: Vec<[u32; 4]> = counts_of(project_chunk, pc)
            .chain(counts_of(backward_chunk, bc))
            .collect();
        Ok(Scene {
            n,
            rest,
            stored_degree: degree,
            params,
            m,
            v,
            adam_steps,
            projected,
            counts,
            count_scan,
            projected_grads,
            stats,
            project_chunk,
            backward_chunk,
            project_uniform: uniform("project camera", pc),
            backward_uniform: uniform("backward camera", bc),
            staging: ctx.storage("camera blocks", ((pc + bc) * stride) as u64),
            block_counts: ctx.storage_from("block counts", &block_counts),
        })
    }

    /// The device memory of `scene` and `list` and of the rest (images, per-pixel buffers).
    pub(super) fn memory_of(&self, scene: &Scene, list: &List) -> EngineMemory {
        let sum = |bs: &[&wgpu::Buffer]| bs.iter().map(|b| b.size()).sum::<u64>();
        let mut gaussian: Vec<&wgpu::Buffer> = Vec::new();
        gaussian.extend(scene.params.iter().chain(&scene.m).chain(&scene.v));
        gaussian.extend(scene.projected.iter().chain(&scene.stats));
        gaussian.extend([&scene.counts, &scene.projected_grads]);
        let mut entries: Vec<&wgpu::Buffer> = list.a.iter().chain(&list.b).collect();
        entries.extend([&list.emitted, &list.inverse]);
        entries.extend(&list.records);
        let mut other: Vec<&wgpu::Buffer> = vec![
            &self.target,
            &self.image,
            &self.final_t,
            &self.n_contrib,
            &self.ranges,
            &self.metrics,
        ];
        if let Some(images) = &self.images {
            other.extend(&images.packed);
        }
        EngineMemory {
            gaussians: scene.n,
            gaussian_bytes: sum(&gaussian) + scene.count_scan.bytes(),
            list_entries: list.capacity as u64,
            list_bytes: sum(&entries) + list.sort.bytes(),
            other_bytes: sum(&other),
        }
    }

    pub(super) fn make_list(&self, capacity: u32) -> List {
        let ctx = &self.ctx;
        let c = capacity as u64;
        let make = |label| ctx.storage(label, c * 4);
        let records = self.raster.sums == BackwardSums::Records;
        // What only the deterministic sums need (records and the sort's inverse).
        let per_entry = |label, bytes| ctx.storage(label, if records { c * bytes } else { 16 });
        List {
            capacity,
            a: [make("key tile"), make("key depth"), make("ids")],
            b: [make("key tile"), make("key depth"), make("ids")],
            sort: SortPlan::new(ctx, capacity),
            emitted: per_entry("emitted ids", 4),
            inverse: per_entry("sorted positions", 4),
            records: [0, 1, 2].map(|_| per_entry("intersection records", 12)),
        }
    }
}
