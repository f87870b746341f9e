//! The position learning rate: log-linear from `init` to `final` over `steps`, then constant
//! (the original's `get_expon_lr_func` with no delay).

pub fn exp_decay(init: f64, final_: f64, step: u64, steps: u64) -> f64 {
    if steps == 0 {
        return final_;
    }
    let t = (step as f64 / steps as f64).clamp(0.0, 1.0);
    (init.ln() * (1.0 - t) + final_.ln() * t).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_midpoint() {
        assert!((exp_decay(1e-4, 1e-6, 0, 100) - 1e-4).abs() < 1e-18);
        assert!((exp_decay(1e-4, 1e-6, 100, 100) - 1e-6).abs() < 1e-18);
        assert!((exp_decay(1e-4, 1e-6, 50, 100) - 1e-5).abs() < 1e-15);
        assert!((exp_decay(1e-4, 1e-6, 500, 100) - 1e-6).abs() < 1e-18);
    }
}
