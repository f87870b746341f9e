//! Batched and data-parallel training without MPI: K replicas of the trainer run in K threads of
//! this process, joined by an in-memory collective (sums and maxima in rank order, behind a
//! barrier). They must stay identical to each other, and with K = 2 and a batch of 2 equal the
//! single-process run bit for bit (see `crates/cli/tests/mpi_parity.rs` for the reason); with K = 4
//! and a batch of 4 the reduction order differs and the results agree to rounding.

use std::path::Path;
use std::sync::{Arc, Barrier, Mutex};

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_render::CpuBackend;
use splat_train::parallel::{state_checksum, Collective};
use splat_train::{TrainConfig, TrainData, Trainer};

/// Contributions of every rank, summed (or maxed) in rank order after all arrived.
struct Shared {
    barrier: Barrier,
    slots: Mutex<Vec<Vec<f64>>>,
}

struct InProcess {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

impl InProcess {
    fn exchange(&mut self, mine: Vec<f64>, combine: fn(f64, f64) -> f64) -> Vec<f64> {
        self.shared.slots.lock().unwrap()[self.rank] = mine;
        self.shared.barrier.wait();
        let out = {
            let slots = self.shared.slots.lock().unwrap();
            let mut acc = slots[0].clone();
            for s in &slots[1..] {
                for (a, b) in acc.iter_mut().zip(s) {
                    *a = combine(*a, *b);
                }
            }
            acc
        };
        self.shared.barrier.wait();
        out
    }
}

impl Collective for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn sum_f32(&mut self, data: &mut [f32]) {
        // f32 sums in f64 would not round like MPI's f32 sums: add as f32.
        let out = self.exchange(data.iter().map(|&v| v as f64).collect(), |a, b| {
            (a as f32 + b as f32) as f64
        });
        for (d, o) in data.iter_mut().zip(out) {
            *d = o as f32;
        }
    }
    fn sum_f64(&mut self, data: &mut [f64]) {
        let out = self.exchange(data.to_vec(), |a, b| a + b);
        data.copy_from_slice(&out);
    }
    fn max_f32(&mut self, data: &mut [f32]) {
        let out = self.exchange(data.iter().map(|&v| v as f64).collect(), f64::max);
        for (d, o) in data.iter_mut().zip(out) {
            *d = o as f32;
        }
    }
    fn gather_u64(&mut self, value: u64, out: &mut Vec<u64>) {
        // u64 through f64 would lose bits: gather the two halves.
        let halves = self.exchange_gather(value);
        out.clear();
        out.extend(halves);
    }
}

impl InProcess {
    fn exchange_gather(&mut self, value: u64) -> Vec<u64> {
        let mut mine = vec![0.0; 2 * self.size];
        mine[2 * self.rank] = (value >> 32) as f64;
        mine[2 * self.rank + 1] = (value & 0xffff_ffff) as f64;
        let all = self.exchange(mine, |a, b| a + b);
        (0..self.size)
            .map(|r| ((all[2 * r] as u64) << 32) | all[2 * r + 1] as u64)
            .collect()
    }
}

fn dataset(dir: &Path) -> Dataset {
    write_demo_dataset(
        dir,
        &DemoOptions {
            width: 40,
            height: 30,
            views: 12,
            points: 400,
            seed: 5,
            ..Default::default()
        },
    )
    .unwrap();
    dataset::load(dir, &LoadOptions::default()).unwrap()
}

fn config(batch: usize) -> TrainConfig {
    TrainConfig {
        iterations: 240,
        seed: 9,
        batch,
        sh_degree_interval: 50,
        densify_from: 40,
        densify_interval: 40,
        opacity_reset_interval: 160,
        ..TrainConfig::default()
    }
}

/// Trains with `ranks` replicas; returns each replica's final state checksum and means.
fn train(ds: &Dataset, batch: usize, ranks: usize) -> Vec<(u64, Vec<[f32; 3]>)> {
    train_with(ds, batch, ranks, |_| {})
}

fn train_with(
    ds: &Dataset,
    batch: usize,
    ranks: usize,
    tweak: fn(&mut TrainConfig),
) -> Vec<(u64, Vec<[f32; 3]>)> {
    let shared = Arc::new(Shared {
        barrier: Barrier::new(ranks),
        slots: Mutex::new(vec![Vec::new(); ranks]),
    });
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let shared = shared.clone();
                s.spawn(move || {
                    let mut cfg = config(batch);
                    tweak(&mut cfg);
                    let mut t = Trainer::new(
                        cfg,
                        TrainData::of(ds),
                        &ds.points,
                        Box::new(CpuBackend::new()),
                    );
                    if ranks > 1 {
                        t = t.with_collective(Box::new(InProcess {
                            rank,
                            size: ranks,
                            shared,
                        }));
                    }
                    while !t.done() {
                        t.step().unwrap();
                    }
                    (state_checksum(&t.state), t.state.gaussians.means.clone())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn two_replicas_equal_one_process_with_a_batch_of_two() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let single = train(&ds, 2, 1);
    let pair = train(&ds, 2, 2);
    assert_eq!(pair[0].0, pair[1].0, "replicas drifted");
    assert_eq!(pair[0].0, single[0].0, "2 ranks differ from 1 process");
    // Batching changed the run: it is not the batch-1 result.
    let unbatched = train(&ds, 1, 1);
    assert_ne!(unbatched[0].0, single[0].0);
    assert_eq!(
        config(2).per_step().iterations,
        120,
        "a batch of 2 takes half the steps"
    );
}

#[test]
fn four_replicas_stay_identical_and_match_to_rounding() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let single = train(&ds, 4, 1);
    let four = train(&ds, 4, 4);
    for r in &four[1..] {
        assert_eq!(r.0, four[0].0, "replicas drifted");
    }
    // Different summation order, same densification decisions here: same count, close values.
    let (a, b) = (&single[0].1, &four[0].1);
    assert_eq!(a.len(), b.len());
    let worst = a
        .iter()
        .zip(b)
        .flat_map(|(p, q)| p.iter().zip(q).map(|(x, y)| (x - y).abs()))
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-3, "largest difference of a mean {worst}");
}

#[test]
fn visible_only_adam_takes_the_union_of_what_every_rank_saw() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let visible = |c: &mut TrainConfig| c.visible_adam = true;
    let single = train_with(&ds, 2, 1, visible);
    let pair = train_with(&ds, 2, 2, visible);
    assert_eq!(pair[0].0, pair[1].0, "replicas drifted");
    assert_eq!(pair[0].0, single[0].0, "2 ranks differ from 1 process");
    // The mask changed the run: some Gaussian was outside a step's views.
    assert_ne!(train(&ds, 2, 1)[0].0, single[0].0);
}

#[test]
fn appearance_models_see_every_rank_s_views() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let affine = |c: &mut TrainConfig| {
        c.appearance = splat_train::appearance::AppearanceKind::Affine;
    };
    let single = train_with(&ds, 2, 1, affine);
    let pair = train_with(&ds, 2, 2, affine);
    assert_eq!(pair[0].0, pair[1].0, "replicas drifted");
    assert_eq!(pair[0].0, single[0].0, "2 ranks differ from 1 process");
    assert_ne!(train(&ds, 2, 1)[0].0, single[0].0);
}

#[test]
fn pose_corrections_see_every_rank_s_views() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let poses = |c: &mut TrainConfig| {
        c.pose_opt = true;
        c.pose_opt_start = 0;
    };
    let single = train_with(&ds, 2, 1, poses);
    let pair = train_with(&ds, 2, 2, poses);
    assert_eq!(pair[0].0, pair[1].0, "replicas drifted");
    assert_eq!(pair[0].0, single[0].0, "2 ranks differ from 1 process");
    assert_ne!(train(&ds, 2, 1)[0].0, single[0].0);
}
