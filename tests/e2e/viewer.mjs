// Drives the splat viewer in headless Chromium: waits for a frame at rest, saves it with its camera,
// drags to orbit, waits for the new frame at rest and saves that too. Usage:
//   node viewer.mjs URL OUT_DIR
// Writes OUT_DIR/frame1.png, frame1.json (the frame header: size and camera), frame2.png, frame2.json
// and prints one JSON line of what it saw. Exits non-zero on any failure.
import { chromium } from "playwright-core";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"],
});
try {
  const page = await browser.newPage({ viewport: { width: 640, height: 520 } });
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  page.on("pageerror", (e) => logs.push("page error: " + e.message));
  await page.goto(url);
  const restFrame = async (after) => {
    await page.waitForFunction((n) => window.splatViewer.restFrames > n && !window.splatViewer.last.header.moving,
                               after, { timeout: 60000 });
    return page.evaluate(() => ({ rest: window.splatViewer.restFrames, frames: window.splatViewer.frames,
                                  ...window.splatViewer.last }));
  };
  const save = (name, f) => {
    writeFileSync(join(out, name + ".png"), Buffer.from(f.base64, "base64"));
    writeFileSync(join(out, name + ".json"), JSON.stringify(f.header));
  };
  const first = await restFrame(0);
  save("frame1", first);

  // Orbit: drag across the image with the left button.
  const box = await page.locator("#stage").boundingBox();
  const cx = box.x + box.width / 2, cy = box.y + box.height / 2;
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(cx + 12 * i, cy + 3 * i);
  await page.mouse.up();
  const moving = await page.evaluate(() => window.splatViewer.frames);
  const second = await restFrame(first.rest);
  save("frame2", second);
  const sawLowRes = await page.evaluate(() => window.splatViewer.frames);
  console.log(JSON.stringify({ ok: true, restFrames: second.rest, frames: sawLowRes, framesBeforeRest: moving, logs }));
} finally {
  await browser.close();
}
