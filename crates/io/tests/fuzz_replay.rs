//! Bounded, deterministic stand-in for the fuzzers that runs in CI: every committed seed and every
//! regression case (inputs that once broke a reader) goes through the fuzz entry points, then a fixed
//! number of seeded mutations of each seed (bit flips, byte edits, truncations, inserted runs,
//! extreme numbers). A panic or a broken contract fails the test; see `splat_io::fuzzing`.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_io::fuzzing::{run, TARGETS};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_target_has_seeds_and_accepts_them() {
    for t in TARGETS {
        let seeds = files(&fuzz_dir().join("seeds").join(t));
        assert!(!seeds.is_empty(), "no seeds for fuzz target {t}");
        for (p, bytes) in seeds {
            assert_eq!(
                run(t, &bytes),
                Ok(true),
                "seed {} of {t} is not accepted",
                p.display()
            );
        }
    }
}

#[test]
fn regressions_replay() {
    let mut n = 0;
    for t in TARGETS {
        for (p, bytes) in files(&fuzz_dir().join("regressions").join(t)) {
            eprintln!("replaying {}", p.display());
            let _ = run(t, &bytes);
            n += 1;
        }
    }
    eprintln!("{n} regression cases replayed");
}

const EXTREMES: &[&[u8]] = &[
    &[0xff; 8],
    &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0, 0, 0, 0, 0, 0, 0xf8, 0x7f], // f64 NaN
    &[0, 0, 0xc0, 0x7f],             // f32 NaN
    &[0, 0, 0, 0, 0, 0, 0xf0, 0x7f], // f64 +inf
    &[0; 8],
    b"nan",
    b"-inf",
    b"1e309",
    b"99999999999999999999",
    b"-1",
    b"\n\n",
    b"\"",
    b"[[[[",
];

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        let len = b.len();
        match rng.random_range(0..6) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                b[i] = rng.random();
            }
            2 => b.truncate(rng.random_range(0..=len)),
            3 => {
                let i = rng.random_range(0..=len);
                let e = EXTREMES[rng.random_range(0..EXTREMES.len())];
                let end = (i + e.len()).min(len);
                b.splice(i..end, e.iter().copied());
            }
            4 if len > 0 => {
                let i = rng.random_range(0..len);
                let j = rng.random_range(i..len.min(i + 64) + 1).min(len);
                let chunk = b[i..j].to_vec();
                b.splice(i..i, chunk);
            }
            _ if len > 0 => {
                let i = rng.random_range(0..len);
                let j = rng.random_range(i..=len);
                b.drain(i..j);
            }
            _ => b.push(rng.random()),
        }
    }
    b
}

#[test]
fn seeded_mutations_of_the_seeds() {
    let per_seed = 3000;
    for (k, t) in TARGETS.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed + k as u64);
        let (mut accepted, mut refused) = (0, 0);
        for (_, seed) in files(&fuzz_dir().join("seeds").join(t)) {
            for _ in 0..per_seed {
                let input = mutate(&mut rng, &seed);
                match run(t, &input) {
                    Ok(_) => accepted += 1,
                    Err(_) => refused += 1,
                }
            }
        }
        eprintln!("{t}: {accepted} mutants accepted, {refused} refused with an error");
        assert!(
            refused > 0,
            "{t}: no mutant was refused; mutations too weak"
        );
    }
}
