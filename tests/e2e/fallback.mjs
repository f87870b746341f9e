// The viewer in a Chromium without WebGL (--disable-3d-apis): the page must fall back to splat's
// reference render and show a frame from the server. Usage: node fallback.mjs URL
// Prints one JSON line: the page's mode, whether it found WebGL2, frames received, errors shown.
import { chromium } from "playwright-core";
import { launch } from "./browser.mjs";

const [url] = process.argv.slice(2);
const browser = await launch(chromium, ["--disable-3d-apis", "--disable-webgl"]);
try {
  const page = await browser.newPage({ viewport: { width: 480, height: 320 } });
  await page.goto(url);
  await page.waitForFunction(() => window.splatViewer.restFrames > 0, null, { timeout: 60000 });
  const s = await page.evaluate(() => ({ mode: window.splatViewer.mode, webgl2: window.splatViewer.webgl2,
                                         restFrames: window.splatViewer.restFrames, errors: window.splatViewer.errors,
                                         format: window.splatViewer.last.header.format }));
  console.log(JSON.stringify(s));
} finally {
  await browser.close();
}
