//! What watches a run (`run::Observer`): every step is shown once, in order, to every observer, with
//! `done` on the last and `on_end` once; an observer that wants the state gets it current (on resident
//! blocks the device's state is read back first), and nobody asking means no read-back but at the
//! checkpoints and the end. The resident engine here is a stand-in that counts its read-backs and
//! marks its state with the step it ran last (in `max_radii[0]`), so a watcher can tell a current
//! state from a stale one.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions, View};
use splat_render::{Backend, CpuBackend};
use splat_train::resident::{BlockConstants, PlannedStep, ResidentEngine, StepOutcome};
use splat_train::run::{self, Observer, RunConfig, StepEvent, TrainRun};
use splat_train::{TrainConfig, TrainState};

/// Runs blocks by advancing its state's step; counts `store` calls.
struct Stand {
    state: TrainState,
    stores: Arc<AtomicUsize>,
}

impl ResidentEngine for Stand {
    fn name(&self) -> &str {
        "stand-in"
    }
    fn unsupported(&self) -> Option<String> {
        None
    }
    fn load(&mut self, state: &TrainState) -> Result<(), String> {
        self.state = state.clone();
        Ok(())
    }
    fn run_block(
        &mut self,
        _: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(), String> {
        for s in steps {
            out.push(StepOutcome {
                step: s.step,
                loss: 0.1,
                psnr: 20.0,
                num_gaussians: self.state.len(),
                ..Default::default()
            });
            self.state.step = s.step;
            self.state.max_radii[0] = s.step as f32;
        }
        Ok(())
    }
    fn store(&mut self, state: &mut TrainState) -> Result<(), String> {
        self.stores.fetch_add(1, Ordering::SeqCst);
        *state = self.state.clone();
        Ok(())
    }
}

/// Records what it saw; wants the state at every block end when `reads_state`.
#[derive(Default)]
struct Watcher {
    reads_state: bool,
    /// (step, the state's step, the state's mark, block end, done) per event.
    seen: Vec<(u64, u64, u64, bool, bool)>,
    ends: usize,
}

impl Observer for &mut Watcher {
    fn wants_state(&self, event: &StepEvent<'_>) -> bool {
        self.reads_state && event.block_end
    }
    fn on_step(&mut self, e: &StepEvent<'_>) {
        let mark = e.state.max_radii.first().map_or(0, |&m| m as u64);
        let s = (e.stats.step, e.state.step, mark, e.block_end, e.done);
        self.seen.push(s);
    }
    fn on_end(&mut self) {
        self.ends += 1;
    }
}

fn demo(dir: &Path) -> (Dataset, LoadOptions) {
    let opts = DemoOptions {
        width: 32,
        height: 24,
        views: 4,
        points: 300,
        seed: 3,
        ..Default::default()
    };
    write_demo_dataset(dir, &opts).unwrap();
    let load = LoadOptions::default();
    (dataset::load(dir, &load).unwrap(), load)
}

fn config(data: &Path, load: &LoadOptions, iterations: u64) -> RunConfig {
    RunConfig {
        data: data.to_path_buf(),
        load: load.clone(),
        train: TrainConfig {
            iterations,
            ..TrainConfig::default()
        },
        checkpoint_every: 20,
        backend: None,
    }
}

fn cpu() -> Box<dyn Backend + Send> {
    Box::new(CpuBackend::new())
}

/// A resident run of 50 steps with `watcher`; the read-backs it took.
fn resident_run(dir: &Path, cfg: &RunConfig, ds: &Dataset, watcher: &mut Watcher) -> usize {
    let stores = Arc::new(AtomicUsize::new(0));
    let counter = stores.clone();
    let make = move |_: &[View]| -> Box<dyn ResidentEngine> {
        Box::new(Stand {
            state: TrainState::new(splat_core::Gaussians::new(0)),
            stores: counter.clone(),
        })
    };
    let make: &dyn Fn(&[View]) -> Box<dyn ResidentEngine> = &make;
    TrainRun::new(dir, cfg, ds, &cpu)
        .resident(Some(make))
        .observe(watcher)
        .run()
        .unwrap()
        .unwrap();
    stores.load(Ordering::SeqCst)
}

#[test]
fn every_step_is_shown_once_in_order_and_the_end_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data);
    let cfg = config(&data, &load, 30);
    let mut w = Watcher::default();
    TrainRun::new(&tmp.path().join("out"), &cfg, &ds, &cpu)
        .observe(&mut w)
        .run()
        .unwrap()
        .unwrap();
    let steps: Vec<u64> = w.seen.iter().map(|s| s.0).collect();
    assert_eq!(steps, (1..=30).collect::<Vec<_>>());
    assert_eq!(w.ends, 1);
    // On the host the state is always current and every step ends a "block".
    assert!(w.seen.iter().all(|&(s, st, _, end, _)| s == st && end));
    let done: Vec<bool> = w.seen.iter().map(|s| s.4).collect();
    assert!(done[..29].iter().all(|d| !d) && done[29]);
}

#[test]
fn the_state_is_read_back_only_for_those_who_read_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data);
    let cfg = config(&data, &load, 50);

    // Nobody reads the state: read back at the checkpoints (20, 40) and once at the end.
    let mut quiet = Watcher::default();
    let stores = resident_run(&tmp.path().join("quiet"), &cfg, &ds, &mut quiet);
    assert_eq!(stores, 3);
    let block_ends: Vec<u64> = quiet.seen.iter().filter(|s| s.3).map(|s| s.0).collect();
    assert!(block_ends.contains(&20) && block_ends.contains(&40) && block_ends.contains(&50));
    let (ckpt, _) = run::read_checkpoint(&tmp.path().join("quiet")).unwrap();
    assert_eq!(ckpt.step, 50, "the final checkpoint");

    // A reader gets the device's state at every block end (and the end needs no more read-back).
    let mut reader = Watcher {
        reads_state: true,
        ..Default::default()
    };
    let stores = resident_run(&tmp.path().join("reader"), &cfg, &ds, &mut reader);
    let ends: Vec<_> = reader.seen.iter().filter(|s| s.3).collect();
    assert!(
        ends.iter().all(|&&(s, _, mark, _, _)| s == mark),
        "{ends:?}"
    );
    assert_eq!(stores, ends.len());
    assert_eq!(reader.ends, 1);
    // Inside a block the host's copy lags: the steps were not read back one by one.
    assert!(reader
        .seen
        .iter()
        .any(|&(s, _, mark, end, _)| !end && mark < s));
    // Without a reader the last block's end is not read back for the observers (the outputs read it).
    let last = quiet.seen.last().unwrap();
    assert!(last.3 && last.2 < last.0, "{last:?}");
}
