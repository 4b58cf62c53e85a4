#!/usr/bin/env python3
"""The allocation slow path's cost per entry, from two callgrind profiles of
`bench-alloc-rasp fixed N Z` (sampling off, then on; no session, so an event costs a load).
Reads callgrind_annotate's inclusive tree; prints instructions per allocation on and off, the
slow path's entries, and per entry: the slow path without its list refill and its event,
the refill and the draws; and the event per sample. The window's recomputation and the
sampling-state check are inline in the lean miss (runtime/alloc.c), so not apart; the
generic path's share of them is window_set's and the full update's. Usage: slowpath.py
OFF.out ON.out N. Never a test."""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+([*<> ])\s+(\S+)(?: \((\d[\d,]*)x\))?")


def parse(path):
    """{function: inclusive}, {function: calls}, {(caller, callee): inclusive},
    {(caller, callee): calls}."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=calling", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    incl, calls, edge, ecalls, cur = {}, {}, {}, {}, None
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cost = int(m.group(1).replace(",", ""))
        name = m.group(3).split(":")[-1]
        if m.group(2) == "*":
            cur = name
            incl[name] = max(incl.get(name, 0), cost)
        elif m.group(2) == ">" and cur:
            n = int(m.group(4).replace(",", "")) if m.group(4) else 0
            calls[name] = calls.get(name, 0) + n
            edge[(cur, name)] = edge.get((cur, name), 0) + cost
            ecalls[(cur, name)] = ecalls.get((cur, name), 0) + n
    return incl, calls, edge, ecalls


def total(path):
    out = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^\s*([\d,]+) .*PROGRAM TOTALS", out, re.M)
    return int(m.group(1).replace(",", ""))


def self_cost(path, fn):
    """A function's exclusive instructions, summed over the source files of its lines."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    pat = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+\S+:" + re.escape(fn) + r"(\s|$)")
    return sum(int(m.group(1).replace(",", "")) for m in map(pat.match, out.splitlines()) if m)


def main():
    off, on, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t_off, t_on = total(off), total(on)
    print(f"program instructions per allocate/free pair: sampling off {t_off / n:.1f}, "
          f"on {t_on / n:.1f} ({100 * (t_on / t_off - 1):+.2f}%)")
    for label, path in (("off", off), ("on", on)):
        incl, calls, edge, ecalls = parse(path)
        # The slow path: the fast path's miss (rasp__alloc_miss) and the generic one
        # (rasp__alloc_slow), which the miss calls for sizes past the small range.
        slow_fns = ("rasp__alloc_miss", "rasp__alloc_slow")
        inner = ("rasp__alloc_miss", "rasp__alloc_slow")
        entries = (sum(calls.get(f, 0) for f in slow_fns)
                   - ecalls.get(inner, 0))
        slow = sum(incl.get(f, 0) for f in slow_fns) - edge.get(inner, 0)
        # Edges out of the slow path: from its entries and from the generic miss they call.
        from_slow = lambda callee: sum(edge.get((f, callee), 0)
                                       for f in slow_fns + ("miss_generic", "miss_sampled",
                                                            "sampled_slow", "miss_refill"))
        refill = (from_slow("list_refill") + from_slow("rasp__page_find")
                  + from_slow("rasp__page_take_list"))
        # A sample's event: rasp__emit_listened, called only when someone listens (a hook or
        # a session), from the generic path or the lean path's sampled block (miss_sampled,
        # sampled_slow where the draw's tables did not decide).
        event = from_slow("rasp__emit_listened")
        generic_samples = ecalls.get(("miss_generic", "rasp__emit_listened"), 0)
        lean_samples = calls.get("miss_sampled", 0)
        sampled = (sum(edge.get((f, "miss_sampled"), 0) for f in slow_fns)
                   - sum(edge.get((f, g), 0) for f in ("miss_sampled", "sampled_slow")
                         for g in ("rasp__exponential_slow", "rasp__emit_listened")))
        draws = sum(c for (a, b), c in edge.items()
                    if b == "rasp__exponential_slow"
                    and a in slow_fns + ("window_set", "miss_generic", "miss_sampled",
                                         "sampled_slow"))
        # window_set's own cost, where it is a function (inline in the sampled block's path).
        window = incl.get("window_set", 0) - sum(
            edge.get(("window_set", g), 0) for g in ("rasp__exponential_slow",))
        update = from_slow("rasp__sampling_update_full")
        if not entries:
            print(f"sampling {label}: no slow path entry found")
            continue
        per = lambda x: x / entries
        print(f"sampling {label}: {entries} slow-path entries ({n / entries:.1f} allocations "
              f"each); per entry: {per(slow - refill - event):.0f} without refill and event "
              f"(the draws' out-of-line part {per(draws):.1f}; out of the lean path: window_set "
              f"{per(window):.0f}, full state update {per(update):.0f}), "
              f"refill {per(refill):.0f}"
              + (f"; samples {generic_samples + lean_samples}: {lean_samples} at a lean miss "
                 f"({sampled / lean_samples:.0f} instructions each besides the draw's out-of-line "
                 f"part, the event and the inline draw included)" if lean_samples else "")
              + (f"; event {event / generic_samples:.0f} per sample out of the generic path"
                 if generic_samples else ""))
        # The issue's measure: an entry that takes no sample (the sampled blocks' own path,
        # their draws and event checks apart), refills apart.
        # The lean miss's own instructions (rasp__alloc_miss's self cost, over every source
        # file inlined into it): the checks, the state check, the window and the block, at
        # every entry; what it calls (a refill, a sampled block, the generic way) apart.
        near = calls.get("miss_near", 0)
        print(f"sampling {label}: the lean miss's own instructions per entry: "
              f"{self_cost(path, 'rasp__alloc_miss') / entries:.1f}"
              + (f"; a window cut before its sample (miss_near, {near} calls): "
                 f"{self_cost(path, 'miss_near') / near:.0f} own instructions each"
                 if near else ""))


if __name__ == "__main__":
    main()
