//! Device time per stage from timestamp queries (`Features::TIMESTAMP_QUERY`, where the adapter has it).
//!
//! A recorded list of operations marks where each stage starts ([`crate::kernel::Recorder::stage`]).
//! When a [`PassTimer`] is given to [`crate::kernel::replay`], every run of consecutive dispatches (one
//! compute pass) writes a timestamp at its beginning and its end, and the span is charged to the stage
//! the run belongs to. A stage's device time is the sum of its passes' spans: the copies and clears
//! between passes (a few, small) are not in it, nor is the time the device idles between submissions.
//! Timing splits compute passes at stage boundaries, so it is on only when asked (`splat bench`).

use crate::context::GpuContext;

/// Timestamp slots of one query set (wgpu's largest).
const SLOTS: u32 = 4096;

pub struct PassTimer {
    query_set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    used: u32,
    /// (stage, first of its two slots) per timed pass.
    spans: Vec<(u32, u32)>,
    /// A pass found no free slot: this submission's times are incomplete.
    overflowed: bool,
}

impl PassTimer {
    /// A timer for one submission, or `None` where the device has no timestamp queries.
    pub fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.has_timestamps() {
            return None;
        }
        let query_set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("stage timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: SLOTS,
        });
        let resolved = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resolved timestamps"),
            size: SLOTS as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Some(PassTimer {
            query_set,
            resolved,
            used: 0,
            spans: Vec::new(),
            overflowed: false,
        })
    }

    /// The timestamp writes of the next pass, charged to `stage` (none when the slots ran out).
    pub(crate) fn next_pass(&mut self, stage: u32) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        if self.used + 2 > SLOTS {
            self.overflowed = true;
            return None;
        }
        let first = self.used;
        self.used += 2;
        self.spans.push((stage, first));
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: Some(first),
            end_of_pass_write_index: Some(first + 1),
        })
    }

    /// Records the resolution of the written timestamps (after the submission's last pass).
    pub fn resolve(&self, enc: &mut wgpu::CommandEncoder) {
        if self.used > 0 {
            enc.resolve_query_set(&self.query_set, 0..self.used, &self.resolved, 0);
        }
    }

    /// After the submission: seconds per stage (indexed by stage id, `stages` of them), or `None` when
    /// some pass went untimed.
    pub fn read(
        &self,
        ctx: &GpuContext,
        stages: usize,
    ) -> Result<Option<Vec<f64>>, crate::GpuError> {
        if self.overflowed {
            return Ok(None);
        }
        let ticks: Vec<u64> = ctx.read_uncounted(&self.resolved, self.used as usize)?;
        let period = ctx.queue.get_timestamp_period() as f64 * 1e-9;
        let mut seconds = vec![0.0; stages];
        for &(stage, first) in &self.spans {
            let (begin, end) = (ticks[first as usize], ticks[first as usize + 1]);
            seconds[stage as usize] += end.saturating_sub(begin) as f64 * period;
        }
        Ok(Some(seconds))
    }
}
