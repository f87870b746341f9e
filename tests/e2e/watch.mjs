// Keeps the viewer page open (as a user watching training would) until the training status reaches
// its last step or SECONDS pass, then prints how many scene snapshots the page swapped in and what it
// drew. Used by the `splat train --view` test and to measure the training slowdown with a page open
// (BENCHMARKS.md). Usage: node watch.mjs URL_OR_FILE SECONDS [OUT_DIR]
// With a file, the browser starts first (a user's browser is already running) and the page opens as
// soon as a `http://...` URL appears in the file (the `viewer:` line `splat train --view` prints).
// With OUT_DIR, the page's image after its first snapshot and at the end are saved there as
// first.png and last.png, both from the page's starting camera. With WATCH_DOWNLOAD_ONLY=1 no page
// is drawn: a client on the viewer's WebSocket downloads every snapshot (the server's side of the cost);
// with WATCH_DOWNLOAD_ONLY=connect it only stays connected (training then publishes, nobody downloads).
import { chromium } from "playwright-core";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./browser.mjs";

const [target, seconds, out] = process.argv.slice(2);
const browser = await launch(chromium);
const page = await browser.newPage({ viewport: { width: 640, height: 520 } });
const deadline = Date.now() + Number(seconds) * 1000;
let url = target;
if (!target.startsWith("http")) {
  console.error("browser ready");
  url = null;
  while (!url && Date.now() < deadline) {
    const m = existsSync(target) && /http:\/\/\S+/.exec(readFileSync(target, "utf8"));
    if (m) url = m[0]; else await new Promise((r) => setTimeout(r, 100));
  }
}
if (process.env.WATCH_DOWNLOAD_ONLY) {
  // What training pays for a page, without the page's drawing (which a real machine does on its GPU
  // and SwiftShader does on these cores): a client that downloads every snapshot and draws nothing.
  await page.goto(new URL("/vendor/three/LICENSE", url).href);
  const r = await page.evaluate(async ([ms, fetchScenes]) => {
    const ws = new WebSocket("ws://" + location.host + "/ws");
    let snapshots = 0, bytes = 0, status = "";
    ws.onmessage = async (e) => {
      const m = JSON.parse(e.data);
      if (m.kind === "scene" && fetchScenes) bytes = (await (await fetch("/scene.spz")).arrayBuffer()).byteLength;
      if (m.kind === "scene") snapshots += 1;
      if (m.kind === "status") status = m.status.step + "/" + m.status.total_steps;
    };
    const end = Date.now() + ms;
    while (Date.now() < end && !(status && status.split("/")[0] === status.split("/")[1])) await new Promise((r) => setTimeout(r, 500));
    return { snapshots, sceneBytes: bytes, status };
  }, [deadline - Date.now(), process.env.WATCH_DOWNLOAD_ONLY !== "connect"]);
  console.log(JSON.stringify({ downloadOnly: true, ...r }));
  await browser.close();
  process.exit(0);
}
await page.goto(url);
// While snapshots arrive every 2 s the image may not settle: at most 6 draws for the first one.
const capture = async (name, maxDraws) => {
  if (!out) return null;
  const c = await page.evaluate((n) => window.splatViewer.capture(n), maxDraws);
  writeFileSync(join(out, name + ".png"), Buffer.from(c.base64, "base64"));
  return c.version;
};
await page.waitForFunction(() => window.splatViewer.snapshots > 0, null, { timeout: Number(seconds) * 1000 });
const firstVersion = await page.evaluate(() => window.splatViewer.sceneVersion);
const firstCaptured = await capture("first", 6);
let last = "";
const bytes = [];
while (Date.now() < deadline) {
  last = await page.evaluate(() => document.getElementById("status").textContent);
  bytes.push(await page.evaluate(() => window.splatViewer.sceneBytes));
  const m = /step (\d+)\/(\d+)/.exec(last);
  if (m && m[1] === m[2]) break;
  await page.waitForTimeout(1000);
}
// The last snapshot (published at the final step) may still be on its way.
await page.waitForTimeout(3000);
const lastCaptured = await capture("last", 100);
const sv = await page.evaluate(() => ({ snapshots: window.splatViewer.snapshots, version: window.splatViewer.sceneVersion,
                                        sceneBytes: window.splatViewer.sceneBytes, draws: window.splatViewer.draws,
                                        errors: window.splatViewer.errors }));
console.log(JSON.stringify({ ...sv, firstVersion, firstCaptured, lastCaptured, status: last, maxSceneBytes: Math.max(...bytes) }));
await browser.close();
