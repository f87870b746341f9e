// Drives a scene.html page (the viewer and the scene in one file) in headless Chromium with the
// network cut: opened from file://, it must draw without a single request leaving the page's own
// file, blob: and data: URLs. Captures its first view and dataset camera 0 (if it lists cameras), the
// same from the served viewer at SERVED_URL for comparison, and checks that with a splat limit below
// the scene's (`#max-splats=N`) the page says the scene is too large, draws nothing, stays responsive,
// and loads when asked. Usage:
//   node standalone.mjs FILE_URL SERVED_URL OUT_DIR
// Writes OUT_DIR/{page,served}-{initial,view0}.png with a .json camera beside each, and prints one JSON
// line of what it saw. Exits non-zero on any failure.
import { chromium } from "playwright-core";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./browser.mjs";

const [fileUrl, servedUrl, out] = process.argv.slice(2);
const browser = await launch(chromium);
const fail = (msg) => { throw new Error(msg); };
const viewport = { width: 560, height: 330 };

async function captures(page, prefix) {
  const result = {};
  const save = async (name) => {
    const c = await page.evaluate(() => window.splatViewer.capture());
    writeFileSync(join(out, prefix + "-" + name + ".png"), Buffer.from(c.base64, "base64"));
    writeFileSync(join(out, prefix + "-" + name + ".json"), JSON.stringify(c.camera));
    result[name] = c.settled;
  };
  await save("initial");
  const views = await page.evaluate(() => document.getElementById("views").options.length - 1);
  if (views > 0) {
    await page.evaluate(() => window.splatViewer.setView(0));
    await save("view0");
  }
  return { settled: result, views };
}

const state = (page) => page.evaluate(() => {
  const { capture, setView, setMode, benchmark, currentCamera, ...rest } = window.splatViewer;
  return rest;
});

try {
  // The page from disk, offline; every request is recorded.
  const offline = await browser.newContext({ offline: true, viewport });
  const requests = [];
  offline.on("request", (r) => requests.push(r.url()));
  const page = await offline.newPage();
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  page.on("pageerror", (e) => logs.push("page error: " + e.message));
  const opened = Date.now();
  await page.goto(fileUrl);
  await page.waitForFunction(() => window.splatViewer && window.splatViewer.draws > 0, null, { timeout: 120000 })
    .catch(() => fail("the page drew nothing: " + logs.join(" | ")));
  const firstFrameMs = Date.now() - opened;
  const seen = await state(page);
  if (!seen.standalone) fail("the page does not say it is standalone");
  const pageShots = await captures(page, "page");
  const outside = requests.filter((u) => !/^(file|blob|data):/.test(u));
  if (outside.length) fail("requests left the page: " + outside.join(", "));

  // The served viewer, same viewport, same cameras.
  const online = await browser.newContext({ viewport });
  const served = await online.newPage();
  await served.goto(servedUrl);
  await served.waitForFunction(() => window.splatViewer.draws > 0, null, { timeout: 120000 });
  const servedShots = await captures(served, "served");
  await online.close();

  // Too large for this browser (a limit below the scene's splats): a notice, nothing drawn, and
  // the page still answers; "load anyway" loads it.
  const big = await offline.newPage();
  await big.goto(fileUrl + "#max-splats=10");
  await big.waitForSelector("#splat-notice", { state: "visible", timeout: 30000 });
  const notice = await big.locator("#splat-notice").innerText();
  if (!/too large/.test(notice)) fail("notice: " + notice);
  await big.waitForTimeout(1000);
  const bigState = await big.evaluate(() => ({ draws: window.splatViewer.draws || 0, tooLarge: window.splatViewer.tooLarge, answers: 1 + 1 }));
  if (bigState.draws !== 0 || !bigState.tooLarge || bigState.answers !== 2) fail("too large: " + JSON.stringify(bigState));
  await big.locator("#splat-notice button").click();
  await big.waitForFunction(() => window.splatViewer.draws > 0, null, { timeout: 120000 });

  console.log(JSON.stringify({
    firstFrameMs, numSplats: seen.numSplats, decodeMs: seen.decodeMs, errors: seen.errors, requests: requests.length,
    page: pageShots, served: servedShots, notice, logs,
  }));
} finally {
  await browser.close();
}
