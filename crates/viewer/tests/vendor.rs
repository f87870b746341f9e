//! The vendored browser libraries embedded in the binary are exactly the files `scripts/vendor-web.sh`
//! fetched (by pinned version and integrity hash) and listed in `assets/vendor/SHA256SUMS`, each
//! package has its LICENSE beside it, and every route serves a file with its MIME type.

use sha2::{Digest, Sha256};
use splat_viewer::assets::{ASSETS, VENDOR_SHA256SUMS};

fn listed() -> Vec<(String, String)> {
    VENDOR_SHA256SUMS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (hash, name) = l.split_once("  ").expect("sha256sum format");
            (name.to_string(), hash.to_string())
        })
        .collect()
}

#[test]
fn embedded_files_match_their_pinned_hashes() {
    let listed = listed();
    let vendored: Vec<_> = ASSETS
        .iter()
        .filter_map(|a| a.route.strip_prefix("/vendor/").map(|name| (name, a)))
        .collect();
    assert_eq!(
        vendored.len(),
        listed.len(),
        "SHA256SUMS and the embedded files differ"
    );
    for (name, asset) in vendored {
        let want = listed
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is embedded but not in SHA256SUMS"));
        let got = format!("{:x}", Sha256::digest(asset.bytes));
        assert_eq!(got, want.1, "{name} is not the file vendor-web.sh fetched");
    }
}

#[test]
fn pinned_versions_and_licenses() {
    assert!(VENDOR_SHA256SUMS.contains("# @sparkjsdev/spark 2.2.0"));
    assert!(VENDOR_SHA256SUMS.contains("# three 0.187.0"));
    for package in ["spark", "three"] {
        let license = ASSETS
            .iter()
            .find(|a| a.route == format!("/vendor/{package}/LICENSE"))
            .unwrap_or_else(|| panic!("no LICENSE for {package}"));
        let text = String::from_utf8_lossy(license.bytes);
        assert!(text.contains("MIT License") || text.contains("Permission is hereby granted"));
    }
}

#[test]
fn every_asset_has_a_mime_type() {
    for a in ASSETS {
        let ext = a.route.rsplit('.').next().unwrap();
        let want = if a.route.ends_with("LICENSE") {
            "text/plain"
        } else if ext == "js" {
            "text/javascript"
        } else {
            panic!("no expected MIME type for {}", a.route)
        };
        assert!(a.mime.starts_with(want), "{}: {}", a.route, a.mime);
        assert!(!a.bytes.is_empty(), "{}", a.route);
    }
}
