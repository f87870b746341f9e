//! The WGSL sources, one file per stage in `src/shaders/`. WGSL has no includes: the per-Gaussian stages
//! get `common_camera.wgsl` (the camera block, SH constants and basis, `dot3`) prepended here, the
//! rasterize stages `common_raster.wgsl` (parameters and shared inputs), the rasterize backwards the
//! shared tile walk `rasterize_bwd.wgsl` followed by their way of summing per Gaussian (records or
//! atomics) and the per-pixel term (plain or absolute), the resident bookkeeping and the densification
//! edit `common_random.wgsl` (the host's stateless random numbers); the naga test validates
//! exactly these composed sources.

macro_rules! with_raster {
    ($file:literal) => {
        concat!(
            include_str!("shaders/common_raster.wgsl"),
            include_str!(concat!("shaders/", $file))
        )
    };
}

macro_rules! with_raster_bwd {
    ($file:literal, $term:literal) => {
        concat!(
            include_str!("shaders/common_raster.wgsl"),
            include_str!("shaders/rasterize_bwd.wgsl"),
            include_str!(concat!("shaders/", $file)),
            include_str!(concat!("shaders/", $term))
        )
    };
}

macro_rules! with_random {
    ($file:literal) => {
        concat!(
            include_str!("shaders/common_random.wgsl"),
            include_str!(concat!("shaders/", $file))
        )
    };
}

macro_rules! with_camera {
    ($file:literal) => {
        concat!(
            include_str!("shaders/common_camera.wgsl"),
            include_str!(concat!("shaders/", $file))
        )
    };
}

pub const PROJECT: &str = with_camera!("project.wgsl");
pub const PROJECT_BWD: &str = with_camera!("project_bwd.wgsl");
pub const TILE_COUNT: &str = include_str!("shaders/tile_count.wgsl");
pub const PREFIX_SUM: &str = include_str!("shaders/prefix_sum.wgsl");
pub const RADIX_SORT: &str = include_str!("shaders/radix_sort.wgsl");
pub const TILE_RANGES: &str = include_str!("shaders/tile_ranges.wgsl");
pub const DISPATCH_ARGS: &str = include_str!("shaders/dispatch_args.wgsl");
pub const RASTERIZE_FWD: &str = with_raster!("rasterize_fwd.wgsl");
pub const RASTERIZE_BWD: &str =
    with_raster_bwd!("rasterize_bwd_records.wgsl", "rasterize_bwd_plain.wgsl");
pub const RASTERIZE_BWD_ATOMIC: &str =
    with_raster_bwd!("rasterize_bwd_atomic.wgsl", "rasterize_bwd_plain.wgsl");
/// The records pass summing absolute per-pixel 2D-mean gradients (absgrad).
pub const RASTERIZE_BWD_ABS: &str =
    with_raster_bwd!("rasterize_bwd_records.wgsl", "rasterize_bwd_abs.wgsl");
pub const LOSS: &str = include_str!("shaders/loss.wgsl");
pub const ADAM: &str = include_str!("shaders/adam.wgsl");
pub const DENSIFY_STATS: &str = include_str!("shaders/densify_stats.wgsl");
pub const RESIDENT: &str = with_random!("resident.wgsl");
pub const DENSIFY_EDIT: &str = with_random!("densify_edit.wgsl");
pub const PEAK: &str = include_str!("shaders/peak.wgsl");

/// Every compiled source with the file it is built around (the `common_*.wgsl` files are preludes).
pub const ALL: &[(&str, &str)] = &[
    ("project.wgsl", PROJECT),
    ("project_bwd.wgsl", PROJECT_BWD),
    ("tile_count.wgsl", TILE_COUNT),
    ("prefix_sum.wgsl", PREFIX_SUM),
    ("radix_sort.wgsl", RADIX_SORT),
    ("tile_ranges.wgsl", TILE_RANGES),
    ("dispatch_args.wgsl", DISPATCH_ARGS),
    ("rasterize_fwd.wgsl", RASTERIZE_FWD),
    ("rasterize_bwd.wgsl", RASTERIZE_BWD),
    ("rasterize_bwd_records.wgsl", RASTERIZE_BWD),
    ("rasterize_bwd_atomic.wgsl", RASTERIZE_BWD_ATOMIC),
    ("rasterize_bwd_plain.wgsl", RASTERIZE_BWD),
    ("rasterize_bwd_abs.wgsl", RASTERIZE_BWD_ABS),
    ("loss.wgsl", LOSS),
    ("adam.wgsl", ADAM),
    ("densify_stats.wgsl", DENSIFY_STATS),
    ("resident.wgsl", RESIDENT),
    ("densify_edit.wgsl", DENSIFY_EDIT),
    ("peak.wgsl", PEAK),
];

#[cfg(test)]
mod tests {
    use splat_core::{sh_coeffs_for_degree, MAX_SH_DEGREE};

    /// The bounds of `common_camera.wgsl`'s SH loops are the largest SH degree's counts: smaller ones
    /// would drop coefficients, larger ones would only unroll dead code.
    #[test]
    fn the_sh_loop_bounds_are_the_largest_degree() {
        let coeffs = sh_coeffs_for_degree(MAX_SH_DEGREE);
        let source = include_str!("shaders/common_camera.wgsl");
        for line in [
            format!("const SH_COEFFS_MAX: u32 = {coeffs}u;"),
            format!("const SH_REST_MAX: u32 = {}u;", 3 * (coeffs - 1)),
        ] {
            assert!(source.contains(&line), "common_camera.wgsl lacks `{line}`");
        }
    }
}
