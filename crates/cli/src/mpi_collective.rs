//! The data-parallel collective on MPI (feature `mpi`): `mpirun -np K splat train ...` runs K ranks.
//! Sums are MPI all-reduces over `MPI_COMM_WORLD`; MPI is initialized with `MPI_THREAD_SERIALIZED`
//! because the training loop runs on a rayon worker thread (one thread calls MPI at a time).

use anyhow::{bail, Result};
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use splat_train::parallel::Collective;

/// Whether this process was started by an MPI launcher (Open MPI, MPICH/PMI, PMIx).
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Initializes MPI; the universe must live until the end of `main` (dropping it finalizes MPI).
pub fn init() -> Result<Universe> {
    let Some((universe, threading)) = mpi::initialize_with_threading(mpi::Threading::Serialized)
    else {
        bail!("MPI was already initialized");
    };
    if threading < mpi::Threading::Serialized {
        bail!("the MPI library does not support MPI_THREAD_SERIALIZED (got {threading:?})");
    }
    // Ranks on one machine share its cores: give each its share unless RAYON_NUM_THREADS says.
    let local_ranks = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    if std::env::var_os("RAYON_NUM_THREADS").is_none() && local_ranks > 1 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads((cores / local_ranks).max(1))
            .build_global();
    }
    Ok(universe)
}

pub fn world() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

/// Ends every rank of the job (after this rank printed its error).
pub fn abort(code: i32) -> ! {
    world().abort(code)
}

/// [`Collective`] over `MPI_COMM_WORLD`. It holds no communicator handle (the world communicator
/// is a constant), so it can move to the training thread.
#[derive(Default)]
pub struct MpiCollective {
    scratch32: Vec<f32>,
    scratch64: Vec<f64>,
}

impl Collective for MpiCollective {
    fn rank(&self) -> usize {
        world().rank() as usize
    }

    fn size(&self) -> usize {
        world().size() as usize
    }

    fn sum_f32(&mut self, data: &mut [f32]) {
        self.scratch32.clear();
        self.scratch32.extend_from_slice(data);
        world().all_reduce_into(&self.scratch32[..], data, SystemOperation::sum());
    }

    fn sum_f64(&mut self, data: &mut [f64]) {
        self.scratch64.clear();
        self.scratch64.extend_from_slice(data);
        world().all_reduce_into(&self.scratch64[..], data, SystemOperation::sum());
    }

    fn max_f32(&mut self, data: &mut [f32]) {
        self.scratch32.clear();
        self.scratch32.extend_from_slice(data);
        world().all_reduce_into(&self.scratch32[..], data, SystemOperation::max());
    }

    fn gather_u64(&mut self, value: u64, out: &mut Vec<u64>) {
        out.clear();
        out.resize(self.size(), 0);
        world().all_gather_into(&value, &mut out[..]);
    }
}
