//! The steady-state training step allocates nothing: a counting global allocator watches 30 steps after a
//! warm-up (no densification, as between densifications), on every SIMD level of this machine, and
//! with a batch of two views and the densification statistics on, and with masks and a bilateral grid
//! per photo.
// A global allocator is an unsafe trait; this one only counts and forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, LoadOptions};
use splat_render::cpu::SimdLevel;
use splat_render::CpuBackend;
use splat_train::{TrainConfig, TrainData, Trainer};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_state_steps_do_not_allocate() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 64,
        height: 48,
        views: 6,
        points: 2000,
        seed: 4,
        ..Default::default()
    };
    write_demo_dataset(tmp.path(), &opts).unwrap();
    let ds = dataset::load(tmp.path(), &LoadOptions::default()).unwrap();
    // The same room with masks (a moving object), trained with a bilateral grid per photo.
    let masked_dir = tmp.path().join("masked");
    let masked_opts = DemoOptions {
        variant: splat_io::dataset::demo_variants::DemoVariant::Mover,
        ..opts
    };
    write_demo_dataset(&masked_dir, &masked_opts).unwrap();
    let masked = dataset::load(&masked_dir, &LoadOptions::default()).unwrap();
    assert!(masked.train.iter().any(|v| v.mask.is_some()));
    // Every SIMD level one view per step; then a batch of 2 with densification statistics on (the
    // batch sums and the statistics buffers) but no densification.
    let cases = SimdLevel::available()
        .into_iter()
        .map(|l| (l, 1, 0, false))
        .chain([(SimdLevel::detect(), 2, 50_000, false)])
        .chain([
            (SimdLevel::detect(), 1, 0, true),
            (SimdLevel::detect(), 2, 0, true),
        ]);
    for (level, batch, densify_until, real) in cases {
        let cfg = TrainConfig {
            iterations: 1000,
            sh_degree_interval: 0,
            densify_from: 40_000,
            densify_until,
            batch,
            appearance: if real {
                splat_train::appearance::AppearanceKind::BilateralGrid
            } else {
                Default::default()
            },
            ..TrainConfig::default()
        };
        let ds = if real { &masked } else { &ds };
        let mut t = Trainer::new(
            cfg,
            TrainData::of(ds),
            &ds.points,
            Box::new(CpuBackend::with_simd(level)),
        );
        t.state.active_sh_degree = 3;
        // Warm-up: every view several times (buffers reach their largest sizes: the rasterizer's grow with
        // the intersections, which still rise over the first tens of steps).
        for _ in 0..60 {
            t.step().unwrap();
        }
        // As in `run::TrainRun::run`: the loop runs on a pool thread.
        rayon::scope(|_| {
            ALLOCATIONS.store(0, Ordering::SeqCst);
            COUNTING.store(true, Ordering::SeqCst);
            for _ in 0..30 {
                t.step().unwrap();
            }
            COUNTING.store(false, Ordering::SeqCst);
        });
        let n = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(
            n, 0,
            "{level:?}, batch {batch}, masks and grid {real}: {n} allocations in 30 steady-state steps"
        );
    }
}
