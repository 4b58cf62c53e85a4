#!/usr/bin/env python3
"""Checks the AllocationSampled events of an Oracle run (as NetTraceDump prints them) against
the Oracle's truth JSON; run by run-oracle.sh. Prints every figure it compares, "FAIL: ..." for
each failed check, and "PASS: dotnet-eventpipe-oracle" when all hold (exit 0, else 1).

  check-oracle.py --trace F.nettrace --truth truth.json --events events.tsv --pid PID
                  --threads N [--mean 102400] [--sigmas 4] [--report report.json]

With --report (rasp report --format json --group-by type,kind on the same file), rasp's
estimates are checked too: each truth type's row has exactly the samples TraceEvent decoded,
and its byte and object intervals hold the truth.

Sampling model (.NET 10, RandomizedAllocationSampling): every allocated byte is sampled with
probability p = 1/mean, so an object of s bytes is sampled with q(s) = 1-(1-p)^s. For a type
whose objects have the sizes of the truth's histogram, the number of samples has mean
E = sum q(s) and variance sum q(s)(1-q(s)) (independent Bernoulli trials), and the
Horvitz-Thompson estimate sum over samples of s/q(s) has mean the true bytes and variance
sum s^2 (1-q(s))/q(s).
"""
import argparse
import json
import math
import re
import sys
from collections import Counter, defaultdict

KIND_NAMES = {0: "Small", 1: "Large", 2: "Pinned"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--mean", type=float, default=102400.0)
    ap.add_argument("--sigmas", type=float, default=4.0)
    ap.add_argument("--report")
    ap.add_argument("--sites", help="NetTraceDump --sites output (TraceEvent's TraceLog)")
    ap.add_argument("--site-report", help="rasp report --format json --group-by type,site")
    ap.add_argument("--stack-report", help="rasp report --format json --group-by type,stack")
    a = ap.parse_args()

    failures = []

    def check(ok, what):
        print(("ok:   " if ok else "FAIL: ") + what)
        if not ok:
            failures.append(what)

    with open(a.trace, "rb") as f:
        magic = f.read(8)
    check(magic == b"Nettrace", f"{a.trace} starts with {magic!r} (want b'Nettrace')")

    with open(a.truth) as f:
        truth = json.load(f)
    types = {k: v for k, v in truth.items() if k != "total"}

    # NetTraceDump's lines, then its closing "events=N lost=M pointer_size=P".
    events = []
    footer = None
    with open(a.events, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("events="):
                footer = dict(kv.split("=", 1) for kv in line.split())
                continue
            fields = line.split("\t")
            if len(fields) != 9:
                check(False, f"malformed NetTraceDump line: {line!r}")
                continue
            pid, tid, kind, clr, typeid, name, addr, size, offset = fields
            events.append((int(pid), int(tid), int(kind), int(clr), int(typeid, 16), name,
                           int(addr, 16), int(size), int(offset)))
    check(footer is not None, "NetTraceDump printed its events=/lost=/pointer_size= line")
    if footer is None:
        return finish(failures)
    check(int(footer["events"]) == len(events) and len(events) > 0,
          f"events={footer['events']}, {len(events)} lines")
    check(int(footer["lost"]) == 0, f"lost={footer['lost']} (want 0)")
    check(int(footer["pointer_size"]) == 8, f"pointer_size={footer['pointer_size']} (want 8)")
    pids = Counter(e[0] for e in events)
    check(set(pids) == {a.pid}, f"every event has the Oracle's pid {a.pid}: {dict(pids)}")
    check(all(e[3] == 0 for e in events), "every ClrInstanceID is 0")

    p = 1.0 / a.mean
    log1mp = math.log1p(-p)

    def q(s):
        return -math.expm1(s * log1mp)

    by = defaultdict(list)  # (type, kind) -> events
    for e in events:
        by[(e[5], e[2])].append(e)

    print(f"{'type':<16} {'kind':<6} {'objects':>9} {'bytes':>11} {'samples':>7} {'expected':>9}"
          f" {'sd':>6} {'z':>6} {'est. bytes':>11} {'z':>6}")
    worker_tids = Counter()  # tid -> samples of the truth types (with their kind)
    for name, t in types.items():
        kind = t["kind"]
        sizes = {int(s): n for s, n in t["sizes"].items()}
        got = by.get((name, kind), [])
        expected = sum(n * q(s) for s, n in sizes.items())
        var = sum(n * q(s) * (1 - q(s)) for s, n in sizes.items())
        est = sum(e[7] / q(e[7]) for e in got)
        est_var = sum(n * s * s * (1 - q(s)) / q(s) for s, n in sizes.items())
        z = (len(got) - expected) / math.sqrt(var)
        zb = (est - t["bytes"]) / math.sqrt(est_var)
        print(f"{name:<16} {kind} {KIND_NAMES.get(kind, '?'):<4} {t['objects']:>9} {t['bytes']:>11}"
              f" {len(got):>7} {expected:>9.1f} {math.sqrt(var):>6.1f} {z:>+6.2f} {est:>11.0f} {zb:>+6.2f}")
        check(len(got) > 0, f"{name} appears in AllocationSampled events with kind {kind}"
              f" ({KIND_NAMES.get(kind)})")
        check(abs(z) <= a.sigmas, f"{name}: {len(got)} samples, expected {expected:.1f}"
              f" +- {math.sqrt(var):.1f} (|z| = {abs(z):.2f} <= {a.sigmas})")
        check(abs(zb) <= a.sigmas, f"{name}: estimated {est:.0f} bytes, true {t['bytes']}"
              f" (|z| = {abs(zb):.2f} <= {a.sigmas})")
        odd = [e for e in got if e[7] not in sizes or not 0 <= e[8] < e[7]]
        check(not odd, f"{name}: every ObjectSize is the size of one of its objects in the truth"
              f" (header included), 0 <= SampledByteOffset < ObjectSize"
              + (f"; not: {odd[:3]}" if odd else ""))
        # An object of a measured size reported with another kind is a workload object with
        # the wrong kind; other sizes are the runtime's own objects of that type.
        wrong = [e for e in events if e[5] == name and e[2] != kind and e[7] in sizes]
        others = Counter(e[2] for e in events if e[5] == name and e[2] != kind)
        check(not wrong, f"{name}: no object of a measured size has a kind other than {kind}"
              + (f"; wrong: {wrong[:3]}" if wrong else "")
              + (f" (other kinds, from outside the loops: {dict(others)})" if others else ""))
        type_ids = {e[4] for e in got}
        check(len(type_ids) <= 1, f"{name}: one TypeID ({', '.join(hex(i) for i in type_ids)})")
        worker_tids.update(e[1] for e in got)
    # The workers: threads with many samples of the truth types (each has hundreds); a thread
    # with a few is the main thread or a runtime thread allocating one of these types.
    busy = {tid for tid, n in worker_tids.items() if n >= 10}
    check(len(busy) == a.threads and a.pid not in busy,
          f"samples of the truth types come from {len(busy)} busy threads (want {a.threads}"
          f" workers, not the main thread {a.pid}): {dict(sorted(worker_tids.items()))}")
    if a.report:
        check_report(a, types, by, check)
    if a.sites and a.site_report and a.stack_report:
        check_sites(a, types, check)
    rest = Counter((e[5], e[2]) for e in events if e[5] not in types)
    print(f"other types (the runtime's and the Oracle's own, outside the loops): "
          f"{sum(rest.values())} samples in {len(rest)} (type, kind)")
    return finish(failures)


def check_report(a, types, by, check):
    """rasp report's rows against TraceEvent's events and the truth."""
    with open(a.report) as f:
        rep = json.load(f)
    rows = {(r["type"], r["kind"]): r for r in rep["rows"]}
    check(rep["sampling_mean"] == a.mean, f"rasp report: sampling mean {rep['sampling_mean']}"
          f" (want .NET's {a.mean:.0f})")
    check(not rep["estimates_too_low"] and not rep["incomplete_input"],
          "rasp report: no loss, input complete")
    print(f"rasp report at {rep['confidence']} confidence:")
    for name, t in types.items():
        kind = KIND_NAMES[t["kind"]]
        r = rows.get((name, kind))
        check(r is not None, f"rasp report has a row for {name} {kind}")
        if r is None:
            continue
        got = len(by.get((name, t["kind"]), []))
        check(r["samples"] == got, f"{name}: rasp counts {r['samples']} samples, TraceEvent {got}")
        check(r["bytes_low"] <= t["bytes"] <= r["bytes_high"],
              f"{name}: true bytes {t['bytes']} in rasp's interval [{r['bytes_low']},"
              f" {r['bytes_high']}] (estimate {r['bytes']})")
        check(r["objects_low"] <= t["objects"] <= r["objects_high"],
              f"{name}: true objects {t['objects']} in rasp's interval [{r['objects_low']},"
              f" {r['objects_high']}] (estimate {r['objects']})")


# The Oracle's allocating code: one lambda per truth type in Program.Work (the C# compiler
# names them). GC.AllocateArray<long> allocates in the runtime's method until tiered JIT
# inlines it into its lambda, part way through: its loop has two sites, in proportions no
# truth gives, so only where its samples are is checked, not an interval.
LAMBDA = re.compile(r"^Oracle\.Program\+<>c(__DisplayClass\d+_\d+)?\.<Work>b__\w+$")
SPLIT = {"System.Int64[]": re.compile(r"^System\.GC\.AllocateArray$")}


def bare(method):
    """A method's name without its parameters ("N.C.M(int32)" is "N.C.M"); a name in
    parentheses, as rasp's "(no stack)", stays whole (cut, it read "" and matched nothing)."""
    return method if method.startswith("(") else method.split("(", 1)[0]


def check_sites(a, types, check):
    """rasp's sites against TraceEvent's (same samples per type and innermost frame, methods
    compared without their parameters), then against the Oracle's code: each truth type's
    site is the lambda that allocates it, with the truth inside its interval, called from
    Measure and Work."""
    with open(a.site_report) as f:
        sites = json.load(f)
    with open(a.stack_report) as f:
        stacks = json.load(f)
    check(sites["group_by"] == ["type", "site"] and stacks["group_by"] == ["type", "stack"],
          f"rasp report group_by {sites['group_by']} and {stacks['group_by']}")
    theirs = Counter()
    with open(a.sites, encoding="utf-8") as f:
        for line in f:
            if line.startswith("events="):
                continue
            typ, site, n, _ = line.rstrip("\n").split("\t")
            # Both name a method with its parameters, each in its own form: compared without.
            site = "(no stack)" if site == "?" else bare(site)
            theirs[(typ, site)] += int(n)
    ours = Counter()
    for r in sites["rows"]:
        ours[(r["type"], bare(r["site"]))] += r["samples"]
    differ = sorted(k for k in set(theirs) | set(ours) if theirs[k] != ours[k])
    check(not differ, f"samples per (type, site): rasp and TraceEvent agree on {len(ours)} pairs"
          + (f"; differ on {[(k, ours[k], theirs[k]) for k in differ[:5]]}" if differ else ""))
    # A sample the runtime wrote without a stack (TraceEvent finds none either: checked just
    # above) has no site to name; every sample with a stack must have its site named, and
    # stackless ones must stay rare.
    stackless = sum(n for (t, s), n in ours.items() if s == "(no stack)")
    unnamed = sum(n for (t, s), n in ours.items() if s.startswith(("[no object]", "0x")))
    total = sum(ours.values())
    check(unnamed == 0, f"rasp names the site of every sample with a stack ({unnamed} unnamed "
          f"of {total - stackless})")
    check(stackless * 100 <= total, f"samples without a stack: {stackless} of {total} (want <= 1%)")
    lambdas = set()
    for name, t in types.items():
        rows = sorted((r for r in sites["rows"] if r["type"] == name), key=lambda r: -r["bytes"])
        if not rows:
            check(False, f"{name}: rasp report has a site row")
            continue
        if name in SPLIT:
            at = sum(r["samples"] for r in rows
                     if LAMBDA.match(bare(r["site"])) or SPLIT[name].match(bare(r["site"])))
            n = sum(r["samples"] for r in rows)
            check(at >= 0.99 * n, f"{name}: {at} of {n} samples at its lambda or at"
                  f" {SPLIT[name].pattern} (want 99%)")
            lambdas.update(bare(r["site"]) for r in rows if LAMBDA.match(bare(r["site"])))
            continue
        r = rows[0]
        check(LAMBDA.match(bare(r["site"])) is not None,
              f"{name}: allocated at {r['site']} (want {LAMBDA.pattern})")
        lambdas.add(bare(r["site"]))
        check(r["bytes_low"] <= t["bytes"] <= r["bytes_high"],
              f"{name} at {r['site']}: true bytes {t['bytes']} in [{r['bytes_low']},"
              f" {r['bytes_high']}] (estimate {r['bytes']})")
        check(r["objects_low"] <= t["objects"] <= r["objects_high"],
              f"{name} at {r['site']}: true objects {t['objects']} in [{r['objects_low']},"
              f" {r['objects_high']}] (estimate {r['objects']})")
        top = max((s for s in stacks["rows"] if s["type"] == name), key=lambda s: s["bytes"],
                  default=None)
        frames = [bare(fr["function"]) for fr in top["stack"]] if top else []
        check(frames[:1] == [bare(r["site"])] and "Oracle.Program.Measure" in frames
              and "Oracle.Program.Work" in frames,
              f"{name}: its heaviest stack starts at its site and passes Measure and Work: {frames}")
    check(len(lambdas) in (len(types) - 1, len(types)),
          f"{len(types)} truth types at {len(lambdas)} distinct lambdas: {sorted(lambdas)}")


def finish(failures):
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("PASS: dotnet-eventpipe-oracle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
