//! A resident engine whose device holds fewer Gaussians than a run might grow to: `with_resident`
//! refuses a state or a budget over the device's limit (naming it and the flag), and without a budget it
//! sets the device's limit as the budget, with a note, so densification cannot outgrow the device in the
//! middle of a run. The engine is a stand-in: only its limit is consulted before training.

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_render::CpuBackend;
use splat_train::resident::{BlockConstants, PlannedStep, ResidentEngine, StepOutcome};
use splat_train::{TrainConfig, TrainData, TrainState, Trainer};

/// Holds at most `max` Gaussians; never runs a step.
struct Small {
    max: usize,
}

impl ResidentEngine for Small {
    fn name(&self) -> &str {
        "small device"
    }
    fn unsupported(&self) -> Option<String> {
        None
    }
    fn max_gaussians(&self) -> Option<usize> {
        Some(self.max)
    }
    fn load(&mut self, _: &TrainState) -> Result<(), String> {
        Err("not used".into())
    }
    fn run_block(
        &mut self,
        _: &BlockConstants,
        _: &[PlannedStep],
        _: &mut Vec<StepOutcome>,
    ) -> Result<(), String> {
        Err("not used".into())
    }
    fn store(&mut self, _: &mut TrainState) -> Result<(), String> {
        Err("not used".into())
    }
}

fn demo(dir: &std::path::Path) -> Dataset {
    let opts = DemoOptions {
        width: 32,
        height: 24,
        views: 3,
        points: 300,
        seed: 2,
        ..Default::default()
    };
    write_demo_dataset(dir, &opts).unwrap();
    dataset::load(dir, &LoadOptions::default()).unwrap()
}

fn trainer(ds: &Dataset, max_gaussians: Option<usize>) -> Trainer<'_> {
    let cfg = TrainConfig {
        iterations: 10,
        max_gaussians,
        ..TrainConfig::default()
    };
    Trainer::new(
        cfg,
        TrainData::of(ds),
        &ds.points,
        Box::new(CpuBackend::new()),
    )
}

#[test]
fn the_device_limit_bounds_the_run_before_training() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());

    // No budget: the device's limit becomes the budget, with a note.
    let mut t = trainer(&ds, None);
    assert_eq!(t.state.len(), 300);
    let note = t.with_resident(Box::new(Small { max: 1000 })).unwrap();
    assert!(note
        .unwrap()
        .contains("densification stops at 1000 Gaussians"));
    assert_eq!(t.cfg.max_gaussians, Some(1000));

    // A budget within the limit is kept, no note.
    let mut t = trainer(&ds, Some(800));
    assert_eq!(
        t.with_resident(Box::new(Small { max: 1000 })).unwrap(),
        None
    );
    assert_eq!(t.cfg.max_gaussians, Some(800));

    // A budget over it is refused, naming the flag and the limit.
    let mut t = trainer(&ds, Some(5000));
    let err = t.with_resident(Box::new(Small { max: 1000 })).unwrap_err();
    assert!(err.contains("--max-gaussians 1000 or fewer"), "{err}");
    assert_eq!(t.cfg.max_gaussians, Some(5000));

    // A state already over it is refused.
    let mut t = trainer(&ds, None);
    let err = t.with_resident(Box::new(Small { max: 200 })).unwrap_err();
    assert!(err.contains("300 Gaussians are more than the 200"), "{err}");
    assert_eq!(t.cfg.max_gaussians, None);
}
