// The splat viewer page. The splats are drawn here, by Spark on WebGL2, from the scene the server
// sends as SPZ (/scene.spz); the WebSocket brings the dataset cameras, training status and a notice
// for each new snapshot. "reference" mode shows splat's own CPU render instead (the server renders
// the page's camera); it is also the fallback when the browser has no WebGL2.
//
// The same script runs in a scene.html page (a scene in one file, no server: `standalone.js` decodes
// the page's payload and sets window.splatStandalone before loading this): there the hello message,
// the scene and the module URLs come from the page, and there is no reference view and no photos.
//
// The camera is kept in the convention splat uses (COLMAP/OpenCV: x_cam = R x_world + t, x right,
// y down, z forward; pinhole fx, fy, cx, cy in pixels) so that a dataset camera is reproduced exactly
// and the reference render sees the same camera. three.js looks down -z with y up:
// camera.matrixWorld = [R^T | C] diag(1, -1, -1, 1), and the projection is built from fx, fy, cx, cy.
"use strict";

const $ = (id) => document.getElementById(id);
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const mul = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a) => mul(a, 1 / Math.hypot(a[0], a[1], a[2]));
const NEAR = 0.2; // splat's renderer culls at z <= 0.2; the same plane here
const standalone = window.splatStandalone || null;
// Where the libraries come from: the server's routes (the page's import map), or the page's own.
const moduleUrl = (name) => standalone ? standalone.modules[name]
  : { three: "three", spark: "/vendor/spark/spark.module.min.js" }[name];

// For tests and curious users: what the page has done.
const sv = window.splatViewer = {
  webgl2: false, mode: "splats", connected: false, snapshots: 0, sceneVersion: -1, sceneBytes: 0,
  numSplats: 0, draws: 0, frames: 0, restFrames: 0, last: null, firstFrameMs: null, loadMs: null,
  camera: null, errors: [], standalone: !!standalone, decodeMs: standalone ? standalone.decodeMs : null,
};

const state = {
  hello: null, up: [0, 0, 1], target: [0, 0, 0], yaw: 0, pitch: 0.3, dist: 1, fovY: 50,
  view: null, initial: null, mode: "splats", id: 0, restTimer: null, keys: new Set(),
};

// --- The camera ---------------------------------------------------------------------------------

function basis() {
  const up = norm(state.up);
  let e1 = Math.abs(up[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
  e1 = norm(sub(e1, mul(up, dot(e1, up))));
  return { up, e1, e2: cross(up, e1) };
}

// Unit vector from the target to the eye.
function backward() {
  const { up, e1, e2 } = basis();
  const c = Math.cos(state.pitch);
  return add(add(mul(e1, c * Math.cos(state.yaw)), mul(e2, c * Math.sin(state.yaw))), mul(up, Math.sin(state.pitch)));
}

const eye = () => add(state.target, mul(backward(), state.dist));

// Size of the drawing in pixels: the stage, or a dataset camera's aspect fitted into it (never
// larger than the camera's own size, so that its photo and the render match pixel for pixel).
function renderSize() {
  const r = $("stage").getBoundingClientRect();
  const sw = Math.max(16, Math.floor(r.width)), sh = Math.max(16, Math.floor(r.height));
  if (state.view === null) return [sw, sh];
  const v = state.hello.views[state.view];
  const s = Math.min(1, sw / v.width, sh / v.height);
  return [Math.max(16, Math.round(v.width * s)), Math.max(16, Math.round(v.height * s))];
}

// The current camera in splat's convention at the current render size.
function currentCamera() {
  const [w, h] = renderSize();
  if (state.view !== null) {
    const v = state.hello.views[state.view];
    const sx = w / v.width, sy = h / v.height;
    return { width: w, height: h, fx: v.fx * sx, fy: v.fy * sy, cx: v.cx * sx, cy: v.cy * sy,
             rotation: v.rotation, translation: v.translation };
  }
  const f = mul(backward(), -1);
  const right = norm(cross(f, state.up));
  const down = cross(f, right);
  const rotation = [right, down, f];
  const c = eye();
  const translation = rotation.map((row) => -dot(row, c));
  const fy = 0.5 * h / Math.tan(0.5 * state.fovY * Math.PI / 180);
  return { width: w, height: h, fx: fy, fy, cx: 0.5 * w, cy: 0.5 * h, rotation, translation };
}

const cameraCenter = (c) => [0, 1, 2].map((i) => -(c.rotation[0][i] * c.translation[0] + c.rotation[1][i] * c.translation[1] + c.rotation[2][i] * c.translation[2]));

// Leaving a dataset camera to move freely: orbit about the point it looks at, at the scene's depth.
function leaveDatasetView() {
  if (state.view === null) return;
  const v = state.hello.views[state.view];
  const c = cameraCenter(v);
  const forward = v.rotation[2];
  const d = Math.max(1e-3, dot(sub(state.hello.center, c), forward));
  state.target = add(c, mul(forward, d));
  state.dist = d;
  const { up, e1, e2 } = basis();
  const back = mul(forward, -1);
  state.pitch = Math.asin(Math.max(-1, Math.min(1, dot(back, up))));
  state.yaw = Math.atan2(dot(back, e2), dot(back, e1));
  state.fovY = 2 * Math.atan(0.5 * v.height / v.fy) * 180 / Math.PI;
  state.view = null;
  $("views").value = "";
  $("gtbox").style.display = "none";
}

function setView(index) {
  if (index === null || index < 0 || index >= state.hello.views.length) {
    leaveDatasetView();
  } else {
    state.view = index;
    $("views").value = String(index);
    if (!standalone) {
      $("gt").src = "/gt/" + index;
      $("gtbox").style.display = "block";
    }
    $("lensnote").textContent = state.hello.views[index].fisheye
      ? "fisheye photo: the render beside it is a pinhole view of the same pose and focal length"
      : "";
  }
  layout();
  changed(false);
}

function reset() {
  Object.assign(state, JSON.parse(state.initial));
  $("views").value = "";
  $("gtbox").style.display = "none";
  layout();
  changed(false);
}

// --- Drawing in the browser (Spark) ----------------------------------------------------------------

let THREE = null, spark = null, renderer = null, scene3 = null, camera3 = null, mesh = null;
let drawQueued = false, loading = false, wantScene = false;
const drawTimes = [];

async function initSpark() {
  THREE = await import(moduleUrl("three"));
  const { SparkRenderer } = await import(moduleUrl("spark"));
  THREE.ColorManagement.enabled = false; // colours go to the screen as trained (sRGB values)
  renderer = new THREE.WebGLRenderer({ canvas: $("canvas"), antialias: false, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  scene3 = new THREE.Scene();
  // As splat's renderer: depth order (not radial), 3 sigma, alpha >= 1/255, the 0.3 px dilation,
  // and splats whose centres lie well outside the view still drawn (Spark's default drops centres
  // beyond 1.4 half-widths: 39.9 -> 42.5 dB against splat's render on a young demo scene).
  spark = new SparkRenderer({ renderer, onDirty: requestDraw, sortRadial: false, maxStdDev: 3,
                              minAlpha: 1 / 255, preBlurAmount: 0.3, blurAmount: 0, clipXY: 3 });
  scene3.add(spark);
  camera3 = new THREE.PerspectiveCamera();
  camera3.matrixAutoUpdate = false;
  camera3.matrixWorldAutoUpdate = false;
}

function applyCamera(c) {
  const C = cameraCenter(c), R = c.rotation;
  const m = new THREE.Matrix4().set(
    R[0][0], -R[1][0], -R[2][0], C[0],
    R[0][1], -R[1][1], -R[2][1], C[1],
    R[0][2], -R[1][2], -R[2][2], C[2],
    0, 0, 0, 1);
  camera3.matrix.copy(m);
  camera3.matrixWorld.copy(m);
  camera3.matrixWorldInverse.copy(m).invert();
  const n = NEAR, f = Math.max(1e3, 1e4 * (state.hello ? state.hello.radius : 1));
  const { width: W, height: H } = c;
  camera3.near = n;
  camera3.far = f;
  camera3.projectionMatrix.set(
    2 * c.fx / W, 0, 1 - 2 * c.cx / W, 0,
    0, 2 * c.fy / H, 2 * c.cy / H - 1, 0,
    0, 0, -(f + n) / (f - n), -2 * f * n / (f - n),
    0, 0, -1, 0);
  camera3.projectionMatrixInverse.copy(camera3.projectionMatrix).invert();
}

function requestDraw() {
  if (drawQueued || !renderer) return;
  drawQueued = true;
  requestAnimationFrame(draw);
}

function draw() {
  drawQueued = false;
  if (state.mode !== "splats" || !mesh) return;
  const c = currentCamera();
  if (renderer.domElement.width !== c.width || renderer.domElement.height !== c.height) {
    renderer.setSize(c.width, c.height, true);
  }
  applyCamera(c);
  renderer.render(scene3, camera3);
  sv.camera = c;
  sv.draws += 1;
  const now = performance.now();
  drawTimes.push(now);
  while (drawTimes.length && drawTimes[0] < now - 1000) drawTimes.shift();
  // The first frame with splats in it (before Spark's first sort nothing is drawn).
  if (sv.firstFrameMs === null && spark.activeSplats > 0) sv.firstFrameMs = Math.round(now);
  hud();
  if (state.keys.size) flyStep();
}

// Downloads the current scene and swaps it in once it is ready (the old one stays until then).
async function loadScene() {
  if (loading) { wantScene = true; return; }
  loading = true;
  try {
    do {
      wantScene = false;
      const t0 = performance.now();
      const got = standalone ? standalone.scene : await fetchScene();
      const { bytes, antialiased } = got;
      const { SplatMesh } = await import(moduleUrl("spark"));
      const next = new SplatMesh({ fileBytes: bytes, fileType: "spz", extSplats: true });
      await next.initialized;
      // Scenes trained with the anti-aliasing filter: its opacity compensation instead of the plain dilation.
      spark.preBlurAmount = antialiased ? 0 : 0.3;
      spark.blurAmount = antialiased ? 0.3 : 0;
      scene3.add(next);
      if (mesh) { scene3.remove(mesh); mesh.dispose(); }
      mesh = next;
      sv.snapshots += 1;
      sv.sceneVersion = got.version;
      sv.sceneBytes = bytes.length;
      sv.numSplats = got.count;
      sv.antialiased = antialiased;
      sv.loadMs = Math.round(performance.now() - t0);
      $("info").textContent = sv.numSplats.toLocaleString() + " splats";
      requestDraw();
    } while (wantScene);
  } catch (e) {
    error(String(e));
  } finally {
    loading = false;
  }
}

async function fetchScene() {
  const resp = await fetch("/scene.spz", { cache: "no-store" });
  if (!resp.ok) throw new Error("scene: " + resp.status + " " + (await resp.text()));
  return {
    bytes: new Uint8Array(await resp.arrayBuffer()),
    antialiased: resp.headers.get("x-splat-antialiased") === "1",
    version: Number(resp.headers.get("x-splat-version")),
    count: Number(resp.headers.get("x-splat-count")),
  };
}

function hud() {
  const fps = drawTimes.length;
  const what = state.mode === "splats" ? fps + " fps (frames drawn in the last second)" : "reference: splat's CPU renderer";
  $("hud").textContent = sv.numSplats.toLocaleString() + " splats · " + what;
}

// --- The reference view (splat's renderer on the server) -------------------------------------------

let ws = null;
function sendReference(moving) {
  if (!ws || ws.readyState !== 1 || state.mode !== "reference") return;
  state.id += 1;
  ws.send(JSON.stringify({ kind: "pinhole", ...currentCamera(), moving, id: state.id }));
}

function showReference(ev) {
  const buf = new Uint8Array(ev.data);
  const n = new DataView(ev.data).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(buf.subarray(4, 4 + n)));
  const bytes = buf.subarray(4 + n);
  if (state.mode !== "reference") return;
  const img = $("frame");
  const old = img.src;
  img.src = URL.createObjectURL(new Blob([bytes], { type: header.format === "png" ? "image/png" : "image/jpeg" }));
  // Shown at the page's render size, whatever size the server drew (half while moving).
  const [w, h] = renderSize();
  img.style.width = w + "px";
  img.style.height = h + "px";
  if (old) URL.revokeObjectURL(old);
  sv.frames += 1;
  if (!header.moving) sv.restFrames += 1;
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  sv.last = { header, base64: btoa(bin) };
  if (header.status) status(header.status);
  hud();
}

function setMode(mode) {
  if (standalone) mode = "splats";
  if (mode === "splats" && !sv.webgl2) mode = "reference";
  state.mode = sv.mode = mode;
  $("mode").value = mode;
  $("canvas").style.display = mode === "splats" ? "" : "none";
  $("frame").style.display = mode === "reference" ? "" : "none";
  if (mode === "splats") {
    if (ws && ws.readyState === 1) ws.send(JSON.stringify({ kind: "idle" }));
    requestDraw();
  } else {
    sendReference(false);
  }
  hud();
}

// --- Reacting to the user ----------------------------------------------------------------------------

// After any camera change: draw now; the reference view gets a low-resolution frame while moving
// and a full one 150 ms after the last change.
function changed(moving = true) {
  requestDraw();
  if (state.mode !== "reference") return;
  sendReference(moving);
  clearTimeout(state.restTimer);
  if (moving) state.restTimer = setTimeout(() => sendReference(false), 150);
}

function layout() {
  const [w, h] = renderSize();
  $("canvas").style.width = w + "px";
  $("canvas").style.height = h + "px";
  $("frame").style.width = w + "px";
  $("frame").style.height = h + "px";
  if (state.view !== null) {
    const v = state.hello.views[state.view];
    const box = $("gtbox").getBoundingClientRect();
    const s = Math.min(1, box.width / v.width, box.height / v.height);
    $("gt").style.width = Math.round(v.width * s) + "px";
    $("gt").style.height = Math.round(v.height * s) + "px";
  }
}

function orbit(dx, dy) {
  leaveDatasetView();
  state.yaw -= dx * 0.008;
  state.pitch = Math.max(-1.55, Math.min(1.55, state.pitch + dy * 0.008));
  changed();
}

function pan(dx, dy) {
  leaveDatasetView();
  const f = mul(backward(), -1);
  const right = norm(cross(f, state.up));
  const upv = cross(right, f);
  const s = 2 * state.dist * Math.tan(0.5 * state.fovY * Math.PI / 180) / renderSize()[1];
  state.target = add(state.target, add(mul(right, -dx * s), mul(upv, dy * s)));
  changed();
}

function zoom(factor) {
  leaveDatasetView();
  state.dist = Math.max(1e-3, state.dist * factor);
  changed();
}

// One step of flying (keys held): WASD along the view and sideways, Q/E along up, arrows turn.
let lastFly = 0;
function flyStep() {
  const now = performance.now();
  const dt = Math.min(0.1, lastFly ? (now - lastFly) / 1000 : 1 / 60);
  lastFly = now;
  leaveDatasetView();
  const k = state.keys;
  const speed = (k.has("shift") ? 3 : 1) * 0.5 * state.hello.radius * dt;
  const f = mul(backward(), -1);
  const right = norm(cross(f, state.up));
  let move = [0, 0, 0];
  if (k.has("w")) move = add(move, f);
  if (k.has("s")) move = sub(move, f);
  if (k.has("d")) move = add(move, right);
  if (k.has("a")) move = sub(move, right);
  if (k.has("e")) move = add(move, norm(state.up));
  if (k.has("q")) move = sub(move, norm(state.up));
  state.target = add(state.target, mul(move, speed));
  const turn = 1.2 * dt;
  const e = eye();
  if (k.has("arrowleft")) state.yaw += turn;
  if (k.has("arrowright")) state.yaw -= turn;
  if (k.has("arrowup")) state.pitch = Math.max(-1.55, state.pitch - turn);
  if (k.has("arrowdown")) state.pitch = Math.min(1.55, state.pitch + turn);
  if (k.has("arrowleft") || k.has("arrowright") || k.has("arrowup") || k.has("arrowdown")) {
    // Turning in place: the eye stays, the target moves.
    state.target = sub(e, mul(backward(), state.dist));
  }
  changed();
}

const FLY_KEYS = new Set(["w", "a", "s", "d", "q", "e", "arrowleft", "arrowright", "arrowup", "arrowdown"]);

function savePng() {
  const a = document.createElement("a");
  a.download = "splat-view.png";
  if (state.mode === "reference") {
    a.href = $("frame").src;
    a.click();
    return;
  }
  draw();
  $("canvas").toBlob((blob) => {
    a.href = URL.createObjectURL(blob);
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }, "image/png");
}

function bindInput() {
  const stage = $("stage");
  $("views").addEventListener("change", (e) => setView(e.target.value === "" ? null : Number(e.target.value)));
  $("reset").addEventListener("click", reset);
  $("mode").addEventListener("change", (e) => setMode(e.target.value));
  $("png").addEventListener("click", savePng);
  $("helpbtn").addEventListener("click", () => toggleHelp());
  window.addEventListener("resize", () => { layout(); changed(false); });
  window.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;
    const key = e.key.toLowerCase();
    if (key === "shift") state.keys.add("shift");
    if (FLY_KEYS.has(key)) {
      e.preventDefault();
      const first = !state.keys.has(key);
      state.keys.add(key);
      if (first) lastFly = 0;
      // In the browser's own view the draw loop keeps flying while keys are held; the reference view
      // has no draw loop, so each key repeat takes a step.
      if (first || state.mode === "reference") flyStep();
      return;
    }
    if (key === "r") reset();
    else if (key === "p") savePng();
    else if (key === "v") setMode(state.mode === "splats" ? "reference" : "splats");
    else if (key === "h" || key === "?") toggleHelp();
    else if (key === "escape") toggleHelp(false);
    else if ((key === "]" || key === "[") && state.hello.views.length) {
      const n = state.hello.views.length;
      const cur = state.view === null ? (key === "]" ? -1 : 0) : state.view;
      setView((cur + (key === "]" ? 1 : n - 1)) % n);
    }
  });
  window.addEventListener("keyup", (e) => {
    state.keys.delete(e.key.toLowerCase());
    if (!state.keys.size || [...state.keys].every((k) => k === "shift")) {
      state.keys.clear();
      changed(false);
    }
  });
  window.addEventListener("blur", () => state.keys.clear());

  // Mouse: left drag orbits, right drag (or shift) pans, the wheel zooms. Touch: one finger orbits,
  // two fingers pinch to zoom and move to pan.
  let drag = null;
  stage.addEventListener("contextmenu", (e) => e.preventDefault());
  stage.addEventListener("pointerdown", (e) => {
    if (e.pointerType === "touch") return;
    stage.focus();
    drag = { x: e.clientX, y: e.clientY, pan: e.button === 2 || e.shiftKey };
    stage.setPointerCapture(e.pointerId);
  });
  stage.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) pan(dx, dy); else orbit(dx, dy);
  });
  stage.addEventListener("pointerup", () => { drag = null; changed(false); });
  stage.addEventListener("wheel", (e) => { e.preventDefault(); zoom(Math.exp(e.deltaY * 0.001)); }, { passive: false });
  let touches = null;
  const touchInfo = (t) => {
    if (t.length === 1) return { x: t[0].clientX, y: t[0].clientY, d: 0 };
    return { x: (t[0].clientX + t[1].clientX) / 2, y: (t[0].clientY + t[1].clientY) / 2,
             d: Math.hypot(t[0].clientX - t[1].clientX, t[0].clientY - t[1].clientY) };
  };
  stage.addEventListener("touchstart", (e) => { e.preventDefault(); touches = touchInfo(e.touches); }, { passive: false });
  stage.addEventListener("touchmove", (e) => {
    e.preventDefault();
    const now = touchInfo(e.touches);
    if (!touches) { touches = now; return; }
    if (e.touches.length === 1) orbit(now.x - touches.x, now.y - touches.y);
    else {
      if (touches.d > 0 && now.d > 0) zoom(touches.d / now.d);
      pan(now.x - touches.x, now.y - touches.y);
    }
    touches = now;
  }, { passive: false });
  stage.addEventListener("touchend", (e) => { touches = e.touches.length ? touchInfo(e.touches) : null; changed(false); });
}

function toggleHelp(show) {
  const h = $("help");
  const on = show === undefined ? h.style.display !== "block" : show;
  h.style.display = on ? "block" : "none";
}

// --- The connection --------------------------------------------------------------------------------

function error(message) {
  sv.errors.push(message);
  $("err").textContent = message;
}

function status(s) {
  $("status").textContent = "step " + s.step + "/" + s.total_steps + "  loss " + s.loss.toFixed(4) +
    "  PSNR " + s.psnr.toFixed(2) + " dB  " + s.num_gaussians.toLocaleString() + " Gaussians";
}

function hello(msg) {
  const first = state.hello === null;
  state.hello = msg;
  if (!first) return;
  state.up = msg.up;
  state.target = msg.center;
  state.dist = 2.5 * msg.radius;
  if (msg.views.length > 0) {
    // Start where the first photo was taken, looking at the scene.
    state.view = 0;
    leaveDatasetView();
  }
  state.initial = JSON.stringify({ target: state.target, dist: state.dist, yaw: state.yaw, pitch: state.pitch,
                                   fovY: state.fovY, view: null, up: state.up });
  const sel = $("views");
  msg.views.forEach((v, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = v.name;
    sel.appendChild(o);
  });
  if (renderer) {
    const bg = msg.background;
    renderer.setClearColor(new THREE.Color(bg[0], bg[1], bg[2]), 1);
  }
  $("frame").style.background = "rgb(" + msg.background.map((v) => Math.round(255 * v)).join(",") + ")";
  if (msg.status) status(msg.status);
  layout();
  if (sv.webgl2) loadScene();
  setMode(state.mode);
}

function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { sv.connected = true; };
  ws.onclose = () => { sv.connected = false; error("disconnected from splat"); };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== "string") { showReference(ev); return; }
    const msg = JSON.parse(ev.data);
    if (msg.kind === "hello") hello(msg);
    else if (msg.kind === "scene") { if (sv.webgl2) loadScene(); }
    else if (msg.kind === "status") status(msg.status);
    else if (msg.kind === "error") error(msg.message);
  };
}

// --- Hooks for tests and measurements ------------------------------------------------------------------

// Waits for Spark's sort of the current camera, draws, and returns the image as PNG (base64) with
// the camera it was drawn from and whether it settled: two draws in a row, each started with the
// sort for this camera done, agree (`maxDraws` bounds the wait while snapshots keep arriving).
sv.capture = async (maxDraws = 100) => {
  const c = currentCamera();
  applyCamera(c);
  if (renderer.domElement.width !== c.width || renderer.domElement.height !== c.height) renderer.setSize(c.width, c.height, true);
  let url = null, idleBefore = false, settled = false;
  const version = sv.sceneVersion;
  for (let i = 0; i < maxDraws && !settled; i++) {
    // Drawing starts Spark's sort for a new camera by itself (an explicit update would sort again).
    const idle = !spark.sorting && !spark.sortDirty;
    renderer.render(scene3, camera3);
    await new Promise((r) => requestAnimationFrame(r));
    if (!idle && i + 1 < maxDraws) { idleBefore = false; continue; }
    const next = renderer.domElement.toDataURL("image/png");
    settled = idle && idleBefore && next === url;
    idleBefore = idle;
    url = next;
  }
  return { camera: c, base64: url.slice(url.indexOf(",") + 1), settled, version };
};
sv.setView = (i) => setView(i);
sv.currentCamera = () => currentCamera();
sv.setMode = (m) => setMode(m);
// Median time of `n` frames, each waited for (a 1-pixel read forces completion) and paced by the
// browser's frame loop. With `orbit` the camera turns a little before every frame, as while the user
// drags (Spark then re-evaluates the view-dependent colours and re-sorts in its worker); without it
// the same view is drawn again.
sv.benchmark = async (n, orbit = false) => {
  const gl = renderer.getContext();
  const px = new Uint8Array(4);
  if (orbit) leaveDatasetView();
  const times = [];
  let c = currentCamera();
  // Start from a sorted view: before Spark's first sort for a camera nothing is drawn (fast, empty).
  applyCamera(c);
  for (let i = 0; i < 200 && (spark.sorting || spark.sortDirty || i < 2); i++) {
    renderer.render(scene3, camera3);
    await new Promise((r) => setTimeout(r, 50));
  }
  for (let i = 0; i < n; i++) {
    if (orbit) { state.yaw += 0.01; c = currentCamera(); }
    if (renderer.domElement.width !== c.width || renderer.domElement.height !== c.height) renderer.setSize(c.width, c.height, true);
    const t0 = performance.now();
    applyCamera(c);
    renderer.render(scene3, camera3);
    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
    times.push(performance.now() - t0);
    await new Promise((r) => requestAnimationFrame(r));
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { width: c.width, height: c.height, medianMs: sorted[Math.floor(n / 2)], times, activeSplats: spark.activeSplats };
};

async function main() {
  const probe = document.createElement("canvas").getContext("webgl2");
  sv.webgl2 = !!probe;
  bindInput();
  if (sv.webgl2) {
    try {
      await initSpark();
    } catch (e) {
      sv.webgl2 = false;
      error("cannot start the in-browser renderer (" + e + ")" + (standalone ? "" : ": showing splat's reference render"));
    }
  } else {
    error(standalone ? "no WebGL2 in this browser: this page needs it to draw the scene"
      : "no WebGL2 in this browser: showing splat's reference render");
  }
  if (standalone) {
    // No server: no reference view; without WebGL2 there is nothing to draw with.
    $("mode").style.display = "none";
    if (!sv.webgl2) return;
    hello(standalone.hello);
    return;
  }
  if (!sv.webgl2) {
    state.mode = "reference";
    $("mode").querySelector('option[value="splats"]').disabled = true;
  }
  connect();
}

main();
