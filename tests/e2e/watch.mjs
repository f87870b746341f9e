// Keeps the viewer page open (as a user watching training would) until the training status reaches
// its last step or SECONDS pass, then prints how many frames it received. Used to measure the
// training slowdown with the live view open (BENCHMARKS.md). Usage: node watch.mjs URL SECONDS
import { chromium } from "playwright-core";

const [url, seconds] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 640, height: 520 } });
await page.goto(url);
const deadline = Date.now() + Number(seconds) * 1000;
let last = "";
while (Date.now() < deadline) {
  last = await page.evaluate(() => document.getElementById("status").textContent);
  const m = /step (\d+)\/(\d+)/.exec(last);
  if (m && m[1] === m[2]) break;
  await page.waitForTimeout(200);
}
const sv = await page.evaluate(() => ({ frames: window.splatViewer.frames, rest: window.splatViewer.restFrames }));
console.log(JSON.stringify({ ...sv, status: last }));
await browser.close();
