//! `scene.html`: the viewer and a scene in one HTML file that opens by double-click from disk (file://,
//! no server, no network), to send to someone.
//!
//! The page is the served viewer's page (`index.html`, `viewer.js`, the vendored three.js and Spark)
//! with the scene as SPZ v3 (the smallest format splat writes, and the one the served viewer sends,
//! so both draw the same splats), all of it inside the file:
//!
//! - One payload: the scripts gzipped, one after another, then the scene's SPZ bytes as they are
//!   (SPZ is gzip already). A manifest (JSON in its own element) gives each part's offset and length,
//!   the payload's length, the hello message the served page gets over its WebSocket (the scene's
//!   centre and radius, up, background, the dataset cameras for the camera list) and the splat count.
//! - Binary in HTML without base64's third more: the page is declared windows-1252, whose decoder maps
//!   every byte to one character (WHATWG's table has no holes), so `textContent` of the payload's
//!   `<script type="application/octet-stream">` is its bytes one to one. Four bytes are escaped, as `=`
//!   and a digit: NUL (the parser replaces it), CR (the parser turns CR and CRLF into LF), `<` (so that
//!   neither `</script` nor `<!--` can occur in the element) and `=` itself: 4 of 256 values, 1.6% on
//!   compressed data. Everything else in the file is ASCII (the manifest's JSON escapes the rest).
//! - `standalone.js` (inline, classic script) maps the text back to bytes, gunzips the scripts
//!   (`DecompressionStream`), gives each a blob: URL with its imports rewritten here to `"splat:ID"`
//!   and pointed there at the other parts' URLs, and starts `viewer.js` with the scene. Blob modules and
//!   blob workers (Spark sorts in one) load from a file:// page in Chromium.
//! - A scene over [`MAX_BROWSER_SPLATS`] or [`MAX_BROWSER_BYTES`] is not decoded until the user asks
//!   (the page says why instead of freezing the tab); one over [`MAX_STRING`] cannot be read by any
//!   browser's script at all and is refused here.

use std::io::Write;
use std::sync::OnceLock;

use splat_core::Gaussians;
use splat_io::formats::{encode, SceneFormat, WriteOptions};

use crate::assets::{Asset, ASSETS, INDEX_HTML};
use crate::ViewerOptions;

/// Splats beyond which the page asks before decoding: Spark keeps about 32 bytes a splat on the GPU
/// plus the SH, and 8 M of them (0.5-1 GB with SH) are what a laptop's browser holds; phones hold less.
pub const MAX_BROWSER_SPLATS: usize = 8_000_000;
/// Payload bytes beyond which the page asks before decoding (the tab holds the text, twice its bytes
/// in UTF-16, and the bytes themselves while decoding).
pub const MAX_BROWSER_BYTES: usize = 400_000_000;
/// V8's longest string (2^29 - 24 UTF-16 units; Firefox's is shorter still): a payload beyond it
/// cannot be read by the page's script.
pub const MAX_STRING: usize = (1 << 29) - 24;

/// The byte that starts an escape, and the bytes escaped, in the order of the digit that follows.
const ESCAPE: u8 = b'=';
const ESCAPED: [u8; 4] = [0x00, 0x0d, b'<', b'='];

/// Why a page cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("the scene cannot be encoded as SPZ: {0}")]
    Encode(String),
    #[error("the page would hold {bytes} bytes of data, more than a browser's script can read ({max}): reduce the scene (fewer splats, --sh-degree 0)")]
    TooLarge { bytes: usize, max: usize },
}

/// A page, made.
pub struct Page {
    pub html: Vec<u8>,
    /// The SPZ file inside it (as `splat convert SCENE scene.spz` writes it).
    pub scene_bytes: usize,
    /// The viewer's scripts as served (uncompressed), and as stored in the page (gzipped).
    pub script_bytes: usize,
    pub stored_script_bytes: usize,
    pub splats: usize,
    /// Over the browser limits: the page asks before decoding.
    pub too_large_for_browsers: bool,
}

/// One script of the page: its id in the manifest, its asset, and the imports rewritten to ids.
struct ScriptPart {
    id: &'static str,
    route: &'static str,
    imports: &'static [(&'static str, &'static str)],
}

/// The scripts in load order (each imports only earlier ones).
const SCRIPTS: &[ScriptPart] = &[
    ScriptPart {
        id: "three-core",
        route: "/vendor/three/three.core.js",
        imports: &[],
    },
    ScriptPart {
        id: "three",
        route: "/vendor/three/three.module.js",
        imports: &[("from './three.core.js'", "from 'splat:three-core'")],
    },
    ScriptPart {
        id: "pass",
        route: "/vendor/three/addons/postprocessing/Pass.js",
        imports: &[("from 'three'", "from 'splat:three'")],
    },
    ScriptPart {
        id: "spark",
        route: "/vendor/spark/spark.module.min.js",
        imports: &[
            ("from \"three\"", "from \"splat:three\""),
            (
                "from \"three/addons/postprocessing/Pass.js\"",
                "from \"splat:pass\"",
            ),
        ],
    },
    ScriptPart {
        id: "viewer",
        route: "/viewer.js",
        imports: &[],
    },
];

/// The loader, inline in the page.
const LOADER_JS: &str = include_str!("../assets/standalone.js");

fn asset(route: &str) -> &'static Asset {
    ASSETS
        .iter()
        .find(|a| a.route == route)
        .expect("every page script is an embedded asset")
}

/// A script with its imports pointed at the page's parts; panics if an import is missing (the
/// vendored files are fixed; a test runs this).
fn rewritten(part: &ScriptPart) -> String {
    let mut text = String::from_utf8(asset(part.route).bytes.to_vec()).expect("UTF-8 scripts");
    for (from, to) in part.imports {
        assert!(text.contains(from), "{}: no {from}", part.route);
        text = text.replace(from, to);
    }
    text
}

/// The page's scripts: (id, gzipped bytes) each, and their size as served.
type Scripts = (Vec<(&'static str, Vec<u8>)>, usize);

/// The scripts, rewritten and gzipped once per process.
fn scripts() -> &'static Scripts {
    static CACHE: OnceLock<Scripts> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mut raw = 0;
        let parts = SCRIPTS
            .iter()
            .map(|p| {
                let text = rewritten(p);
                raw += asset(p.route).bytes.len();
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                gz.write_all(text.as_bytes()).expect("gzip to memory");
                (p.id, gz.finish().expect("gzip to memory"))
            })
            .collect();
        (parts, raw)
    })
}

/// `bytes` as the payload element's text (see the module docs).
pub fn escape_payload(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + bytes.len() / 50);
    for &b in bytes {
        match ESCAPED.iter().position(|&e| e == b) {
            Some(k) => out.extend_from_slice(&[ESCAPE, b'0' + k as u8]),
            None => out.push(b),
        }
    }
}

/// The inverse of [`escape_payload`] on the page's bytes (what the loader does on their characters;
/// for tests).
pub fn unescape_payload(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut it = text.iter();
    while let Some(&b) = it.next() {
        if b == ESCAPE {
            let k = it.next()?.checked_sub(b'0')? as usize;
            out.push(*ESCAPED.get(k)?);
        } else if ESCAPED.contains(&b) {
            return None;
        } else {
            out.push(b);
        }
    }
    Some(out)
}

/// JSON as ASCII that cannot end a script element: every non-ASCII character and `<` as `\uXXXX`
/// (both occur only inside strings).
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() && c != '<' {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Text for an HTML element, ASCII (character references for the rest).
fn html_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            c if c.is_ascii() && !c.is_ascii_control() => c.to_string(),
            c => format!("&#{};", c as u32),
        })
        .collect()
}

/// The page for `gaussians`, titled `title`, with `options`' up, background and dataset cameras (their
/// photos are not stored: the page lists the cameras to jump to).
pub fn page(
    gaussians: &Gaussians<f32>,
    title: &str,
    options: &ViewerOptions,
) -> Result<Page, PageError> {
    let spz = encode(
        SceneFormat::Spz,
        gaussians,
        &WriteOptions {
            spz_version: 3,
            ..Default::default()
        },
    )
    .map_err(|e| PageError::Encode(e.to_string()))?;
    let (parts, script_bytes) = scripts();
    let mut payload = Vec::new();
    let mut listed = Vec::new();
    for (id, bytes) in parts.iter().map(|(i, b)| (*i, b)).chain([("scene", &spz)]) {
        listed.push(serde_json::json!({"id": id, "offset": payload.len(), "length": bytes.len()}));
        payload.extend_from_slice(bytes);
    }
    if payload.len() > MAX_STRING {
        return Err(PageError::TooLarge {
            bytes: payload.len(),
            max: MAX_STRING,
        });
    }
    let hello: serde_json::Value =
        serde_json::from_str(&crate::session::hello_json(gaussians, 0, None, options))
            .expect("hello is JSON");
    let manifest = serde_json::json!({
        "bytes": payload.len(),
        "parts": listed,
        "splats": gaussians.len(),
        "antialiased": gaussians.antialiased,
        "hello": hello,
        "max_splats": MAX_BROWSER_SPLATS,
        "max_bytes": MAX_BROWSER_BYTES,
        "max_string": MAX_STRING,
    });
    let html = assemble(title, &ascii_json(&manifest.to_string()), &payload);
    Ok(Page {
        html,
        scene_bytes: spz.len(),
        script_bytes: *script_bytes,
        stored_script_bytes: parts.iter().map(|(_, b)| b.len()).sum(),
        splats: gaussians.len(),
        too_large_for_browsers: gaussians.len() > MAX_BROWSER_SPLATS
            || payload.len() > MAX_BROWSER_BYTES,
    })
}

/// The served page, made self-contained: windows-1252, no import map, the payload and the loader
/// where the module script was.
fn assemble(title: &str, manifest: &str, payload: &[u8]) -> Vec<u8> {
    let swap = |s: &str, from: &str, to: &str| -> String {
        assert!(s.contains(from), "index.html: no {from}");
        s.replace(from, to)
    };
    let mut head = swap(
        INDEX_HTML,
        r#"<meta charset="utf-8"/>"#,
        r#"<meta charset="windows-1252"/>"#,
    );
    head = swap(
        &head,
        "<title>splat viewer</title>",
        &format!("<title>{} - splat</title>", html_text(title)),
    );
    let map_start = head
        .find(r#"<script type="importmap">"#)
        .expect("import map");
    let map_end = map_start + head[map_start..].find("</script>\n").expect("end") + 10;
    head.replace_range(map_start..map_end, "");
    let module = r#"<script type="module" src="/viewer.js"></script>"#;
    let (before, after) = head.split_at(head.find(module).expect("module script"));
    let after = &after[module.len()..];
    let mut out = Vec::with_capacity(payload.len() * 51 / 50 + 64 * 1024);
    out.extend_from_slice(before.as_bytes());
    out.extend_from_slice(NOTICE.as_bytes());
    out.extend_from_slice(b"<script type=\"application/json\" id=\"splat-manifest\">");
    out.extend_from_slice(manifest.as_bytes());
    out.extend_from_slice(
        b"</script>\n<script type=\"application/octet-stream\" id=\"splat-payload\">",
    );
    escape_payload(payload, &mut out);
    out.extend_from_slice(b"</script>\n<script>\n");
    out.extend_from_slice(LOADER_JS.as_bytes());
    out.extend_from_slice(b"</script>\n");
    out.extend_from_slice(after.as_bytes());
    out
}

/// Where the loader says why the scene is not shown.
const NOTICE: &str =
    "<div id=\"splat-notice\" style=\"display: none; position: fixed; left: 50%; top: 30%; \
transform: translate(-50%, -50%); max-width: 460px; padding: 14px 18px; background: #222; \
border: 1px solid #555; line-height: 1.5\"></div>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_escapes_round_trip_every_byte() {
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 256) as u8).collect();
        let mut text = Vec::new();
        escape_payload(&bytes, &mut text);
        assert!(!text.iter().any(|b| [0u8, 0x0d, b'<'].contains(b)));
        assert_eq!(text.len(), bytes.len() + bytes.len() * 4 / 256);
        assert_eq!(unescape_payload(&text).unwrap(), bytes);
        assert_eq!(unescape_payload(b"=9"), None);
        assert_eq!(unescape_payload(b"a<"), None);
    }

    #[test]
    fn every_script_import_is_rewritten_and_the_rest_is_ascii() {
        for p in SCRIPTS {
            let text = rewritten(p);
            // Outside comments (Pass.js's docs show its import).
            let code = text.lines().filter(|l| {
                let l = l.trim_start();
                !(l.starts_with('*') || l.starts_with("//") || l.starts_with("/*"))
            });
            for line in code {
                for bare in ["from 'three", "from \"three", "from './", "from \"./"] {
                    assert!(!line.contains(bare), "{}: {bare} left", p.route);
                }
            }
        }
        assert!(INDEX_HTML.is_ascii() && LOADER_JS.is_ascii());
        assert_eq!(
            ascii_json(r#"{"a":"é</script>😀"}"#),
            r#"{"a":"\u00e9\u003c/script>\ud83d\ude00"}"#
        );
        assert_eq!(html_text("a<b>&é"), "a&lt;b&gt;&amp;&#233;");
    }

    /// The page's text outside the payload is ASCII; its manifest and payload give back the scripts
    /// and the scene's SPZ, byte for byte; it holds at most the SPZ and the scripts plus 5%.
    #[test]
    fn a_page_holds_its_parts() {
        let g = splat_core::synthetic::builtin_scene(2_000);
        let opts = ViewerOptions {
            background: [0.0; 3],
            up: [0.0, -1.0, 0.0],
            dataset: Default::default(),
        };
        let page = page(&g, "tést <1>", &opts).unwrap();
        let html = &page.html;
        let find = |pat: &[u8], from: usize| {
            from + html[from..]
                .windows(pat.len())
                .position(|w| w == pat)
                .unwrap()
        };
        let open = br#"id="splat-payload">"#;
        let start = find(open, 0) + open.len();
        let end = find(b"</script>", start);
        assert!(html[..start].is_ascii() && html[end..].is_ascii());
        let m0 = find(br#"id="splat-manifest">"#, 0) + 20;
        let m1 = find(b"</script>", m0);
        let manifest: serde_json::Value = serde_json::from_slice(&html[m0..m1]).unwrap();
        let payload = unescape_payload(&html[start..end]).unwrap();
        assert_eq!(manifest["bytes"], payload.len());
        assert_eq!(manifest["splats"], g.len());
        let parts = manifest["parts"].as_array().unwrap();
        let part = |i: usize| {
            let (o, l) = (
                parts[i]["offset"].as_u64().unwrap(),
                parts[i]["length"].as_u64().unwrap(),
            );
            &payload[o as usize..(o + l) as usize]
        };
        let spz = encode(
            SceneFormat::Spz,
            &g,
            &WriteOptions {
                spz_version: 3,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(parts.last().unwrap()["id"], "scene");
        assert_eq!(part(parts.len() - 1), &spz[..]);
        let mut viewer = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(part(parts.len() - 2))
            .read_to_string(&mut viewer)
            .unwrap();
        assert_eq!(viewer, rewritten(&SCRIPTS[4]));
        assert!(String::from_utf8_lossy(&html[..start])
            .contains("<title>t&#233;st &lt;1&gt; - splat</title>"));
        let bound = (page.scene_bytes + page.script_bytes) as f64 * 1.05;
        assert!((html.len() as f64) < bound, "{} > {bound}", html.len());
    }
}
