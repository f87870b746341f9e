//! Our SIFT descriptor matching for the pairs COLMAP would match, with COLMAP left to verify them.
//!
//! Debian's COLMAP 3.8 has no CUDA, and its CPU matching and verification take about 30 ms a pair
//! of 660-feature frames on 2 threads: 60% of `splat prepare` on a video, of which verification
//! alone is 4 ms (NOTES.md). The rule it applies is simple (`FindBestMatchesBruteForce` in COLMAP's
//! `sift.cc`): the dot products of the two images' uint8 descriptors (L2 length 512), each turned
//! into an angle `acos(dot / 512^2)`; a feature's match is its nearest neighbour when that angle is
//! at most `max_distance` (0.7) and below `max_ratio` (0.8) times the second nearest's; with
//! `cross_check`, only features that are each other's match are kept. On the CPU COLMAP finds the
//! nearest neighbours approximately (a FLANN k-d forest); here they are exact, by brute force.
//!
//! The dot products are f32 products of the same integers, exact because every partial sum is an
//! integer below 2^24 (128 x 255^2 < 2^23), and ties go to the first index as in COLMAP.
//! [`match_reference`] is the plain twin (COLMAP's two passes, literally); [`match_descriptors`]
//! does both passes over one sweep of the products, four rows of the second image at a time, with
//! AVX2 where the CPU has it. The matches go to a text file that `colmap matches_importer
//! --match_type raw` reads and verifies (two-view geometry), as its own matcher would have. On the
//! ray-traced room (150 frames) 99.7% of COLMAP's 204,232 matches are among ours, no pair differs
//! by more than 5, and registration and reprojection error are the same (BENCHMARKS.md).

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use crate::PrepareError;

/// SIFT descriptor length.
pub const DIM: usize = 128;

/// COLMAP's matching thresholds (its `SiftMatchingOptions` defaults).
#[derive(Clone, Copy, Debug)]
pub struct MatchOptions {
    pub max_ratio: f32,
    pub max_distance: f32,
    pub cross_check: bool,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            max_ratio: 0.8,
            max_distance: 0.7,
            cross_check: true,
        }
    }
}

/// One image's descriptors as f32, row-major, [`DIM`] a row.
#[derive(Clone, Debug, Default)]
pub struct Descriptors {
    pub rows: usize,
    pub data: Vec<f32>,
}

impl Descriptors {
    pub fn from_u8(rows: usize, bytes: &[u8]) -> Self {
        Descriptors {
            rows,
            data: bytes.iter().map(|&b| b as f32).collect(),
        }
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.data[i * DIM..(i + 1) * DIM]
    }
}

/// The best and second best product of one feature, and the best's index.
#[derive(Clone, Copy, Debug)]
struct Nearest {
    best: f32,
    second: f32,
    index: i64,
}

impl Nearest {
    const NONE: Nearest = Nearest {
        best: 0.0,
        second: 0.0,
        index: -1,
    };

    /// COLMAP's update: a strictly larger product wins, so ties keep the first index.
    #[inline]
    fn offer(&mut self, dot: f32, index: usize) {
        if dot > self.best {
            self.second = self.best;
            self.best = dot;
            self.index = index as i64;
        } else if dot > self.second {
            self.second = dot;
        }
    }

    /// The index this feature matches under `opts`, if any.
    fn matched(&self, opts: &MatchOptions) -> Option<usize> {
        const NORM: f32 = 1.0 / (512.0 * 512.0);
        if self.index < 0 {
            return None;
        }
        let best = (NORM * self.best).min(1.0).acos();
        if best > opts.max_distance {
            return None;
        }
        let second = (NORM * self.second).min(1.0).acos();
        // `>=` as in COLMAP, so that best == second is no match.
        if best >= opts.max_ratio * second {
            return None;
        }
        Some(self.index as usize)
    }
}

/// The plain twin: COLMAP's one-way pass over each image, then the cross check.
pub fn match_reference(a: &Descriptors, b: &Descriptors, opts: &MatchOptions) -> Vec<(u32, u32)> {
    let dot = |i: usize, j: usize| -> f32 {
        let (x, y) = (a.row(i), b.row(j));
        (0..DIM).map(|k| x[k] * y[k]).sum()
    };
    let one_way = |n: usize, m: usize, d: &dyn Fn(usize, usize) -> f32| -> Vec<Option<usize>> {
        (0..n)
            .map(|i| {
                let mut near = Nearest::NONE;
                for j in 0..m {
                    near.offer(d(i, j), j);
                }
                near.matched(opts)
            })
            .collect()
    };
    let ab = one_way(a.rows, b.rows, &dot);
    let ba = match opts.cross_check {
        true => one_way(b.rows, a.rows, &|j, i| dot(i, j)),
        false => Vec::new(),
    };
    pairs_of(&ab, &ba, opts.cross_check)
}

fn pairs_of(ab: &[Option<usize>], ba: &[Option<usize>], cross_check: bool) -> Vec<(u32, u32)> {
    ab.iter()
        .enumerate()
        .filter_map(|(i, j)| {
            let j = (*j)?;
            (!cross_check || ba[j] == Some(i)).then_some((i as u32, j as u32))
        })
        .collect()
}

/// The fast matcher: the same matches as [`match_reference`].
pub fn match_descriptors(a: &Descriptors, b: &Descriptors, opts: &MatchOptions) -> Vec<(u32, u32)> {
    let mut rows = vec![Nearest::NONE; a.rows];
    let mut cols = vec![Nearest::NONE; b.rows];
    sweep(a, b, &mut rows, &mut cols);
    let ab: Vec<Option<usize>> = rows.iter().map(|n| n.matched(opts)).collect();
    let ba: Vec<Option<usize>> = match opts.cross_check {
        true => cols.iter().map(|n| n.matched(opts)).collect(),
        false => Vec::new(),
    };
    pairs_of(&ab, &ba, opts.cross_check)
}

/// Every product once, offered to its row's and its column's nearest (rows in order, so each
/// column sees the rows in order too, as COLMAP's second pass does).
fn sweep(a: &Descriptors, b: &Descriptors, rows: &mut [Nearest], cols: &mut [Nearest]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), all the function asks for.
        #[allow(unsafe_code)]
        unsafe {
            sweep_avx2(a, b, rows, cols)
        };
        return;
    }
    sweep_portable(a, b, rows, cols)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
unsafe fn sweep_avx2(a: &Descriptors, b: &Descriptors, rows: &mut [Nearest], cols: &mut [Nearest]) {
    sweep_portable(a, b, rows, cols)
}

#[inline(always)]
fn sweep_portable(a: &Descriptors, b: &Descriptors, rows: &mut [Nearest], cols: &mut [Nearest]) {
    for i in 0..a.rows {
        let x = a.row(i);
        let mut near = Nearest::NONE;
        let mut j = 0;
        while j + 4 <= b.rows {
            let d = dot4(x, [b.row(j), b.row(j + 1), b.row(j + 2), b.row(j + 3)]);
            for (k, dk) in d.into_iter().enumerate() {
                near.offer(dk, j + k);
                cols[j + k].offer(dk, i);
            }
            j += 4;
        }
        for j in j..b.rows {
            let d = dot4(x, [b.row(j); 4])[0];
            near.offer(d, j);
            cols[j].offer(d, i);
        }
        rows[i] = near;
    }
}

/// Four dot products of `x` with the rows `y`, eight lanes each (exact for these integers in any
/// order of summation).
#[inline(always)]
fn dot4(x: &[f32], y: [&[f32]; 4]) -> [f32; 4] {
    let mut acc = [[0.0f32; 8]; 4];
    for c in 0..DIM / 8 {
        let xs = &x[c * 8..c * 8 + 8];
        for r in 0..4 {
            let ys = &y[r][c * 8..c * 8 + 8];
            for l in 0..8 {
                acc[r][l] = xs[l].mul_add(ys[l], acc[r][l]);
            }
        }
    }
    acc.map(|a| a.iter().sum())
}

/// COLMAP's database, read for matching: each image's name and descriptors by image id.
pub struct Database {
    pub names: HashMap<i64, String>,
    pub descriptors: HashMap<i64, Descriptors>,
}

/// Reads image names and descriptors from COLMAP's `database.db`.
pub fn read_database(db: &Path) -> Result<Database, PrepareError> {
    let bad = |e: rusqlite::Error| PrepareError::BadInput {
        path: db.to_path_buf(),
        message: format!("cannot read COLMAP's database: {e}"),
    };
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn = rusqlite::Connection::open_with_flags(db, flags).map_err(bad)?;
    let mut names = HashMap::new();
    let mut q = conn
        .prepare("SELECT image_id, name FROM images")
        .map_err(bad)?;
    let rows = q
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(bad)?;
    for row in rows {
        let (id, name) = row.map_err(bad)?;
        names.insert(id, name);
    }
    let mut descriptors = HashMap::new();
    let mut q = conn
        .prepare("SELECT image_id, rows, cols, data FROM descriptors")
        .map_err(bad)?;
    let rows = q
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })
        .map_err(bad)?;
    for row in rows {
        let (id, n, cols, data) = row.map_err(bad)?;
        let data = data.unwrap_or_default();
        let n = n.max(0) as usize;
        if cols != DIM as i64 || data.len() != n * DIM {
            return Err(PrepareError::BadInput {
                path: db.to_path_buf(),
                message: format!(
                    "image {id}: {n} x {cols} descriptors in {} bytes (expected {DIM} columns)",
                    data.len()
                ),
            });
        }
        descriptors.insert(id, Descriptors::from_u8(n, &data));
    }
    Ok(Database { names, descriptors })
}

/// Matches `pairs` (by image name) and writes them as COLMAP's raw match list to `out`: a line
/// `NAME1 NAME2`, a line `IDX1 IDX2` a match, a blank line. Returns the pairs written.
pub fn match_pairs_to_file(
    db: &Database,
    pairs: &[(String, String)],
    opts: &MatchOptions,
    out: &Path,
    progress: &mut dyn FnMut(usize),
) -> Result<usize, PrepareError> {
    let by_name: HashMap<&str, &Descriptors> = db
        .names
        .iter()
        .filter_map(|(id, n)| Some((n.as_str(), db.descriptors.get(id)?)))
        .collect();
    let block = |(n1, n2): &(String, String)| -> String {
        let (Some(a), Some(b)) = (by_name.get(n1.as_str()), by_name.get(n2.as_str())) else {
            return String::new();
        };
        let mut s = format!("{n1} {n2}\n");
        for (i, j) in match_descriptors(a, b, opts) {
            s.push_str(&format!("{i} {j}\n"));
        }
        s.push('\n');
        s
    };
    // In chunks, so that progress is reported between them.
    let mut blocks: Vec<String> = Vec::with_capacity(pairs.len());
    for chunk in pairs.chunks(64) {
        blocks.extend(chunk.par_iter().map(block).collect::<Vec<_>>());
        progress(blocks.len());
    }
    let text: String = blocks.concat();
    std::fs::write(out, text).map_err(|e| PrepareError::io(out, e))?;
    Ok(blocks.iter().filter(|b| !b.is_empty()).count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random descriptors of length ~512 like SIFT's, with some rows near copies of the other
    /// image's (so that matches exist), some exact duplicates (ties) and some all zero.
    fn pair(n: usize, m: usize, seed: u64) -> (Descriptors, Descriptors) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let random_row = |rng: &mut rand_chacha::ChaCha8Rng| -> Vec<u8> {
            let v: Vec<f32> = (0..DIM).map(|_| rng.random::<f32>().powi(3)).collect();
            let len = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter()
                .map(|x| (x / len * 512.0).min(255.0) as u8)
                .collect()
        };
        let a: Vec<Vec<u8>> = (0..n).map(|_| random_row(&mut rng)).collect();
        let mut b: Vec<Vec<u8>> = (0..m).map(|_| random_row(&mut rng)).collect();
        for j in 0..m.min(n) / 2 {
            b[j] = a[j * 2 % n]
                .iter()
                .map(|&v| v.saturating_add(rng.random_range(0..6)))
                .collect();
        }
        if m > 4 {
            b[m - 1] = b[0].clone();
            b[m - 2] = vec![0; DIM];
        }
        let flat = |rows: &[Vec<u8>]| rows.concat();
        (
            Descriptors::from_u8(n, &flat(&a)),
            Descriptors::from_u8(m, &flat(&b)),
        )
    }

    #[test]
    fn the_fast_matcher_finds_the_reference_matches() {
        for (n, m, seed) in [(1, 1, 1), (7, 5, 2), (64, 61, 3), (130, 97, 4), (3, 40, 5)] {
            let (a, b) = pair(n, m, seed);
            for cross_check in [true, false] {
                let opts = MatchOptions {
                    cross_check,
                    ..Default::default()
                };
                let fast = match_descriptors(&a, &b, &opts);
                let reference = match_reference(&a, &b, &opts);
                assert_eq!(fast, reference, "{n} x {m}, cross check {cross_check}");
                if n > 10 {
                    assert!(
                        fast.len() >= m.min(n) / 4,
                        "{n} x {m}: {} matches",
                        fast.len()
                    );
                }
            }
        }
    }

    #[test]
    fn products_are_exact_integers_and_ties_are_no_match() {
        let x = Descriptors::from_u8(1, &[255; DIM]);
        let d = dot4(x.row(0), [x.row(0); 4]);
        assert_eq!(d[0], (255 * 255 * DIM) as f32);
        // Two identical candidates: best == second, the ratio test refuses (COLMAP's `>=`).
        let (a, _) = pair(4, 4, 9);
        let twice = Descriptors {
            rows: 2,
            data: [a.row(0), a.row(0)].concat(),
        };
        let one = Descriptors {
            rows: 1,
            data: a.row(0).to_vec(),
        };
        assert!(match_descriptors(&one, &twice, &MatchOptions::default()).is_empty());
        assert_eq!(
            match_descriptors(&one, &one, &MatchOptions::default()),
            vec![(0, 0)]
        );
    }
}
