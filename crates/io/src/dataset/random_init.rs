//! Initial points for a dataset without SfM points (most transforms.json captures, COLMAP models
//! converted from other tools, LLFF folders without `sparse/`).
//!
//! Where random points go decides what training has to undo. Points near or behind the cameras sit in
//! front of the scene in other views; densification clones them and they stay as a veil of floaters.
//! So the points fill only the volume the cameras look at:
//!
//! 1. The *focus*: the point nearest to every optical axis in the least-squares sense,
//!    `argmin_p sum_i |(I - z_i z_i^T)(p - c_i)|^2` with `c_i` the camera centres and `z_i` their
//!    viewing directions. It is used when the axes are not all parallel (the smallest eigenvalue of
//!    `mean(I - z z^T)` is at least [`MIN_CONVERGENCE`], about 2 degrees of spread) and it lies in front
//!    of at least 90% of the cameras. Object-centric captures converge on the object; forward-facing
//!    ones (LLFF) converge far ahead (fern: depth 32, its SfM points' median depth is 29).
//! 2. A radius `r`: the median over cameras of `|p - c_i| sin(half field of view)`, the sphere a camera
//!    at that distance sees fill its narrower field of view (lego: 1.37; the original's cube for the
//!    NeRF-synthetic scenes has half size 1.3).
//! 3. Half the points uniform in the ball of radius `r` around the focus, with the original's near-grey
//!    random colours (its initialization of the NeRF-synthetic scenes, a cube of half size 1.3).
//! 4. The other half for what lies behind the object (a real capture's table, room, garden): random
//!    pixels of random views unprojected to a depth uniform in `[d, 3 d]`, `d` the focus's depth in that
//!    view (the SfM points of cup and fern lie within 1.5 and 1.3 times it, 95th percentile), coloured
//!    by the pixel, and kept only outside every camera's *free space*, the sphere of radius
//!    `|p - c_j| - r` around camera `j`: nothing between a camera and the ball, nor behind one.
//!
//! Measured (BENCHMARKS.md, 7,000 steps): cup without its SfM points went from 21.84 dB (depths 0.5-20
//! along the rays, a veil in every view) to 24.36 dB with the ball alone (the background then has to be
//! drawn by Gaussians in the ball, in front of the cup in the close views) to 29.40 dB with the ball and
//! what lies behind it (29.29 dB from the SfM points); lego as a plain transforms.json from 33.76 dB (a
//! cube of the camera radius around the camera centres: a grey haze on the white) to 35.12 dB (ball).
//! A slice of each view's frustum around the focus was tried first and rejected before measuring: its
//! far corners reach towards the cameras on the other side of an object-centric ring.
//!
//! Without a focus (parallel axes, cameras looking outward from a centre) the points are random pixels
//! of random views unprojected to a depth uniform in `S..10 S`, `S` the scene extent of the cameras
//! (1 if they all sit at one point), coloured by the pixel. The NeRF-synthetic loader
//! keeps the original's cube; LLFF with `poses_bounds.npy` uses its near and far bounds.

use rand::{Rng, SeedableRng};
use splat_core::math::{dot3, mat3_t_vec};
use splat_core::{Camera, Projection};

use super::{Dataset, Points, View};

/// Random points when a dataset has none.
pub const RANDOM_POINTS: usize = 100_000;

/// The smallest eigenvalue of `mean(I - z z^T)` below which the optical axes count as parallel.
pub const MIN_CONVERGENCE: f64 = 1e-3;

/// Where the cameras look: the focus point and the radius around it that fills their views.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Focus {
    pub center: [f64; 3],
    pub radius: f64,
}

/// The viewing direction of a camera in world space (`R^T e_z`).
fn forward(c: &Camera) -> [f64; 3] {
    c.rotation[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|k| a[k] - b[k])
}

fn norm(a: [f64; 3]) -> f64 {
    dot3(a, a).sqrt()
}

/// Eigenvalues of a symmetric 3x3 matrix, ascending (the trigonometric closed form).
fn symmetric_eigenvalues(a: &[[f64; 3]; 3]) -> [f64; 3] {
    let p1 = a[0][1].powi(2) + a[0][2].powi(2) + a[1][2].powi(2);
    let q = (a[0][0] + a[1][1] + a[2][2]) / 3.0;
    let p2 = (0..3).map(|i| (a[i][i] - q).powi(2)).sum::<f64>() + 2.0 * p1;
    let p = (p2 / 6.0).sqrt();
    if p < 1e-300 {
        return [q; 3];
    }
    let b: [[f64; 3]; 3] = std::array::from_fn(|i| {
        std::array::from_fn(|j| (a[i][j] - if i == j { q } else { 0.0 }) / p)
    });
    let det = b[0][0] * (b[1][1] * b[2][2] - b[1][2] * b[2][1])
        - b[0][1] * (b[1][0] * b[2][2] - b[1][2] * b[2][0])
        + b[0][2] * (b[1][0] * b[2][1] - b[1][1] * b[2][0]);
    let phi = (det / 2.0).clamp(-1.0, 1.0).acos() / 3.0;
    let largest = q + 2.0 * p * phi.cos();
    let smallest = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
    [smallest, 3.0 * q - largest - smallest, largest]
}

/// Solves `a x = b` for a symmetric positive definite 3x3 `a` by Cramer's rule.
fn solve3(a: &[[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    if d.abs() < 1e-300 {
        return None;
    }
    Some(std::array::from_fn(|k| {
        let mut m = *a;
        for (row, bv) in m.iter_mut().zip(b) {
            row[k] = bv;
        }
        det(&m) / d
    }))
}

/// The focus of the cameras (see the module docs), or `None` when their axes do not converge in front
/// of them.
pub fn focus_of(cameras: &[&Camera]) -> Option<Focus> {
    if cameras.len() < 2 {
        return None;
    }
    let n = cameras.len() as f64;
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for cam in cameras {
        let (z, c) = (forward(cam), cam.center());
        let zc = dot3(z, c);
        for i in 0..3 {
            for j in 0..3 {
                let m = if i == j { 1.0 } else { 0.0 } - z[i] * z[j];
                a[i][j] += m / n;
            }
            b[i] += (c[i] - z[i] * zc) / n;
        }
    }
    if symmetric_eigenvalues(&a)[0] < MIN_CONVERGENCE {
        return None;
    }
    let center = solve3(&a, b)?;
    let in_front = cameras
        .iter()
        .filter(|c| dot3(sub(center, c.center()), forward(c)) > 0.0)
        .count();
    if (in_front as f64) < 0.9 * n {
        return None;
    }
    let mut radii: Vec<f64> = cameras
        .iter()
        .map(|c| {
            let (tx, ty) = c.tan_half_fov();
            // The narrower half angle (the fisheye's are angles already, past 90 degrees capped).
            let half = match c.projection {
                Projection::Pinhole => tx.min(ty).atan(),
                Projection::Equidistant => tx.min(ty).min(std::f64::consts::FRAC_PI_2),
            };
            norm(sub(center, c.center())) * half.sin()
        })
        .collect();
    radii.sort_by(f64::total_cmp);
    let radius = radii[radii.len() / 2];
    (radius.is_finite() && radius > 0.0).then_some(Focus { center, radius })
}

/// `count` random points in the volume the training views look at, and a note that says where. Only
/// the training views are used (their cameras and pixels): the held-out views stay unseen.
pub fn random_points_seen(ds: &Dataset, count: usize, seed: u64) -> (Points, String) {
    let cameras: Vec<&Camera> = ds.train.iter().map(|v| &v.camera).collect();
    match focus_of(&cameras) {
        Some(f) => {
            let mut points = random_ball_points(count / 2, f, seed);
            let bubbles: Vec<([f64; 3], f64)> = cameras
                .iter()
                .map(|c| {
                    (
                        c.center(),
                        (norm(sub(f.center, c.center())) - f.radius).max(0.0),
                    )
                })
                .collect();
            let free = |p: &[f64; 3]| bubbles.iter().all(|(c, b)| norm(sub(*p, *c)) >= *b);
            let focus_depth = |c: &Camera| dot3(sub(f.center, c.center()), forward(c));
            let behind = random_points_in_views(
                ds,
                count - count / 2,
                |c| (focus_depth(c), 3.0 * focus_depth(c)),
                free,
                seed.wrapping_add(1),
            );
            points.positions.extend(behind.positions);
            points.colors.extend(behind.colors);
            let note = format!(
                "no SfM points: {} random points where the cameras look (half in a ball of radius \
                 {:.3} around [{:.3}, {:.3}, {:.3}], where their axes converge; half behind it in the \
                 views, up to 3 times its depth)",
                points.positions.len(),
                f.radius,
                f.center[0],
                f.center[1],
                f.center[2]
            );
            (points, note)
        }
        None => {
            let s = super::scene_extent(cameras.iter().copied());
            let note = format!(
                "no SfM points: the camera axes do not converge; {count} random points between \
                 depths {s:.3} and {:.3} (1 and 10 times the camera extent)",
                10.0 * s
            );
            (
                random_points_in_views(ds, count, |_| (s, 10.0 * s), |_| true, seed),
                note,
            )
        }
    }
}

/// Random initial points: random pixels of random training views unprojected to a depth uniform in
/// `depths(camera)`, coloured by the pixel; only those `keep` accepts (fewer than `count` if it accepts
/// fewer than one in 50). A view whose depth range is not in front of it contributes nothing.
pub fn random_points_in_views(
    ds: &Dataset,
    count: usize,
    depths: impl Fn(&Camera) -> (f64, f64),
    keep: impl Fn(&[f64; 3]) -> bool,
    seed: u64,
) -> Points {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let views: Vec<&View> = ds.train.iter().collect();
    let mut pts = Points::default();
    if views.is_empty() {
        return pts;
    }
    for _ in 0..50 * count {
        if pts.positions.len() == count {
            break;
        }
        let v = views[rng.random_range(0..views.len())];
        let c = &v.camera;
        let (x, y) = (rng.random_range(0..c.width), rng.random_range(0..c.height));
        let (near, far) = depths(c);
        if !(near > 0.0 && far.is_finite()) {
            continue;
        }
        let depth = if far > near {
            rng.random_range(near..far)
        } else {
            near
        };
        // At `depth` along the optical axis (pinhole) or along the pixel's ray (fisheye).
        let cam_pt = match c.projection {
            Projection::Pinhole => [
                (x as f64 + 0.5 - c.cx) / c.fx * depth,
                (y as f64 + 0.5 - c.cy) / c.fy * depth,
                depth,
            ],
            Projection::Equidistant => c
                .pixel_direction([x as f64 + 0.5, y as f64 + 0.5])
                .map(|v| v * depth),
        };
        // world = R^T (p - t)
        let world = mat3_t_vec(&c.rotation, sub(cam_pt, c.translation));
        if !keep(&world) {
            continue;
        }
        pts.positions.push(world);
        let o = ((y * c.width + x) * 3) as usize;
        pts.colors
            .push([v.image.data[o], v.image.data[o + 1], v.image.data[o + 2]]);
    }
    pts
}

/// Uniform random points in the focus ball, with the original's near-grey random colours.
pub fn random_ball_points(count: usize, focus: Focus, seed: u64) -> Points {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut pts = Points::default();
    while pts.positions.len() < count {
        let u: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        if dot3(u, u) > 1.0 {
            continue;
        }
        pts.positions.push(std::array::from_fn(|k| {
            focus.center[k] + focus.radius * u[k]
        }));
        pts.colors.push(original_grey(&mut rng));
    }
    pts
}

/// The original's random colour: `SH = U(0,1)/255` per channel, as 8-bit RGB.
fn original_grey(rng: &mut impl Rng) -> [u8; 3] {
    std::array::from_fn(|_| {
        let sh: f64 = rng.random::<f64>() / 255.0;
        ((0.5 + splat_core::sh::SH_C0 * sh) * 255.0).round() as u8
    })
}

/// Random points in a cube, with the original's near-grey random colours (`SH = U(0,1)/255`): the
/// original's initialization of the NeRF-synthetic scenes.
pub fn random_cube_points(count: usize, center: [f64; 3], half: f64, seed: u64) -> Points {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut pts = Points::default();
    for _ in 0..count {
        pts.positions.push(std::array::from_fn(|k| {
            center[k] + rng.random_range(-half..half)
        }));
        pts.colors.push(original_grey(&mut rng));
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(count: usize, radius: f64, height: f64, target: [f64; 3]) -> Vec<Camera> {
        (0..count)
            .map(|i| {
                let a = i as f64 / count as f64 * std::f64::consts::TAU;
                let eye = [radius * a.cos(), radius * a.sin(), height];
                Camera::look_at(eye, target, [0.0, 0.0, 1.0], 40.0, 64, 48)
            })
            .collect()
    }

    #[test]
    fn eigenvalues_of_a_known_matrix() {
        // Eigenvalues 1, 2, 4 rotated by an orthonormal basis.
        let q = [
            [2.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0],
            [-2.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0],
            [1.0 / 3.0, -2.0 / 3.0, 2.0 / 3.0],
        ];
        let l = [1.0, 2.0, 4.0];
        let a: [[f64; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| (0..3).map(|k| q[k][i] * l[k] * q[k][j]).sum())
        });
        let e = symmetric_eigenvalues(&a);
        for k in 0..3 {
            assert!((e[k] - l[k]).abs() < 1e-12, "{e:?}");
        }
        assert_eq!(
            symmetric_eigenvalues(&[[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]),
            [2.0; 3]
        );
    }

    #[test]
    fn a_ring_of_cameras_focuses_on_its_target() {
        let target = [0.3, -0.2, 0.5];
        let cams = ring(24, 4.0, 1.5, target);
        let refs: Vec<&Camera> = cams.iter().collect();
        let f = focus_of(&refs).expect("converging axes");
        for k in 0..3 {
            assert!((f.center[k] - target[k]).abs() < 1e-9, "{:?}", f.center);
        }
        // The narrower (vertical) half field of view at the median distance (24 cameras: the 13th).
        let mut d: Vec<f64> = cams.iter().map(|c| norm(sub(target, c.center()))).collect();
        d.sort_by(f64::total_cmp);
        let (_, ty) = cams[0].tan_half_fov();
        assert!(
            (f.radius - d[12] * ty.atan().sin()).abs() < 1e-9,
            "{}",
            f.radius
        );
    }

    #[test]
    fn parallel_or_outward_cameras_have_no_focus() {
        let parallel: Vec<Camera> = (0..10)
            .map(|i| {
                let eye = [i as f64 * 0.1, 0.0, 0.0];
                Camera::look_at(eye, [eye[0], 0.0, 5.0], [0.0, -1.0, 0.0], 50.0, 64, 48)
            })
            .collect();
        assert_eq!(focus_of(&parallel.iter().collect::<Vec<_>>()), None);
        // Cameras on a ring looking outward: the axes meet behind every camera.
        let outward: Vec<Camera> = (0..12)
            .map(|i| {
                let a = i as f64 / 12.0 * std::f64::consts::TAU;
                let eye = [a.cos(), a.sin(), 0.0];
                let out = [3.0 * a.cos(), 3.0 * a.sin(), 0.0];
                Camera::look_at(eye, out, [0.0, 0.0, 1.0], 50.0, 64, 48)
            })
            .collect();
        assert_eq!(focus_of(&outward.iter().collect::<Vec<_>>()), None);
    }

    fn dataset_of(cameras: Vec<Camera>) -> Dataset {
        let views: Vec<View> = cameras
            .into_iter()
            .enumerate()
            .map(|(i, camera)| View {
                name: format!("{i}"),
                image: super::super::Rgb8Image {
                    width: camera.width,
                    height: camera.height,
                    data: vec![(i * 10) as u8; (camera.width * camera.height * 3) as usize],
                },
                camera,
                mask: None,
                display_jpeg: None,
            })
            .collect();
        Dataset {
            root: Default::default(),
            format: super::super::DatasetFormat::Transforms,
            train: views,
            test: Vec::new(),
            points: Points::default(),
            points_from_dataset: false,
            background: [0.0; 3],
            scene_extent: 1.0,
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn random_points_stay_around_the_focus_and_away_from_the_cameras() {
        let target = [0.0, 0.0, 0.5];
        let ds = dataset_of(ring(16, 4.0, 1.0, target));
        let cams: Vec<&Camera> = ds.train.iter().map(|v| &v.camera).collect();
        let f = focus_of(&cams).unwrap();
        let (pts, note) = random_points_seen(&ds, 5000, 7);
        assert_eq!(pts.positions.len(), 5000);
        assert!(note.contains("where the cameras look"), "{note}");
        // Half in the ball, and the ball filled: its outer shell (r/2..r) holds 7/8 of those.
        let within = |p: &[f64; 3], r: f64| norm(sub(*p, target)) <= r + 1e-9;
        let ball = pts.positions.iter().filter(|p| within(p, f.radius)).count();
        assert!(ball >= 2500, "{ball}");
        let inner = pts.positions[..2500]
            .iter()
            .filter(|p| within(p, 0.5 * f.radius))
            .count();
        assert!((inner as f64 / 2500.0 - 0.125).abs() < 0.02, "{inner}");
        assert!(pts.positions[..2500].iter().all(|p| within(p, f.radius)));
        // None in the free space before a camera: at least |focus - c| - r from every centre c.
        for p in &pts.positions {
            for c in &cams {
                let free = norm(sub(target, c.center())) - f.radius;
                assert!(norm(sub(*p, c.center())) >= free - 1e-9, "{p:?}");
            }
        }
        // The other half lies behind the ball in the views (up to 3 times the focus depth), coloured
        // by the views' pixels (every view contributes).
        let behind = &pts.positions[2500..];
        let far = 3.0
            * cams
                .iter()
                .map(|c| norm(sub(target, c.center())))
                .fold(0.0, f64::max);
        assert!(behind.iter().any(|p| !within(p, f.radius)));
        assert!(behind.iter().all(|p| norm(sub(*p, target)) <= far));
        let colours: std::collections::BTreeSet<u8> =
            pts.colors[2500..].iter().map(|c| c[0]).collect();
        assert_eq!(colours.len(), 16);
        // Same seed, same points.
        assert_eq!(random_points_seen(&ds, 5000, 7).0.positions, pts.positions);
    }

    #[test]
    fn without_a_focus_points_lie_in_the_views_between_one_and_ten_extents() {
        let cameras: Vec<Camera> = (0..10)
            .map(|i| {
                let eye = [i as f64 * 0.2, 0.0, 0.0];
                Camera::look_at(eye, [eye[0], 0.0, 5.0], [0.0, -1.0, 0.0], 50.0, 64, 48)
            })
            .collect();
        let ds = dataset_of(cameras);
        let s = super::super::scene_extent(ds.train.iter().map(|v| &v.camera));
        let (pts, note) = random_points_seen(&ds, 2000, 1);
        assert!(note.contains("do not converge"), "{note}");
        // All cameras look along +z from the x axis: depth is z.
        for p in &pts.positions {
            assert!(p[2] >= s - 1e-9 && p[2] <= 10.0 * s + 1e-9, "{p:?}");
        }
        // Coloured by the pixels of all views.
        let colours: std::collections::BTreeSet<u8> = pts.colors.iter().map(|c| c[0]).collect();
        assert_eq!(colours.len(), 10);
    }

    /// A fisheye seeing 170 degrees across: points go out along each pixel's ray (past 90 degrees
    /// too) at the distance asked, and its focus radius comes from its half angle.
    #[test]
    fn fisheye_points_lie_on_their_pixels_rays() {
        let mut cam = Camera::look_at([0.0; 3], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0], 60.0, 64, 48);
        cam.projection = Projection::Equidistant;
        cam.fx = 32.0 / 85f64.to_radians();
        cam.fy = cam.fx;
        let ds = dataset_of(vec![cam.clone()]);
        let pts = random_points_in_views(&ds, 500, |_| (1.0, 2.0), |_| true, 3);
        assert_eq!(pts.positions.len(), 500);
        let mut behind = 0;
        for p in &pts.positions {
            let q = cam.to_camera_space(*p);
            let (uv, dist) = cam.project_camera_space(q).unwrap();
            assert!((1.0 - 1e-9..=2.0 + 1e-9).contains(&dist), "{dist}");
            assert!(
                (0.0..=64.0).contains(&uv[0]) && (0.0..=48.0).contains(&uv[1]),
                "{uv:?}"
            );
            behind += (q[2] < 0.0) as usize;
        }
        assert!(behind > 0, "no point past 90 degrees");
        let ring = ring(12, 4.0, 1.0, [0.0, 0.0, 0.5]);
        let fish: Vec<Camera> = ring
            .iter()
            .map(|c| Camera {
                projection: Projection::Equidistant,
                fx: 32.0 / 85f64.to_radians(),
                fy: 32.0 / 85f64.to_radians(),
                ..c.clone()
            })
            .collect();
        let f = focus_of(&fish.iter().collect::<Vec<_>>()).unwrap();
        // The narrower half angle is 48 / 64 of 85 degrees; sin of it times the distance to the focus.
        let d = norm(sub(f.center, fish[0].center()));
        let want = d * (24.0 / 32.0 * 85f64.to_radians()).sin();
        assert!(
            (f.radius - want).abs() < 1e-6 * want,
            "{} vs {want}",
            f.radius
        );
    }

    #[test]
    fn held_out_views_and_views_facing_away_give_no_points() {
        let target = [0.0, 0.0, 0.5];
        let mut cameras = ring(20, 4.0, 1.0, target);
        // View 3 turned around: the focus is behind it (1 of 20, so the focus still holds).
        let eye = cameras[3].center();
        cameras[3] = Camera::look_at(
            eye,
            [2.0 * eye[0], 2.0 * eye[1], eye[2]],
            [0.0, 0.0, 1.0],
            40.0,
            64,
            48,
        );
        let mut ds = dataset_of(cameras);
        // Views 15.. held out (colours 150..190).
        ds.test = ds.train.split_off(15);
        let (pts, _) = random_points_seen(&ds, 4000, 2);
        assert_eq!(pts.positions.len(), 4000);
        let colours: std::collections::BTreeSet<u8> =
            pts.colors[2000..].iter().map(|c| c[0]).collect();
        assert!(!colours.contains(&30), "the view facing away");
        assert!(
            colours.iter().all(|&c| c < 150),
            "held-out views: {colours:?}"
        );
        assert_eq!(colours.len(), 14);
    }
}
