//! This machine's fp32 FMA peak, measured: every thread runs independent chains of vector FMAs with the
//! widest instructions the CPU has (AVX-512, AVX2+FMA, NEON, else plain multiply-add), long enough to
//! amortize start-up. Benchmarks report achieved FLOP/s as a fraction of this number.
//!
//! The x86 kernels use `std::arch` intrinsics inside `#[target_feature]` functions, which are `unsafe` to
//! call; each call is guarded by runtime feature detection, which is the whole safety argument.
#![allow(unsafe_code)]

use std::time::Instant;

/// Result of the peak measurement.
#[derive(Clone, Debug)]
pub struct Peak {
    /// Instruction set used.
    pub isa: &'static str,
    pub threads: usize,
    pub gflops: f64,
}

const CHAINS: usize = 12;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_avx512(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(1.0); CHAINS];
    let a = _mm512_set1_ps(0.999_999);
    let b = _mm512_set1_ps(1e-7);
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    let mut s = _mm512_setzero_ps();
    for x in acc {
        s = _mm512_add_ps(s, x);
    }
    _mm512_reduce_add_ps(s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_avx2(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_set1_ps(1.0); CHAINS];
    let a = _mm256_set1_ps(0.999_999);
    let b = _mm256_set1_ps(1e-7);
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, a, b);
        }
    }
    let mut out = [0.0f32; 8];
    let mut s = _mm256_setzero_ps();
    for x in acc {
        s = _mm256_add_ps(s, x);
    }
    _mm256_storeu_ps(out.as_mut_ptr(), s);
    out.iter().sum()
}

/// Portable fallback: independent scalar multiply-add chains (the compiler may vectorize them).
fn fma_portable(iters: u64) -> f32 {
    let mut acc = [1.0f32; CHAINS * 4];
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = *x * 0.999_999 + 1e-7;
        }
    }
    acc.iter().sum()
}

/// (name, lanes per chain step, kernel) of the best kernel this CPU runs.
fn best_kernel() -> (&'static str, usize, fn(u64) -> f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return ("avx512", 16 * CHAINS, |n| unsafe { fma_avx512(n) });
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return ("avx2+fma", 8 * CHAINS, |n| unsafe { fma_avx2(n) });
        }
    }
    ("portable", 4 * CHAINS, fma_portable)
}

/// Measures the whole machine's fp32 FMA peak (all threads at once), in GFLOP/s: the best of several
/// trials, since on a shared machine a trial can only be slowed down by others (so the fraction of peak
/// reported against it errs low, not high).
pub fn measure() -> Peak {
    let (isa, lanes, kernel) = best_kernel();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let iters: u64 = 8_000_000;
    const TRIALS: usize = 5;
    // Warm up clocks.
    std::hint::black_box(kernel(iters / 4));
    let mut best = 0.0f64;
    for _ in 0..TRIALS {
        let start = Instant::now();
        let sums: Vec<f32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| s.spawn(move || kernel(iters)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("peak thread"))
                .collect()
        });
        let secs = start.elapsed().as_secs_f64();
        std::hint::black_box(sums);
        let flops = 2.0 * lanes as f64 * iters as f64 * threads as f64;
        best = best.max(flops / secs / 1e9);
    }
    Peak {
        isa,
        threads,
        gflops: best,
    }
}
