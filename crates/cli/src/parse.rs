//! Parsers of argument values shared by the commands (clap `value_parser`s).

use splat_io::formats::SceneFormat;

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
