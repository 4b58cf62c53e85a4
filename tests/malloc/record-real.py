#!/usr/bin/env python3
"""rasp record on real programs that do not link librasp (python3 with PYTHONMALLOC=malloc,
perl, sqlite3 on a generated database), through the real lttng-sessiond, with the test's
interposer (truth-interposer.c) preloaded in front of librasp-malloc.so counting every block
exactly: the report's 95% intervals per process and type (the call's family), bytes and
objects, against that count, over fixed seeds.

Usage: record-real.py RASP INTERPOSER WORKDIR [--seeds N]
A program that is not installed is skipped (all of them: exit 77). At 95% coverage n intervals
miss 0.05 n on average with a standard deviation of sqrt(n 0.05 0.95): more misses than 3
standard deviations past that fails. --seeds N (3 in the suite) records each program N times,
for a sharper figure outside the suite: the coverage is printed with its standard error, and
per row (program, family, bytes or objects) with its misses below and above."""
import csv
import math
import os
import shutil
import subprocess
import sys

SEEDS = 3
# The high bound of the bytes of a group without a sample at rasp record's mean of 102400 bytes
# and 95%: the 0.975 quantile of the failures before one success, NB(1, 1/102400)
# (docs/sampling.md: the end of the window costs one sample).
MEAN = 102400
UNSEEN_BYTES = math.ceil(math.log(0.025) / math.log1p(-1.0 / MEAN)) - 1
PYTHON = """
import json, random
random.seed(1)
d = {str(i): [random.random() for _ in range(5)] for i in range(100000)}
s = json.dumps(d)
print(len(s), len(json.loads(s)))
"""
PERL = 'my %h; for (1..200000) { $h{$_} = "x" x ($_ % 300) } my $s = join(",", sort keys %h); ' \
       'print length($s), "\\n";'
SQL = """
create table t(a integer, b text);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 100000)
insert into t select i, printf('%.*c', i % 200, 'x') from n;
create index ti on t(b);
select count(*), sum(length(b)) from t group by a % 7 order by 1 limit 3;
"""
# Fixed hash seeds, so that a seed records the same allocations each time (perl's and
# python's hashes are randomized per run otherwise).
PROGRAMS = [
    ("python3", ["python3", "-c", PYTHON], {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}),
    ("perl", ["perl", "-e", PERL], {"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}),
    ("sqlite3", ["sqlite3", ":memory:", SQL], {}),
]


def allowed(n):
    return int(0.05 * n + 3 * math.sqrt(n * 0.05 * 0.95))


def read_truth(path):
    """{pid: {family: (objects, bytes)}} for the processes that allocated from rasp's heap."""
    out, pid = {}, None
    with open(path) as f:
        for line in f:
            name, *v = line.split()
            if name == "pid":
                pid = int(v[0])
                out[pid] = {}
            elif int(v[0]):
                out[pid][name] = (int(v[0]), int(v[1]))
    return {p: t for p, t in out.items() if t}


# Buffers for a re-record (--subbuf-size, --num-subbuf) when the tracer discarded events: on a
# loaded machine the consumer daemon can fall behind rasp record's default buffers (256 KiB x 4
# per CPU at the default mean). A run that lost samples estimates every family too low at once,
# which is no fault of the intervals; the same seed records the same allocations again.
BIGGER_BUFFERS = ((), ("--subbuf-size", "4194304", "--num-subbuf", "8"),
                  ("--subbuf-size", "16777216", "--num-subbuf", "8"))


def record(head, out, argv, env, name, truth_file):
    """rasp record (head: the command and its options) of argv into out, again with larger
    buffers while the tracer discarded events; truth_file (which the interposer's processes
    append to) starts empty at each."""
    for bufs in BIGGER_BUFFERS:
        shutil.rmtree(out, ignore_errors=True)
        if os.path.exists(truth_file):
            os.unlink(truth_file)
        rec = subprocess.run(head + list(bufs) + ["-o", out, "--"] + argv, env=env,
                             capture_output=True, text=True, timeout=600)
        if rec.returncode != 0:
            sys.exit("%s: rasp record failed (%d): %s" % (name, rec.returncode, rec.stderr))
        if "the tracer discarded" not in rec.stderr:
            return
        print("%s: the tracer discarded events: recorded again with larger buffers" % out)
    sys.exit("%s: the tracer discarded events even with the largest buffers:\n%s" %
             (name, rec.stderr))


def run(name, argv, env_extra, seed, rasp, interposer, work, rows_seen):
    out = os.path.join(work, "%s-%d" % (name, seed))
    truth_file = out + ".truth"
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(truth_file):
        os.unlink(truth_file)
    # The interposer as the user's own preload: rasp record appends librasp-malloc.so after
    # it (rasp itself loads it too, and counts nothing: no rasp heap there).
    env = dict(os.environ, RASP_TRUTH_FILE=truth_file, LD_PRELOAD=interposer, **env_extra)
    record([rasp, "record", "--seed", str(seed)], out, argv, env, name, truth_file)
    truth = read_truth(truth_file)
    rep = subprocess.run([rasp, "report", "--group-by", "process,type", "--format", "csv", out],
                         capture_output=True, text=True, timeout=600)
    if rep.returncode != 0:
        sys.exit("%s: rasp report failed: %s" % (name, rep.stderr))
    rows = {}
    for row in csv.DictReader(rep.stdout.splitlines()):
        if row["scope"] == "group":
            rows[(int(row["process"]), row["type"])] = row
    total = misses = 0
    for pid, fams in truth.items():
        sums = [0, 0, 0, 0]  # objects and bytes: truth, and the rows' low/high are summed apart
        cells = []
        for fam, (objects, nbytes) in fams.items():
            r = rows.get((pid, fam))
            if r is None:
                # No sample of the family, so no row. What rasp says of such a group
                # (docs/sampling.md, "The interval for a window that starts and ends
                # anywhere"): its bytes lie in [0, UNSEEN_BYTES]; of its objects it says
                # nothing, which counts as a miss.
                print("%s seed %d process %d %s: no samples (truth %d objects, %d bytes)" %
                      (name, seed, pid, fam, objects, nbytes))
                for what, held in (("bytes", nbytes <= UNSEEN_BYTES), ("objects", False)):
                    row = rows_seen.setdefault((name, fam, what), [0, 0, 0, []])
                    row[0] += 1
                    row[3].append(-1.0)  # the estimate is 0
                    total += 1
                    if not held:
                        row[2] += 1
                        misses += 1
                continue
            cells.append((fam, objects, nbytes, r))
        for fam, objects, nbytes, r in cells:
            for what, true, lo, hi in (
                    ("bytes", nbytes, float(r["bytes_low"]), float(r["bytes_high"])),
                    ("objects", objects, float(r["objects_low"]), float(r["objects_high"]))):
                total += 1
                row = rows_seen.setdefault((name, fam, what), [0, 0, 0, []])
                row[0] += 1
                row[3].append(float(r[what]) / true - 1.0)
                if not lo <= true <= hi:
                    misses += 1
                    row[1 if true < lo else 2] += 1
                    print("%s seed %d process %d %s %s: truth %d outside [%g, %g]" %
                          (name, seed, pid, fam, what, true, lo, hi))
    shutil.rmtree(out, ignore_errors=True)
    return total, misses


def main():
    rasp, interposer, work = sys.argv[1:4]
    seeds = SEEDS
    if len(sys.argv) == 6 and sys.argv[4] == "--seeds" and sys.argv[5].isdigit():
        seeds = int(sys.argv[5])
    elif len(sys.argv) != 4:
        sys.exit("usage: record-real.py RASP INTERPOSER WORKDIR [--seeds N]")
    os.makedirs(work, exist_ok=True)
    total = misses = ran = 0
    rows_seen = {}
    for name, argv, env in PROGRAMS:
        if not shutil.which(argv[0]):
            print("skip: %s is not installed" % argv[0])
            continue
        argv = [shutil.which(argv[0])] + argv[1:]
        ran += 1
        t = m = 0
        for seed in range(1, seeds + 1):
            dt, dm = run(name, argv, env, seed, rasp, interposer, work, rows_seen)
            t, m = t + dt, m + dm
        print("%s: %d of %d intervals hold the truth" % (name, t - m, t))
        total, misses = total + t, misses + m
    if not ran:
        print("skipped: none of python3, perl, sqlite3 is installed")
        sys.exit(77)
    if not total:
        sys.exit("no block counted: the interposer (the user's LD_PRELOAD) did not come before "
                 "librasp-malloc.so, or the library was not preloaded")
    if seeds > SEEDS:
        # The estimate is unbiased: its mean error over the seeds, in its standard errors, says
        # whether the truth counts what the samples estimate (lost or extra calls shift it).
        print("per row: intervals, misses below / above the truth, the estimate's mean error "
              "(standard errors)")
        for (name, fam, what), (n, low, high, err) in sorted(rows_seen.items()):
            mean = sum(err) / n
            sd = math.sqrt(sum((e - mean) ** 2 for e in err) / (n - 1)) if n > 1 else 0.0
            print("  %s %s %s: %d, %d / %d, %+.2f%% (%+.1f)" %
                  (name, fam, what, n, low, high, 100.0 * mean,
                   mean / (sd / math.sqrt(n)) if sd > 0 else 0.0))
    cov = (total - misses) / total
    print("all: %d of %d intervals hold the truth (%.1f%%, standard error %.1f points)" %
          (total - misses, total, 100.0 * cov, 100.0 * math.sqrt(cov * (1 - cov) / total)))
    if misses > allowed(total):
        sys.exit("%d misses, more than %d" % (misses, allowed(total)))


if __name__ == "__main__":
    main()
