#!/usr/bin/env python3
"""Prints rasp's per-type estimates beside a program's own truth.

Usage: compare-truth.py [--inuse] REPORT.json TRUTH.json
REPORT.json comes from `rasp report --format json` (grouped by type); TRUTH.json from the
program (rasp-docstore --truth): {"rows": [{"type", "bytes", "objects"}], "total": {...}}.
With --inuse, the report's in-use figures (rasp report --inuse) beside what the program
held at exit (rasp-docstore --no-cleanup --truth: "held_at_exit", "held_total").
Exits 1 when an input is unreadable. Standard library only."""
import json
import sys


def human(n):
    """Decimal units, as the byte columns beside it are read (1M = 10^6 bytes)."""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f}{unit}"
    return f"{n:.0f}"


def inuse_view(report, truth):
    """The in-use figures under the names the comparison reads."""
    def pick(r):
        return {"samples": r["inuse_samples"], "bytes": r["inuse_bytes"],
                "bytes_low": r["inuse_bytes_low"], "bytes_high": r["inuse_bytes_high"],
                "objects": r["inuse_objects"], **({"type": r["type"]} if "type" in r else {})}
    report = dict(report, rows=[pick(r) for r in report["rows"]], total=pick(report["total"]))
    truth = {"rows": truth["held_at_exit"], "total": truth["held_total"]}
    return report, truth


def main(argv):
    inuse = len(argv) > 1 and argv[1] == "--inuse"
    if inuse:
        argv = argv[:1] + argv[2:]
    if len(argv) != 3:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            report = json.load(f)
        with open(argv[2], encoding="utf-8") as f:
            truth = json.load(f)
        if inuse:
            report, truth = inuse_view(report, truth)
    except (OSError, ValueError, KeyError) as e:
        print(f"compare-truth: {e}", file=sys.stderr)
        return 1
    est = {r["type"]: r for r in report["rows"]}
    conf = report.get("confidence", 0.95)
    rows = sorted(truth["rows"], key=lambda r: -r["bytes"])
    w = max([len("TYPE")] + [len(r["type"]) for r in rows])
    print(f"{'TYPE':<{w}} {'SAMPLES':>7}  {'EST. BYTES':>11} {f'{conf:.0%} INTERVAL':>19}"
          f"  {'TRUE BYTES':>11}  {'HELD':>4}  {'EST. OBJECTS':>12} {'TRUE OBJECTS':>12}")
    held = 0
    for r in rows:
        e = est.get(r["type"], {"samples": 0, "bytes": 0, "bytes_low": 0, "bytes_high": 0,
                                "objects": 0})
        ok = e["bytes_low"] <= r["bytes"] <= e["bytes_high"]
        held += ok
        interval = f"[{human(e['bytes_low'])}, {human(e['bytes_high'])}]"
        print(f"{r['type']:<{w}} {e['samples']:>7}  {e['bytes']:>11.0f} {interval:>19}"
              f"  {r['bytes']:>11}  {'yes' if ok else 'NO':>4}  {e['objects']:>12.0f}"
              f" {r['objects']:>12}")
    t, tt = report["total"], truth["total"]
    ok = t["bytes_low"] <= tt["bytes"] <= t["bytes_high"]
    interval = f"[{human(t['bytes_low'])}, {human(t['bytes_high'])}]"
    print(f"{'TOTAL':<{w}} {t['samples']:>7}  {t['bytes']:>11.0f} {interval:>19}"
          f"  {tt['bytes']:>11}  {'yes' if ok else 'NO':>4}  {t['objects']:>12.0f}"
          f" {tt['objects']:>12}")
    print(f"\nThe {conf:.0%} interval holds the true bytes for {held} of {len(rows)} types "
          f"({held / len(rows):.0%}) and {'holds' if ok else 'does NOT hold'} the true total.")
    print(f"Expect about {conf:.0%} of types to be held over many runs: an interval is a "
          f"statement about the sampling, not a guarantee for every type.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
