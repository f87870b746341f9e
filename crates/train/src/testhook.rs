//! A point where tests stop the process from outside. With `SPLAT_TEST_PAUSE_AT=POINT:STEP` in the
//! environment, the thread reaching [`pause_point`]`(POINT, STEP)` prints `SPLAT_TEST_PAUSED POINT STEP`
//! on stderr and sleeps forever, so that a test can SIGKILL the process at a known place (in the middle
//! of a step, of densification, of a checkpoint write). Without the variable it costs one load.

use std::sync::OnceLock;

fn target() -> Option<&'static (String, u64)> {
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    TARGET
        .get_or_init(|| {
            let v = std::env::var("SPLAT_TEST_PAUSE_AT").ok()?;
            let (point, step) = v.rsplit_once(':')?;
            Some((point.to_string(), step.parse().ok()?))
        })
        .as_ref()
}

/// The points the training run offers.
pub const POINTS: &[&str] = &["step", "densify", "checkpoint-write"];

pub fn pause_point(point: &str, step: u64) {
    if let Some((p, s)) = target() {
        if p == point && *s == step {
            eprintln!("SPLAT_TEST_PAUSED {point} {step}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

/// With `SPLAT_TEST_DRIFT_AT=RANK:STEP`, whether this rank should corrupt its replica at this step
/// (tests of the replica check of multi-rank runs).
pub fn drift_requested(rank: usize, step: u64) -> bool {
    static TARGET: OnceLock<Option<(usize, u64)>> = OnceLock::new();
    TARGET
        .get_or_init(|| {
            let v = std::env::var("SPLAT_TEST_DRIFT_AT").ok()?;
            let (r, s) = v.split_once(':')?;
            Some((r.parse().ok()?, s.parse().ok()?))
        })
        .is_some_and(|t| t == (rank, step))
}
