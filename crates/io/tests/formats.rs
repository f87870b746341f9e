//! Every writer's loss, checked against the bound its module documents, on seeded random scenes
//! with extremes (tiny and huge scales, opacities near 0 and 1, far and near positions, unnormalized
//! and zero rotations), SH degrees 0..3, and counts 0, 1, around a chunk (255, 256, 257) and several
//! chunks (1,000). Then detection and `read_scene` / `write_scene` on files.

mod common;

use common::{extreme_scene, quat_error};
use splat_core::sh::SH_C0;
use splat_core::Gaussians;
use splat_io::formats::quant::{fit_codebook, morton_order, permuted, sigmoid, unit_quat};
use splat_io::formats::{decode, encode, SceneFormat, WriteOptions};
use std::path::Path;

const COUNTS: [usize; 6] = [0, 1, 255, 256, 257, 1000];

fn round_trip(format: SceneFormat, g: &Gaussians<f32>, opts: &WriteOptions) -> Gaussians<f32> {
    let bytes = encode(format, g, opts).unwrap();
    decode(format, &bytes, Path::new("test-scene")).unwrap()
}

fn close(what: &str, i: usize, got: f32, want: f64, tol: f64) {
    assert!(
        (got as f64 - want).abs() <= tol,
        "{what} of splat {i}: {got} vs {want} (tolerance {tol})"
    );
}

fn opacity_close(i: usize, got: f32, orig: f32, tol: f64) {
    let (a, b) = (sigmoid(got), sigmoid(orig));
    assert!((a - b).abs() <= tol, "opacity of splat {i}: {a} vs {b}");
}

/// Half a codebook gap around `x`, the bound of codebook quantization.
fn half_gap(cb: &[f32], x: f32) -> f64 {
    let i = cb.partition_point(|&c| c < x).clamp(1, cb.len().max(2) - 1);
    if cb.len() < 2 {
        return 1e-6;
    }
    0.5 * (cb[i] - cb[i - 1]) as f64 + 1e-6
}

#[test]
fn compressed_ply_within_its_bounds() {
    for degree in 0..=3 {
        for n in COUNTS {
            let g = extreme_scene(10 + n as u64, degree, n);
            let d = round_trip(SceneFormat::CompressedPly, &g, &WriteOptions::default());
            let o = permuted(&g, &morton_order(&g.means));
            assert_eq!((d.len(), d.sh_degree), (n, degree));
            for i in 0..n {
                let chunk = (i / 256) * 256..((i / 256 + 1) * 256).min(n);
                let bits = [11, 10, 11];
                for k in 0..3 {
                    let range = |f: &dyn Fn(usize) -> f64| {
                        chunk
                            .clone()
                            .map(f)
                            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                                (a.min(v), b.max(v))
                            })
                    };
                    let step = |lo: f64, hi: f64, b: u32| 0.5 * (hi - lo) / ((1 << b) - 1) as f64;
                    let (lo, hi) = range(&|j| o.means[j][k] as f64);
                    close(
                        "position",
                        i,
                        d.means[i][k],
                        o.means[i][k] as f64,
                        step(lo, hi, bits[k]) + 1e-5 * (1.0 + hi.abs().max(lo.abs())),
                    );
                    let (lo, hi) = range(&|j| o.log_scales[j][k] as f64);
                    let (lo, hi) = (lo.clamp(-20.0, 20.0), hi.clamp(-20.0, 20.0));
                    let want = (o.log_scales[i][k] as f64).clamp(lo, hi);
                    close(
                        "log-scale",
                        i,
                        d.log_scales[i][k],
                        want,
                        step(lo, hi, bits[k]) + 1e-5,
                    );
                    let col = |j: usize| 0.5 + SH_C0 * o.sh_dc[j][k] as f64;
                    let (lo, hi) = range(&col);
                    close(
                        "DC",
                        i,
                        d.sh_dc[i][k],
                        o.sh_dc[i][k] as f64,
                        (step(lo, hi, 8) + 1e-6) / SH_C0,
                    );
                }
                opacity_close(
                    i,
                    d.opacity_logits[i],
                    o.opacity_logits[i],
                    0.5 / 255.0 + 1e-6,
                );
                // 10 bits on the three smallest; the derived largest (>= 1/2) takes up to 3 of their errors.
                assert!(
                    quat_error(d.rotations[i], o.rotations[i]) < 2.2e-3,
                    "rotation {i}"
                );
                for (got, &want) in d.sh_rest_of(i).iter().zip(o.sh_rest_of(i)) {
                    close(
                        "SH",
                        i,
                        *got,
                        (want as f64).clamp(-4.0, 4.0),
                        1.0 / 32.0 + 1e-6,
                    );
                }
            }
        }
    }
}

#[test]
fn antimatter_splat_within_its_bounds() {
    for n in COUNTS {
        let g = extreme_scene(20 + n as u64, 3, n);
        let d = round_trip(SceneFormat::Splat, &g, &WriteOptions::default());
        assert_eq!((d.len(), d.sh_degree), (n, 0));
        for i in 0..n {
            assert_eq!(d.means[i], g.means[i]);
            for k in 0..3 {
                let s = g.log_scales[i][k] as f64;
                close(
                    "log-scale",
                    i,
                    d.log_scales[i][k],
                    s,
                    1e-6 * s.abs().max(1.0),
                );
                let want = ((0.5 + SH_C0 * g.sh_dc[i][k] as f64).clamp(0.0, 1.0) - 0.5) / SH_C0;
                close("DC", i, d.sh_dc[i][k], want, 0.5 / 255.0 / SH_C0 + 1e-6);
            }
            opacity_close(
                i,
                d.opacity_logits[i],
                g.opacity_logits[i],
                0.5 / 255.0 + 1e-6,
            );
            assert!(
                quat_error(d.rotations[i], g.rotations[i]) < 0.012,
                "rotation {i}"
            );
        }
    }
}

#[test]
fn spz_within_its_bounds_in_every_version() {
    for version in [2, 3, 4] {
        let opts = WriteOptions {
            spz_version: version,
            ..Default::default()
        };
        for degree in 0..=3 {
            for n in COUNTS {
                let g = extreme_scene(30 + n as u64, degree, n);
                let d = round_trip(SceneFormat::Spz, &g, &opts);
                assert_eq!((d.len(), d.sh_degree), (n, degree));
                for i in 0..n {
                    for k in 0..3 {
                        let m = (g.means[i][k] as f64).clamp(-2048.0, 2047.999);
                        close("position", i, d.means[i][k], m, 0.5 / 4096.0 + 1e-6);
                        let s = (g.log_scales[i][k] as f64).clamp(-10.0, 255.0 / 16.0 - 10.0);
                        close("log-scale", i, d.log_scales[i][k], s, 1.0 / 32.0 + 1e-6);
                        let c = (g.sh_dc[i][k] as f64).clamp(-127.5 / 38.25, 127.5 / 38.25);
                        close("DC", i, d.sh_dc[i][k], c, 0.5 / 38.25 + 1e-6);
                    }
                    opacity_close(
                        i,
                        d.opacity_logits[i],
                        g.opacity_logits[i],
                        0.5 / 255.0 + 1e-6,
                    );
                    if version >= 3 {
                        assert!(
                            quat_error(d.rotations[i], g.rotations[i]) < 2.2e-3,
                            "rotation {i}"
                        );
                    } else {
                        // x, y, z at 8 bits and w derived: poor where w is near 0.
                        let (a, b) = (unit_quat(d.rotations[i]), unit_quat(g.rotations[i]));
                        let dot: f64 = (0..4).map(|k| a[k] * b[k]).sum();
                        assert!(dot.abs() > 0.99, "rotation {i}: {dot}");
                    }
                    for (j, (got, &want)) in d.sh_rest_of(i).iter().zip(g.sh_rest_of(i)).enumerate()
                    {
                        let bucket = if j < 9 { 8.0 } else { 16.0 };
                        let want = (want as f64).clamp(-1.0, 127.0 / 128.0);
                        close("SH", i, *got, want, (0.5 * bucket + 1.0) / 128.0);
                    }
                }
            }
        }
    }
}

#[test]
fn sog_within_its_bounds() {
    for degree in 0..=3 {
        for n in COUNTS {
            let g = extreme_scene(40 + n as u64, degree, n);
            let d = round_trip(SceneFormat::Sog, &g, &WriteOptions::default());
            let o = permuted(&g, &morton_order(&g.means));
            // An empty scene has no palette to say its degree.
            assert_eq!((d.len(), d.sh_degree), (n, if n == 0 { 0 } else { degree }));
            let lt = |x: f64| x.signum() * (x.abs() + 1.0).ln();
            let scale_cb =
                fit_codebook(&o.log_scales.iter().flatten().copied().collect::<Vec<_>>());
            let dc_cb = fit_codebook(&o.sh_dc.iter().flatten().copied().collect::<Vec<_>>());
            let sh_cb = fit_codebook(&o.sh_rest);
            for i in 0..n {
                for k in 0..3 {
                    let (lo, hi) = o
                        .means
                        .iter()
                        .map(|m| lt(m[k] as f64))
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                            (a.min(v), b.max(v))
                        });
                    let got = lt(d.means[i][k] as f64);
                    close(
                        "position (log domain)",
                        i,
                        got as f32,
                        lt(o.means[i][k] as f64),
                        0.5 * (hi - lo) / 65535.0 + 1e-6,
                    );
                    let s = o.log_scales[i][k];
                    close(
                        "log-scale",
                        i,
                        d.log_scales[i][k],
                        s as f64,
                        half_gap(&scale_cb, s),
                    );
                    let c = o.sh_dc[i][k];
                    close("DC", i, d.sh_dc[i][k], c as f64, half_gap(&dc_cb, c));
                }
                opacity_close(
                    i,
                    d.opacity_logits[i],
                    o.opacity_logits[i],
                    0.5 / 255.0 + 1e-6,
                );
                assert!(
                    quat_error(d.rotations[i], o.rotations[i]) < 9e-3,
                    "rotation {i}"
                );
                // Fewer splats than palette entries: every vector is its own entry.
                for (got, &want) in d.sh_rest_of(i).iter().zip(o.sh_rest_of(i)) {
                    close("SH", i, *got, want as f64, half_gap(&sh_cb, want));
                }
            }
        }
    }
}

#[test]
fn sog_palette_clusters_a_large_scene() {
    let g = extreme_scene(77, 1, 6000);
    let d = round_trip(SceneFormat::Sog, &g, &WriteOptions::default());
    let o = permuted(&g, &morton_order(&g.means));
    let sq = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| ((x - y) as f64).powi(2))
            .sum::<f64>()
    };
    let err = sq(&d.sh_rest, &o.sh_rest);
    let energy = sq(&o.sh_rest, &vec![0.0; o.sh_rest.len()]);
    // 6,000 vectors into 4,096 entries: most keep a near-exact entry.
    assert!(err < 0.1 * energy, "palette error {err} vs energy {energy}");
}

#[test]
fn gltf_and_glb_keep_the_scene() {
    for format in [SceneFormat::Glb, SceneFormat::Gltf] {
        for degree in 0..=3 {
            for n in [0, 1, 257] {
                let g = extreme_scene(50 + n as u64, degree, n);
                let d = round_trip(format, &g, &WriteOptions::default());
                assert_eq!((d.len(), d.sh_degree), (n, degree), "{format}");
                for i in 0..n {
                    assert_eq!(d.means[i], g.means[i]);
                    assert_eq!(d.sh_dc[i], g.sh_dc[i]);
                    assert_eq!(d.sh_rest_of(i), g.sh_rest_of(i));
                    for k in 0..3 {
                        let s = g.log_scales[i][k] as f64;
                        close(
                            "log-scale",
                            i,
                            d.log_scales[i][k],
                            s,
                            2e-6 * s.abs().max(1.0),
                        );
                    }
                    opacity_close(i, d.opacity_logits[i], g.opacity_logits[i], 2e-6);
                    assert!(
                        quat_error(d.rotations[i], g.rotations[i]) < 1e-6,
                        "rotation {i}"
                    );
                }
            }
        }
    }
}

/// The glTF writer's SH sign flips are the parity of each basis function under the turn about z.
#[test]
fn gltf_sh_signs_match_the_basis() {
    let g = extreme_scene(5, 3, 1);
    let bytes = encode(SceneFormat::Glb, &g, &WriteOptions::default()).unwrap();
    let d = decode(SceneFormat::Glb, &bytes, Path::new("x")).unwrap();
    assert_eq!(d.sh_rest, g.sh_rest);
    let mut a = [0.0f64; 16];
    let mut b = [0.0f64; 16];
    let dir = [0.3f64, -0.5, 0.81];
    splat_core::sh::basis(dir, 16, &mut a);
    splat_core::sh::basis([-dir[0], -dir[1], dir[2]], 16, &mut b);
    for k in 1..16 {
        let parity = if k % 2 == 1 { -1.0 } else { 1.0 };
        assert!(
            (b[k] - parity * a[k]).abs() < 1e-12,
            "basis {k}: {} vs {}",
            b[k],
            a[k]
        );
    }
}

#[test]
fn every_format_is_detected_and_read_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let g = extreme_scene(60, 2, 300);
    for format in SceneFormat::ALL {
        let path = dir.path().join(format.export_name());
        splat_io::write_scene(&path, &g, format, &WriteOptions::default()).unwrap();
        let back = splat_io::read_scene(&path).unwrap();
        assert_eq!(back.len(), 300, "{format}");
        if format != SceneFormat::Splat {
            assert_eq!(back.sh_degree, 2, "{format}");
        }
        if format != SceneFormat::SogFolder {
            let bytes = std::fs::read(&path).unwrap();
            let sniffed = SceneFormat::sniff(&bytes);
            let expected = match format {
                SceneFormat::Splat => None,
                f => Some(f),
            };
            assert_eq!(sniffed, expected, "{format}");
            // Detected from content even under a wrong name (except headerless .splat).
            if expected.is_some() {
                let renamed = dir.path().join(format!("renamed-{}.bin", format.name()));
                std::fs::copy(&path, &renamed).unwrap();
                assert_eq!(
                    splat_io::read_scene(&renamed).unwrap().len(),
                    300,
                    "{format}"
                );
            }
        }
    }
    // A .splat whose first float starts like a gzip stream is still a .splat.
    let mut tricky = encode(SceneFormat::Splat, &g, &WriteOptions::default()).unwrap();
    tricky[..2].copy_from_slice(&[0x1f, 0x8b]);
    let p = dir.path().join("tricky.splat");
    std::fs::write(&p, &tricky).unwrap();
    assert_eq!(splat_io::read_scene(&p).unwrap().len(), 300);
    // The SOG folder is also read by naming the folder.
    let folder = dir.path().join("point_cloud_sog");
    assert_eq!(splat_io::read_scene(&folder).unwrap().len(), 300);
}

#[test]
fn writers_refuse_non_finite_scenes() {
    let mut g = extreme_scene(61, 1, 10);
    g.sh_rest[7] = f32::NAN;
    for format in SceneFormat::ALL {
        if format == SceneFormat::SogFolder {
            continue;
        }
        let e = encode(format, &g, &WriteOptions::default()).unwrap_err();
        assert!(e.to_string().contains("non-finite"), "{format}: {e}");
    }
}

#[test]
fn same_scene_same_bytes() {
    let g = extreme_scene(62, 3, 5000);
    for format in [
        SceneFormat::CompressedPly,
        SceneFormat::Spz,
        SceneFormat::Sog,
        SceneFormat::Glb,
    ] {
        let a = encode(format, &g, &WriteOptions::default()).unwrap();
        let b = encode(format, &g, &WriteOptions::default()).unwrap();
        assert!(a == b, "{format} output differs between runs");
    }
}

/// Typed errors, naming the file, for each kind of damage the issue lists.
#[test]
fn damaged_files_give_typed_errors() {
    let path = Path::new("/data/scene-file");
    let g = extreme_scene(63, 1, 300);
    let opts = |v| WriteOptions {
        spz_version: v,
        ..Default::default()
    };
    let err = |format: SceneFormat, bytes: &[u8]| -> String {
        let e = decode(format, bytes, path).expect_err("damaged input accepted");
        let msg = e.to_string();
        assert!(msg.starts_with("/data/scene-file: "), "{msg}");
        msg
    };
    // Truncated, every format.
    for (format, v) in [
        (SceneFormat::CompressedPly, 3),
        (SceneFormat::Spz, 3),
        (SceneFormat::Spz, 4),
        (SceneFormat::Sog, 3),
        (SceneFormat::Glb, 3),
        (SceneFormat::Gltf, 3),
    ] {
        let bytes = encode(format, &g, &opts(v)).unwrap();
        for cut in [bytes.len() / 3, bytes.len() - 7] {
            err(format, &bytes[..cut]);
        }
    }
    assert!(err(SceneFormat::Splat, &[0u8; 40]).contains("multiple of 32"));
    // An absurd count in an SPZ v4 header (and in v3's, inside the gzip).
    let mut v4 = encode(SceneFormat::Spz, &g, &opts(4)).unwrap();
    v4[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(err(SceneFormat::Spz, &v4).contains("claims"));
    v4[8..12].copy_from_slice(&1_000_000u32.to_le_bytes());
    err(SceneFormat::Spz, &v4);
    // Corrupt zstd: garbage in the first stream.
    let mut v4 = encode(SceneFormat::Spz, &g, &opts(4)).unwrap();
    let first = 32 + 16 * 6;
    for b in &mut v4[first..first + 8] {
        *b ^= 0x5a;
    }
    assert!(err(SceneFormat::Spz, &v4).contains("zstd"));
    // Corrupt gzip.
    let mut v3 = encode(SceneFormat::Spz, &g, &opts(3)).unwrap();
    let mid = v3.len() / 2;
    for b in &mut v3[mid..mid + 16] {
        *b ^= 0xa5;
    }
    assert!(err(SceneFormat::Spz, &v3).contains("gzip"));
    // Corrupt zip, and a corrupt WebP inside an intact zip.
    let sog = encode(SceneFormat::Sog, &g, &WriteOptions::default()).unwrap();
    assert!(err(SceneFormat::Sog, &sog[10..]).contains("zip"));
    // A damaged image in the zip fails its CRC; in a SOG folder, the WebP decoder.
    let mut damaged = sog.clone();
    let at = damaged
        .windows(4)
        .position(|w| w == b"VP8L")
        .expect("a lossless WebP")
        + 12;
    for b in &mut damaged[at..at + 24] {
        *b = 0xff;
    }
    assert!(err(SceneFormat::Sog, &damaged).contains("checksum"));
    let dir = tempfile::tempdir().unwrap();
    let meta = dir.path().join("meta.json");
    splat_io::write_scene(&meta, &g, SceneFormat::SogFolder, &WriteOptions::default()).unwrap();
    let image = dir.path().join("quats.webp");
    let mut webp = std::fs::read(&image).unwrap();
    let n = webp.len();
    for b in &mut webp[20..n.min(60)] {
        *b = 0xff;
    }
    std::fs::write(&image, &webp).unwrap();
    let e = splat_io::read_scene(&meta).unwrap_err().to_string();
    assert!(e.contains("WebP") && e.contains("quats.webp"), "{e}");
    // NaN in a GLB accessor and in a .splat record.
    let mut glb = encode(SceneFormat::Glb, &g, &WriteOptions::default()).unwrap();
    let n = glb.len();
    glb[n - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(err(SceneFormat::Glb, &glb).contains("not finite"));
    let mut splat = encode(SceneFormat::Splat, &g, &WriteOptions::default()).unwrap();
    splat[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(err(SceneFormat::Splat, &splat).contains("not finite"));
}

/// The anti-aliasing flag travels where the format has a place for it (PLY comment, SPZ header flag
/// 0x1, SOG meta `antialias`) and is false on reading a file without it.
#[test]
fn the_antialiased_flag_round_trips() {
    let mut g = common::extreme_scene(11, 1, 300);
    for antialiased in [false, true] {
        g.antialiased = antialiased;
        for (format, version) in [
            (SceneFormat::Ply, 3),
            (SceneFormat::CompressedPly, 3),
            (SceneFormat::Spz, 2),
            (SceneFormat::Spz, 3),
            (SceneFormat::Spz, 4),
            (SceneFormat::Sog, 3),
        ] {
            let opts = WriteOptions {
                spz_version: version,
                ..Default::default()
            };
            let back = round_trip(format, &g, &opts);
            assert_eq!(back.antialiased, antialiased, "{format:?} v{version}");
        }
        // Formats without a place for it read as not anti-aliased.
        for format in [SceneFormat::Splat, SceneFormat::Glb] {
            let back = round_trip(format, &g, &WriteOptions::default());
            assert!(!back.antialiased, "{format:?}");
        }
    }
    let bytes = encode(SceneFormat::Ply, &g, &WriteOptions::default()).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..200]).contains("comment antialiased 1\n"));
}
