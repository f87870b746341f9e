//! Data parallelism: the operations that tie replicas of the trainer together.
//!
//! Every rank holds the whole scene and optimizer state and draws the same views from the same seeded
//! generator; view `j` of a step's batch is rendered by rank `j % K`. The gradients of a step, its
//! densification statistics and its loss are then summed over ranks, so every rank applies the
//! identical update and makes the identical densification decisions. [`Local`] is the single-process
//! case; the `splat` binary provides an MPI implementation behind its `mpi` feature.

/// Collective operations over the ranks of a run; every rank calls them in the same order.
pub trait Collective: Send {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Element-wise sum over ranks, in place.
    fn sum_f32(&mut self, data: &mut [f32]);
    fn sum_f64(&mut self, data: &mut [f64]);
    /// Element-wise maximum over ranks, in place.
    fn max_f32(&mut self, data: &mut [f32]);
    /// `value` of every rank, in rank order, into `out`.
    fn gather_u64(&mut self, value: u64, out: &mut Vec<u64>);
}

/// One process: every operation is the identity.
#[derive(Clone, Copy, Debug, Default)]
pub struct Local;

impl Collective for Local {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum_f32(&mut self, _: &mut [f32]) {}
    fn sum_f64(&mut self, _: &mut [f64]) {}
    fn max_f32(&mut self, _: &mut [f32]) {}
    fn gather_u64(&mut self, value: u64, out: &mut Vec<u64>) {
        out.clear();
        out.push(value);
    }
}

/// A cheap fingerprint of parameters and optimizer moments (FNV-1a over the bits), compared across
/// ranks to prove the replicas have not drifted.
pub fn state_checksum(state: &crate::state::TrainState) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |v: &[f32]| {
        for x in v {
            h ^= x.to_bits() as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let g = &state.gaussians;
    eat(g.means.as_flattened());
    eat(g.log_scales.as_flattened());
    eat(g.rotations.as_flattened());
    eat(&g.opacity_logits);
    eat(g.sh_dc.as_flattened());
    eat(&g.sh_rest);
    for a in &state.adam {
        eat(&a.m);
        eat(&a.v);
    }
    eat(&state.grad_accum);
    if let Some(a) = &state.appearance {
        eat(&a.params);
        eat(&a.adam.m);
        eat(&a.adam.v);
    }
    if let Some(p) = &state.poses {
        eat(&p.params);
        eat(&p.adam.m);
        eat(&p.adam.v);
    }
    h ^ state.step
}
