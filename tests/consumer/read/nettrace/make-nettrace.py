#!/usr/bin/env python3
"""Writes EventPipe .nettrace files for the reader's tests
(tests/consumer/read/test-nettrace-read.c, tests/consumer/bt/test-source-nettrace.c) and the
fuzzer's seeds: one list of events as NetTrace V4 (compressed headers, laid out as .NET
runtimes write them), "V5" (the same container with uncompressed headers, V1 field lists and
V5 metadata tags) and V6, whole or broken on purpose; and a 618-byte reference file of
three AllocationSampled events, transcribed byte by byte. Standard library only.

Each file NAME.nettrace gets NAME.expect: what a correct reader gives, independent of how the
reader works. Lines (tab-separated):
  size N            bytes in the file
  complete 0|1      whether it ends with its end-of-stream marker
  error N           (broken files) the offset the error message must name
  first-sp N        offset of the first sequence point: a streaming reader hands out the first
                    event before reading it
  event TS PID TID SEQ PROVIDER ID VERSION KEYWORDS LEVEL STACK PAYLOAD
                    in timestamp order; STACK: hex IPs joined by ',' or '-'; PAYLOAD: Name=value
                    joined by ';' for the events rasp knows (integers in decimal), else hex:BYTES
  lost N AT         N events the sequence numbers show lost, at sequence point time AT

  make-nettrace.py --form v4|v5|v6|vector [--truncate] [--gap K] [--drop-tail K]
                   [--corrupt KIND] [--bad-utf16] -o FILE.nettrace
  make-nettrace.py --bomb KIND -o FILE.nettrace
                   a file that costs a careless reader far more than its size (no .expect)
  make-nettrace.py --suite DIR     every variant the tests use, the bombs included
  make-nettrace.py --check-vector  the generator's V4 writer against the guide's listing
"""
import argparse
import os
import struct
import sys

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1

# The trace header of every file (the guide's test vector: 2026-08-07, a Friday, 12:00 UTC).
SYNC_UTC = (2026, 8, 5, 7, 12, 0, 0, 0)  # year, month, day of week, day, h, min, s, ms
SYNC_QPC = 1_000_000_000
FREQ = 1_000_000_000
POINTER = 8
PID = 4242
CPUS = 8
RATE = 1_000_000

A, B, C = 4242, 4243, 4250  # OS thread ids
V6_INDEX = {A: 1, B: 2, C: 3}

DOTNET = "Microsoft-Windows-DotNETRuntime"
RASP = "Rasp-Runtime"

UNICODE_NAME = "\u00dcn\u00efc\u00f8d\u00e9.\u0422\u0438\u043f<\U0001F600>"  # BMP + a pair
BAD_UTF16_NAME = "Bad\ud800Name"  # a lone high surrogate


class Meta:
    def __init__(self, mid, provider, event_id, name, keywords, version, level, fields=(),
                 tags=()):
        self.id, self.provider, self.event_id, self.name = mid, provider, event_id, name
        self.keywords, self.version, self.level = keywords, version, level
        self.fields = fields  # V1/V6 field list: (name, type code[, element type code])
        self.tags = tags      # V5 metadata tags: (kind, payload bytes; None: V2Params)


class Event:
    def __init__(self, ms, tid, meta, payload, fields=None, stack=None, proc=0, activity=None):
        self.ts = SYNC_QPC + round(ms * 1_000_000)
        self.tid, self.meta, self.payload, self.fields = tid, meta, payload, fields
        self.stack, self.proc, self.activity = stack, proc, activity
        self.seq = 0
        self.bad_meta = None      # corrupt: refer to this undefined metadata id instead
        self.bad_thread = None    # corrupt (V6): refer to this undefined thread index
        self.claimed_size = None  # corrupt: a payload size past the block's end


class Region:
    """Events between two sequence points, and the sequence numbers the closing sequence
    point lists."""

    def __init__(self, events, sp_ms=None, sp_ts=None):
        self.events = events
        self.sp_ts = sp_ts if sp_ts is not None else SYNC_QPC + round(sp_ms * 1_000_000)
        self.sp_seqs = {}


# ---- Primitives --------------------------------------------------------------------------

def varuint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def u16z(s):
    return s.encode("utf-16-le", "surrogatepass") + b"\0\0"


def s8(s):
    b = s.encode("utf-8")
    return varuint(len(b)) + b


def h(text):
    return bytes.fromhex(text)


# ---- Payloads (the layouts of docs/events.md and manifests/rasp-events.man) ---------------------

def allocation_sampled(kind, type_id, type_name, address, size, offset, clr=0):
    payload = (struct.pack("<IHQ", kind, clr, type_id) + u16z(type_name) +
               struct.pack("<QQQ", address, size, offset))
    fields = [("AllocationKind", kind), ("ClrInstanceID", clr), ("TypeID", type_id),
              ("TypeName", type_name), ("Address", address), ("ObjectSize", size),
              ("SampledByteOffset", offset)]
    return payload, fields


def sampling_configured(clr, mean, quantum, trigger):
    payload = struct.pack("<HQQI", clr, mean, quantum, trigger)
    fields = [("ClrInstanceID", clr), ("SamplingMean", mean), ("AllocationQuantum", quantum),
              ("Trigger", trigger)]
    return payload, fields


def render_value(v):
    if isinstance(v, str):
        # What a reader makes of UTF-16 it cannot decode: U+FFFD.
        return v.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return str(v)


# ---- The events --------------------------------------------------------------------------

def main_trace(bad_utf16=False):
    """Allocations on three threads whose timestamps interleave across blocks, rasp's
    SamplingConfigured, events of providers rasp does not know, stacks (ids restart after the
    sequence point), an activity id; two regions closed by sequence points."""
    alloc = Meta(1, DOTNET, 303, "AllocationSampled", 0x80000000000, 0, 4,
                 fields=tuple(zip(("AllocationKind", "ClrInstanceID", "TypeID", "TypeName",
                                   "Address", "ObjectSize", "SampledByteOffset"),
                                  (10, 8, 12, 18, 12, 12, 12))),
                 tags=((1, b"\x00"),))  # OpCode 0
    config = Meta(2, RASP, 1, "SamplingConfigured", 0x1, 0, 4,
                  fields=(("ClrInstanceID", 8), ("SamplingMean", 12),
                          ("AllocationQuantum", 12), ("Trigger", 10)),
                  tags=((1, b"\x00"), (2, None)))  # OpCode, V2Params (built from fields)
    widget = Meta(3, "Contoso-Widgets", 7, "WidgetSpun", 0x10, 2, 5,
                  fields=(("Spins", 19, 9),),  # an array of Int32
                  tags=((1, b"\x0b"), (2, None), (99, b"\x01\x02\x03")))  # + an unknown kind
    sample = Meta(4, "Microsoft-DotNETCore-SampleProfiler", 0, "ThreadSample", 0, 0, 0)

    s1 = (0x7F0000A00010, 0x7F0000A00020, 0x7F0000A00030)
    s2 = (0x7F0000B00010,)
    s3 = ()  # interned like any stack: an id with no frames
    r1 = (0x7F0000C00010, 0x7F0000C00020)
    r2 = (0x7F0000D00010, 0x7F0000D00020, 0x7F0000D00030, 0x7F0000D00040)
    act = bytes(range(1, 17)) + bytes(range(17, 33))  # ActivityId, RelatedActivityId
    uni = BAD_UTF16_NAME if bad_utf16 else UNICODE_NAME

    def ev(ms, tid, meta, made, **kw):
        payload, fields = made if isinstance(made, tuple) else (made, None)
        return Event(ms, tid, meta, payload, fields, **kw)

    region1 = Region([
        ev(1.000, A, config, sampling_configured(0, 65536, 8192, 0), stack=s1, proc=1),
        ev(1.100, A, alloc, allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                               0x7F00DEAD0000, 104, 17), stack=s1, proc=1),
        ev(1.150, B, alloc, allocation_sampled(0, 0x7F0000003000, uni, 0x7F00DEAD0200, 48, 5),
           stack=s2, proc=2),
        ev(1.200, A, widget, struct.pack("<H3i", 3, 1, -2, 3), proc=1),
        ev(1.250, C, alloc, allocation_sampled(1, 0x7F0000002000, "System.Byte[]",
                                               0x7F00BEEF0000, 90000, 4096), stack=s3, proc=3),
        ev(1.300, B, alloc, allocation_sampled(0, 0x7F0000004000, "System.String",
                                               0x7F00DEAD0300, 56, 0), stack=s2, proc=2),
        ev(1.350, A, alloc, allocation_sampled(2, 0x7F0000005000, "System.Int64[]",
                                               0x7F00CAFE0000, 4120, 100), stack=s1, proc=0),
        ev(1.400, C, alloc, allocation_sampled(
            0, 0x7F0000006000, "System.Collections.Generic.List`1[System.Int32]",
            0x7F00DEAD0400, 32, 31), stack=s2, proc=3),
        ev(1.450, B, widget, struct.pack("<H", 0), stack=s1, proc=2),
        ev(1.500, C, alloc, allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                               0x7F00DEAD0500, 24, 23, clr=1), proc=3),
    ], sp_ms=2.0)
    region2 = Region([
        ev(2.100, B, alloc, allocation_sampled(0, 0x7F0000004000, "System.String",
                                               0x7F00DEAD1000, 88, 60), stack=r1, proc=2),
        ev(2.150, A, alloc, allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                               0x7F00DEAD1100, 104, 1), stack=r2, proc=1,
           activity=act),
        ev(2.200, C, alloc, allocation_sampled(1, 0x7F0000002000, "System.Byte[]",
                                               0x7F00BEEF1000, 200000, 150000), stack=r2,
           proc=3),
        ev(2.250, A, sample, b"", stack=r2, proc=1),
        ev(2.300, B, alloc, allocation_sampled(0, 0x7F0000003000, uni, 0x7F00DEAD1200, 48, 47),
           stack=r1, proc=2),
        ev(2.350, A, alloc, allocation_sampled(2, 0x7F0000005000, "System.Int64[]",
                                               0x7F00CAFE1000, 8216, 8000), stack=r1, proc=1),
        ev(2.400, C, alloc, allocation_sampled(0, 0x7F0000004000, "System.String",
                                               0x7F00DEAD1300, 40, 39), proc=3),
        ev(2.450, B, alloc, allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                               0x7F00DEAD1400, 32, 2), proc=2),
    ], sp_ms=3.0)
    return [region1, region2]


def vector_trace():
    """The guide's test vector: three AllocationSampled on threads 4242, 4242, 4243."""
    alloc = Meta(1, DOTNET, 303, "", 0x80000000000, 0, 4)
    events = [
        Event(1.5, A, alloc, *allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                                 0x7F00DEAD0000, 104, 17)),
        Event(2.0, A, alloc, *allocation_sampled(1, 0x7F0000002000, "System.Byte[]",
                                                 0x7F00BEEF0000, 90000, 4096)),
        Event(2.5, B, alloc, *allocation_sampled(0, 0x7F0000001000, "System.Object[]",
                                                 0x7F00DEAD0100, 104, 3)),
    ]
    return [Region(events, sp_ts=events[-1].ts + 1)]


def number(regions, gap=0, drop_tail=0):
    """Sequence numbers per thread from 1; gap: the second event of thread B jumps by that
    many (events dropped there); drop_tail: thread C drops that many after its last event of
    the first region. Each sequence point lists every thread seen so far."""
    last = {}
    seen_b = 0
    for i, reg in enumerate(regions):
        for e in sorted(reg.events, key=lambda e: e.ts):
            if e.tid == B:
                seen_b += 1
                if seen_b == 2:
                    last[B] = last.get(B, 0) + gap
            last[e.tid] = last.get(e.tid, 0) + 1
            e.seq = last[e.tid]
        if i == 0 and drop_tail:
            last[C] += drop_tail
        reg.sp_seqs = dict(sorted(last.items()))


def file_order(events):
    """The runtime's order within a region: the thread whose next event is oldest writes all
    its events, the first marked sorted; repeat."""
    queues = {}
    for e in sorted(events, key=lambda e: e.ts):
        queues.setdefault(e.tid, []).append(e)
    out = []
    while queues:
        tid = min(queues, key=lambda t: queues[t][0].ts)
        out += [(e, k == 0) for k, e in enumerate(queues.pop(tid))]
    return out


# ---- Event and metadata blocks -------------------------------------------------------------

class Hdr:
    def __init__(self, **kw):
        self.meta = self.seq = self.capture = self.proc = self.tid = self.stack = self.ts = 0
        self.activity = bytes(32)  # V4/V5: ActivityId + RelatedActivityId; V6: label list id
        self.sorted = False
        self.size = 0
        self.payload_bytes = b""
        self.__dict__.update(kw)


def compressed_blob(prev, h, payload, v6):
    """The runtime's rule (ep-block.c): a field is written when it differs from the previous
    header; sequence numbers and timestamps as deltas that may wrap."""
    flags = 0
    if h.meta != prev.meta:
        flags |= 0x01
    if ((prev.seq + (1 if h.meta else 0)) & M32) != h.seq or h.capture != prev.capture or \
            h.proc != prev.proc:
        flags |= 0x02
    if h.tid != prev.tid:
        flags |= 0x04
    if h.stack != prev.stack:
        flags |= 0x08
    if v6:
        if h.activity != prev.activity:
            flags |= 0x10
    else:
        if h.activity[:16] != prev.activity[:16]:
            flags |= 0x10
        if h.activity[16:] != prev.activity[16:]:
            flags |= 0x20
    if h.sorted:
        flags |= 0x40
    if h.size != prev.size or h.size != len(payload):
        flags |= 0x80
    out = bytes([flags])
    if flags & 0x01:
        out += varuint(h.meta)
    if flags & 0x02:
        out += varuint((h.seq - prev.seq - 1) & M32) + varuint(h.capture) + varuint(h.proc)
    if flags & 0x04:
        out += varuint(h.tid)
    if flags & 0x08:
        out += varuint(h.stack)
    out += varuint((h.ts - prev.ts) & M64)
    if flags & 0x10:
        out += varuint(h.activity) if v6 else h.activity[:16]
    if flags & 0x20:
        out += h.activity[16:]
    if flags & 0x80:
        out += varuint(h.size)
    return out + payload


def plain_blob(h, payload):
    """Uncompressed (V5 tests of TraceEvent): EventSize = 76 + payload, bit 31 of the metadata
    id set when NOT sorted, no padding."""
    return (struct.pack("<iIIQQiiQ", 76 + len(payload),
                        h.meta | (0 if h.sorted else 0x80000000), h.seq & M32, h.tid,
                        h.capture, h.proc, h.stack, h.ts & M64) +
            h.activity + struct.pack("<I", h.size) + payload)


def event_block(items, compressed, v6, header_size=20):
    """items: (Hdr, payload). The block content and each blob's offset in it."""
    stamps = [hd.ts for hd, _ in items]
    content = struct.pack("<hhqq", header_size, 1 if compressed else 0, min(stamps),
                          max(stamps)) + bytes(header_size - 20)
    prev, offsets = Hdr(activity=0 if v6 else bytes(32)), []
    for hd, payload in items:
        offsets.append(len(content))
        content += compressed_blob(prev, hd, payload, v6) if compressed else \
            plain_blob(hd, payload)
        prev = hd
    return content, offsets


def v5_tag(kind, payload, meta):
    if payload is None:  # V2Params: name before type, Size includes itself
        payload = struct.pack("<i", len(meta.fields))
        for f in meta.fields:
            body = u16z(f[0]) + b"".join(struct.pack("<i", t) for t in f[1:])
            payload += struct.pack("<i", 4 + len(body)) + body
    return struct.pack("<iB", len(payload), kind) + payload


def v4_metadata_record(m, v5):
    """V4 as the runtime writes it (no name, no fields); V5 with the name,
    a V1 field list (type before name; empty when V2Params carries the fields) and tags."""
    rec = (struct.pack("<i", m.id) + u16z(m.provider) + struct.pack("<i", m.event_id) +
           u16z(m.name if v5 else "") + struct.pack("<qii", m.keywords, m.version, m.level))
    if not v5:
        return rec + struct.pack("<i", 0)
    v2 = any(kind == 2 for kind, _ in m.tags)
    fields = () if v2 else m.fields
    rec += struct.pack("<i", len(fields))
    for f in fields:
        rec += struct.pack("<i", f[1]) + u16z(f[0])
    return rec + b"".join(v5_tag(kind, p, m) for kind, p in m.tags)


def v6_metadata_row(m):
    """V6 metadata: fields, then optional metadata (keywords, level, version if not 0,
    and for one provider an opcode, a provider GUID and a description)."""
    fields = b""
    for f in m.fields:
        body = s8(f[0]) + bytes(f[1:])
        fields += struct.pack("<H", len(body)) + body
    opt = bytes([3]) + struct.pack("<Q", m.keywords) + bytes([8, m.level])
    if m.version:
        opt += bytes([9, m.version])
    if m.provider == "Contoso-Widgets":
        opt += bytes([1, 11, 7]) + bytes(range(16)) + bytes([5]) + s8("spins widgets")
    row = (varuint(m.id) + s8(m.provider) + varuint(m.event_id) + s8(m.name) +
           struct.pack("<H", len(m.fields)) + fields + struct.pack("<H", len(opt)) + opt)
    return struct.pack("<H", len(row)) + row


def stack_block(stacks):
    out = struct.pack("<ii", 1, len(stacks))
    for ips in stacks:
        out += struct.pack("<i", POINTER * len(ips)) + b"".join(struct.pack("<Q", ip)
                                                               for ip in ips)
    return out


# ---- Files -------------------------------------------------------------------------------

class Layout:
    """Where things went: for broken variants and the expectations."""

    def __init__(self):
        self.objects = []  # (kind, start, size field offset, end)
        self.blobs = []    # (absolute offset, Event)
        self.first_sp = None


def write(form, regions, block_events=4):
    """The bytes of a file in one form, and its Layout."""
    v6, v5 = form == "v6", form == "v5"
    compressed = not v5
    lay = Layout()
    out = bytearray()

    def obj(name, content, kind):
        start = len(out)
        if v6:  # size and kind in one word, no padding
            out.extend(struct.pack("<I", len(content) | kind << 24))
            content_at = len(out)
            out.extend(content)
            lay.objects.append((name, start, start, len(out)))
        else:  # V4/V5 headers
            out.extend(b"\x05\x05\x01" + struct.pack("<iii", 2, 2, len(name)) + name.encode() +
                       b"\x06")
            size_at = len(out)
            out.extend(struct.pack("<i", len(content)))
            out.extend(bytes((4 - len(out) % 4) % 4))  # aligned from the stream's start
            content_at = len(out)
            out.extend(content + b"\x06")
            lay.objects.append((name, start, size_at, len(out)))
        return content_at

    if v6:
        out += b"Nettrace" + struct.pack("<III", 0, 6, 0)
        kv = [("ProcessId", str(PID)), ("HardwareThreadCount", str(CPUS))]
        trace = (struct.pack("<8h", *SYNC_UTC) + struct.pack("<qqii", SYNC_QPC, FREQ, POINTER,
                                                              len(kv)) +
                 b"".join(s8(k) + s8(v) for k, v in kv))
        obj("Trace", trace, 1)
    else:
        out += b"Nettrace" + struct.pack("<i", 20) + b"!FastSerialization.1"
        out += b"\x05\x05\x01" + struct.pack("<iii", 4, 4, 5) + b"Trace\x06"
        out += struct.pack("<8h", *SYNC_UTC) + struct.pack("<qqiiii", SYNC_QPC, FREQ, POINTER,
                                                            PID, CPUS, RATE) + b"\x06"

    defined, threads_defined = set(), set()
    for reg in regions:
        order = file_order(reg.events)
        # Metadata first used here, in order of use; its blob header is the triggering
        # event's thread, time and processor (ep-config.c).
        metas = []
        for e, _ in order:
            if e.meta.id not in defined:
                defined.add(e.meta.id)
                metas.append((e.meta, e))
        if metas:
            if v6:
                obj("Metadata", struct.pack("<H", 0) + b"".join(v6_metadata_row(m)
                                                               for m, _ in metas), 3)
            else:
                items = []
                for m, e in metas:
                    rec = v4_metadata_record(m, v5)
                    items.append((Hdr(tid=e.tid, proc=e.proc, ts=e.ts, sorted=True,
                                      size=len(rec)), rec))
                obj("MetadataBlock", event_block(items, compressed, False)[0], 0)
        if v6:
            new = sorted({e.tid for e in reg.events} - threads_defined)
            if new:
                rows = b""
                for tid in new:
                    row = varuint(V6_INDEX[tid])
                    if tid == A:
                        row += bytes([1]) + s8("Main")
                    row += bytes([2]) + varuint(PID) + bytes([3]) + varuint(tid)
                    if tid == B:
                        row += bytes([4]) + s8("role") + s8("worker")
                    rows += struct.pack("<H", len(row)) + row
                obj("Thread", rows, 6)
                threads_defined.update(new)
        # Stacks: interned per region in order of use, ids from 1 (they restart after an SP).
        stack_ids = {}
        for e, _ in order:
            if e.stack is not None and e.stack not in stack_ids:
                stack_ids[e.stack] = len(stack_ids) + 1
        if stack_ids:
            obj("StackBlock" if not v6 else "Stack", stack_block(list(stack_ids)), 5)
        if v6 and any(e.activity for e in reg.events):
            act = next(e.activity for e in reg.events if e.activity)
            obj("LabelList", struct.pack("<II", 1, 1) + bytes([1]) + act[:16] +
                bytes([2 | 0x80]) + act[16:], 8)
        for k in range(0, len(order), block_events):
            chunk = order[k:k + block_events]
            items = []
            for e, srt in chunk:
                tid = V6_INDEX[e.tid] if v6 else e.tid
                if v6 and e.bad_thread is not None:
                    tid = e.bad_thread
                act = (1 if e.activity else 0) if v6 else (e.activity or bytes(32))
                size = e.claimed_size if e.claimed_size is not None else len(e.payload)
                stack = stack_ids[e.stack] if e.stack is not None else 0
                items.append((Hdr(meta=e.bad_meta or e.meta.id, seq=e.seq, capture=tid,
                                  proc=e.proc, tid=tid, stack=stack, ts=e.ts, activity=act,
                                  sorted=srt, size=size), e.payload))
            content, offs = event_block(items, compressed, v6, 24 if v5 else 20)
            at = obj("EventBlock" if not v6 else "Event", content, 2)
            lay.blobs += [(at + o, e) for o, (e, _) in zip(offs, chunk)]
        if v6:
            sp = struct.pack("<QII", reg.sp_ts, 0, len(reg.sp_seqs)) + b"".join(
                varuint(V6_INDEX.get(t, t)) + varuint(s) for t, s in reg.sp_seqs.items())
        else:
            sp = struct.pack("<qi", reg.sp_ts, len(reg.sp_seqs)) + b"".join(
                struct.pack("<qI", t, s) for t, s in reg.sp_seqs.items())
        if lay.first_sp is None:
            lay.first_sp = len(out)
        obj("SPBlock" if not v6 else "SequencePoint", sp, 4)
    out += struct.pack("<I", 0) if v6 else b"\x01"
    return bytes(out), lay


# ---- The 618-byte reference file, transcribed byte by byte ----------------------

def vector_listing():
    """Each chunk at the offset the listing gives. The listing elides event 3's payload; it
    states tid 4243, Address 0x7f00dead0100, ObjectSize 104, SampledByteOffset 3, and its
    PayloadSize 70 leaves room for a 15-character name: System.Object[] (TypeID as event 1)."""
    return [
        (0x0000, b"Nettrace" + h("14 00 00 00") + b"!FastSerialization.1"),
        (0x0020, h("05 05 01 04 00 00 00 04 00 00 00 05 00 00 00") + b"Trace" + h("06")),
        (0x0035, h("ea 07 08 00 05 00 07 00 0c 00 00 00 00 00 00 00")),
        (0x0045, h("00 ca 9a 3b 00 00 00 00")),
        (0x004d, h("00 ca 9a 3b 00 00 00 00")),
        (0x0055, h("08 00 00 00 92 10 00 00 08 00 00 00 40 42 0f 00")),
        (0x0065, h("06")),
        (0x0066, h("05 05 01 02 00 00 00 02 00 00 00 0d 00 00 00") + b"MetadataBlock" + h("06")),
        (0x0083, h("7b 00 00 00")),
        (0x0087, h("00")),
        (0x0088, h("14 00 01 00 60 ad b1 3b 00 00 00 00 60 ad b1 3b 00 00 00 00")),
        (0x009c, h("c4 92 21 e0 da c6 dd 03 5e")),
        (0x00a5, h("01 00 00 00") + u16z(DOTNET) + h("2f 01 00 00 00 00") +
         h("00 00 00 00 00 08 00 00 00 00 00 00 04 00 00 00 00 00 00 00")),
        (0x0103, h("06")),
        (0x0104, h("05 05 01 02 00 00 00 02 00 00 00 0a 00 00 00") + b"EventBlock" + h("06")),
        (0x011e, h("04 01 00 00")),
        (0x0122, h("00 00")),
        (0x0124, h("14 00 01 00 60 ad b1 3b 00 00 00 00 a0 ef c0 3b 00 00 00 00")),
        (0x0138, h("c7 01 00 92 21 00 92 21 e0 da c6 dd 03 46")),
        (0x0146, h("00 00 00 00 00 00 00 10 00 00 00 7f 00 00") + u16z("System.Object[]") +
         h("00 00 ad de 00 7f 00 00 68 00 00 00 00 00 00 00 11 00 00 00 00 00 00 00")),
        (0x018c, h("80 a0 c2 1e 42")),
        (0x0191, h("01 00 00 00 00 00 00 20 00 00 00 7f 00 00") + u16z("System.Byte[]") +
         h("00 00 ef be 00 7f 00 00 90 5f 01 00 00 00 00 00 00 10 00 00 00 00 00 00")),
        (0x01d3, h("c6 fe ff ff ff 0f 93 21 00 93 21 a0 c2 1e 46")),
        (0x01e2, h("00 00 00 00 00 00 00 10 00 00 00 7f 00 00") + u16z("System.Object[]") +
         h("00 01 ad de 00 7f 00 00 68 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00")),
        (0x0228, h("06")),
        (0x0229, h("05 05 01 02 00 00 00 02 00 00 00 07 00 00 00") + b"SPBlock" + h("06")),
        (0x0240, h("24 00 00 00")),
        (0x0244, h("a1 ef c0 3b 00 00 00 00 02 00 00 00 92 10 00 00 00 00 00 00 02 00 00 00") +
         h("93 10 00 00 00 00 00 00 01 00 00 00")),
        (0x0268, h("06")),
        (0x0269, h("01")),
    ]


def vector_bytes():
    out = bytearray()
    for off, chunk in vector_listing():
        if off != len(out):
            raise SystemExit("make-nettrace.py: vector listing: chunk at 0x%04x, bytes at 0x%04x"
                             % (off, len(out)))
        out += chunk
    return bytes(out)


def check_vector():
    """The listing is 618 bytes and the V4 writer, given the vector's three events, writes
    exactly those bytes."""
    listed = vector_bytes()
    regions = vector_trace()
    number(regions)
    written, _ = write("v4", regions, block_events=16)
    if len(listed) != 618 or written != listed:
        at = next((i for i in range(min(len(listed), len(written)))
                   if listed[i] != written[i]), min(len(listed), len(written)))
        raise SystemExit("make-nettrace.py: the V4 writer and the guide's listing differ at "
                         "offset %d (%d and %d bytes)" % (at, len(written), len(listed)))
    return listed


# ---- Files that cost a reader more than their size (the reader's limits) -------------------

def v4_file(objects, starts=None):
    """A V4 file of (type name, content) objects after its Trace object; starts (a list)
    receives the offset of each one's content."""
    out = bytearray(b"Nettrace" + struct.pack("<i", 20) + b"!FastSerialization.1")
    out += b"\x05\x05\x01" + struct.pack("<iii", 4, 4, 5) + b"Trace\x06"
    out += struct.pack("<8h", *SYNC_UTC) + struct.pack("<qqiiii", SYNC_QPC, FREQ, POINTER, PID,
                                                        CPUS, RATE) + b"\x06"
    for name, content in objects:
        out += b"\x05\x05\x01" + struct.pack("<iii", 2, 2, len(name)) + name.encode() + b"\x06"
        out += struct.pack("<i", len(content))
        out += bytes((4 - len(out) % 4) % 4)
        if starts is not None:
            starts.append(len(out))
        out += content + b"\x06"
    return bytes(out + b"\x01")


def v6_file(blocks, starts=None):
    """A V6 file of (kind, content) blocks after its Trace block, with its end block; starts
    (a list) receives the offset of each given block's content."""
    kv = [("ProcessId", str(PID))]
    trace = (struct.pack("<8h", *SYNC_UTC) + struct.pack("<qqii", SYNC_QPC, FREQ, POINTER,
                                                          len(kv)) +
             b"".join(s8(k) + s8(v) for k, v in kv))
    out = bytearray(b"Nettrace" + struct.pack("<III", 0, 6, 0))
    for kind, content in [(1, trace)] + blocks + [(0, b"")]:
        assert len(content) < 1 << 24
        out += struct.pack("<I", len(content) | kind << 24)
        if starts is not None and kind != 1 and (kind, content) != (0, b""):
            starts.append(len(out))
        out += content
    return bytes(out)


def run_block(first, count, rest, v6, ts=SYNC_QPC):
    """An event block of one full compressed header (Hdr first) and its payload-less event,
    then count - 1 events of the two bytes `rest` (flags and a timestamp delta): the same
    thread, metadata and stack."""
    content = struct.pack("<hhqq", 20, 1, ts, ts + count)
    content += compressed_blob(Hdr(activity=0 if v6 else bytes(32)), first, b"", v6)
    return content + rest * (count - 1)


BOMB_STACK_FRAMES = 4096
BOMB_STACK_EVENTS = 40000
BOMB_META_ROWS = 3_200_000
BOMB_THREADS = 100_000
BOMB_THREAD_EVENTS = 600_000
BOMB_SP_THREADS = 300_000


def bomb_stacks():
    """V4: one 4096-frame stack and 40,000 unsorted events that use it, all held for time
    order until the sequence point (a reader copying the stack per event needs 1.3 GB)."""
    meta = Meta(1, "Contoso-Bombs", 1, "", 0, 0, 4)
    rec = v4_metadata_record(meta, False)
    mblock = event_block([(Hdr(tid=A, ts=SYNC_QPC, sorted=True, size=len(rec)), rec)], True,
                         False)[0]
    frames = tuple(0x7F0000000000 + 16 * k for k in range(BOMB_STACK_FRAMES))
    first = Hdr(meta=1, seq=1, capture=A, tid=A, stack=1, ts=SYNC_QPC + 1)
    n = BOMB_STACK_EVENTS
    events = run_block(first, n, b"\x00\x01", False)  # unchanged header, 1 tick later
    sp = struct.pack("<qi", SYNC_QPC + n + 2, 1) + struct.pack("<qI", A, n)
    return v4_file([("MetadataBlock", mblock), ("StackBlock", stack_block([frames])),
                    ("EventBlock", events), ("SPBlock", sp)])


def bomb_metadata():
    """V6: 3.2 million 10-byte metadata rows that all define id 1 (32 MB), then a last
    definition and one event of it (a reader keeping every retired definition needs
    some 440 MB)."""
    row = varuint(1) + s8("") + varuint(1) + s8("") + struct.pack("<HH", 0, 0)
    row = struct.pack("<H", len(row)) + row
    per_block = (4 << 20) // len(row)
    thread = varuint(1) + bytes([2]) + varuint(PID) + bytes([3]) + varuint(A)
    blocks = [(6, struct.pack("<H", len(thread)) + thread)]
    left = BOMB_META_ROWS
    while left:
        k = min(left, per_block)
        blocks.append((3, struct.pack("<H", 0) + row * k))
        left -= k
    final = Meta(1, "Contoso-Final", 9, "Last", 0x20, 1, 4)
    blocks.append((3, struct.pack("<H", 0) + v6_metadata_row(final)))
    first = Hdr(meta=1, seq=1, capture=1, tid=1, ts=SYNC_QPC + 1, activity=0, sorted=True)
    blocks.append((2, run_block(first, 1, b"", True)))
    blocks.append((4, struct.pack("<QII", SYNC_QPC + 2, 0, 1) + varuint(1) + varuint(1)))
    return v6_file(blocks)


def bomb_threads():
    """V6: 100,000 threads, then 600,000 sorted events of the last one defined (a reader
    looking threads up one by one compares 10^11 times)."""
    rows = bytearray()
    for i in range(1, BOMB_THREADS + 1):
        r = varuint(i) + bytes([2]) + varuint(PID) + bytes([3]) + varuint(100000 + i)
        rows += struct.pack("<H", len(r)) + r
    meta = Meta(1, "Contoso-Bombs", 1, "", 0, 0, 4)
    blocks = [(6, bytes(rows)), (3, struct.pack("<H", 0) + v6_metadata_row(meta))]
    t = BOMB_THREADS
    per_block = 100_000
    for k in range(0, BOMB_THREAD_EVENTS, per_block):
        first = Hdr(meta=1, seq=k + 1, capture=t, tid=t, ts=SYNC_QPC + 1 + k, activity=0,
                    sorted=True)
        blocks.append((2, run_block(first, per_block, b"\x40\x01", True, SYNC_QPC + k)))
    blocks.append((4, struct.pack("<QII", SYNC_QPC + BOMB_THREAD_EVENTS + 2, 0, 1) +
                   varuint(t) + varuint(BOMB_THREAD_EVENTS)))
    return v6_file(blocks)


def bomb_sequence_point():
    """V4: a 3.6 MB sequence point listing 300,000 capture threads, thread ids descending
    (a reader inserting each into a sorted array moves 10^12 bytes)."""
    n = BOMB_SP_THREADS
    sp = struct.pack("<qi", SYNC_QPC + 1, n) + b"".join(
        struct.pack("<qI", 10_000_000 - i, 1) for i in range(n))
    return v4_file([("SPBlock", sp)])


def v6_thread_row(index, tid):
    row = varuint(index) + bytes([2]) + varuint(PID) + bytes([3]) + varuint(tid)
    return struct.pack("<H", len(row)) + row


def v6_events(*events):
    """An event block of (metadata id, thread index, sequence number, ms, sorted) events
    with no payload."""
    return event_block([(Hdr(meta=m, seq=q, capture=t, tid=t, ts=SYNC_QPC + round(ms * 1e6),
                             activity=0, sorted=srt), b"") for m, t, q, ms, srt in events],
                       True, True)[0]


def v6_meta_block(*metas):
    return struct.pack("<H", 0) + b"".join(v6_metadata_row(m) for m in metas)


def redefine_held():
    """V6: metadata id 1 defined four times. Unsorted events of the first two definitions
    interleave in time, so both are held together; a third definition has no event and a
    sequence point flushes the metadata and the threads (flags 2 and 1); thread index 1 is
    then OS thread B, and the last event uses the fourth definition. Read (ms, definition):
    10 First, 15 Second, 20 First, 25 Second, 30 First, 35 Second, then 40 Fourth on B."""
    defs = [Meta(1, "Contoso-" + n, k + 1, n, 0x10, 0, 4)
            for k, n in enumerate(("First", "Second", "Third", "Fourth"))]
    return v6_file([
        (6, v6_thread_row(1, A)),
        (3, v6_meta_block(defs[0])),
        (2, v6_events((1, 1, 1, 10, False), (1, 1, 2, 20, False), (1, 1, 3, 30, False))),
        (3, v6_meta_block(defs[1])),
        (2, v6_events((1, 1, 4, 15, False), (1, 1, 5, 25, False), (1, 1, 6, 35, False))),
        (3, v6_meta_block(defs[2])),
        (4, struct.pack("<QII", SYNC_QPC + 36_000_000, 3, 1) + varuint(1) + varuint(6)),
        (6, v6_thread_row(1, B)),
        (3, v6_meta_block(defs[3])),
        (2, v6_events((1, 1, 7, 40, True))),
        (4, struct.pack("<QII", SYNC_QPC + 41_000_000, 0, 1) + varuint(1) + varuint(7)),
    ])


CHURN = 1000


def thread_churn(after_removal=False):
    """V6: thread index 1 defined, used by one event and removed, 1000 times, each time for
    OS thread 1000 + k. after_removal: one more event of index 1 after the last removal, an
    error at its offset (returned with the bytes)."""
    meta = Meta(1, "Contoso-Bombs", 1, "", 0, 0, 4)
    blocks = [(3, v6_meta_block(meta))]
    for k in range(CHURN):
        blocks += [(6, v6_thread_row(1, 1000 + k)), (2, v6_events((1, 1, 1, k, True))),
                   (7, varuint(1) + varuint(1))]
    if after_removal:
        blocks.append((2, v6_events((1, 1, 2, CHURN, True))))
    blocks.append((4, struct.pack("<QII", SYNC_QPC + 2 * CHURN * 1_000_000, 0, 0)))
    starts = []
    data = v6_file(blocks, starts)
    return (data, starts[-2] + 20) if after_removal else data


def stack_twice():
    """V4: stack id 1 defined by two stack blocks of one region: an error at the second
    one's first stack."""
    meta = Meta(1, "Contoso-Bombs", 1, "", 0, 0, 4)
    rec = v4_metadata_record(meta, False)
    mblock = event_block([(Hdr(tid=A, ts=SYNC_QPC, sorted=True, size=len(rec)), rec)], True,
                         False)[0]
    starts = []
    data = v4_file([("MetadataBlock", mblock), ("StackBlock", stack_block([(1, 2)])),
                    ("StackBlock", stack_block([(3, 4, 5)]))], starts)
    return data, starts[2] + 8


def unmix64(z):
    """The key whose splitmix64 finaliser (consumer/index.c rasp_hash_mix64) is z."""
    def unshift(y, k):
        x = y
        for _ in range(64 // k):
            x = y ^ (x >> k)
        return x & M64
    z = unshift(z, 31)
    z = (z * pow(0x94D049BB133111EB, -1, 1 << 64)) & M64
    z = unshift(z, 27)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & M64
    return unshift(z, 30)


BOMB_FLOOD_THREADS = 200_000


def bomb_hash_flood():
    """V4: a sequence point of 200,000 thread ids whose unseeded hashes share their low 32
    bits: one cluster in any table, 2 * 10^10 probes for a reader that hashes ids without a
    seed of its own."""
    ids = [unmix64(k << 32) for k in range(1, BOMB_FLOOD_THREADS + 1)]
    sp = struct.pack("<qi", SYNC_QPC + 1, len(ids)) + b"".join(
        struct.pack("<QI", t, 1) for t in ids)
    return v4_file([("SPBlock", sp)])


BOMBS = {"bomb-stacks": bomb_stacks, "bomb-metadata": bomb_metadata,
         "bomb-threads": bomb_threads, "bomb-sequence-point": bomb_sequence_point,
         "bomb-hash-flood": bomb_hash_flood,
         # small files of the same section for the tests of reference counts and tables
         "v6-redefine-held": redefine_held, "v6-thread-churn": thread_churn,
         "v6-thread-removed": lambda: thread_churn(True), "v4-stack-twice": stack_twice}


# ---- Variants and expectations -------------------------------------------------------------

CORRUPT = {  # kind: the forms it applies to
    "tag": ("v4", "v5"),                  # the first StackBlock starts with tag 7
    "name-length": ("v4", "v5"),          # the first EventBlock's type name: 200 bytes
    "block-size": ("v4", "v5"),           # the first EventBlock: BlockSize 0x7ffffff0
    "payload-size": ("v4", "v5", "v6"),   # the first event block's last event: 64 bytes more
    "undefined-metadata": ("v4", "v5", "v6"),  # an event of metadata id 9
    "unknown-thread": ("v6",),            # an event of thread index 77
}


def make(form, truncate=False, gap=0, drop_tail=0, corrupt=None, bad_utf16=False):
    """(bytes, expect lines)."""
    if form == "vector":
        regions = vector_trace()
        number(regions)
        data, lay = check_vector(), write("v4", regions, block_events=16)[1]
    else:
        regions = main_trace(bad_utf16)
        number(regions, gap, drop_tail)
        order = [e for e, _ in file_order(regions[0].events)]
        if corrupt == "payload-size":  # the last event of the first block (4 events)
            order[3].claimed_size = len(order[3].payload) + 64
        elif corrupt == "undefined-metadata":  # an event of the second block
            order[5].bad_meta = 9
        elif corrupt == "unknown-thread":
            order[5].bad_thread = 77
        data, lay = write(form, regions)
    data = bytearray(data)
    error = None
    if corrupt in ("tag", "name-length", "block-size"):
        name, start, size_at, _ = next(o for o in lay.objects if o[0] ==
                                       ("StackBlock" if corrupt == "tag" else "EventBlock"))
        if corrupt == "tag":
            data[start] = 0x07
            error = start
        elif corrupt == "name-length":
            error = start + 3 + 8  # after the tags, Version and MinimumReaderVersion
            data[error:error + 4] = struct.pack("<i", 200)
        else:
            error = size_at
            data[error:error + 4] = struct.pack("<i", 0x7FFFFFF0)
    elif corrupt:
        error = next(off for off, e in lay.blobs
                     if e.claimed_size is not None or e.bad_meta or e.bad_thread is not None)
    cut = len(data)
    if truncate:  # after the last event block: no sequence point, no end marker
        cut = [o for o in lay.objects if o[0] in ("EventBlock", "Event")][-1][3]
        data = data[:cut]

    lines = ["size\t%d" % len(data), "complete\t%d" % (0 if truncate else 1)]
    if error is not None:
        lines.append("error\t%d" % error)
    lines.append("first-sp\t%d" % lay.first_sp)
    in_file = {id(e) for off, e in lay.blobs if off < cut}
    sps = [o for o in lay.objects if o[0] in ("SPBlock", "SequencePoint")]
    for i, reg in enumerate(regions):
        for e in sorted(reg.events, key=lambda e: e.ts):
            if id(e) not in in_file:
                continue
            if e.fields is not None:
                payload = ";".join("%s=%s" % (n, render_value(v)) for n, v in e.fields)
            else:
                payload = "hex:" + e.payload.hex()
            stack = ",".join("%x" % ip for ip in e.stack) if e.stack else "-"
            m = e.meta
            lines.append("\t".join(str(x) for x in (
                "event", e.ts, PID, e.tid, e.seq, m.provider, m.event_id, m.version,
                "0x%x" % m.keywords, m.level, stack, payload)))
        lost = gap + drop_tail if i == 0 else 0
        if lost and sps[i][3] <= cut:  # told by the sequence point, if it is in the file
            lines.append("lost\t%d\t%d" % (lost, reg.sp_ts))
    return bytes(data), lines


def suite():
    """Every file the tests read: name -> keyword arguments of make()."""
    s = {"vector": dict(form="vector")}
    for form in ("v4", "v5", "v6"):
        s[form] = dict(form=form)
        s[form + "-truncated"] = dict(form=form, truncate=True)
        s[form + "-gap"] = dict(form=form, gap=5)
        s[form + "-drop-tail"] = dict(form=form, drop_tail=3)
        for kind, forms in CORRUPT.items():
            if form in forms:
                s["%s-corrupt-%s" % (form, kind)] = dict(form=form, corrupt=kind)
    s["v4-bad-utf16"] = dict(form="v4", bad_utf16=True)
    return s


def save(path, data, lines):
    with open(path, "wb") as f:
        f.write(data)
    with open(os.path.splitext(path)[0] + ".expect", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def save_made(path, made):
    """A file of BOMBS: its bytes, and for a broken one, the offset of its error (NAME.expect
    with the size and that offset)."""
    data, error = made if isinstance(made, tuple) else (made, None)
    with open(path, "wb") as f:
        f.write(data)
    if error is not None:
        with open(os.path.splitext(path)[0] + ".expect", "w", encoding="utf-8") as f:
            f.write("size\t%d\ncomplete\t0\nerror\t%d\n" % (len(data), error))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--form", choices=("v4", "v5", "v6", "vector"))
    ap.add_argument("--truncate", action="store_true", help="end after the last event block")
    ap.add_argument("--gap", type=int, default=0, metavar="K",
                    help="K events lost in the middle of a thread, seen at the next SP")
    ap.add_argument("--drop-tail", type=int, default=0, metavar="K",
                    help="K events lost after a thread's last event before an SP")
    ap.add_argument("--corrupt", choices=sorted(CORRUPT))
    ap.add_argument("--bad-utf16", action="store_true", help="a type name with a lone surrogate")
    ap.add_argument("--bomb", choices=sorted(BOMBS),
                    help="a file that costs a careless reader far more than its size")
    ap.add_argument("-o", "--output", help="FILE.nettrace (FILE.expect beside it)")
    ap.add_argument("--suite", metavar="DIR", help="write every variant the tests use into DIR")
    ap.add_argument("--check-vector", action="store_true")
    a = ap.parse_args()
    if a.check_vector:
        check_vector()
        print("make-nettrace.py: the test vector is 618 bytes and the V4 writer agrees")
        return 0
    if a.suite:
        os.makedirs(a.suite, exist_ok=True)
        for name, kw in suite().items():
            save(os.path.join(a.suite, name + ".nettrace"), *make(**kw))
        for name, made in BOMBS.items():
            save_made(os.path.join(a.suite, name + ".nettrace"), made())
        return 0
    if a.bomb and a.output:
        save_made(a.output, BOMBS[a.bomb]())
        return 0
    if not a.form or not a.output:
        ap.error("--form and -o are required (or --suite DIR, or --check-vector)")
    if a.corrupt and a.form not in CORRUPT[a.corrupt]:
        ap.error("--corrupt %s applies to %s" % (a.corrupt, ", ".join(CORRUPT[a.corrupt])))
    data, lines = make(a.form, a.truncate, a.gap, a.drop_tail, a.corrupt, a.bad_utf16)
    save(a.output, data, lines)
    for line in lines:
        if line.startswith("error"):
            print("error at offset", line.split("\t")[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
