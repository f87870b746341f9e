// AbsGS (composed last after `rasterize_bwd.wgsl` and the records): each pixel's 2D-mean gradient enters
// the sums as its absolute value, per component.
fn mean_term(x: f32) -> f32 {
    return abs(x);
}
