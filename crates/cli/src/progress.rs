//! Training progress on stderr: a bar on a terminal, a plain line every ~2% otherwise, and a line for
//! each densification or MCMC refine on a multiple of 1,000 steps. An [`Observer`] of the run.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use splat_train::run::{Observer, StepEvent};
use splat_train::StepStats;

/// Progress: a bar on a terminal, a plain line every ~2% otherwise.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    every: u64,
    started: Instant,
    first: u64,
    ema_loss: f64,
    ema_psnr: f64,
    /// (step, seconds) every `every` steps: the rate over the last [`RATE_WINDOW`] of them times
    /// the ETA, since coarse to fine and growth make later steps slower than the mean so far.
    samples: VecDeque<(u64, f64)>,
}

/// Samples (of ~2% of the run each) the ETA's rate is taken over.
const RATE_WINDOW: usize = 5;

impl Progress {
    pub fn new(first: u64, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {per_sec} ETA {eta} {msg}")
                    .expect("valid template"),
            );
            b.set_position(first);
            b
        });
        Progress {
            bar,
            total,
            every: (total / 50).max(1),
            started: Instant::now(),
            first,
            ema_loss: 0.0,
            ema_psnr: 0.0,
            samples: VecDeque::new(),
        }
    }

    pub fn update(&mut self, s: &StepStats) {
        let a = if self.ema_loss == 0.0 { 1.0 } else { 0.05 };
        self.ema_loss += a * (s.loss - self.ema_loss);
        self.ema_psnr += a * (s.psnr - self.ema_psnr);
        let el = self.started.elapsed().as_secs_f64();
        let rate = (s.step - self.first) as f64 / el.max(1e-9);
        if s.step.is_multiple_of(self.every) {
            self.samples.push_back((s.step, el));
            if self.samples.len() > RATE_WINDOW {
                self.samples.pop_front();
            }
        }
        let recent = match self.samples.front() {
            Some(&(step, t)) if s.step > step && el > t => (s.step - step) as f64 / (el - t),
            _ => rate,
        };
        let eta = (self.total - s.step) as f64 / recent.max(1e-9);
        let mut msg = format!(
            "loss {:.4} psnr {:.2} gaussians {}",
            self.ema_loss, self.ema_psnr, s.num_gaussians
        );
        // Within `splat scan`: the time left for the whole scan.
        if let Some(note) = crate::scan_eta::note(eta) {
            msg = format!("{msg} {note}");
        }
        if let Some(b) = &self.bar {
            b.set_position(s.step);
            if s.step.is_multiple_of(10) {
                b.set_message(msg);
            }
        } else if s.step.is_multiple_of(self.every) || s.step == self.total {
            eprintln!(
                "step {}/{} {rate:.2} it/s ETA {eta:.0} s {msg}",
                s.step, self.total
            );
        }
        if !s.step.is_multiple_of(1000) {
            return;
        }
        if let Some(r) = s.refined {
            self.print(format!(
                "step {}: mcmc: {} relocated, {} added -> {} Gaussians",
                s.step, r.relocated, r.added, s.num_gaussians
            ));
        }
        if let Some(d) = s.densified {
            self.print(format!(
                "step {}: densified: {} cloned, {} split, {} pruned -> {} Gaussians",
                s.step, d.cloned, d.split, d.pruned, s.num_gaussians
            ));
        }
    }

    /// A line above the bar, or on its own without one.
    fn print(&self, line: String) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn on_step(&mut self, event: &StepEvent<'_>) {
        self.update(event.stats);
    }

    fn on_end(&mut self) {
        self.finish();
    }
}
