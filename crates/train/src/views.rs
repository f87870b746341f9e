//! Which training view each draw uses: every epoch is a seeded permutation of the views (Fisher-Yates), and
//! the view of draw `d` is a pure function of `(seed, d)`. Being stateless it is computed the same way on
//! the host and inside a GPU kernel (`crates/gpu/src/shaders/resident.wgsl` mirrors this file in u32
//! arithmetic), a resumed run needs no generator state for it, and a block of steps on the device draws its
//! own views without the host.
//!
//! The permutation of epoch `e` applies, for `i = n-1 down to 1`, the swap of positions `i` and
//! `j_i = h(seed, e, i) mod (i + 1)` to the identity (the modulo bias is below 2^-22 for n < 1024 views).
//! Position `p`'s entry is found without the array by undoing the swaps in reverse order.

use crate::random::{mix32, seed_word};

/// The swap partner `j_i` of position `i` in epoch `epoch`'s permutation.
pub fn swap_partner(seed: u64, epoch: u32, i: u32) -> u32 {
    mix32(seed_word(seed) ^ mix32(epoch ^ mix32(i))) % (i + 1)
}

/// The view of draw `draw` (0-based, counting every view drawn by the run) among `n` views.
pub fn view_for_draw(seed: u64, draw: u64, n: u32) -> u32 {
    assert!(n > 0, "no views");
    let epoch = (draw / n as u64) as u32;
    let mut p = (draw % n as u64) as u32;
    for i in 1..n {
        let j = swap_partner(seed, epoch, i);
        if p == i {
            p = j;
        } else if p == j {
            p = i;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same permutation built with an array.
    fn epoch_by_array(seed: u64, epoch: u32, n: u32) -> Vec<u32> {
        let mut a: Vec<u32> = (0..n).collect();
        for i in (1..n).rev() {
            a.swap(i as usize, swap_partner(seed, epoch, i) as usize);
        }
        a
    }

    #[test]
    fn every_epoch_is_the_array_permutation() {
        for n in [1u32, 2, 3, 7, 20, 77] {
            for epoch in 0..5u32 {
                let want = epoch_by_array(42, epoch, n);
                let got: Vec<u32> = (0..n)
                    .map(|p| view_for_draw(42, epoch as u64 * n as u64 + p as u64, n))
                    .collect();
                assert_eq!(got, want, "n {n} epoch {epoch}");
                let mut sorted = got.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn seeds_and_epochs_differ() {
        let order = |seed, epoch: u64| -> Vec<u32> {
            (0..20)
                .map(|p| view_for_draw(seed, epoch * 20 + p, 20))
                .collect()
        };
        assert_ne!(order(1, 0), order(2, 0));
        assert_ne!(order(1, 0), order(1, 1));
        // Roughly uniform: over many epochs every view is first about equally often.
        let mut first = [0u32; 20];
        for e in 0..4000 {
            first[view_for_draw(7, e * 20, 20) as usize] += 1;
        }
        assert!(first.iter().all(|&c| (140..260).contains(&c)), "{first:?}");
    }
}
