// The loader of a scene.html page: one file with the viewer's scripts and the scene inside it, opened
// from disk (file://, no server, no network). See crates/viewer/src/standalone.rs for the layout.
//
// The page is declared windows-1252, a single-byte encoding that maps every byte to one character, so
// the payload element's text is the payload's bytes one to one, but for four bytes the HTML parser
// would change or read as markup (NUL, CR, "<") and the escape byte itself, which are written as "="
// and a digit. This script maps the text back to bytes, checks the length, gunzips the scripts, gives
// each a blob: URL with its imports pointed at the others' URLs, and starts viewer.js with the scene.
// A scene larger than a browser draws well is not decoded until the user asks for it.
"use strict";
(function () {
  const ESCAPED = [0x00, 0x0d, 0x3c, 0x3d];
  // windows-1252 (WHATWG): bytes 0x80-0x9F as code points; every other byte is its own code point.
  const HIGH = [0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039,
    0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122,
    0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178];

  const $ = (id) => document.getElementById(id);
  // Until viewer.js replaces it: what tests read before the scene loads.
  const sv = window.splatViewer = { errors: [], draws: 0 };

  function notice(text, button) {
    const box = $("splat-notice");
    box.textContent = text;
    box.style.display = "block";
    if (button) {
      const b = document.createElement("button");
      b.textContent = button.label;
      b.style.marginTop = "10px";
      b.onclick = button.onclick;
      box.appendChild(document.createElement("br"));
      box.appendChild(b);
    }
  }

  class Damaged extends Error {}

  function decode(text, length) {
    const back = new Int32Array(0x2123).fill(-1);
    for (let b = 0; b < 256; b++) if (b < 0x80 || b > 0x9f) back[b] = b;
    HIGH.forEach((cp, i) => { back[cp] = 0x80 + i; });
    const out = new Uint8Array(length);
    let j = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let b = c < back.length ? back[c] : -1;
      if (c === 0x3d) {
        const k = text.charCodeAt(++i) - 0x30;
        b = k >= 0 && k < ESCAPED.length ? ESCAPED[k] : -1;
      }
      if (b < 0 || j >= length) throw new Damaged("unexpected character at " + i);
      out[j++] = b;
    }
    if (j !== length) throw new Damaged(j + " of " + length + " bytes");
    return out;
  }

  async function gunzipText(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }

  async function start(manifest) {
    const t0 = performance.now();
    const bytes = decode($("splat-payload").textContent, manifest.bytes);
    const urls = {};
    let scene = null;
    for (const part of manifest.parts) {
      const slice = bytes.subarray(part.offset, part.offset + part.length);
      if (part.id === "scene") { scene = slice; continue; }
      let src;
      try { src = await gunzipText(slice); } catch (e) { throw new Damaged(part.id + ": " + e); }
      // Imports name the other parts as "splat:ID" (standalone.rs rewrote them).
      src = src.replace(/(["'])splat:([a-z-]+)\1/g, (m, q, id) => JSON.stringify(urls[id]));
      urls[part.id] = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
    }
    window.splatStandalone = {
      decodeMs: Math.round(performance.now() - t0),
      hello: manifest.hello,
      scene: { bytes: scene, antialiased: manifest.antialiased, version: 0, count: manifest.splats },
      modules: urls,
    };
    const s = document.createElement("script");
    s.type = "module";
    s.src = urls.viewer;
    document.body.appendChild(s);
  }

  async function main() {
    const manifest = JSON.parse($("splat-manifest").textContent);
    const tooLarge = (window.location.hash.match(/max-splats=(\d+)/) || [])[1];
    const limit = tooLarge !== undefined ? Number(tooLarge) : manifest.max_splats;
    const run = () => start(manifest).catch((e) => {
      const what = e instanceof Damaged ? "this page's data is damaged (" + e.message + "): make it again with splat"
        : "cannot open the scene: " + e;
      sv.errors.push(what);
      notice(what);
    });
    if (typeof DecompressionStream !== "function") {
      notice("this browser is too old for this page (no DecompressionStream): use a current Chrome, Edge, Firefox or Safari");
      return;
    }
    if (manifest.splats > limit || manifest.bytes > manifest.max_bytes) {
      sv.tooLarge = true;
      const mb = (manifest.bytes / 1e6).toFixed(0);
      notice("This scene is too large for a browser to open safely: " + manifest.splats.toLocaleString() +
        " splats in " + mb + " MB (browsers draw up to about " + limit.toLocaleString() +
        "). Open it with `splat view` instead, or try anyway: the tab may run out of memory.",
        manifest.bytes > manifest.max_string ? null : {
          label: "load anyway",
          onclick: () => { $("splat-notice").style.display = "none"; run(); },
        });
      return;
    }
    run();
  }

  main();
})();
