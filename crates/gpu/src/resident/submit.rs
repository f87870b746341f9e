//! A block's submissions: each records up to [`SUBMIT_STEPS`] steps (the template replayed with the
//! holes' per-step work), starts them, and reads back their status and loss rows. While the device runs
//! one, the host records the next as if every step of the running one completes; a halt or a new list
//! discards it. After the submissions, a densifying last step's edit.

use super::*;

impl GpuResident {
    /// Runs `steps` in submissions, handling each halt (a larger list, a skipped step) as it comes.
    pub(super) fn run_submissions(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(), String> {
        let mut at = 0;
        let mut next: Option<(usize, Recorded)> = None;
        while at < steps.len() {
            let end = (at + SUBMIT_STEPS).min(steps.len());
            let mut recorded = match next.take() {
                Some((from, r)) if from == at => {
                    self.ahead.1 += 1;
                    r
                }
                _ => {
                    let adam = self.scene.as_ref().expect("state loaded").adam_steps;
                    self.record_submission(constants, &steps[at..end], adam)
                }
            };
            self.start(&mut recorded);
            if end < steps.len() {
                let after = (end + SUBMIT_STEPS).min(steps.len());
                let adam = adam_after(recorded.adam_start, &steps[at..end]);
                next = Some((
                    end,
                    self.record_submission(constants, &steps[end..after], adam),
                ));
                self.ahead.0 += 1;
            }
            let (done, halt) = self.finish(constants, &steps[at..end], recorded, out)?;
            at += done;
            let (skipped, ahead_valid) = self.after_submission(halt, &steps[at..], out)?;
            at += skipped;
            if !ahead_valid {
                next = None;
            }
        }
        Ok(())
    }

    /// After a submission that completed (`halt: None`) or halted at `rest[0]`: shrinks a list much
    /// larger than the steps need, grows one that overflowed, or reports a non-finite step skipped.
    /// Returns the steps skipped and whether the submission recorded ahead is still valid.
    fn after_submission(
        &mut self,
        halt: Option<(u32, u32)>,
        rest: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(usize, bool), String> {
        match halt {
            None => {
                // The sort's dispatches are sized by the capacity (workgroups past the step's
                // intersections leave at once, but each still costs a launch): shrink a list over
                // twice what the steps need (to a quarter over; the gap between is the hysteresis).
                let capacity = self.capacity();
                if self.initial_capacity.is_none()
                    && capacity > MIN_CAPACITY
                    && self.most_needed < capacity / 2
                {
                    self.replace_list(list_size(self.most_needed));
                    return Ok((0, false));
                }
                Ok((0, true))
            }
            Some((HALT_OVERFLOW, needed)) => {
                let max = (self.ctx.limits.max_storage_buffer_binding_size / 12) as u32;
                if needed > max {
                    return Err(format!(
                        "step {} needs {needed} tile intersections, beyond this device's \
                         {max} per binding",
                        rest[0].step
                    ));
                }
                self.replace_list(list_size(needed).min(max));
                Ok((0, false))
            }
            Some((HALT_NOT_FINITE, _)) => {
                out.push(StepOutcome {
                    step: rest[0].step,
                    loss: f64::NAN,
                    skipped: true,
                    num_gaussians: self.scene.as_ref().map_or(0, |s| s.n),
                    ..Default::default()
                });
                Ok((1, false))
            }
            Some((why, _)) => Err(format!("unknown halt reason {why}")),
        }
    }

    /// A new intersection list of `size` entries (the template is recorded again for it).
    fn replace_list(&mut self, size: u32) {
        self.template = None;
        self.list = Some(self.make_list(size));
        self.most_needed = 0;
    }

    /// A densification ends the block (unless its step was skipped, as on the host): the edit, then
    /// the step's opacity reset.
    pub(super) fn densify_at_block_end(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut [StepOutcome],
    ) -> Result<(), String> {
        // A densification ends the block (unless its step was skipped, as on the host).
        if let (Some(last), Some(outcome)) = (steps.last(), out.last_mut()) {
            if last.densify && outcome.step == last.step && !outcome.skipped {
                outcome.densified = Some(self.densify(constants, last.step)?);
                if last.reset_opacity {
                    self.reset_now();
                }
                outcome.num_gaussians = self.scene.as_ref().map_or(0, |s| s.n);
            }
        }
        Ok(())
    }

    /// Records `steps` (at most [`SUBMIT_STEPS`]) as one submission, their moments' step counts starting
    /// at `adam_start`; nothing runs until [`Self::finish`].
    fn record_submission(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        adam_start: [u64; 6],
    ) -> Recorded {
        let ctx = self.ctx.clone();
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("resident block"),
            });
        let mut adam_steps = adam_start;
        // The template holds the background and the loss weight too.
        let key = (constants.background, constants.config.lambda_dssim);
        if self.template.is_none() || self.template_key != key {
            let mut ops = Vec::new();
            self.record_step(&mut ops, constants, None, None);
            self.template = Some(ops);
            self.template_key = key;
        }
        let t0 = std::time::Instant::now();
        let template = self.template.as_ref().expect("made above");
        let mut timer = self
            .stage_timing
            .is_some()
            .then(|| PassTimer::new(&ctx))
            .flatten();
        for (s, step) in steps.iter().enumerate() {
            replay(
                &ctx,
                template,
                &mut enc,
                timer.as_mut(),
                &mut |ops, hole| {
                    self.record_step(ops, constants, Some((s, step, &mut adam_steps)), Some(hole));
                },
            );
        }
        if let Some(t) = &timer {
            t.resolve(&mut enc);
        }
        let commands = enc.finish();
        self.recording += t0.elapsed().as_secs_f64();
        Recorded {
            commands: Some(commands),
            timer,
            steps: steps.len(),
            adam_start,
        }
    }

    /// Submits `recorded` (the status cleared first) and counts its sort work.
    fn start(&mut self, recorded: &mut Recorded) {
        let ctx = &self.ctx;
        ctx.queue
            .write_buffer(&self.status, 0, &[0u8; STATUS_WORDS * 4]);
        let cb = recorded.commands.take().expect("started once");
        ctx.submit_buffer(cb);
        let tiles = self
            .images
            .as_ref()
            .expect("views uploaded")
            .grid
            .num_tiles();
        let bits = sort_key_bits(tiles as u32);
        let n = recorded.steps as u64;
        self.sort_passes += n * crate::sort::passes(bits) as u64;
        // The sort moves only a step's own intersections: count the most any step has needed so far
        // (the capacity before one is known).
        let live = match self.most_needed {
            0 => self.capacity(),
            most => most.min(self.capacity()),
        };
        self.sort_bytes +=
            n * crate::sort::bytes(live, bits, self.raster.sums == BackwardSums::Records);
    }

    /// Waits for the submission of `steps` started from `recorded`: reads back its status and loss rows,
    /// appends the completed steps' outcomes; returns how many completed and the halt (reason, needed
    /// intersections) if one stopped it.
    fn finish(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        recorded: Recorded,
        out: &mut Vec<StepOutcome>,
    ) -> Result<(usize, Option<(u32, u32)>), String> {
        let ctx = self.ctx.clone();
        let start_steps = recorded.adam_start;
        let status: Vec<u32> = ctx.read(&self.status, STATUS_WORDS).map_err(gpu_err)?;
        if let (Some(t), Some(timing)) = (&recorded.timer, self.stage_timing.as_mut()) {
            if let Some(seconds) = t.read(&ctx, 8).map_err(gpu_err)? {
                timing.steps += steps.len() as u64;
                for (total, s) in timing.seconds.iter_mut().zip(seconds) {
                    *total += s;
                }
            }
        }
        let images = self.images.as_ref().expect("views uploaded");
        let (w, h) = (images.grid.width as usize, images.grid.height as usize);
        let done = if status[0] == 0 {
            steps.len()
        } else {
            status[0] as usize - 1
        };
        let sums: Vec<f32> = ctx.read(&self.metrics, done * 3 * h).map_err(gpu_err)?;
        for (s, step) in steps[..done].iter().enumerate() {
            let (value, psnr) = loss_from_row_sums(
                &sums[s * 3 * h..(s + 1) * 3 * h],
                w,
                h,
                constants.config.lambda_dssim,
            );
            out.push(StepOutcome {
                step: step.step,
                loss: value.loss,
                l1: value.l1,
                ssim: value.ssim,
                psnr,
                skipped: false,
                densified: None,
                opacity_reset: step.reset_opacity,
                num_gaussians: self.scene.as_ref().map_or(0, |sc| sc.n),
            });
        }
        // The moments' step counts after the completed steps.
        let scene = self.scene.as_mut().expect("state loaded");
        for (g, (t, t0)) in scene.adam_steps.iter_mut().zip(start_steps).enumerate() {
            *t = t0 + steps[..done].iter().filter(|s| adam_applies(s, g)).count() as u64;
        }
        let halt = (status[0] != 0).then_some((status[1], status[3]));
        self.most_needed = self.most_needed.max(status[5]);
        Ok((done, halt))
    }
}

/// A recorded submission (see [`GpuResident::record_submission`]).
struct Recorded {
    /// Taken when submitted.
    commands: Option<wgpu::CommandBuffer>,
    timer: Option<PassTimer>,
    steps: usize,
    /// The moments' step counts the steps were recorded from.
    adam_start: [u64; 6],
}

/// The moments' step counts after `steps` all complete from `start`.
fn adam_after(start: [u64; 6], steps: &[PlannedStep]) -> [u64; 6] {
    let mut t = start;
    for (g, t) in t.iter_mut().enumerate() {
        *t += steps.iter().filter(|s| adam_applies(s, g)).count() as u64;
    }
    t
}
