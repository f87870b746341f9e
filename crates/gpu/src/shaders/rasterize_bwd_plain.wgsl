// The gradients themselves (composed last after `rasterize_bwd.wgsl` and its way of summing).
fn mean_term(x: f32) -> f32 {
    return x;
}
