#!/usr/bin/env python3
"""The code's shape, checked (issue 35): in every crate's `src/`, no source file over 800 lines, no
non-test function over 120 lines (but the kernels named in LONG_KERNELS, each with a comment saying
why), and no two modules of a crate that import each other, directly or around a loop.

Imports are read from the text: `crate::a::b` and `super::x` paths (and `use` groups of them), with the
crate root's `pub use` re-exports resolved to the module that defines the name. A module's use of its
own ancestors is not counted: a child module holding part of its parent's `impl` (trainer/step.rs for
`Trainer`) is inside the parent, not beside it.

Usage: python3 scripts/code-shape.py   (prints each problem; exit 1 when there is one)
"""
import pathlib
import re
import sys
from collections import defaultdict

MAX_FILE_LINES = 800
MAX_FN_LINES = 120
# Kernels whose length buys speed (see the comment above each).
LONG_KERNELS = {("crates/render/src/cpu/simd.rs", "forward_tile")}

FN_RE = re.compile(
    r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)'
)


def code_only(line):
    """The line without string literals, char literals and its `//` comment."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "' '", line)
    i = line.find("//")
    return line if i < 0 else line[:i]


def without_tests(lines):
    """The lines before a file's `#[cfg(test)]` test module (they come last here)."""
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and lines[i + 1].startswith("mod "):
            return lines[:i]
    return lines


def long_functions(path, lines):
    out = []
    i = 0
    while i < len(lines):
        m = FN_RE.match(lines[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            s = code_only(lines[j])
            if not started and ";" in s and "{" not in s:
                break
            for ch in s:
                if ch == "{":
                    depth += 1
                    started = True
                elif ch == "}":
                    depth -= 1
            if started and depth == 0:
                break
            j += 1
        n = j - i + 1
        if started and n > MAX_FN_LINES and (str(path), m.group(7)) not in LONG_KERNELS:
            out.append((n, f"{path}:{i + 1} fn {m.group(7)}: {n} lines (at most {MAX_FN_LINES})"))
        i += 1
    return out


def module_path(src, f):
    parts = list(f.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def group_items(text):
    return [x for x in re.split(r"[,\s]+", text) if x and x != "self"]


def crate_cycles(src):
    mods = {}
    for f in src.rglob("*.rs"):
        text = "\n".join(without_tests(f.read_text().splitlines()))
        mods[module_path(src, f)] = re.sub(r"//[^\n]*", "", text)
    reexports = {}
    for u in re.finditer(r"pub use ((?:\w+::)*)(\{[^}]*\}|\w+)\s*;", mods.get((), "")):
        prefix = [x for x in u.group(1).split("::") if x and x not in ("self", "crate")]
        for item in group_items(u.group(2).strip("{}")):
            reexports[item.split("::")[-1]] = prefix + item.split("::")[:-1]
    edges = defaultdict(set)
    for m, text in mods.items():
        refs = [r.group(1).split("::") for r in re.finditer(r"crate::((?:\w+::)*\w+)", text)]
        for g in re.finditer(r"crate::((?:\w+::)*)\{([^}]*)\}", text):
            base = [x for x in g.group(1).split("::") if x]
            refs += [base + item.split("::") for item in group_items(g.group(2))]
        for r in re.finditer(r"\bsuper::((?:\w+::)*\w+)", text):
            refs.append(list(m[:-1]) + r.group(1).split("::"))
        for g in re.finditer(r"\bsuper::((?:\w+::)*)\{([^}]*)\}", text):
            base = list(m[:-1]) + [x for x in g.group(1).split("::") if x]
            refs += [base + item.split("::") for item in group_items(g.group(2))]
        for parts in refs:
            if parts and (parts[0],) not in mods and parts[0] in reexports:
                parts = reexports[parts[0]] + parts[1:]
            for k in range(len(parts), 0, -1):
                t = tuple(parts[:k])
                if t in mods:
                    if t != m and m[: len(t)] != t:
                        edges[m].add(t)
                    break
    # Strongly connected components (Tarjan).
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(mods):
        if v not in index:
            visit(v)
    name = lambda m: "::".join(m) or "lib"
    out = []
    for comp in sccs:
        links = sorted(f"{name(a)} -> {name(b)}" for a in comp for b in edges[a] if b in comp)
        out.append(f"{src.parent.name}: modules import each other: {', '.join(links)}")
    return out


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    problems, lengths = [], []
    for src in sorted(root.glob("crates/*/src")):
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(root)
            lines = f.read_text().splitlines()
            if len(lines) > MAX_FILE_LINES:
                problems.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE_LINES})")
            found = long_functions(rel, without_tests(lines))
            lengths += found
        problems += crate_cycles(src)
    problems += [p for _, p in lengths]
    for p in problems:
        print(p)
    print(f"code shape: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
