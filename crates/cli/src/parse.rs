//! Parsers of argument values shared by the commands (clap `value_parser`s).

use splat_io::formats::SceneFormat;
use splat_train::config::ResolutionLevel;

/// Parses "x,y,z" (`--background`, `--up`, `--look-from`, `--look-at`).
pub fn parse_vec3(s: &str) -> Result<[f64; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(format!("expected three comma-separated numbers, got {s:?}"));
    }
    let mut v = [0.0; 3];
    for (i, p) in parts.iter().enumerate() {
        v[i] = p
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{p:?} is not a number"))?;
        if !v[i].is_finite() {
            return Err(format!("{p:?} is not finite"));
        }
    }
    Ok(v)
}

/// Parses a format name for `--export`.
pub fn parse_format(s: &str) -> Result<SceneFormat, String> {
    SceneFormat::from_name(s).ok_or_else(|| {
        format!(
            "unknown format {s:?}; one of: {}",
            SceneFormat::ALL.map(|f| f.name()).join(", ")
        )
    })
}

/// Parses `--spz-version`.
pub fn parse_spz_version(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(v @ 2..=4) => Ok(v),
        _ => Err(format!("{s:?}: SPZ versions 2, 3 or 4 are written")),
    }
}

/// Parses `--pose-opt-lr`: a finite rate above 0 and at most 1e-2 (a rate of radians and scene
/// units a step; more throws the poses about).
pub fn parse_pose_lr(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1e-2 => Ok(v),
        Ok(_) => Err(format!("{s:?}: the rate must be above 0 and at most 1e-2")),
        Err(_) => Err(format!("{s:?} is not a number")),
    }
}

/// A `--resolution-schedule` value (one argument: clap reads an `Option<Vec<_>>` as many).
#[derive(Clone, Debug, PartialEq)]
pub struct Levels(pub Vec<ResolutionLevel>);

/// `--resolution-schedule`: `FACTOR@STEP` levels separated by commas, steps increasing from 0, or
/// `full` for none.
pub fn parse_resolution_schedule(s: &str) -> Result<Levels, String> {
    if s.trim() == "full" {
        return Ok(Levels(Vec::new()));
    }
    let mut levels: Vec<ResolutionLevel> = Vec::new();
    for part in s.split(',') {
        let (f, step) = part
            .trim()
            .split_once('@')
            .ok_or_else(|| format!("`{part}` is not FACTOR@STEP (e.g. 4@0,2@1000,1@2000)"))?;
        let downscale: u32 = f
            .trim()
            .parse()
            .map_err(|_| format!("`{f}` is not a whole factor"))?;
        let from: u64 = step
            .trim()
            .parse()
            .map_err(|_| format!("`{step}` is not a step number"))?;
        if !(1..=64).contains(&downscale) {
            return Err(format!("factor {downscale} is not in 1..=64"));
        }
        if levels.last().is_some_and(|l| l.from >= from) {
            return Err(format!(
                "steps must increase: {from} after {}",
                levels.last().unwrap().from
            ));
        }
        levels.push(ResolutionLevel { from, downscale });
    }
    Ok(Levels(levels))
}

/// `--time-budget`: seconds from `90s`, `5m`, `1h`, `1.5h` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: the unit must be s, m or h (e.g. 90s, 5m, 1h)"
            ))
        }
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 90s, 5m, 1h)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("`{s}`: a duration must be above 0"));
    }
    Ok(v * scale)
}
