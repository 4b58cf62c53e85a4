#!/usr/bin/env python3
"""rasp record on a program that does not link librasp (truth-prog.c), through the real
lttng-sessiond: rasp preloads librasp-malloc.so, and the report's 95% intervals per process and
site (bytes and objects) hold the truth the program counted itself, over fixed seeds.

Usage: record-truth.py RASP TRUTH-PROG WORKDIR [--seeds N]
--seeds N (outside the suite): N recordings of one process instead, for a sharper figure,
printed with its standard error and per site (misses below / above the truth).
SEEDS recordings of one process, then FAMILY_SEEDS of the program with a forked child and an
exec'd copy (three processes, each its own in the report: rasp record follows them). Each
process gives 4 sites x 2 intervals. At 95% coverage n intervals miss 0.05 n on average; a
site's bytes and objects intervals rest on the same samples and often miss together, so the
standard deviation is taken as that of n / 2 pairs each missing twice, sqrt(2 n 0.05 0.95) (the
bound for pairs that always miss together; independent intervals would give sqrt(n 0.05 0.95)):
more misses than 3 of those past the mean fails (12 of 80 for the first part, 19 of 152 in
all). The exec'd copy runs with another seed (its
parent's would repeat its parent's samples).
Every site must be named by its own function (the first frame outside the allocator)."""
import csv
import math
import os
import shutil
import subprocess
import sys

SEEDS = range(1, 11)
FAMILY_SEEDS = range(11, 14)
SITES = ("site_small", "site_zeroed", "site_grow", "site_aligned")


def read_truth(path):
    truth = {}
    with open(path) as f:
        for line in f:
            name, *values = line.split()
            truth[name] = tuple(int(v) for v in values)
    return truth


# Buffers for a re-record (--subbuf-size, --num-subbuf) when the tracer discarded events: on a
# loaded machine the consumer daemon can fall behind rasp record's default buffers (256 KiB x 4
# per CPU at the default mean, about 0.15 s of this program's samples). A run that lost
# samples estimates too low at every site at once (3% to 59% in 10 of 100 runs on a loaded
# 2-core machine), which is no fault of the intervals; the same seed records the same
# allocations again.
BIGGER_BUFFERS = ((), ("--subbuf-size", "4194304", "--num-subbuf", "8"),
                  ("--subbuf-size", "16777216", "--num-subbuf", "8"))


def record(head, out, argv, env=None):
    """rasp record (head: the command and its options) of argv into out, again with larger
    buffers while the tracer discarded events; the last run's CompletedProcess."""
    for bufs in BIGGER_BUFFERS:
        shutil.rmtree(out, ignore_errors=True)
        rec = subprocess.run(head + list(bufs) + ["-o", out, "--"] + argv, env=env,
                             capture_output=True, text=True, timeout=600)
        if rec.returncode != 0:
            sys.exit("rasp record failed (%d): %s" % (rec.returncode, rec.stderr))
        if "the tracer discarded" not in rec.stderr:
            return rec
        print("%s: the tracer discarded events: recorded again with larger buffers" % out)
    sys.exit("the tracer discarded events even with the largest buffers:\n%s" % rec.stderr)


def check(seed, family, work, rasp, prog, per_site=None):
    """Records one run; returns (intervals, misses). per_site: {(site, what): [n, below,
    above]} to add to."""
    out = os.path.join(work, "trace-%d" % seed)
    truth_file = os.path.join(work, "truth-%d" % seed)
    argv = [prog, truth_file] + (["family"] if family else [])
    rec = record([rasp, "record", "--seed", str(seed)], out, argv)
    said = rec.stderr.count("does not link librasp: preloading")
    if said != 1:
        sys.exit("expected the preload said once, got %d times:\n%s" % (said, rec.stderr))
    truths = [read_truth(truth_file)]
    if family:
        truths += [read_truth(truth_file + ".child"), read_truth(truth_file + ".exec")]
    rep = subprocess.run([rasp, "report", "--group-by", "process,site", "--format", "csv", out],
                         capture_output=True, text=True, timeout=300)
    if rep.returncode != 0:
        sys.exit("rasp report failed: %s" % rep.stderr)
    rows = {}
    for row in csv.DictReader(rep.stdout.splitlines()):
        if row["scope"] == "group":
            rows[(int(row["process"]), row["site"].split(" ")[0])] = row
    total = misses = 0
    for truth in truths:
        pid = truth["pid"][0]
        for site in SITES:
            if (pid, site) not in rows:
                sys.exit("seed %d: no row for process %d, %s in:\n%s" %
                         (seed, pid, site, rep.stdout))
            r = rows[(pid, site)]
            objects, nbytes = truth[site]
            for what, true, lo, hi in (
                    ("bytes", nbytes, float(r["bytes_low"]), float(r["bytes_high"])),
                    ("objects", objects, float(r["objects_low"]), float(r["objects_high"]))):
                total += 1
                row = per_site.setdefault((site, what), [0, 0, 0]) if per_site is not None \
                    else [0, 0, 0]
                row[0] += 1
                if not lo <= true <= hi:
                    misses += 1
                    row[1 if true < lo else 2] += 1
                    print("seed %d process %d %s %s: truth %d outside [%g, %g]" %
                          (seed, pid, site, what, true, lo, hi))
    shutil.rmtree(out, ignore_errors=True)
    return total, misses


def allowed(n):
    return int(0.05 * n + 3 * math.sqrt(2 * n * 0.05 * 0.95))


def main():
    rasp, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    total = misses = 0
    if len(sys.argv) == 6 and sys.argv[4] == "--seeds" and sys.argv[5].isdigit():
        per_site = {}
        for seed in range(1, int(sys.argv[5]) + 1):
            t, m = check(seed, False, work, rasp, prog, per_site)
            total, misses = total + t, misses + m
        for (site, what), (n, below, above) in sorted(per_site.items()):
            print("  %s %s: %d, %d / %d" % (site, what, n, below, above))
        cov = (total - misses) / total
        print("all: %d of %d intervals hold the truth (%.1f%%, standard error %.1f points)" %
              (total - misses, total, 100.0 * cov, 100.0 * math.sqrt(cov * (1 - cov) / total)))
        return
    if len(sys.argv) != 4:
        sys.exit("usage: record-truth.py RASP TRUTH-PROG WORKDIR [--seeds N]")
    for seed in SEEDS:
        t, m = check(seed, False, work, rasp, prog)
        total, misses = total + t, misses + m
    print("one process: %d of %d intervals hold the truth (%.1f%%)" %
          (total - misses, total, 100.0 * (total - misses) / total))
    if misses > allowed(total):
        sys.exit("%d misses, more than %d" % (misses, allowed(total)))
    for seed in FAMILY_SEEDS:
        t, m = check(seed, True, work, rasp, prog)
        total, misses = total + t, misses + m
    print("with the forked and exec'd processes: %d of %d intervals hold the truth (%.1f%%)" %
          (total - misses, total, 100.0 * (total - misses) / total))
    if misses > allowed(total):
        sys.exit("%d misses, more than %d" % (misses, allowed(total)))


if __name__ == "__main__":
    main()
