#!/usr/bin/env python3
"""Writes the .nettrace files that source.rasp.nettrace's own tests read (test-source-nettrace.c)
beside make-nettrace.py's suite, with its primitives: files that are valid for their first
events and corrupt after them (the error comes in a later batch of messages than the first),
V6 files that redefine a metadata id, and a V6 file that defines more event classes than the
source makes. Each NAME.nettrace gets NAME.expect with the lines the tests read:
  size N     bytes in the file
  error N    (corrupt files) the offset the error message must name

  make-source-cases.py DIR
"""
import importlib.util
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("make_nettrace",
                                               os.path.join(HERE, "make-nettrace.py"))
mn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mn)

# What the source makes at most (consumer/bt/source-nettrace-iter.h, RASP_NT_MAX_CLASSES).
MAX_CLASSES = 16384


def late_corrupt(form):
    """The main trace with its last event claiming 64 payload bytes more than its block holds:
    17 good events (about 30 messages with their stacks) before the error."""
    regions = mn.main_trace()
    mn.number(regions)
    order = [e for e, _ in mn.file_order(regions[1].events)]
    order[-1].claimed_size = len(order[-1].payload) + 64
    data, lay = mn.write(form, regions)
    error = next(off for off, e in lay.blobs if e.claimed_size is not None)
    return data, ["size\t%d" % len(data), "error\t%d" % error]


class V6:
    """A V6 file block by block: one thread (index 1, OS thread A of process PID), events of
    one sequence, compressed headers."""

    def __init__(self):
        kv = [("ProcessId", str(mn.PID))]
        self.out = bytearray(b"Nettrace" + struct.pack("<III", 0, 6, 0))
        self.block(1, struct.pack("<8h", *mn.SYNC_UTC) +
                   struct.pack("<qqii", mn.SYNC_QPC, mn.FREQ, mn.POINTER, len(kv)) +
                   b"".join(mn.s8(k) + mn.s8(v) for k, v in kv))
        row = mn.varuint(1) + bytes([2]) + mn.varuint(mn.PID) + bytes([3]) + mn.varuint(mn.A)
        self.block(6, struct.pack("<H", len(row)) + row)
        self.seq = 0
        self.ts = mn.SYNC_QPC

    def block(self, kind, content):
        self.out += struct.pack("<I", len(content) | kind << 24) + content

    def metadata(self, metas):
        self.block(3, struct.pack("<H", 0) + b"".join(mn.v6_metadata_row(m) for m in metas))

    def events(self, items):
        """items: (metadata id, payload bytes); 1 us apart."""
        hdrs = []
        for mid, payload in items:
            self.seq += 1
            self.ts += 1000
            hdrs.append((mn.Hdr(meta=mid, seq=self.seq, capture=1, tid=1, ts=self.ts,
                                activity=0, sorted=True, size=len(payload)), payload))
        self.block(2, mn.event_block(hdrs, True, True)[0])

    def end(self):
        self.block(4, struct.pack("<QII", self.ts + 1, 0, 1) + mn.varuint(1) +
                   mn.varuint(self.seq))
        self.out += struct.pack("<I", 0)
        return bytes(self.out), ["size\t%d" % len(self.out)]


def config_meta(mid):
    return mn.Meta(mid, mn.RASP, 1, "SamplingConfigured", 0x1, 0, 4)


def alloc_meta(mid):
    return mn.Meta(mid, mn.DOTNET, 303, "AllocationSampled", 0x80000000000, 0, 4)


def widget_meta(mid):
    return mn.Meta(mid, "Contoso-Widgets", 7, "WidgetSpun", 0x10, 2, 5)


CONFIG = mn.sampling_configured(0, 65536, 8192, 0)[0]


def alloc(n):
    return mn.allocation_sampled(0, 0x7F0000001000 + n, "Redefined.T%d" % n,
                                 0x7F00DEAD0000 + 64 * n, 104, 17)[0]


def redefined():
    """Metadata id 1 is SamplingConfigured (4 fields), then AllocationSampled (7 fields: the
    old class cannot hold them), then SamplingConfigured again, then an event rasp does not
    know; id 2 is AllocationSampled throughout. Each definition is used by one event: 2
    SamplingConfigured, 3 samples (types Redefined.T1..T3), 1 other event."""
    f = V6()
    f.metadata([config_meta(1), alloc_meta(2)])
    f.events([(1, CONFIG), (2, alloc(1))])
    f.metadata([alloc_meta(1)])
    f.events([(1, alloc(2))])
    f.metadata([config_meta(1)])
    f.events([(1, CONFIG), (2, alloc(3))])
    f.metadata([widget_meta(1)])
    f.events([(1, b"\x00\x00")])
    return f.end()


def redefined_short():
    """The smallest case: id 1 is SamplingConfigured, used, then AllocationSampled, used."""
    f = V6()
    f.metadata([config_meta(1)])
    f.events([(1, CONFIG)])
    f.metadata([alloc_meta(1)])
    f.events([(1, alloc(1))])
    return f.end()


def redefined_many():
    """Metadata id 1 is SamplingConfigured, then three events rasp does not know in turn; id 2
    is AllocationSampled. Each definition used once: five classes, three of them under ids no
    metadata id has (CTF readers keep class ids in 32 bits: the three must not alias 1 or 2)."""
    f = V6()
    f.metadata([config_meta(1), alloc_meta(2)])
    f.events([(1, CONFIG), (2, alloc(1))])
    for k in range(3):
        f.metadata([mn.Meta(1, "Contoso-Redefined", 10 + k, "", 0, 0, 4)])
        f.events([(1, b""), (2, alloc(2 + k))])
    return f.end()


def many_classes(n):
    """n distinct events (provider Contoso-Many, event ids 1..n), each defined under metadata
    id 1 in turn and used once: n event classes."""
    f = V6()
    for k in range(1, n + 1):
        f.metadata([mn.Meta(1, "Contoso-Many", k, "", 0, 0, 4)])
        f.events([(1, b"")])
    return f.end()


def suite():
    s = {}
    for form in ("v4", "v5", "v6"):
        s[form + "-late-corrupt"] = lambda form=form: late_corrupt(form)
    s["v6-redefined-metadata"] = redefined
    s["v6-redefined-short"] = redefined_short
    s["v6-redefined-many"] = redefined_many
    s["v6-classes-at-limit"] = lambda: many_classes(MAX_CLASSES)
    s["v6-classes-past-limit"] = lambda: many_classes(MAX_CLASSES + 1)
    return s


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-source-cases.py DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, make in suite().items():
        mn.save(os.path.join(sys.argv[1], name + ".nettrace"), *make())
    return 0


if __name__ == "__main__":
    sys.exit(main())
