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
    let d = WriteOptions::default();
    let enc = |f: SceneFormat, g: &Gaussians<f32>, o: &WriteOptions| encode(f, g, o).unwrap();
    put(
        "compressed_ply",
        "deg1_3.compressed.ply",
        enc(SceneFormat::CompressedPly, &scene(1, 1, 3), &d),
    );
    put(
        "compressed_ply",
        "deg0_300.compressed.ply",
        enc(SceneFormat::CompressedPly, &scene(2, 0, 300), &d),
    );
    put(
        "splat",
        "four.splat",
        enc(SceneFormat::Splat, &scene(3, 0, 4), &d),
    );
    for (v, degree, n) in [(2, 1, 3), (3, 3, 5), (4, 0, 10), (4, 2, 4)] {
        let o = WriteOptions {
            spz_version: v,
            ..Default::default()
        };
        put(
            "spz",
            &format!("v{v}_deg{degree}_{n}.spz"),
            enc(SceneFormat::Spz, &scene(4 + v as u64, degree, n), &o),
        );
    }
    put("spz", "v1_deg1_3.spz", spz_v1(&scene(9, 1, 3)));
    put(
        "sog",
        "deg1_5.sog",
        enc(SceneFormat::Sog, &scene(10, 1, 5), &d),
    );
    put(
        "sog",
        "deg0_3.sog",
        enc(SceneFormat::Sog, &scene(11, 0, 3), &d),
    );
    put(
        "glb",
        "deg1_3.glb",
        enc(SceneFormat::Glb, &scene(12, 1, 3), &d),
    );
    put(
        "gltf",
        "deg0_2.gltf",
        enc(SceneFormat::Gltf, &scene(13, 0, 2), &d),
    );
}
