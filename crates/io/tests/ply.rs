//! INRIA PLY: layout, round trips, tolerant reading by name, and a typed error for each malformed input.

use std::path::Path;

use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::Gaussians;
use splat_io::ply::property_names;
use splat_io::{ply_bytes, read_ply, read_ply_bytes, write_ply, PlyErrorKind};

fn scene(seed: u64, degree: usize, count: usize) -> Gaussians<f32> {
    random_scene(
        seed,
        &RandomSceneOptions {
            count,
            sh_degree: degree,
            ..Default::default()
        },
    )
    .cast()
}

/// Every property value of Gaussian `i` by INRIA name (normals 0), written out independently of the
/// library's writer.
fn values_by_name(g: &Gaussians<f32>, i: usize) -> Vec<(String, f32)> {
    let k_rest = g.sh_coeffs() - 1;
    let mut v: Vec<(String, f32)> = Vec::new();
    for (n, x) in ["x", "y", "z"].iter().zip(g.means[i]) {
        v.push((n.to_string(), x));
    }
    for n in ["nx", "ny", "nz"] {
        v.push((n.to_string(), 0.0));
    }
    for c in 0..3 {
        v.push((format!("f_dc_{c}"), g.sh_dc[i][c]));
    }
    // Channel-major: f_rest_{ch * k_rest + k} is coefficient k + 1 of channel ch.
    for ch in 0..3 {
        for k in 0..k_rest {
            v.push((
                format!("f_rest_{}", ch * k_rest + k),
                g.sh_rest_of(i)[k * 3 + ch],
            ));
        }
    }
    v.push(("opacity".into(), g.opacity_logits[i]));
    for c in 0..3 {
        v.push((format!("scale_{c}"), g.log_scales[i][c]));
    }
    for c in 0..4 {
        v.push((format!("rot_{c}"), g.rotations[i][c]));
    }
    v
}

#[derive(Clone, Copy, PartialEq)]
enum Body {
    Le,
    Be,
    Ascii,
}

/// A PLY with the given property order (names from the INRIA set; others are extra properties with value
/// 7), `double` for the properties listed in `doubles`, and optionally a `face` element before `vertex`.
fn custom_ply(
    g: &Gaussians<f32>,
    order: &[String],
    doubles: &[&str],
    body: Body,
    face_first: bool,
) -> Vec<u8> {
    let fmt = match body {
        Body::Le => "binary_little_endian",
        Body::Be => "binary_big_endian",
        Body::Ascii => "ascii",
    };
    let mut h = format!("ply\nformat {fmt} 1.0\n");
    if face_first {
        h += "comment written by a test\n";
        h += "element face 2\nproperty list uchar int vertex_indices\nproperty uchar flag\n";
    }
    h += &format!("element vertex {}\n", g.len());
    for name in order {
        let ty = if doubles.contains(&name.as_str()) {
            "double"
        } else {
            "float"
        };
        h += &format!("property {ty} {name}\n");
    }
    h += "end_header\n";
    let mut out = h.into_bytes();
    if face_first {
        match body {
            Body::Ascii => out.extend_from_slice(b"3 0 1 2 9\n4 1 2 3 0 8\n"),
            _ => {
                for (n, flag) in [(3u8, 9u8), (4, 8)] {
                    out.push(n);
                    for k in 0..n as i32 {
                        let b = if body == Body::Be {
                            k.to_be_bytes()
                        } else {
                            k.to_le_bytes()
                        };
                        out.extend_from_slice(&b);
                    }
                    out.push(flag);
                }
            }
        }
    }
    for i in 0..g.len() {
        let vals = values_by_name(g, i);
        let mut line = Vec::new();
        for name in order {
            let v = vals
                .iter()
                .find(|(n, _)| n == name)
                .map(|p| p.1)
                .unwrap_or(7.0);
            let dbl = doubles.contains(&name.as_str());
            match body {
                Body::Ascii => line.push(format!("{v:e}")),
                Body::Le if dbl => out.extend_from_slice(&(v as f64).to_le_bytes()),
                Body::Le => out.extend_from_slice(&v.to_le_bytes()),
                Body::Be if dbl => out.extend_from_slice(&(v as f64).to_be_bytes()),
                Body::Be => out.extend_from_slice(&v.to_be_bytes()),
            }
        }
        if body == Body::Ascii {
            out.extend_from_slice(line.join(" ").as_bytes());
            out.push(b'\n');
        }
    }
    out
}

fn path() -> &'static Path {
    Path::new("scene.ply")
}

#[test]
fn writer_produces_the_inria_layout_byte_for_byte() {
    for degree in 0..=3 {
        let g = scene(degree as u64, degree, 25);
        let inria = custom_ply(&g, &property_names(degree), &[], Body::Le, false);
        assert!(
            ply_bytes(&g).unwrap() == inria,
            "degree {degree}: bytes differ"
        );
        // Read -> write of an INRIA file is byte-identical.
        let back = read_ply_bytes(&inria, path()).unwrap();
        assert_eq!(back, g);
        assert!(
            ply_bytes(&back).unwrap() == inria,
            "read -> write changed bytes"
        );
    }
}

#[test]
fn header_names_and_counts_are_the_original_ones() {
    let g = scene(1, 3, 2);
    let bytes = ply_bytes(&g).unwrap();
    let text = String::from_utf8_lossy(
        &bytes[..bytes
            .windows(11)
            .position(|w| w == b"end_header\n")
            .unwrap()],
    );
    assert!(text
        .starts_with("ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\n"));
    assert_eq!(text.matches("property float f_rest_").count(), 45);
    assert!(
        text.contains("property float f_rest_44\nproperty float opacity\nproperty float scale_0\n")
    );
    assert!(text.ends_with("property float rot_3\n"));
}

#[test]
fn shuffled_properties_without_normals_with_doubles_extras_and_other_elements_load_the_same() {
    for degree in 0..=3 {
        let g = scene(10 + degree as u64, degree, 17);
        let mut order: Vec<String> = property_names(degree)
            .into_iter()
            .filter(|n| !n.starts_with('n'))
            .collect();
        order.reverse();
        order.swap(0, 3);
        order.insert(5, "extra_property".into());
        for body in [Body::Le, Body::Be, Body::Ascii] {
            let bytes = custom_ply(&g, &order, &["x", "opacity", "f_dc_1"], body, true);
            let back = read_ply_bytes(&bytes, path()).unwrap();
            assert_eq!(back, g, "degree {degree}");
        }
    }
}

#[test]
fn file_round_trip_through_disk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("point_cloud.ply");
    let g = scene(3, 2, 100);
    write_ply(&p, &g).unwrap();
    assert_eq!(read_ply(&p).unwrap(), g);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary file left behind"
    );
}

fn err_of(bytes: &[u8]) -> PlyErrorKind {
    let e = read_ply_bytes(bytes, Path::new("/data/broken.ply")).unwrap_err();
    assert!(e.to_string().starts_with("/data/broken.ply: "), "{e}");
    e.kind
}

fn valid(degree: usize) -> Vec<u8> {
    ply_bytes(&scene(4, degree, 3)).unwrap()
}

fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let pos = bytes
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap();
    let mut out = bytes[..pos].to_vec();
    out.extend_from_slice(to.as_bytes());
    out.extend_from_slice(&bytes[pos + from.len()..]);
    out
}

#[test]
fn malformed_inputs_give_typed_errors() {
    let ok = valid(1);
    assert!(matches!(
        err_of(b"PK\x03\x04 zip file"),
        PlyErrorKind::NotPly
    ));
    assert!(matches!(err_of(b""), PlyErrorKind::NotPly));
    assert!(matches!(
        err_of(&replace(&ok, "element vertex 3", "element vertex three")),
        PlyErrorKind::BadHeader { line: 3, .. }
    ));
    assert!(matches!(
        err_of(&replace(&ok, "property float x\n", "property float\n")),
        PlyErrorKind::BadHeader { line: 4, .. }
    ));
    assert!(matches!(
        err_of(&replace(&ok, "property float x", "property quaternion x")),
        PlyErrorKind::BadHeader { .. }
    ));
    assert!(matches!(
        err_of(&replace(&ok, "end_header\n", "")),
        PlyErrorKind::BadHeader { .. }
    ));
    assert!(matches!(
        err_of(&replace(
            &ok,
            "binary_little_endian 1.0",
            "binary_little_endian 2.0"
        )),
        PlyErrorKind::UnsupportedFormat(_)
    ));
    assert!(matches!(
        err_of(&replace(
            &ok,
            "binary_little_endian",
            "binary_middle_endian"
        )),
        PlyErrorKind::UnsupportedFormat(_)
    ));
    assert!(matches!(
        err_of(&replace(&ok, "element vertex", "element point")),
        PlyErrorKind::NoVertexElement
    ));
    match err_of(&replace(
        &ok,
        "property float opacity",
        "property float alpha",
    )) {
        PlyErrorKind::MissingProperty(p) => assert_eq!(p, "opacity"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        err_of(&replace(&ok, "property float f_rest_8\n", "")),
        PlyErrorKind::BadShCount(8)
    ));
    assert!(matches!(
        err_of(&replace(
            &ok,
            "property float x",
            "property list uchar float x"
        )),
        PlyErrorKind::ListProperty(_)
    ));
    // Truncated body, and a count far beyond the body: refused before allocating.
    assert!(matches!(
        err_of(&ok[..ok.len() - 5]),
        PlyErrorKind::Truncated { .. }
    ));
    assert!(matches!(
        err_of(&replace(
            &ok,
            "element vertex 3",
            "element vertex 18446744073709551615"
        )),
        PlyErrorKind::Truncated { .. }
    ));
    // A face element announcing more than the file holds.
    let face = replace(
        &ok,
        "element vertex",
        "element face 1000000\nproperty int a\nelement vertex",
    );
    assert!(matches!(err_of(&face), PlyErrorKind::Truncated { .. }));
}

#[test]
fn non_finite_and_unparsable_values_are_named() {
    let g = scene(5, 0, 3);
    let mut bad = g.clone();
    bad.log_scales[2][1] = f32::NAN;
    let order = property_names(0);
    let bytes = custom_ply(&bad, &order, &[], Body::Le, false);
    match err_of(&bytes) {
        PlyErrorKind::NonFinite {
            vertex, property, ..
        } => {
            assert_eq!((vertex, property.as_str()), (2, "scale_1"))
        }
        other => panic!("{other:?}"),
    }
    let mut inf = g.clone();
    inf.means[0][0] = f32::INFINITY;
    assert!(matches!(
        err_of(&custom_ply(&inf, &order, &[], Body::Ascii, false)),
        PlyErrorKind::NonFinite { vertex: 0, .. }
    ));
    let ascii = custom_ply(&g, &order, &[], Body::Ascii, false);
    let text = String::from_utf8(ascii).unwrap();
    let header_end = text.find("end_header\n").unwrap() + 11;
    // A finite value that no 32-bit float holds (found by the fuzzer: it loaded as infinity).
    let mut huge = text[..header_end].to_string();
    huge += &text[header_end..].replacen(' ', " 1e300 ", 1);
    assert!(matches!(
        err_of(huge.as_bytes()),
        PlyErrorKind::OutOfRange { vertex: 0, .. }
    ));
    let mut broken = text[..header_end].to_string();
    broken += &text[header_end..].replacen(' ', " abc ", 1);
    assert!(matches!(
        err_of(broken.as_bytes()),
        PlyErrorKind::BadNumber { vertex: 0, .. }
    ));
    // Too few ASCII values.
    let short = &text[..text.len() - 40];
    assert!(matches!(
        err_of(short.as_bytes()),
        PlyErrorKind::Truncated { .. }
    ));
}

#[test]
fn writer_refuses_non_finite_parameters_and_missing_files_are_io_errors() {
    let mut g = scene(6, 1, 4);
    g.opacity_logits[3] = f32::NAN;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("out.ply");
    let e = write_ply(&p, &g).unwrap_err();
    assert!(
        e.to_string()
            .contains("Gaussian 3 has a non-finite opacity"),
        "{e}"
    );
    assert!(!p.exists());
    let e = read_ply(&dir.path().join("nope.ply")).unwrap_err();
    assert!(matches!(e.kind, PlyErrorKind::Io(_)));
    assert!(e.to_string().contains("nope.ply"));
}
