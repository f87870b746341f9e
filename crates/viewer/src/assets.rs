//! The files the page loads, embedded in the binary: the page and its script, and the vendored
//! browser libraries (Spark 2.2.0 and three.js 0.187.0, fetched by `scripts/vendor-web.sh` from the
//! npm registry by exact version and integrity hash; `assets/vendor/SHA256SUMS` lists the hash of
//! every file, checked by `tests/vendor.rs`). Nothing is fetched at run time: the page's import map
//! points `three` and `three/addons/` at these routes.

/// One embedded file: its route, its bytes and its MIME type.
pub struct Asset {
    pub route: &'static str,
    pub bytes: &'static [u8],
    pub mime: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

macro_rules! vendored {
    ($route:literal, $mime:expr) => {
        Asset {
            route: concat!("/vendor/", $route),
            bytes: include_bytes!(concat!("../assets/vendor/", $route)),
            mime: $mime,
        }
    };
}

/// The page.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");

/// Every embedded file but the page, by route.
pub const ASSETS: &[Asset] = &[
    Asset {
        route: "/viewer.js",
        bytes: include_bytes!("../assets/viewer.js"),
        mime: JS,
    },
    vendored!("spark/spark.module.min.js", JS),
    vendored!("spark/LICENSE", TEXT),
    vendored!("three/three.module.js", JS),
    vendored!("three/three.core.js", JS),
    vendored!("three/addons/postprocessing/Pass.js", JS),
    vendored!("three/LICENSE", TEXT),
];

/// The hash list written by `scripts/vendor-web.sh`.
pub const VENDOR_SHA256SUMS: &str = include_str!("../assets/vendor/SHA256SUMS");
