// Measures the viewer in this (software) browser: time from opening the page to its first frame
// with splats in it,
// the scene's download size and load time, and the median frame time at the starting camera and at
// dataset camera 0 (each frame waited for), with the camera still and while it turns. Usage: node measure.mjs URL [WIDTH HEIGHT FRAMES]
// Prints one JSON line. For BENCHMARKS.md; not a test.
import { chromium } from "playwright-core";
import { launch } from "./browser.mjs";

const [url, width = "800", height = "640", frames = "9"] = process.argv.slice(2);
const browser = await launch(chromium);
try {
  const page = await browser.newPage({ viewport: { width: Number(width), height: Number(height) } });
  const opened = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.splatViewer.firstFrameMs !== null, null, { timeout: 600000 });
  const firstFrameMs = Date.now() - opened;
  const info = await page.evaluate(() => ({ bytes: window.splatViewer.sceneBytes, loadMs: window.splatViewer.loadMs,
                                            splats: window.splatViewer.numSplats, errors: window.splatViewer.errors }));
  const bench = (orbit) => page.evaluate(([n, o]) => window.splatViewer.benchmark(n, o), [Number(frames), orbit]);
  let dataset = null;
  if (await page.evaluate(() => document.getElementById("views").options.length > 1)) {
    await page.evaluate(() => window.splatViewer.setView(0));
    await page.waitForTimeout(2000);
    dataset = await bench(false);
    await page.locator("#views").selectOption("");
    await page.waitForTimeout(2000);
  }
  const still = await bench(false);
  const orbiting = await bench(true);
  const brief = (b) => b && { size: [b.width, b.height], medianMs: Math.round(b.medianMs * 10) / 10, drawn: b.activeSplats };
  console.log(JSON.stringify({ firstFrameMs, ...info, still: brief(still), orbiting: brief(orbiting), dataset: brief(dataset) }));
} finally {
  await browser.close();
}
