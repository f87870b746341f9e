#!/usr/bin/env python3
"""Pose errors between two COLMAP images.txt files (e.g. a --pose-opt run's OUT/images.txt and the
demo's dataset/true_poses.txt), matched by image name: per image the angle between the rotations
(degrees) and the distance between the camera centres, and their medians over the images that differ
in either file's poses (test views, at their given poses in both, are left out with --skip-equal).
No alignment: both files are in the dataset's frame.
Usage: scripts/pose-errors.py ESTIMATE.txt TRUTH.txt [--skip-equal] [--spread S]"""
import math
import sys


def read(path):
    out = {}
    lines = [l for l in open(path) if not l.startswith("#")]
    i = 0
    while i < len(lines):
        w = lines[i].split()
        if not w:
            i += 1
            continue
        q = [float(v) for v in w[1:5]]
        t = [float(v) for v in w[5:8]]
        out[" ".join(w[9:])] = (q, t)
        i += 2
    return out


def rot(q):
    n = math.sqrt(sum(v * v for v in q))
    w, x, y, z = (v / n for v in q)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def centre(q, t):
    r = rot(q)
    return [-sum(r[i][k] * t[i] for i in range(3)) for k in range(3)]


def error(a, b):
    ra, rb = rot(a[0]), rot(b[0])
    trace = sum(ra[i][k] * rb[i][k] for i in range(3) for k in range(3))
    angle = math.degrees(math.acos(max(-1.0, min(1.0, (trace - 1) / 2))))
    ca, cb = centre(*a), centre(*b)
    return angle, math.dist(ca, cb)


def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if v else float("nan")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    skip_equal = "--skip-equal" in sys.argv
    spread = None
    if "--spread" in sys.argv:
        spread = float(sys.argv[sys.argv.index("--spread") + 1])
        args.remove(str(sys.argv[sys.argv.index("--spread") + 1]))
    est, truth = read(args[0]), read(args[1])
    errs = [error(est[n], truth[n]) for n in sorted(est) if n in truth]
    if skip_equal:
        errs = [e for e in errs if e[0] > 1e-9 or e[1] > 1e-9]
    centres = [centre(*p) for p in truth.values()]
    mean = [sum(c[k] for c in centres) / len(centres) for k in range(3)]
    spread = spread or max(math.dist(c, mean) for c in centres)
    rots = [e[0] for e in errs]
    pos = [e[1] for e in errs]
    print(f"{len(errs)} images: rotation median {median(rots):.3f} deg (max {max(rots):.3f}), "
          f"position median {median(pos):.4f} = {100 * median(pos) / spread:.2f}% of the spread "
          f"{spread:.3f} (max {100 * max(pos) / spread:.2f}%)")


if __name__ == "__main__":
    main()
