#!/usr/bin/env python3
"""Plot (b) of docs/performance.md: relative error of rasp's per-type byte estimates against
the number of samples, over repeated recordings of the demo workload, with the theoretical
95% band of the negative binomial drawn over it.

Usage: bench/plots/accuracy.py BUILD_DIR [RUNS]   (default 60 runs; about 1 s each)
Writes bench/plots/accuracy.dat (one line per type and run) and docs/img/accuracy.png, and
prints the coverage of the 95% intervals. Needs gnuplot and python3-scipy (Debian)."""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(build, i, tmp):
    means = [4096, 16384, 102400, 1048576]
    docs = [3000, 20000]
    mean, ndocs = means[i % 4], docs[(i // 4) % 2]
    trace, truth, rep = (os.path.join(tmp, f"{n}{i}") for n in ("trace", "truth", "report"))
    subprocess.run([f"{build}/bin/rasp", "record", "-o", trace, "--mean", str(mean),
                    "--seed", str(1000 + i), "--", f"{build}/bin/rasp-docstore",
                    "--docs", str(ndocs), "--seed", str(i), "--truth", truth],
                   check=True, capture_output=True)
    subprocess.run([f"{build}/bin/rasp", "report", "--format", "json", "-o", rep, trace],
                   check=True, capture_output=True)
    with open(rep) as f:
        est = {r["type"]: r for r in json.load(f)["rows"]}
    with open(truth) as f:
        rows = json.load(f)["rows"]
    subprocess.run(["rm", "-rf", trace])
    out = []
    for r in rows:
        e = est.get(r["type"])
        if not e or r["bytes"] == 0:
            continue
        rel = (e["bytes"] - r["bytes"]) / r["bytes"]
        inside = int(e["bytes_low"] <= r["bytes"] <= e["bytes_high"])
        out.append((e["samples"], rel, inside, mean, r["type"]))
    return out


def band(path):
    from scipy.stats import nbinom
    p = 1 / 102400
    with open(path, "w") as f:
        s = 1.0
        while s <= 2e4:
            k = math.ceil(s)
            mean = k * (1 - p) / p
            lo = nbinom.ppf(0.025, k, p) / mean - 1
            hi = nbinom.ppf(0.975, k, p) / mean - 1
            f.write(f"{k} {lo:.6f} {hi:.6f}\n")
            s *= 1.15


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().split("\n")[4], file=sys.stderr)
        return 2
    build, runs = os.path.abspath(argv[1]), int(argv[2]) if len(argv) > 2 else 60
    dat = os.path.join(HERE, "accuracy.dat")
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            points += run(build, i, tmp)
    with open(dat, "w") as f:
        f.write("# samples relative_error interval_holds_truth sampling_mean type\n")
        for p in points:
            f.write(f"{p[0]} {p[1]:.6f} {p[2]} {p[3]} {p[4]}\n")
    bandf = os.path.join(HERE, "accuracy-band.dat")
    band(bandf)
    png = os.path.join(ROOT, "docs", "img", "accuracy.png")
    subprocess.run(["gnuplot"], input=f"""
set terminal pngcairo size 900,560 font ",11"
set output "{png}"
set logscale x
set xrange [1:20000]
set yrange [-1:3]
set grid
set xlabel "samples of the type in one recording"
set ylabel "relative error of the bytes estimate"
set title "rasp-docstore, {runs} recordings x 11 types (means 4 KiB to 1 MiB)"
plot "{dat}" using 1:2 with points pt 7 ps 0.5 lc rgb "#3060a0" title "per-type estimate", \\
     "{bandf}" using 1:2 with lines lw 2 lc rgb "#c03030" title "95% band (negative binomial)", \\
     "{bandf}" using 1:3 with lines lw 2 lc rgb "#c03030" notitle
""", text=True, check=True)
    n = len(points)
    held = sum(p[2] for p in points)
    print(f"{n} per-type estimates from {runs} recordings; the 95% interval held the truth "
          f"in {held} ({100 * held / n:.1f}%)")
    for lo, hi in ((1, 10), (10, 100), (100, 1000), (1000, 10**9)):
        sel = [p for p in points if lo <= p[0] < hi]
        if sel:
            rms = math.sqrt(sum(p[1] ** 2 for p in sel) / len(sel))
            cov = 100 * sum(p[2] for p in sel) / len(sel)
            print(f"  samples {lo}-{hi - 1}: {len(sel)} estimates, rms relative error "
                  f"{rms:.3f}, coverage {cov:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
