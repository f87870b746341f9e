//! Times the all-reduce a data-parallel step performs, for a scene of N Gaussians at SH degree 3:
//! 59 gradient floats and 3 densification statistics per Gaussian (62 x 4 bytes).
//!
//! `cargo build --release -p splat --features mpi --example allreduce_bench`, then
//! `mpirun -np 2 target/release/examples/allreduce_bench 10091 1000000`.

use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::traits::*;

fn main() {
    let universe = mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("Gaussian counts"))
        .collect();
    for n in counts {
        let len = n * 62;
        let send = vec![1.0f32; len];
        let mut recv = vec![0.0f32; len];
        let mut times = Vec::new();
        for rep in 0..12 {
            world.barrier();
            let t = Instant::now();
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            if rep >= 2 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        assert_eq!(recv[0], world.size() as f32);
        if world.rank() == 0 {
            let bytes = len * 4;
            println!(
                "{} ranks, {n} Gaussians: {bytes} bytes all-reduced in {:.3} ms (median of 10), {:.2} GB/s algorithm bandwidth",
                world.size(),
                median * 1e3,
                bytes as f64 / median / 1e9
            );
        }
    }
}
