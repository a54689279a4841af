#!/usr/bin/env python3
"""bench/amx_rows_model.py - row-tile designs of the AMX MoE path, counted from a routing.

Usage: amxk_bench moe --m 512 --routing-out ROUTES ... ; python3 bench/amx_rows_model.py ROUTES [min_rows]

ROUTES: one token per line, its expert ids (amxk_bench moe --routing-out). Units with fewer than
min_rows rows (default 5: the bf16 AMX kernel's minimum) run on the vector level and are left out.
For each design, over all units: tiles (TDPs per k step and column tile, proportional to the call's
TDPs), useful rows = routed rows / the tiles' rows (a TDP of R rows costs R / 16 of a full one),
per TDP = routed rows / (16 x tiles) (every TDP costs a full one), and the tile configurations a task
holding every unit needs (LDTILECFG per task with units ordered by configuration). Counts only.
"""
import collections
import math
import sys


def design_uniform(n):
    """amxk's kernels: T = ceil(n / 16) tiles of R = ceil(n / T) rows; configuration: R."""
    t = math.ceil(n / 16)
    r = math.ceil(n / t)
    return t, t * r, r


def design_fixed(r):
    """one R for every unit (one configuration per call)."""
    return lambda n: (math.ceil(n / r), math.ceil(n / r) * r, r)


def design_two(a, b):
    """A tiles of a or b rows in one configuration (tile 4 and C 0-1: a rows, tile 5 and C 2-3: b
    rows), T = ceil(n / 16) tiles, the mix with the fewest rows >= n."""
    def f(n):
        t = math.ceil(n / 16)
        best = min((i * a + (t - i) * b for i in range(t + 1) if i * a + (t - i) * b >= n), default=None)
        return (t, best, (a, b)) if best is not None else None
    return f


def evaluate(rows, f):
    tiles = padded = 0
    cfgs = set()
    for n in rows:
        r = f(n)
        if r is None:
            return None
        tiles, padded = tiles + r[0], padded + r[1]
        cfgs.add(r[2])
    total = sum(rows)
    return tiles, total / padded, total / (16 * tiles), len(cfgs)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    min_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    cnt = collections.Counter(int(e) for line in open(sys.argv[1]) for e in line.split())
    rows = sorted(n for n in cnt.values() if n >= min_rows)
    print(f"units {len(rows)} (rows {rows[0]}..{rows[-1]}, {sum(rows)} routed rows; {len(cnt) - len(rows)} below {min_rows} rows left out)")
    print("| design | tiles | useful rows | per TDP | configurations |")
    print("|---|---:|---:|---:|---:|")
    out = [("uniform R per unit (amxk)", evaluate(rows, design_uniform))]
    out += [(f"one R = {r} per call", evaluate(rows, design_fixed(r))) for r in (16, 12, 8)]
    two = [((a, b), evaluate(rows, design_two(a, b))) for a in range(1, 17) for b in range(a + 1, 17)]
    two = [t for t in two if t[1] is not None]
    (a, b), best = max(two, key=lambda t: (t[1][1], -t[1][0]))
    out.append((f"two R per call, best pair ({a}, {b})", best))
    for name, (tiles, useful, per_tdp, ncfg) in out:
        print(f"| {name} | {tiles} | {useful:.3f} | {per_tdp:.3f} | {ncfg} |")


if __name__ == "__main__":
    main()
