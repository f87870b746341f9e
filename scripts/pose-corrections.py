#!/usr/bin/env python3
"""The corrections a --pose-opt run gave its training views, in each camera's own frame: for every
image whose pose differs between REFINED.txt (a run's OUT/images.txt) and GIVEN.txt (the same
dataset's images.txt at its given poses, e.g. from a run of `--iters 1`), the rotation A = R R'^T as
an axis-angle vector (degrees) and the translation dt = t - A t' (dataset units), then per axis their
mean, spread and the mean's t-statistic, and how the pitch (rotation about the camera's x) goes with
the vertical translation (correlation, and the slope: the depth of the point such a pair leaves fixed
in the image). A common similarity of all cameras shows as means; a per-view drift along a weak
direction of the loss as large spreads with a strong pairing.
Usage: scripts/pose-corrections.py REFINED.txt GIVEN.txt"""
import math
import statistics as st
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
errors = __import__("pose-errors")


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def transpose(a):
    return [[a[j][i] for j in range(3)] for i in range(3)]


def log_rotation(r):
    c = max(-1.0, min(1.0, (r[0][0] + r[1][1] + r[2][2] - 1) / 2))
    angle = math.acos(c)
    v = [r[2][1] - r[1][2], r[0][2] - r[2][0], r[1][0] - r[0][1]]
    scale = 0.5 if angle < 1e-12 else angle / (2 * math.sin(angle))
    return [x * scale for x in v]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    refined, given = errors.read(sys.argv[1]), errors.read(sys.argv[2])
    rots, shifts = [], []
    for name in sorted(refined):
        if name not in given:
            continue
        (q1, t1), (q0, t0) = refined[name], given[name]
        r1, r0 = errors.rot(q1), errors.rot(q0)
        if max(abs(a - b) for a, b in zip(q1 + t1, q0 + t0)) < 1e-12:
            continue
        a = matmul(r0, transpose(r1))
        at = [sum(a[i][k] * t1[k] for k in range(3)) for i in range(3)]
        rots.append([math.degrees(x) for x in log_rotation(a)])
        shifts.append([t0[i] - at[i] for i in range(3)])
    if len(rots) < 3:
        sys.exit("fewer than 3 corrected images")
    for label, rows, unit in (("rotation", rots, "deg"), ("translation", shifts, "units")):
        for k, axis in enumerate("xyz"):
            col = [r[k] for r in rows]
            mean, sd = st.fmean(col), st.pstdev(col)
            t = mean / (sd / math.sqrt(len(col))) if sd > 0 else float("nan")
            print(f"{label} {axis}: mean {mean:+.5f} {unit}, sd {sd:.5f}, t {t:+.2f}")
    pitch = [math.radians(r[0]) for r in rots]
    lift = [s[1] for s in shifts]
    corr = st.correlation(pitch, lift)
    slope = st.linear_regression(pitch, lift).slope
    print(f"{len(rots)} images; pitch and vertical translation: correlation {corr:+.3f}, "
          f"slope {slope:.3f} units a radian")


main()
