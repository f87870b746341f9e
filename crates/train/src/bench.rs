//! `splat bench`: time the training step stage by stage at the dataset's initial Gaussians (no
//! densification), estimate each stage's work from what it processed, and compare with the machine's
//! measured FMA peak (roofline thinking: a stage far below its bound is a bug until explained).
//!
//! Work per stage: Gaussians for project (all) and project backward (visible); tile intersections for
//! binning; evaluated (pixel, Gaussian) pairs for the rasterizer (per tile: the Gaussians that survive the
//! backend's tile culling times the tile's pixels, an upper bound since pixels stop early); image values
//! for the loss; parameters for Adam. FLOPs are work times the per-item costs written next to each kernel.

use serde::Serialize;
use splat_core::TileGrid;
use splat_io::dataset::Dataset;
use splat_render::cpu::peak::{self, Peak};
use splat_render::cpu::rasterize::tile_cull;
use splat_render::{project, project_bwd, rasterize_bwd, rasterize_fwd, Backend, Buffers};

use crate::config::TrainConfig;
use crate::trainer::{StageTimes, TrainData, Trainer};
use crate::{adam, loss};

#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub steps: u64,
    pub warmup: u64,
    pub sh_degree: usize,
    pub seed: u64,
    /// Times the step on this scene (a trained one, say) instead of the dataset's initial points.
    pub scene: Option<splat_core::Gaussians<f32>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    pub name: &'static str,
    pub ms_per_step: f64,
    pub share: f64,
    /// What was processed per step, e.g. "1.2e6 pairs".
    pub work: String,
    pub gflop_per_step: f64,
    pub gflops: f64,
    pub fraction_of_peak: f64,
    pub mbytes_per_step: f64,
    pub gbytes_per_second: f64,
    /// The stage's device time per resident step from timestamp queries; null where not measured (the
    /// CPU backends, a device without timestamps).
    pub device_ms: Option<f64>,
    /// The stage's FLOPs and bytes (for bin, plus the sort's) over its device time, against the
    /// device's measured FMA peak and copy bandwidth (null where either is unmeasured).
    pub device_fraction_of_peak: Option<f64>,
    pub device_fraction_of_bandwidth: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub its_per_second: f64,
    pub ms_per_step: f64,
    pub steps: u64,
    pub gaussians: usize,
    pub width: u32,
    pub height: u32,
    pub sh_degree: usize,
    pub backend: String,
    pub peak_isa: &'static str,
    pub peak_threads: usize,
    pub peak_gflops: f64,
    pub peak_memory_bytes: Option<u64>,
    pub stages: Vec<StageRow>,
    /// The same steps as resident blocks on a device (GPU backends), when measured.
    pub resident: Option<ResidentBench>,
    /// Per resident step (null without a resident measurement): compute dispatches, queue
    /// submissions, blocking read-backs, passes of the intersection sort and the bytes they move.
    pub dispatches_per_step: Option<f64>,
    pub submissions_per_step: Option<f64>,
    pub readbacks_per_step: Option<f64>,
    pub sort_passes_per_step: Option<f64>,
    pub sort_bytes_per_step: Option<f64>,
    /// The resident engine's device memory per Gaussian (what scales with the Gaussians: parameters,
    /// moments, statistics, work buffers) and per entry of the intersection list (null without a
    /// resident measurement).
    pub device_bytes_per_gaussian: Option<f64>,
    pub device_bytes_per_intersection: Option<f64>,
    /// The device's measured fp32 FMA peak and copy bandwidth (GPU backends).
    pub device_peak_gflops: Option<f64>,
    pub device_peak_gbytes_per_second: Option<f64>,
}

impl BenchReport {
    /// Copies the resident measurement's counters to the report's top level.
    pub fn set_resident(&mut self, r: ResidentBench) {
        if let Some(c) = &r.counters {
            self.dispatches_per_step = Some(c.dispatches);
            self.submissions_per_step = Some(c.submissions);
            self.readbacks_per_step = Some(c.readbacks);
            self.sort_passes_per_step = Some(c.sort_passes);
            self.sort_bytes_per_step = Some(c.sort_bytes);
        }
        self.device_bytes_per_gaussian = r.memory.as_ref().map(|m| m.bytes_per_gaussian);
        self.device_bytes_per_intersection = r.memory.as_ref().map(|m| m.bytes_per_intersection);
        self.device_peak_gflops = r.device_peak.map(|p| p.gflops);
        self.device_peak_gbytes_per_second = r.device_peak.map(|p| p.gbytes_per_second);
        if let Some(ms) = r.device_ms {
            for (row, ms) in self.stages.iter_mut().zip(ms) {
                row.device_ms = Some(ms);
                let secs = ms / 1e3;
                // On the device the bin stage also moves the sort's bytes.
                let sort_mb = match (row.name, &r.counters) {
                    ("bin", Some(c)) => c.sort_bytes / 1e6,
                    _ => 0.0,
                };
                if let (Some(p), true) = (r.device_peak, secs > 0.0) {
                    row.device_fraction_of_peak = Some(row.gflop_per_step / secs / p.gflops);
                    row.device_fraction_of_bandwidth =
                        Some((row.mbytes_per_step + sort_mb) / 1e3 / secs / p.gbytes_per_second);
                }
            }
        }
        self.resident = Some(r);
    }
}

/// [`crate::resident::EngineCounters`] per measured step.
#[derive(Clone, Debug, Serialize)]
pub struct CountersPerStep {
    pub dispatches: f64,
    pub submissions: f64,
    pub readbacks: f64,
    pub readback_bytes: f64,
    pub sort_passes: f64,
    pub sort_bytes: f64,
}

/// [`crate::resident::EngineMemory`] after the measured steps.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryReport {
    pub gaussians: usize,
    pub gaussian_bytes: u64,
    pub list_entries: u64,
    pub list_bytes: u64,
    pub other_bytes: u64,
    /// gaussian_bytes / gaussians.
    pub bytes_per_gaussian: f64,
    /// list_bytes / list_entries.
    pub bytes_per_intersection: f64,
}

/// Whole steps run as resident blocks ([`crate::resident`]): no per-stage times (one submission runs
/// many steps), the throughput only.
#[derive(Clone, Debug, Serialize)]
pub struct ResidentBench {
    pub engine: String,
    pub steps: u64,
    pub its_per_second: f64,
    pub ms_per_step: f64,
    /// Host time spent recording the steps' device work.
    pub recording_ms_per_step: f64,
    pub counters: Option<CountersPerStep>,
    pub memory: Option<MemoryReport>,
    /// Device ms per step of each stage (in [`StageTimes::NAMES`] order) from timestamp queries;
    /// `None` where the device has none.
    pub device_ms: Option<[f64; 8]>,
    pub device_peak: Option<crate::resident::DevicePeak>,
}

/// Times `opts.steps` steps run as resident blocks on `engine` after `opts.warmup` (a block of their
/// own), same schedule as [`run`]. `None` when the engine cannot run this dataset.
pub fn run_resident(
    ds: &Dataset,
    opts: &BenchOptions,
    backend: Box<dyn Backend + Send>,
    mut engine: Box<dyn crate::resident::ResidentEngine>,
) -> Result<ResidentBench, String> {
    // Where the device has no timestamps this stays off and the timing below is None.
    engine.enable_stage_timing();
    let mut trainer = bench_trainer(ds, opts, backend);
    if let Some(note) = trainer.with_resident(engine)? {
        eprintln!("note: {note}");
    }
    let name = trainer.resident_name().unwrap_or_default().to_string();
    // Blocks end at the warm-up's end and at the last measured step.
    trainer.set_sync_every(opts.warmup.max(1));
    for _ in 0..opts.warmup {
        trainer.step().map_err(|e| e.to_string())?;
    }
    trainer.set_sync_every(opts.warmup + opts.steps);
    let recorded = trainer.resident_recording_seconds();
    let counted = trainer.resident_counters();
    let timed_before = trainer.resident_stage_timing();
    let t = std::time::Instant::now();
    for _ in 0..opts.steps {
        trainer.step().map_err(|e| e.to_string())?;
    }
    let wall = t.elapsed().as_secs_f64();
    let steps = opts.steps.max(1) as f64;
    let counters = counted.zip(trainer.resident_counters()).map(|(a, b)| {
        let per = |x: u64, y: u64| (y - x) as f64 / steps;
        CountersPerStep {
            dispatches: per(a.dispatches, b.dispatches),
            submissions: per(a.submissions, b.submissions),
            readbacks: per(a.readbacks, b.readbacks),
            readback_bytes: per(a.readback_bytes, b.readback_bytes),
            sort_passes: per(a.sort_passes, b.sort_passes),
            sort_bytes: per(a.sort_bytes, b.sort_bytes),
        }
    });
    // Device ms per stage and step over the measured steps.
    let device_ms = timed_before
        .zip(trainer.resident_stage_timing())
        .filter(|(a, b)| b.steps > a.steps)
        .map(|(a, b)| {
            let n = (b.steps - a.steps) as f64;
            let mut ms = [0.0; 8];
            for (k, m) in ms.iter_mut().enumerate() {
                *m = (b.seconds[k] - a.seconds[k]) / n * 1e3;
            }
            ms
        });
    let memory = trainer.resident_memory().map(|m| MemoryReport {
        gaussians: m.gaussians,
        gaussian_bytes: m.gaussian_bytes,
        list_entries: m.list_entries,
        list_bytes: m.list_bytes,
        other_bytes: m.other_bytes,
        bytes_per_gaussian: m.gaussian_bytes as f64 / m.gaussians.max(1) as f64,
        bytes_per_intersection: m.list_bytes as f64 / m.list_entries.max(1) as f64,
    });
    let device_peak = match trainer.resident_measure_peak() {
        Some(Ok(p)) => Some(p),
        Some(Err(why)) => {
            eprintln!("note: the device's peak was not measured ({why})");
            None
        }
        None => None,
    };
    Ok(ResidentBench {
        counters,
        memory,
        device_ms,
        device_peak,
        engine: name,
        steps: opts.steps,
        its_per_second: steps / wall,
        ms_per_step: wall / steps * 1e3,
        recording_ms_per_step: (trainer.resident_recording_seconds() - recorded) / steps * 1e3,
    })
}

/// Per-step work counters.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    gaussians: f64,
    visible: f64,
    intersections: f64,
    pairs: f64,
    gathered: f64,
    pixels: f64,
}

fn count_work(b: &Buffers, width: u32, height: u32, culls: bool) -> Work {
    let grid = TileGrid::new(width, height);
    let p = &b.projected;
    let mut pairs = 0.0;
    let mut gathered = 0.0;
    for tile in 0..grid.num_tiles() {
        let [s, e] = b.bins.tile_ranges[tile];
        let (x0, y0, x1, y1) = grid.tile_pixels(tile);
        let n = b.bins.gaussian_ids[s as usize..e as usize]
            .iter()
            .filter(|&&id| {
                let i = id as usize;
                !culls
                    || !tile_cull(
                        p.means2d[i],
                        p.conics[i],
                        p.opacities[i],
                        1.0 / 255.0,
                        x0,
                        y0,
                        x1,
                        y1,
                    )
            })
            .count() as f64;
        gathered += n;
        pairs += n * ((x1 - x0) * (y1 - y0)) as f64;
    }
    Work {
        gaussians: p.len() as f64,
        visible: p.num_visible() as f64,
        intersections: b.bins.num_intersections() as f64,
        pairs,
        gathered,
        pixels: (width * height) as f64,
    }
}

/// Peak resident memory of this process (Linux), in bytes.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The benchmark's trainer: the dataset's initial Gaussians (or `opts.scene`) at SH degree
/// `opts.sh_degree` from the start, no densification.
fn bench_trainer<'a>(
    ds: &'a Dataset,
    opts: &BenchOptions,
    backend: Box<dyn Backend + Send>,
) -> Trainer<'a> {
    let cfg = TrainConfig {
        iterations: opts.warmup + opts.steps + 1,
        seed: opts.seed,
        sh_degree: opts.sh_degree,
        sh_degree_interval: 0,
        densify_until: 0,
        antialiased: opts.scene.as_ref().is_some_and(|s| s.antialiased),
        ..TrainConfig::default()
    };
    let mut trainer = match &opts.scene {
        Some(scene) => {
            let state = crate::state::TrainState::new(scene.with_sh_degree(opts.sh_degree));
            Trainer::resume(cfg, TrainData::of(ds), state, backend)
        }
        None => Trainer::new(cfg, TrainData::of(ds), &ds.points, backend),
    };
    trainer.state.active_sh_degree = opts.sh_degree;
    trainer
}

/// Wall time per stage summed over the measured steps (in [`StageTimes`] order), the work they did,
/// and their wall time.
struct Measured {
    stage_seconds: [f64; 8],
    work: Work,
    wall: f64,
}

/// Runs the warm-up and the measured steps.
fn measure(trainer: &mut Trainer<'_>, opts: &BenchOptions, culls: bool) -> Measured {
    let mut m = Measured {
        stage_seconds: [0.0; 8],
        work: Work::default(),
        wall: 0.0,
    };
    for i in 0..opts.warmup + opts.steps {
        let t = std::time::Instant::now();
        let stats = trainer.step().expect("benchmark steps are finite");
        let dt = t.elapsed().as_secs_f64();
        if i < opts.warmup {
            continue;
        }
        m.wall += dt;
        for (k, d) in stats.times.as_array().iter().enumerate() {
            m.stage_seconds[k] += d.as_secs_f64();
        }
        let cam = &trainer.views[0].camera;
        let w = count_work(trainer.buffers(), cam.width, cam.height, culls);
        let work = &mut m.work;
        work.gaussians += w.gaussians;
        work.visible += w.visible;
        work.intersections += w.intersections;
        work.pairs += w.pairs;
        work.gathered += w.gathered;
        work.pixels += w.pixels;
    }
    m
}

/// Runs the benchmark on the dataset's training views.
pub fn run(ds: &Dataset, opts: &BenchOptions, backend: Box<dyn Backend + Send>) -> BenchReport {
    let culls = backend.name() == "cpu";
    let mut trainer = bench_trainer(ds, opts, backend);
    let backend_name = trainer.backend_name().to_string();
    let n_params: usize = trainer.state.adam.iter().map(|a| a.m.len()).sum();
    let measured = measure(&mut trainer, opts, culls);
    let peak: Peak = peak::measure();
    let steps = opts.steps.max(1) as f64;
    let stages = stage_rows(&measured, steps, n_params, &peak);
    let cam = &trainer.views[0].camera;
    BenchReport {
        its_per_second: steps / measured.wall,
        ms_per_step: measured.wall / steps * 1e3,
        steps: opts.steps,
        gaussians: trainer.state.len(),
        width: cam.width,
        height: cam.height,
        sh_degree: opts.sh_degree,
        backend: backend_name,
        peak_isa: peak.isa,
        peak_threads: peak.threads,
        peak_gflops: peak.gflops,
        peak_memory_bytes: peak_memory_bytes(),
        stages,
        resident: None,
        dispatches_per_step: None,
        submissions_per_step: None,
        readbacks_per_step: None,
        sort_passes_per_step: None,
        sort_bytes_per_step: None,
        device_bytes_per_gaussian: None,
        device_bytes_per_intersection: None,
        device_peak_gflops: None,
        device_peak_gbytes_per_second: None,
    }
}

/// Each stage's time per step against its FLOPs and bytes (from per-item costs written next to each
/// kernel) and the measured peak.
fn stage_rows(m: &Measured, steps: f64, n_params: usize, peak: &Peak) -> Vec<StageRow> {
    let per = |x: f64| x / steps;
    let work = &m.work;
    let (g, vis, inter, pairs, gathered, px) = (
        per(work.gaussians),
        per(work.visible),
        per(work.intersections),
        per(work.pairs),
        per(work.gathered),
        per(work.pixels),
    );
    let values = px * 3.0;
    // (work description, FLOPs per step, bytes per step) for each stage in StageTimes order.
    let rows: [(String, f64, f64); 8] = [
        (
            format!("{g:.0} Gaussians"),
            g * project::FLOPS_PER_GAUSSIAN,
            g * 312.0,
        ),
        (format!("{inter:.0} intersections"), 0.0, inter * 16.0),
        (
            format!("{pairs:.3e} pairs"),
            pairs * rasterize_fwd::FLOPS_PER_PAIR,
            gathered * 48.0 + px * 20.0,
        ),
        (
            format!("{values:.0} values"),
            values * loss::FLOPS_PER_VALUE,
            values * 4.0 * 30.0,
        ),
        (
            format!("{pairs:.3e} pairs"),
            pairs * rasterize_bwd::FLOPS_PER_PAIR,
            gathered * 48.0 + inter * 36.0 + px * 32.0,
        ),
        (
            format!("{vis:.0} visible"),
            vis * project_bwd::FLOPS_PER_GAUSSIAN,
            g * 127.0 * 4.0,
        ),
        // A bench gathers no densification statistics (`densify_until` 0): the stage is the resident
        // step's commit alone, which moves nothing per Gaussian.
        ("no statistics".to_string(), 0.0, 0.0),
        (
            format!("{n_params} params"),
            n_params as f64 * adam::FLOPS_PER_PARAM,
            n_params as f64 * 28.0,
        ),
    ];
    let stage_sum: f64 = m.stage_seconds.iter().sum::<f64>() / steps;
    StageTimes::NAMES
        .iter()
        .zip(rows)
        .zip(m.stage_seconds)
        .map(|((&name, (work, flops, bytes)), t)| {
            let secs = t / steps;
            let gflops = if secs > 0.0 { flops / secs / 1e9 } else { 0.0 };
            StageRow {
                name,
                ms_per_step: secs * 1e3,
                share: secs / stage_sum.max(1e-12),
                work,
                gflop_per_step: flops / 1e9,
                gflops,
                fraction_of_peak: gflops / peak.gflops,
                mbytes_per_step: bytes / 1e6,
                gbytes_per_second: if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
                device_ms: None,
                device_fraction_of_peak: None,
                device_fraction_of_bandwidth: None,
            }
        })
        .collect()
}

/// The resident step's device time per stage against the device's measured ceilings.
fn device_table(r: &BenchReport, res: &ResidentBench) -> String {
    let mut s = String::new();
    if let Some(p) = &res.device_peak {
        s += &format!(
            "device peak (measured): {:.1} GFLOP/s fp32 FMA, {:.1} GB/s copy ({})\n",
            p.gflops,
            p.gbytes_per_second,
            if p.timestamps {
                "timestamp queries"
            } else {
                "host clock: a lower bound"
            }
        );
    }
    if res.device_ms.is_none() {
        s += "device time per stage: not measured (the device has no timestamp queries)\n";
        return s;
    }
    s += &format!(
        "{:<19} {:>10} {:>9} {:>9}\n",
        "resident stage", "device ms", "% peak", "% bw"
    );
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |f| format!("{:.2}%", f * 100.0));
    for row in &r.stages {
        s += &format!(
            "{:<19} {:>10.3} {:>9} {:>9}\n",
            row.name,
            row.device_ms.unwrap_or(0.0),
            pct(row.device_fraction_of_peak),
            pct(row.device_fraction_of_bandwidth)
        );
    }
    s
}

/// The report as a text table.
pub fn format_table(r: &BenchReport) -> String {
    let mut s = format!(
        "{} Gaussians, {} x {}, SH degree {}, {} backend, {} steps\n",
        r.gaussians, r.width, r.height, r.sh_degree, r.backend, r.steps
    );
    s += &format!(
        "{:<19} {:>9} {:>6} {:>22} {:>9} {:>8} {:>7} {:>8}\n",
        "stage", "ms/step", "share", "work", "GFLOP", "GFLOP/s", "% peak", "GB/s"
    );
    for row in &r.stages {
        s += &format!(
            "{:<19} {:>9.2} {:>5.1}% {:>22} {:>9.4} {:>8.2} {:>6.2}% {:>8.2}\n",
            row.name,
            row.ms_per_step,
            row.share * 100.0,
            row.work,
            row.gflop_per_step,
            row.gflops,
            row.fraction_of_peak * 100.0,
            row.gbytes_per_second
        );
    }
    s += &format!(
        "step: {:.2} ms = {:.2} it/s; peak memory {}; measured peak {:.1} GFLOP/s ({}, {} threads)\n",
        r.ms_per_step,
        r.its_per_second,
        r.peak_memory_bytes
            .map(|b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64))
            .unwrap_or_else(|| "unknown".into()),
        r.peak_gflops,
        r.peak_isa,
        r.peak_threads
    );
    if r.backend.starts_with("gpu") {
        s += "note: \"% peak\" is against this machine's CPU FMA peak; the render stages ran on the GPU, \
              the loss and Adam on the CPU\n";
    }
    if let Some(res) = &r.resident {
        s += &format!(
            "resident blocks ({}): {} steps, {:.2} ms = {:.2} it/s (state, images and cameras on the \
             device; loss and Adam there too); host recording {:.2} ms per step\n",
            res.engine, res.steps, res.ms_per_step, res.its_per_second, res.recording_ms_per_step
        );
        if let Some(c) = &res.counters {
            s += &format!(
                "per resident step: {:.0} dispatches, {:.2} submissions, {:.2} read-backs ({:.0} bytes), \
                 {:.0} sort passes moving {:.1} MB\n",
                c.dispatches,
                c.submissions,
                c.readbacks,
                c.readback_bytes,
                c.sort_passes,
                c.sort_bytes / 1e6
            );
        }
        if let Some(m) = &res.memory {
            s += &format!(
                "device memory: {:.0} bytes per Gaussian ({:.1} MB for {}), {:.0} per intersection \
                 ({:.1} MB for a list of {}), {:.1} MB images and per-pixel buffers\n",
                m.bytes_per_gaussian,
                m.gaussian_bytes as f64 / 1e6,
                m.gaussians,
                m.bytes_per_intersection,
                m.list_bytes as f64 / 1e6,
                m.list_entries,
                m.other_bytes as f64 / 1e6
            );
        }
        s += &device_table(r, res);
    }
    s
}
