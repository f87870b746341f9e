#!/usr/bin/env python3
"""Issue 36's table and plot from training runs' metrics.json (psnr_over_time).

usage: presets-table.py RUNS_DIR [--plot OUT.svg --scene fern]
Run folders are named SCENE-RUN (e.g. fern-orig, fern-fast, fern-bal, fern-tb60); SCENE-orig is the
reference: each other run gets the training seconds at which its test PSNR first reached the
reference's final PSNR (read off the 20-point curve, so to within a twentieth of the run).
"""
import json, os, re, sys

def load(d):
    p = os.path.join(d, "metrics.json")
    return json.load(open(p)) if os.path.exists(p) else None

def peak_rss(d):
    t = d + ".time"
    if not os.path.exists(t):
        return None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(t).read())
    return int(m.group(1)) // 1024 if m else None

def first_reach(curve, target):
    for p in curve:
        if p["psnr"] >= target:
            return p["seconds"], p["step"]
    return None

def table(root):
    runs = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
    scenes = sorted({n.split("-")[0] for n in runs})
    print("| run | test PSNR | SSIM | Gaussians | steps | training s | vs original s | reaches the original's PSNR at | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in scenes:
        ref = load(os.path.join(root, s + "-orig"))
        for n in [r for r in runs if r.startswith(s + "-")]:
            m = load(os.path.join(root, n))
            if m is None:
                continue
            reach, ratio = "", ""
            if ref is not None:
                ratio = f"{m['train_seconds'] / ref['train_seconds']:.3f}x"
                if n != s + "-orig":
                    r = first_reach(m.get("psnr_over_time", []), ref["psnr"])
                    reach = f"{r[0]:.1f} s (step {r[1]}; {r[0] / ref['train_seconds']:.3f}x)" if r else "not reached"
            steps = str(m["iterations"])
            if m.get("time_budget"):
                steps += f" of {m['time_budget']['planned_steps']} planned"
            rss = peak_rss(os.path.join(root, n))
            print(f"| {n} | {m['psnr']:.2f} dB | {m['ssim']:.4f} | {m['num_gaussians']:,} | {steps} | "
                  f"{m['train_seconds']:.1f} | {ratio} | {reach} | {rss if rss else ''} MiB |")

def plot(root, scene, out):
    colours = {"orig": "#555555", "fast": "#c0392b", "bal": "#2471a3", "tb60": "#1e8449", "quality": "#7d3c98"}
    series = {}
    for n in sorted(os.listdir(root)):
        if n.startswith(scene + "-") and load(os.path.join(root, n)):
            series[n.split("-", 1)[1]] = [(p["seconds"], p["psnr"]) for p in load(os.path.join(root, n))["psnr_over_time"]]
    w, h, l, r, t, b = 640, 380, 60, 150, 30, 44
    xs = [x for s in series.values() for x, _ in s]
    ys = [y for s in series.values() for _, y in s]
    x1, y0, y1 = max(xs), max(min(ys), 15.0), max(ys) + 0.5
    px = lambda x: l + x / x1 * (w - l - r)
    py = lambda y: h - b - (max(y, y0) - y0) / (y1 - y0) * (h - t - b)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w/2}" y="18" text-anchor="middle" font-size="14">{scene}: test PSNR against training seconds (CPU)</text>',
           f'<rect x="{l}" y="{t}" width="{w-l-r}" height="{h-t-b}" fill="none" stroke="#999"/>']
    step = 2 if y1 - y0 > 8 else 1
    for yv in range(int(y0) + 1, int(y1) + 1, step):
        svg.append(f'<line x1="{l}" x2="{w-r}" y1="{py(yv):.1f}" y2="{py(yv):.1f}" stroke="#eee"/><text x="{l-6}" y="{py(yv)+4:.1f}" text-anchor="end">{yv}</text>')
    xstep = [s for s in (10, 20, 50, 100, 200, 250, 500, 1000, 2000) if x1 / s <= 8][0]
    for k in range(0, int(x1) + 1, xstep):
        svg.append(f'<line x1="{px(k):.1f}" x2="{px(k):.1f}" y1="{t}" y2="{h-b}" stroke="#eee"/><text x="{px(k):.1f}" y="{h-b+16}" text-anchor="middle">{k}</text>')
    svg.append(f'<text x="{l + (w-l-r)/2}" y="{h-8}" text-anchor="middle">training seconds</text>')
    svg.append(f'<text x="14" y="{t + (h-t-b)/2}" text-anchor="middle" transform="rotate(-90 14 {t + (h-t-b)/2})">test PSNR (dB)</text>')
    names = {"orig": "original, 7,000 steps", "fast": "fast", "bal": "balanced", "tb60": "fast, --time-budget 60s", "quality": "quality"}
    for i, (k, s) in enumerate(series.items()):
        c = colours.get(k, "#000")
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
        svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.8" points="{pts}"/>')
        for x, y in s:
            svg.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{c}"/>')
        svg.append(f'<line x1="{w-r+10}" x2="{w-r+30}" y1="{t+14+i*18}" y2="{t+14+i*18}" stroke="{c}" stroke-width="2"/><text x="{w-r+34}" y="{t+18+i*18}">{names.get(k, k)}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")

if __name__ == "__main__":
    root = sys.argv[1]
    table(root)
    if "--plot" in sys.argv:
        plot(root, sys.argv[sys.argv.index("--scene") + 1], sys.argv[sys.argv.index("--plot") + 1])
