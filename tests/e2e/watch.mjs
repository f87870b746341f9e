// Keeps the viewer page open (as a user watching training would) until the training status reaches
// its last step or SECONDS pass, then prints how many frames it received. Used to measure the
// training slowdown with the live view open (BENCHMARKS.md). Usage: node watch.mjs URL_OR_FILE SECONDS
// With a file, the browser starts first (a user's browser is already running) and the page opens as
// soon as a `http://...` URL appears in the file (the `viewer:` line `splat train --view` prints).
import { chromium } from "playwright-core";
import { existsSync, readFileSync } from "node:fs";

const [target, seconds] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"],
});
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
await page.goto(url);
let last = "";
while (Date.now() < deadline) {
  last = await page.evaluate(() => document.getElementById("status").textContent);
  const m = /step (\d+)\/(\d+)/.exec(last);
  if (m && m[1] === m[2]) break;
  await page.waitForTimeout(1000);
}
const sv = await page.evaluate(() => ({ frames: window.splatViewer.frames, rest: window.splatViewer.restFrames }));
console.log(JSON.stringify({ ...sv, status: last }));
await browser.close();
