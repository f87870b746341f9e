// Launches Debian's Chromium (or $CHROMIUM) headless for the viewer tests, with WebGL2 on SwiftShader,
// the software GPU: since Chrome 139 it needs these flags (../shared/docs/viewer.md).
export function launch(chromium, extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
           ...extraArgs],
  });
}
