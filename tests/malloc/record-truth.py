#!/usr/bin/env python3
"""rasp record on a program that does not link librasp (truth-prog.c), through the real
lttng-sessiond: rasp preloads librasp-malloc.so, and the report's 95% intervals per site (bytes
and objects) hold the truth the program counted itself, over fixed seeds.

Usage: record-truth.py RASP TRUTH-PROG WORKDIR
Each of the SEEDS recordings gives 4 sites x 2 intervals; at 95% coverage, 80 intervals miss 4
on average with a standard deviation of 1.95: more than 10 misses (3 standard deviations) fails.
Every site must also be named by its own function (the first frame outside the allocator)."""
import csv
import os
import shutil
import subprocess
import sys

SEEDS = range(1, 11)
SITES = ("site_small", "site_zeroed", "site_grow", "site_aligned")
MAX_MISSES = 10


def main():
    rasp, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    misses = total = 0
    for seed in SEEDS:
        out = os.path.join(work, "trace-%d" % seed)
        truth_file = os.path.join(work, "truth-%d" % seed)
        shutil.rmtree(out, ignore_errors=True)
        rec = subprocess.run([rasp, "record", "--seed", str(seed), "-o", out, "--", prog,
                              truth_file], capture_output=True, text=True, timeout=300)
        if rec.returncode != 0:
            sys.exit("rasp record failed (%d): %s" % (rec.returncode, rec.stderr))
        said = rec.stderr.count("does not link librasp: preloading")
        if said != 1:
            sys.exit("expected the preload said once, got %d times:\n%s" % (said, rec.stderr))
        truth = {}
        with open(truth_file) as f:
            for line in f:
                name, objects, nbytes = line.split()
                truth[name] = (int(objects), int(nbytes))
        rep = subprocess.run([rasp, "report", "--by", "site", "--format", "csv", out],
                             capture_output=True, text=True, timeout=300)
        if rep.returncode != 0:
            sys.exit("rasp report failed: %s" % rep.stderr)
        rows = {}
        for row in csv.DictReader(rep.stdout.splitlines()):
            if row["scope"] == "group":
                rows[row["site"].split(" ")[0]] = row
        for site in SITES:
            if site not in rows:
                sys.exit("seed %d: no row for %s in:\n%s" % (seed, site, rep.stdout))
            r = rows[site]
            objects, nbytes = truth[site]
            for what, true, lo, hi in (
                    ("bytes", nbytes, float(r["bytes_low"]), float(r["bytes_high"])),
                    ("objects", objects, float(r["objects_low"]), float(r["objects_high"]))):
                total += 1
                if not lo <= true <= hi:
                    misses += 1
                    print("seed %d %s %s: truth %d outside [%g, %g]" %
                          (seed, site, what, true, lo, hi))
        shutil.rmtree(out, ignore_errors=True)
    print("%d of %d intervals hold the truth (%.1f%%)" %
          (total - misses, total, 100.0 * (total - misses) / total))
    if misses > MAX_MISSES:
        sys.exit("%d misses, more than %d (3 standard deviations past 95%% coverage)" %
                 (misses, MAX_MISSES))


if __name__ == "__main__":
    main()
