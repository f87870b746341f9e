// A WebSocket client without a browser (for BENCHMARKS.md): waits for the `viewer:` URL in FILE,
// connects to /ws, reads and drops everything until training reports its last step or SECONDS pass.
// Usage: node raw_ws.mjs FILE SECONDS
import net from "node:net";
import { readFileSync, existsSync } from "node:fs";
const [file, seconds] = process.argv.slice(2);
const deadline = Date.now() + Number(seconds) * 1000;
let url = null;
while (!url && Date.now() < deadline) {
  const m = existsSync(file) && /http:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(file, "utf8"));
  if (m) url = m; else await new Promise((r) => setTimeout(r, 100));
}
const port = Number(url[1]);
const s = net.connect(port, "127.0.0.1", () => {
  s.write("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
});
let bytes = 0;
s.on("data", (d) => { bytes += d.length; if (/"step":(\d+),"total_steps":\1\b/.test(d.toString("latin1"))) { console.log(JSON.stringify({ bytes })); process.exit(0); } });
setTimeout(() => { console.log(JSON.stringify({ bytes, timeout: true })); process.exit(0); }, Number(seconds) * 1000);
