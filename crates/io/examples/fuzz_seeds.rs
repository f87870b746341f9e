//! Writes the seed inputs of the scene-format fuzz targets into `fuzz/seeds/<target>/`:
//! `cargo run -p splat-io --example fuzz_seeds`. Small seeded scenes in each format and version.

use std::io::Write;
use std::path::Path;

use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::Gaussians;
use splat_io::formats::{encode, SceneFormat, WriteOptions};

fn scene(seed: u64, degree: usize, count: usize) -> Gaussians<f32> {
    let opts = RandomSceneOptions {
        count,
        sh_degree: degree,
        ..Default::default()
    };
    random_scene(seed, &opts).cast()
}

/// An SPZ version 1 file (float16 positions, first-three rotations), which nothing writes any more.
fn spz_v1(g: &Gaussians<f32>) -> Vec<u8> {
    let v2 = encode(
        SceneFormat::Spz,
        g,
        &WriteOptions {
            spz_version: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&v2[..]), &mut raw).unwrap();
    let n = g.len();
    let mut out = raw[..16].to_vec();
    out[4] = 1;
    for m in &g.means {
        for &v in m {
            out.extend_from_slice(&half(v).to_le_bytes());
        }
    }
    out.extend_from_slice(&raw[16 + 9 * n..]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&out).unwrap();
    gz.finish().unwrap()
}

/// f32 to IEEE half for values well inside its range.
fn half(v: f32) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exp <= 0 {
        return sign;
    }
    sign | ((exp as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let put = |target: &str, name: &str, bytes: Vec<u8>| {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
        println!("{target}/{name}: {} bytes", bytes.len());
    };
    // (target, file name, format, SPZ version, seed, SH degree, splats)
    let cases: [(&str, &str, SceneFormat, u32, u64, usize, usize); 11] = [
        (
            "compressed_ply",
            "deg1_3.compressed.ply",
            SceneFormat::CompressedPly,
            3,
            1,
            1,
            3,
        ),
        (
            "compressed_ply",
            "deg0_300.compressed.ply",
            SceneFormat::CompressedPly,
            3,
            2,
            0,
            300,
        ),
        ("splat", "four.splat", SceneFormat::Splat, 3, 3, 0, 4),
        ("spz", "v2_deg1_3.spz", SceneFormat::Spz, 2, 4, 1, 3),
        ("spz", "v3_deg3_5.spz", SceneFormat::Spz, 3, 5, 3, 5),
        ("spz", "v4_deg0_10.spz", SceneFormat::Spz, 4, 6, 0, 10),
        ("spz", "v4_deg2_4.spz", SceneFormat::Spz, 4, 7, 2, 4),
        ("sog", "deg1_5.sog", SceneFormat::Sog, 3, 10, 1, 5),
        ("sog", "deg0_3.sog", SceneFormat::Sog, 3, 11, 0, 3),
        ("glb", "deg1_3.glb", SceneFormat::Glb, 3, 12, 1, 3),
        ("gltf", "deg0_2.gltf", SceneFormat::Gltf, 3, 13, 0, 2),
    ];
    for (target, name, format, spz_version, seed, degree, n) in cases {
        let opts = WriteOptions {
            spz_version,
            ..Default::default()
        };
        put(
            target,
            name,
            encode(format, &scene(seed, degree, n), &opts).unwrap(),
        );
    }
    put("spz", "v1_deg1_3.spz", spz_v1(&scene(9, 1, 3)));
}
