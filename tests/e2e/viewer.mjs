// Drives the splat viewer in headless Chromium (WebGL2 on SwiftShader, the software GPU): waits for the
// first frame drawn in the browser, captures the page's image at dataset camera 0, the reference
// (server) render of the same camera, two free-camera images around a mouse drag, checks the help
// overlay, flying with the keyboard and the PNG button, and times frames. Usage:
//   node viewer.mjs URL OUT_DIR
// Writes OUT_DIR/{dataset,reference,free1,free2,download}.png with a .json camera (or frame header)
// beside each image, and prints one JSON line of what it measured. Exits non-zero on any failure.
import { chromium } from "playwright-core";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./browser.mjs";

const [url, out] = process.argv.slice(2);
const browser = await launch(chromium);
const fail = (msg) => { throw new Error(msg); };
try {
  const page = await browser.newPage({ viewport: { width: 560, height: 330 }, acceptDownloads: true });
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  page.on("pageerror", (e) => logs.push("page error: " + e.message));
  const opened = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.splatViewer.draws > 0, null, { timeout: 120000 });
  const firstFrameMs = Date.now() - opened;
  const sv = () => page.evaluate(() => {
    const { capture, setView, setMode, benchmark, currentCamera, ...rest } = window.splatViewer;
    return rest;
  });
  const first = await sv();
  if (!first.webgl2) fail("no WebGL2: " + JSON.stringify(first.errors));
  const save = (name, png64, meta) => {
    writeFileSync(join(out, name + ".png"), Buffer.from(png64, "base64"));
    writeFileSync(join(out, name + ".json"), JSON.stringify(meta));
  };
  const capture = async (name) => {
    const c = await page.evaluate(() => window.splatViewer.capture());
    save(name, c.base64, c.camera);
    return c.camera;
  };

  // A dataset camera, drawn in the browser, and the same camera rendered by the server.
  await page.evaluate(() => window.splatViewer.setView(0));
  await capture("dataset");
  const rest0 = (await sv()).restFrames;
  await page.evaluate(() => window.splatViewer.setMode("reference"));
  await page.waitForFunction((n) => window.splatViewer.restFrames > n && !window.splatViewer.last.header.moving,
                             rest0, { timeout: 60000 });
  const ref = await page.evaluate(() => window.splatViewer.last);
  save("reference", ref.base64, ref.header);
  await page.evaluate(() => window.splatViewer.setMode("splats"));

  // Free camera: orbit by dragging across the image with the left button.
  await page.locator("#views").selectOption("");
  const free1 = await capture("free1");
  const box = await page.locator("#stage").boundingBox();
  const cx = box.x + box.width / 2, cy = box.y + box.height / 2;
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(cx + 12 * i, cy + 3 * i);
  await page.mouse.up();
  await capture("free2");

  // Keys: the help overlay, flying forward.
  await page.locator("#stage").focus();
  await page.keyboard.press("h");
  const helpShown = await page.evaluate(() => getComputedStyle(document.getElementById("help")).display === "block");
  await page.keyboard.press("Escape");
  const before = await page.evaluate(() => window.splatViewer.currentCamera());
  await page.keyboard.down("w");
  await page.waitForTimeout(400);
  await page.keyboard.up("w");
  const after = await page.evaluate(() => window.splatViewer.currentCamera());
  const flew = Math.hypot(...before.translation.map((v, i) => v - after.translation[i]));

  // The PNG button downloads the view.
  const download = page.waitForEvent("download", { timeout: 30000 });
  await page.locator("#png").click();
  await (await download).saveAs(join(out, "download.png"));

  const frame = await page.evaluate(() => window.splatViewer.benchmark(5));
  const hud = await page.locator("#hud").textContent();
  const end = await sv();
  console.log(JSON.stringify({
    ok: true, firstFrameMs, pageFirstFrameMs: first.firstFrameMs, sceneLoadMs: first.loadMs, sceneBytes: first.sceneBytes,
    numSplats: first.numSplats, helpShown, flew, free1: free1.translation, hud, frameMs: frame.medianMs,
    frameSize: [frame.width, frame.height], draws: end.draws, errors: end.errors, logs,
  }));
} finally {
  await browser.close();
}
