//! `splat`: the command-line interface. Library crates return typed errors; this binary turns them into
//! one clear line on stderr and a non-zero exit code.
//!
//! Each command is one `*_cmd` file; what several commands share lives in the other modules, which
//! no command file bypasses by importing another command (but `scan`, whose stages are `prepare`
//! and `train` called as functions): dataset arguments and loading
//! ([`dataset_args`]), `--backend` ([`backend_args`]), the strategy flags ([`strategy_args`]), value
//! parsers ([`parse`]), scene files ([`scene_files`]), training progress ([`progress`]) and the
//! viewer's side of other commands ([`viewer_link`]).

mod backend_args;
mod bench_cmd;
mod convert_cmd;
mod dataset_args;
mod demo_cmd;
mod eval_cmd;
mod invocation;
#[cfg(feature = "mpi")]
mod mpi_collective;
mod parse;
mod prepare_cmd;
mod progress;
mod render_cmd;
mod scan_cmd;
mod scan_eta;
mod scene_files;
mod scene_page;
mod strategy_args;
mod train_cmd;
mod view_cmd;
mod viewer_link;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "splat",
    version,
    about = "3D Gaussian Splatting: render, train, evaluate and export splat scenes",
    long_about = "3D Gaussian Splatting in Rust.\n\n\
        Scenes are written as the standard INRIA PLY that every splat viewer opens, and read and written \
        in every format splats are shared in (compressed PLY, .splat, SPZ, SOG, glTF/GLB: see `splat convert`). \
        Run `splat <command> --help` for the options of each command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a small ray-traced capture, train on it, and report the test PSNR (no download needed).
    Demo(demo_cmd::DemoArgs),
    /// Photos or a video to a posed COLMAP dataset (runs COLMAP, and ffmpeg for a video).
    ///
    /// Runs structure from motion with COLMAP on a folder of photos or a video and writes a dataset
    /// `splat train` reads: DATASET/images, DATASET/sparse/0, and images_2, images_4, images_8 (1/2,
    /// 1/4, 1/8 size: `splat train DATASET --images images_4`).
    ///
    /// A video is sampled by ffmpeg (about 150 frames by default) and the blurriest frame of each run
    /// of five is dropped. COLMAP and ffmpeg run as child processes on the CPU (Debian: `apt-get
    /// install colmap ffmpeg`); their output is kept in DATASET/prepare.log and their work in
    /// DATASET/colmap/. Running it again on the same DATASET starts over; a folder holding files
    /// splat prepare did not write is refused.
    Prepare(prepare_cmd::PrepareArgs),
    /// A video or photos to a page you can send, in one command: prepare, train, scene.html.
    ///
    /// Runs `splat prepare` into DIR/dataset, `splat train` (the balanced preset unless --preset says
    /// otherwise) into DIR/train, and writes DIR/scene.html: the scene and the viewer in one file that
    /// opens by double-click, with no server and no network. Every prepare option and every train
    /// option passes through. Run it again on the same DIR after a Ctrl-C or a kill: it goes on from
    /// the stage (and, in training, the checkpoint) it reached. A finished DIR is not overwritten
    /// without --force.
    Scan(Box<scan_cmd::ScanArgs>),
    /// Train a scene from posed photos (COLMAP, NeRF-synthetic, transforms.json, LLFF).
    Train(Box<train_cmd::TrainArgs>),
    /// Time the training step stage by stage against this machine's measured peak.
    Bench(bench_cmd::BenchArgs),
    /// PSNR and SSIM of a trained scene on a dataset's test views.
    Eval(eval_cmd::EvalArgs),
    /// Render a PLY scene (or the built-in scene) from one camera to a PNG, or with --data every test
    /// view of a dataset into a folder.
    Render(render_cmd::RenderArgs),
    /// Write the built-in scene as an INRIA PLY.
    BuiltinScene(render_cmd::BuiltinArgs),
    /// Print what a scene holds (any format): count, SH degree, bounds.
    Info(render_cmd::InfoArgs),
    /// Convert a scene between formats: PLY, compressed PLY, .splat, SPZ, SOG, glTF/GLB.
    Convert(convert_cmd::ConvertArgs),
    /// Serve an interactive viewer of a scene in the browser (frames rendered by splat).
    View(view_cmd::ViewArgs),
}

/// Whether `mpirun` started this process as one of several ranks.
fn several_mpi_ranks() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .any(|n| n.trim().parse::<u32>().is_ok_and(|n| n > 1))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let is_train = matches!(cli.command, Command::Train(_));
    #[cfg(feature = "mpi")]
    let universe = if is_train && mpi_collective::launched_by_mpirun() {
        match mpi_collective::init() {
            Ok(u) => Some(u),
            Err(e) => {
                eprintln!("error: {}", one_line(&e));
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    #[cfg(feature = "mpi")]
    let collective: Box<dyn splat_train::parallel::Collective> = match &universe {
        Some(_) => Box::new(mpi_collective::MpiCollective::default()),
        None => Box::new(splat_train::parallel::Local),
    };
    #[cfg(not(feature = "mpi"))]
    let collective: Box<dyn splat_train::parallel::Collective> = {
        if is_train && several_mpi_ranks() {
            eprintln!(
                "error: started by mpirun with several ranks, but this splat was built without MPI; \
                 build it with `cargo build --release --features mpi`"
            );
            return ExitCode::FAILURE;
        }
        Box::new(splat_train::parallel::Local)
    };
    let result = match cli.command {
        Command::Demo(args) => demo_cmd::demo(args),
        Command::Prepare(args) => prepare_cmd::prepare(args),
        Command::Train(args) => train_cmd::train(*args, collective),
        Command::Scan(args) => scan_cmd::scan(*args),
        Command::Eval(args) => eval_cmd::eval(args),
        Command::Bench(args) => bench_cmd::bench(args),
        Command::Render(args) => render_cmd::render(args),
        Command::BuiltinScene(args) => render_cmd::write_builtin_scene(args),
        Command::Info(args) => render_cmd::info(args),
        Command::Convert(args) => convert_cmd::convert(args),
        Command::View(args) => view_cmd::view(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            // One rank failing ends the job: the others would wait for it forever.
            #[cfg(feature = "mpi")]
            if universe.is_some() && several_mpi_ranks() {
                mpi_collective::abort(1);
            }
            ExitCode::FAILURE
        }
    }
}

/// A path as a user would type it into a POSIX shell (quoted when it has anything but plain
/// characters), for the commands splat suggests.
pub(crate) fn shell_word(path: &std::path::Path) -> String {
    let s = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The error and its causes on one line, each cause once (library errors already show their source).
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}
