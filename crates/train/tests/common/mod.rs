//! Helpers shared by the training tests.
#![allow(dead_code)]

use std::path::Path;

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_render::{Backend, CpuBackend};

/// Writes the demo capture `opts` into `dir` and loads it with every 8th view held out.
pub fn load_demo(dir: &Path, opts: &DemoOptions) -> (Dataset, LoadOptions) {
    write_demo_dataset(dir, opts).unwrap();
    let load = LoadOptions {
        eval: true,
        ..Default::default()
    };
    (dataset::load(dir, &load).unwrap(), load)
}

/// The CPU backend, boxed as the trainer takes it.
pub fn cpu() -> Box<dyn Backend + Send> {
    Box::new(CpuBackend::new())
}
