//! `splat`: the command-line interface. Library crates return typed errors; this binary turns them into
//! one clear line on stderr and a non-zero exit code.

mod bench_cmd;
mod demo_cmd;
mod render_cmd;
mod train_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "splat",
    version,
    about = "3D Gaussian Splatting: render, train, evaluate and export splat scenes",
    long_about = "3D Gaussian Splatting in Rust.\n\n\
        Scenes are the standard INRIA PLY layout that every splat viewer opens. Run `splat <command> --help` \
        for the options of each command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a small ray-traced capture, train on it, and report the test PSNR (no download needed).
    Demo(demo_cmd::DemoArgs),
    /// Train a scene from posed photos (COLMAP, NeRF-synthetic, transforms.json, LLFF).
    Train(train_cmd::TrainArgs),
    /// Time the training step stage by stage against this machine's measured peak.
    Bench(bench_cmd::BenchArgs),
    /// PSNR and SSIM of a trained scene on a dataset's test views.
    Eval(train_cmd::EvalArgs),
    /// Render a PLY scene (or the built-in scene) from one camera to a PNG, or with --data every test
    /// view of a dataset into a folder.
    Render(render_cmd::RenderArgs),
    /// Write the built-in scene as an INRIA PLY.
    BuiltinScene(render_cmd::BuiltinArgs),
    /// Print what a PLY scene holds: count, SH degree, bounds.
    Info(render_cmd::InfoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo_cmd::demo(args),
        Command::Train(args) => train_cmd::train(args),
        Command::Eval(args) => train_cmd::eval(args),
        Command::Bench(args) => bench_cmd::bench(args),
        Command::Render(args) => render_cmd::render(args),
        Command::BuiltinScene(args) => render_cmd::write_builtin_scene(args),
        Command::Info(args) => render_cmd::info(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::FAILURE
        }
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
