#!/usr/bin/env python3
"""Generate rasp's event layer from an ETW instrumentation manifest.

Reads manifests/rasp-events.man (the single source of truth) and writes, into the build tree:
  rasp/event-meta.h     provider names and GUIDs, event ids, versions, levels, keywords
  rasp/events.h         the C API the runtime calls: rasp_event_<name>() and _enabled()
  rasp-tp-<Prov>.h      one LTTng-UST tracepoint provider header per provider
  rasp-tp-probes.c      the probe definitions, built into the provider shared object
  rasp-events.c         the API functions, built into librasp (dynamic linkage: no
                        hard dependency on liblttng-ust)
  rasp-events-inline.h  the _enabled() checks and the EventPipe epoch as inline functions,
                        for librasp's own slow path (not installed: they read its symbols)
and, with --docs, the event reference docs/events.md.

The LTTng layout follows CoreCLR's genLttngProvider.py: the provider name drops "Microsoft-"
and "Windows-" and turns "-" into "_", the event name is the event symbol, every template
field is its own LTTng field, pointers are size_t integers, strings are UTF-8 strings, and
no loglevel is declared. Python 3 standard library only. Errors name the manifest line and
exit with status 1, which fails the build.
"""

import argparse
import hashlib
import os
import re
import sys
import xml.parsers.expat

GENERATOR = "manifests/gen-events.py"

# inType -> (C API type, LTTng field macro, LTTng C type, what babeltrace2 shows)
IN_TYPES = {
    "win:Int8": ("int8_t", "integer", "int8_t", "8-bit signed integer"),
    "win:UInt8": ("uint8_t", "integer", "uint8_t", "8-bit unsigned integer"),
    "win:Int16": ("int16_t", "integer", "short", "16-bit signed integer"),
    "win:UInt16": ("uint16_t", "integer", "unsigned short", "16-bit unsigned integer"),
    "win:Int32": ("int32_t", "integer", "int", "32-bit signed integer"),
    "win:UInt32": ("uint32_t", "integer", "unsigned int", "32-bit unsigned integer"),
    "win:Int64": ("int64_t", "integer", "int64_t", "64-bit signed integer"),
    "win:UInt64": ("uint64_t", "integer", "uint64_t", "64-bit unsigned integer"),
    "win:Pointer": ("uintptr_t", "integer", "size_t", "unsigned integer, pointer-sized (64-bit on x86-64)"),
    # CoreCLR maps win:Boolean to BOOL, a 32-bit int.
    "win:Boolean": ("int32_t", "integer", "int", "32-bit signed integer (0 or 1)"),
    "win:Float": ("float", "float", "float", "single-precision real"),
    "win:Double": ("double", "float", "double", "double-precision real"),
    "win:UnicodeString": ("const char *", "string", None, "string (UTF-8)"),
    "win:AnsiString": ("const char *", "string", None, "string (UTF-8)"),
}

# inTypes an array's count field may have.
COUNT_TYPES = ("win:UInt8", "win:UInt16", "win:UInt32", "win:UInt64")

LEVELS = {
    "win:LogAlways": 0,
    "win:Critical": 1,
    "win:Error": 2,
    "win:Warning": 3,
    "win:Informational": 4,
    "win:Verbose": 5,
}

# LTTng-UST's LTTNG_UST_TP_ARGS takes at most 10 argument pairs.
MAX_FIELDS = 10

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ManifestError(Exception):
    def __init__(self, path, line, msg):
        super().__init__(f"{path}:{line}: error: {msg}")


class Node:
    __slots__ = ("tag", "attrs", "line", "children")

    def __init__(self, tag, attrs, line):
        self.tag, self.attrs, self.line, self.children = tag, attrs, line, []

    def find(self, tag):
        return [c for c in self.children if c.tag == tag]

    def first(self, tag):
        found = self.find(tag)
        return found[0] if found else None


def parse_xml(path):
    """Parse into a tree of Nodes that remember their line (ElementTree cannot)."""
    root = Node("#document", {}, 1)
    stack = [root]
    parser = xml.parsers.expat.ParserCreate(namespace_separator=None)

    def start(tag, attrs):
        node = Node(tag.split(":")[-1], attrs, parser.CurrentLineNumber)
        stack[-1].children.append(node)
        stack.append(node)

    def end(_tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        with open(path, "rb") as f:
            parser.ParseFile(f)
    except xml.parsers.expat.ExpatError as e:
        raise ManifestError(path, e.lineno, f"malformed XML: {xml.parsers.expat.ErrorString(e.code)}")
    except OSError as e:
        raise ManifestError(path, 0, f"cannot read manifest: {e.strerror}")
    return root


def lttng_provider_name(name):
    for prefix in ("Microsoft-", "Windows-"):
        name = name.replace(prefix, "")
    return name.replace("-", "_")


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def parse_int(text):
    return int(text, 0)


class Manifest:
    def __init__(self, path, read_only=False):
        self.path = path
        self.read_only = read_only  # events rasp reads, never emits: no tracepoints
        self.providers = []
        self._load(parse_xml(path))
        with open(path, "rb") as f:
            # Ties the provider library to the manifest it was generated from.
            self.digest = hashlib.sha256(f.read()).hexdigest()[:16]

    def err(self, node, msg):
        return ManifestError(self.path, node.line if node else 0, msg)

    def req(self, node, attr):
        v = node.attrs.get(attr)
        if v is None or v == "":
            raise self.err(node, f"<{node.tag}> lacks required attribute '{attr}'")
        return v

    def _load(self, doc):
        top = doc.first("instrumentationManifest")
        if top is None:
            raise self.err(doc.children[0] if doc.children else None,
                           "root element must be <instrumentationManifest>")
        strings = {}
        for loc in top.find("localization"):
            for res in loc.find("resources"):
                for table in res.find("stringTable"):
                    for s in table.find("string"):
                        strings[self.req(s, "id")] = s.attrs.get("value", "")
        self.strings = strings
        instr = top.first("instrumentation")
        events = instr.first("events") if instr is not None else None
        if events is None:
            raise self.err(top, "no <instrumentation><events> section")
        seen_lttng = {}
        seen_api = {}
        for pnode in events.find("provider"):
            p = self._provider(pnode)
            if p["lttng"] in seen_lttng:
                raise self.err(pnode, f"provider '{p['name']}' maps to LTTng provider "
                               f"'{p['lttng']}', already used at line {seen_lttng[p['lttng']]}")
            seen_lttng[p["lttng"]] = pnode.line
            for e in p["events"]:
                if e["api"] in seen_api:
                    raise self.err(e["node"], f"event symbol '{e['symbol']}' gives C function "
                                   f"rasp_event_{e['api']}, already used at line {seen_api[e['api']]}")
                seen_api[e["api"]] = e["node"].line
            self.providers.append(p)
        if not self.providers:
            raise self.err(events, "no <provider> declared")

    def message(self, node, text):
        if text and text.startswith("$(string.") and text.endswith(")"):
            key = text[len("$(string."):-1]
            if key not in self.strings:
                raise self.err(node, f"message refers to undefined string '{key}'")
            return self.strings[key]
        return text or ""

    def _provider(self, node):
        name = self.req(node, "name")
        guid = self.req(node, "guid")
        if not re.match(r"^\{[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\}$", guid):
            raise self.err(node, f"provider '{name}': guid '{guid}' is not of the form {{8-4-4-4-12}}")
        p = {"name": name, "guid": guid.lower(), "lttng": lttng_provider_name(name),
             "symbol": self.req(node, "symbol"), "node": node,
             "keywords": {}, "tasks": {}, "maps": {}, "templates": {}, "events": []}
        if not IDENT.match(p["lttng"]):
            raise self.err(node, f"provider name '{name}' gives LTTng provider '{p['lttng']}', not a C identifier")
        for ks in node.find("keywords"):
            for k in ks.find("keyword"):
                kname = self.req(k, "name")
                try:
                    mask = parse_int(self.req(k, "mask"))
                except ValueError:
                    raise self.err(k, f"keyword '{kname}': mask '{k.attrs['mask']}' is not an integer")
                p["keywords"][kname] = {"name": kname, "mask": mask, "symbol": k.attrs.get("symbol", ""),
                                        "message": self.message(k, k.attrs.get("message"))}
        for ts in node.find("tasks"):
            for t in ts.find("task"):
                tname = self.req(t, "name")
                try:
                    value = parse_int(self.req(t, "value"))
                except ValueError:
                    raise self.err(t, f"task '{tname}': value '{t.attrs['value']}' is not an integer")
                p["tasks"][tname] = {"name": tname, "value": value, "guid": t.attrs.get("eventGUID", "")}
        for ms in node.find("maps"):
            for m in ms.find("valueMap") + ms.find("bitMap"):
                mname = self.req(m, "name")
                entries = []
                for e in m.find("map"):
                    try:
                        value = parse_int(self.req(e, "value"))
                    except ValueError:
                        raise self.err(e, f"map '{mname}': value '{e.attrs['value']}' is not an integer")
                    entries.append((value, self.message(e, e.attrs.get("message"))))
                p["maps"][mname] = {"name": mname, "kind": m.tag, "entries": entries}
        for ts in node.find("templates"):
            for t in ts.find("template"):
                tid = self.req(t, "tid")
                if tid in p["templates"]:
                    raise self.err(t, f"template '{tid}' declared twice (first at line "
                                   f"{p['templates'][tid]['node'].line})")
                p["templates"][tid] = self._template(p, t, tid)
        ids = {}
        for es in node.find("events"):
            for e in es.find("event"):
                ev = self._event(p, e)
                key = (ev["id"], ev["version"])
                if key in ids:
                    raise self.err(e, f"duplicate event id {ev['id']} version {ev['version']} in provider "
                                   f"'{name}' (first at line {ids[key]})")
                ids[key] = e.line
                p["events"].append(ev)
        return p

    def _template(self, p, node, tid):
        fields = []
        names = set()
        for d in node.find("data"):
            fname = self.req(d, "name")
            if not IDENT.match(fname):
                raise self.err(d, f"template '{tid}': field name '{fname}' is not a C identifier")
            if fname in names:
                raise self.err(d, f"template '{tid}': field '{fname}' declared twice")
            names.add(fname)
            in_type = self.req(d, "inType")
            if in_type not in IN_TYPES:
                raise self.err(d, f"template '{tid}', field '{fname}': unknown or unsupported inType "
                               f"'{in_type}' (supported: {', '.join(sorted(IN_TYPES))})")
            if "length" in d.attrs:
                raise self.err(d, f"template '{tid}', field '{fname}': fixed-length arrays (length) "
                               f"are not supported; use count")
            count = d.attrs.get("count")
            if count is not None:
                # An array whose length is an earlier unsigned integer field of the template.
                prior = {f["name"]: f for f in fields}
                if count not in prior:
                    raise self.err(d, f"template '{tid}', field '{fname}': count '{count}' is not an "
                                   f"earlier field of the template")
                if prior[count]["in"] not in COUNT_TYPES or prior[count].get("count"):
                    raise self.err(d, f"template '{tid}', field '{fname}': count '{count}' is not an "
                                   f"unsigned integer field")
                if IN_TYPES[in_type][1] != "integer":
                    raise self.err(d, f"template '{tid}', field '{fname}': arrays of {in_type} are "
                                   f"not supported (integers and pointers only)")
            mapname = d.attrs.get("map")
            if mapname and mapname not in p["maps"]:
                raise self.err(d, f"template '{tid}', field '{fname}': unknown map '{mapname}'")
            fields.append({"name": fname, "in": in_type, "out": d.attrs.get("outType", ""),
                           "map": mapname, "doc": self.strings.get(f"Doc.{tid}.{fname}", ""),
                           "count": count, "node": d})
        # Tracepoints (emitted events only) take a bounded number of arguments.
        if len(fields) > MAX_FIELDS and not self.read_only:
            raise self.err(node, f"template '{tid}' has {len(fields)} fields; LTTng-UST takes at most {MAX_FIELDS}")
        return {"tid": tid, "fields": fields, "node": node}

    def _event(self, p, node):
        symbol = self.req(node, "symbol")
        if not IDENT.match(symbol):
            raise self.err(node, f"event symbol '{symbol}' is not a C identifier")
        try:
            eid = parse_int(self.req(node, "value"))
            version = parse_int(node.attrs.get("version", "0"))
        except ValueError:
            raise self.err(node, f"event '{symbol}': value or version is not an integer")
        level_name = node.attrs.get("level", "win:Informational")
        if level_name not in LEVELS:
            raise self.err(node, f"event '{symbol}': unknown level '{level_name}' "
                           f"(known: {', '.join(LEVELS)})")
        tid = node.attrs.get("template")
        if tid is None:
            template = {"tid": None, "fields": []}
        elif tid not in p["templates"]:
            raise self.err(node, f"event '{symbol}' (id {eid}) refers to missing template '{tid}'")
        else:
            template = p["templates"][tid]
        kw_mask = 0
        kw_names = node.attrs.get("keywords", "").split()
        for k in kw_names:
            if k not in p["keywords"]:
                raise self.err(node, f"event '{symbol}': unknown keyword '{k}'")
            kw_mask |= p["keywords"][k]["mask"]
        task = node.attrs.get("task")
        if task is not None and task not in p["tasks"]:
            raise self.err(node, f"event '{symbol}': unknown task '{task}'")
        # rasp:outputs="lttng": an event EventPipe never carries (its content reaches
        # EventPipe as other events; see the manifest's header).
        outs = node.attrs.get("rasp:outputs", "lttng eventpipe").split()
        if not outs or any(o not in ("lttng", "eventpipe") for o in outs):
            raise self.err(node, f"event '{symbol}': rasp:outputs '{' '.join(outs)}' is not "
                           f"'lttng', 'eventpipe' or both")
        if "lttng" not in outs:
            raise self.err(node, f"event '{symbol}': rasp:outputs must include lttng")
        # What the event means, for docs/events.md: the string Doc.Event.<symbol> (ETW's
        # schema has no description attribute on <event> either).
        return {"lttng_only": "eventpipe" not in outs,
                "symbol": symbol, "api": snake(symbol), "id": eid, "version": version,
                "doc": self.strings.get(f"Doc.Event.{symbol}", ""),
                "level_name": level_name, "level": LEVELS[level_name], "keywords": kw_names,
                "keyword_mask": kw_mask, "task": task, "template": template,
                "message": self.message(node, node.attrs.get("message")), "node": node}


def banner(manifest_rel, comment="/*", end=" */"):
    return (f"{comment} Generated by {GENERATOR} from {manifest_rel}. Do not edit:{end}\n"
            f"{comment} change the manifest and rebuild.{end}\n")


def macro(s):
    return re.sub(r"[^A-Za-z0-9]", "_", s).upper()


def c_type(f):
    """The C type of a field's argument: an array is a pointer to its elements."""
    t = IN_TYPES[f["in"]][0]
    return f"const {t} *" if f.get("count") else t


def api_params(fields):
    if not fields:
        return "void"
    return ", ".join(f"{c_type(f)}{'' if c_type(f).endswith('*') else ' '}{f['name']}"
                     for f in fields)


def merged_providers(m, reads):
    """Providers of the emitted manifest, then those only read, merged by name: a provider
    declared in both (DotNETRuntime) gets the union of keywords, tasks, maps and events."""
    merged, order = {}, []
    for man in [m] + reads:
        for p in man.providers:
            q = merged.get(p["name"])
            if q is None:
                q = merged[p["name"]] = {"name": p["name"], "lttng": p["lttng"], "guid": p["guid"],
                                         "keywords": {}, "tasks": {}, "maps": {}, "events": []}
                order.append(p["name"])
            elif q["guid"] != p["guid"]:
                raise ManifestError(man.path, p["node"].line,
                                    f"provider '{p['name']}' has guid {p['guid']} here and "
                                    f"{q['guid']} in another manifest")
            for key in ("keywords", "tasks", "maps"):
                for k, v in p[key].items():
                    q[key].setdefault(k, v)
            seen = {(e["id"], e["version"]) for e in q["events"]}
            for e in p["events"]:
                if (e["id"], e["version"]) in seen:
                    raise ManifestError(man.path, e["node"].line,
                                        f"event {e['id']} version {e['version']} of "
                                        f"'{p['name']}' is declared in two manifests")
                q["events"].append(e)
    return [merged[n] for n in order]


def gen_meta(m, rel, reads=()):
    out = [banner(rel), "#ifndef RASP_EVENT_META_H\n#define RASP_EVENT_META_H\n",
           "/* Event metadata for code that emits, reads or filters rasp events: provider names\n"
           " * and GUIDs, event ids, versions, levels, keywords and field names, as the manifests\n"
           " * declare them (the events rasp emits, and the CLR events it only reads). */\n"]
    for p in merged_providers(m, list(reads)):
        P = macro(p["lttng"])
        out.append(f"/* Provider {p['name']} */")
        out.append(f"#define RASP_PROVIDER_{P}_NAME \"{p['name']}\"")
        out.append(f"#define RASP_PROVIDER_{P}_LTTNG \"{p['lttng']}\"")
        out.append(f"#define RASP_PROVIDER_{P}_GUID \"{p['guid']}\"")
        for k in p["keywords"].values():
            out.append(f"#define RASP_KEYWORD_{P}_{macro(k['name'])} 0x{k['mask']:x}ULL")
        for t in p["tasks"].values():
            out.append(f"#define RASP_TASK_{P}_{macro(t['name'])} {t['value']}")
        for mp in p["maps"].values():
            for value, msg in mp["entries"]:
                out.append(f"#define RASP_MAP_{macro(mp['name'])}_{macro(msg)} {value}")
        for e in p["events"]:
            E = f"RASP_EVENT_{P}_{macro(e['symbol'])}"
            out.append(f"#define {E}_ID {e['id']}")
            out.append(f"#define {E}_VERSION {e['version']}")
            out.append(f"#define {E}_LEVEL {e['level']}")
            out.append(f"#define {E}_KEYWORDS 0x{e['keyword_mask']:x}ULL")
            out.append(f"#define {E}_LTTNG \"{p['lttng']}:{e['symbol']}\"")
            names = ", ".join(f'"{f["name"]}"' for f in e["template"]["fields"])
            out.append(f"#define {E}_FIELD_COUNT {len(e['template']['fields'])}")
            out.append(f"#define {E}_FIELD_NAMES {{ {names} }}")
            for f in e["template"]["fields"]:
                out.append(f"#define {E}_FIELD_{macro(f['name'])} \"{f['name']}\"")
        out.append("")
    out.append("/* What librasp-lttng.so must export as rasp_lttng_provider_id: the provider library\n"
               " * and librasp agree on every event's layout only when built from one manifest. */")
    out.append(f"#define RASP_LTTNG_PROVIDER_ID \"rasp-lttng-provider {m.digest}\"\n")
    out.append("#endif /* RASP_EVENT_META_H */")
    return "\n".join(out) + "\n"


def gen_api_header(m, rel):
    out = [banner(rel), "#ifndef RASP_EVENTS_H\n#define RASP_EVENTS_H\n",
           "/* The event API: one function per manifest event. Each costs one load and one\n"
           " * predictable branch while no tracing session enables its tracepoint, including when\n"
           " * the LTTng provider library could not be loaded (rasp_events_provider_loaded()). */\n",
           "#include <stdbool.h>\n#include <stdint.h>\n\n#include \"rasp/event-meta.h\"\n#include \"rasp/export.h\"\n",
           "#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
           "/* 1 once the LTTng provider library is loaded; 0 if it is not (disabled by RASP_LTTNG=0,\n"
           " * or not found / not loadable; rasp_events_provider_error() then says why). */",
           "RASP_API int rasp_events_provider_loaded(void);",
           "/* Why the provider is not loaded, or NULL when it is. */",
           "RASP_API const char *rasp_events_provider_error(void);\n",
           "/* The file the runtime's EventPipe session writes (started by DOTNET_EnableEventPipe=1,\n"
           " * docs/eventpipe.md), or NULL when none runs. */",
           "RASP_API const char *rasp_events_eventpipe_path(void);",
           "/* Writes what the EventPipe session holds in its per-thread buffers to its file and waits\n"
           " * until it is written (at most 5 s). 0; -ENODEV when no session runs; -ETIMEDOUT; or the\n"
           " * session's write error (negative errno) once it has stopped on one. rasp_heap_destroy\n"
           " * calls it. */",
           "RASP_API int rasp_events_flush(void);",
           "/* A number that changes each time an EventPipe session starts (the runtime announces",
           " * its sampling mean again, so every session's stream has it). The calling thread's",
           " * events then go to the EventPipe sessions started before the call only, until its",
           " * next call: a thread that announces when the number changes never has an event",
           " * reach a session ahead of its announcement. */",
           "RASP_API unsigned rasp_events_session_epoch(void);\n"]
    for p in m.providers:
        for e in p["events"]:
            fields = e["template"]["fields"]
            out.append(f"/* {p['lttng']}:{e['symbol']} (event {e['id']} version {e['version']}"
                       f" of {p['name']}). */")
            out.append(f"RASP_API bool rasp_event_{e['api']}_enabled(void);")
            out.append(f"RASP_API void rasp_event_{e['api']}({api_params(fields)});\n")
    out.append("#ifdef __cplusplus\n}\n#endif\n\n#endif /* RASP_EVENTS_H */")
    return "\n".join(out) + "\n"


def tp_field(f, fields):
    cty = IN_TYPES[f["in"]]
    if f.get("count"):
        count = next(c for c in fields if c["name"] == f["count"])
        return (f"lttng_ust_field_sequence({cty[2]}, {f['name']}, {f['name']}, "
                f"{IN_TYPES[count['in']][0]}, {f['count']})")
    if cty[1] == "string":
        return f"lttng_ust_field_string({f['name']}, {f['name']} ? {f['name']} : \"NULL\")"
    if cty[1] == "float":
        return f"lttng_ust_field_float({cty[2]}, {f['name']}, {f['name']})"
    return f"lttng_ust_field_integer({cty[2]}, {f['name']}, {f['name']})"


def gen_tp_header(m, p, rel):
    guard = f"RASP_TP_{macro(p['lttng'])}_H"
    out = [banner(rel),
           f"/* LTTng-UST tracepoint provider {p['lttng']} (manifest provider {p['name']}). */\n",
           "#undef LTTNG_UST_TRACEPOINT_PROVIDER",
           f"#define LTTNG_UST_TRACEPOINT_PROVIDER {p['lttng']}\n",
           "#undef LTTNG_UST_TRACEPOINT_INCLUDE",
           f"#define LTTNG_UST_TRACEPOINT_INCLUDE \"rasp-tp-{p['lttng']}.h\"\n",
           f"#if !defined({guard}) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)",
           f"#define {guard}\n",
           "#include <lttng/tracepoint.h>\n#include <stddef.h>\n#include <stdint.h>\n"]
    for e in p["events"]:
        fields = e["template"]["fields"]
        if fields:
            args = ",\n\t\t".join(f"{c_type(f)}, {f['name']}" for f in fields)
            body = "\n\t\t".join(tp_field(f, fields) for f in fields)
        else:
            args, body = "", ""
        out.append(f"LTTNG_UST_TRACEPOINT_EVENT({p['lttng']}, {e['symbol']},\n"
                   f"\tLTTNG_UST_TP_ARGS({args}),\n"
                   f"\tLTTNG_UST_TP_FIELDS({body}))\n")
    out.append(f"#endif /* {guard} */\n\n#include <lttng/tracepoint-event.h>")
    return "\n".join(out) + "\n"


def gen_probes(m, rel):
    out = [banner(rel),
           "/* Probe definitions of every rasp provider: this file alone makes the provider\n"
           " * shared object, the only part of rasp linked against liblttng-ust. */\n",
           "#define LTTNG_UST_TRACEPOINT_CREATE_PROBES"]
    for p in m.providers:
        out.append(f"#include \"rasp-tp-{p['lttng']}.h\"")
    out.append("\n/* How librasp tells this library from any other it is given to load. */")
    out.append("__attribute__((visibility(\"default\"))) extern const char rasp_lttng_provider_id[];")
    out.append(f"const char rasp_lttng_provider_id[] = \"rasp-lttng-provider {m.digest}\";")
    return "\n".join(out) + "\n"


def ep_value(f):
    """The NetTrace value union member (nettrace-format.h) a field's argument goes in."""
    cty = IN_TYPES[f["in"]]
    if f.get("count"):
        return f"{{.p = {f['name']}}}"
    if cty[1] == "string":
        return f"{{.s = {f['name']}}}"
    if cty[1] == "float":
        return f"{{.f = {f['name']}}}"
    if cty[0].startswith("int"):
        return f"{{.i = {f['name']}}}"
    return f"{{.u = {f['name']}}}"


def gen_api_source(m, rel):
    out = [banner(rel),
           "/* The event API, built into librasp. Each event goes to LTTng and to the runtime's\n"
           " * EventPipe session (events/eventpipe.c), whichever is on. Tracepoints are defined here\n"
           " * with dynamic linkage: librasp needs no liblttng-ust; events reach an LTTng session once\n"
           " * events/provider.c has loaded the provider shared object. With both off each call is two\n"
           " * loads and branches. */\n",
           "/* Hidden: nothing outside librasp names the tracepoints (the provider finds them\n"
           " * through LTTng-UST), and a .NET runtime in the same process defines the same\n"
           " * DotNETRuntime ones: neither interposes on the other's. */",
           "#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION",
           "#define LTTNG_UST_TRACEPOINT_DEFINE",
           "#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE"]
    for p in m.providers:
        out.append(f"#include \"rasp-tp-{p['lttng']}.h\"")
    out.append("\n#include <stddef.h>\n\n#include \"eventpipe.h\"\n#include \"rasp-event-desc.h\"\n"
               "#include \"rasp/events.h\"\n#include \"rasp-events-inline.h\"\n")
    out.append("/* Each tracepoint under a name of librasp's, for the inline checks of\n"
               " * rasp-events-inline.h: they read its state at RASP__LTTNG_STATE_OFFSET from it,\n"
               " * without LTTng's headers. */")
    out.append("_Static_assert(offsetof(struct lttng_ust_tracepoint, state) == RASP__LTTNG_STATE_OFFSET,\n"
               "\t       \"LTTng-UST's tracepoint state where rasp-events-inline.h reads it\");")
    for p in m.providers:
        for e in p["events"]:
            out.append(f"extern const struct rasp__lttng_tp rasp__lttng_tp_{e['api']}\n"
                       f"    __attribute__((alias(\"lttng_ust_tracepoint_{p['lttng']}___{e['symbol']}\")));")
    out.append("")
    for p in m.providers:
        for e in p["events"]:
            fields = e["template"]["fields"]
            call_args = "".join(f", {f['name']}" for f in fields)
            desc = f"RASP_DESC_{macro(p['lttng'])}_{macro(e['symbol'])}"
            if e["lttng_only"]:
                out.append(f"/* LTTng only (rasp:outputs). */\n"
                           f"bool rasp_event_{e['api']}_enabled(void)\n{{\n"
                           f"\treturn lttng_ust_tracepoint_enabled({p['lttng']}, {e['symbol']});\n}}\n")
                out.append(f"void rasp_event_{e['api']}({api_params(fields)})\n{{\n"
                           f"\tif (lttng_ust_tracepoint_enabled({p['lttng']}, {e['symbol']}))\n"
                           f"\t\tlttng_ust_do_tracepoint({p['lttng']}, {e['symbol']}{call_args});\n}}\n")
                continue
            out.append(f"bool rasp_event_{e['api']}_enabled(void)\n{{\n"
                       f"\treturn lttng_ust_tracepoint_enabled({p['lttng']}, {e['symbol']}) ||\n"
                       f"\t       rasp__ep_enabled({desc});\n}}\n")
            vals = ", ".join(ep_value(f) for f in fields) if fields else "{.u = 0}"
            out.append(f"void rasp__event_{e['api']}_ep({api_params(fields)})\n{{\n"
                       f"\tif (rasp__ep_enabled({desc})) {{\n"
                       f"\t\tconst union rasp_nt_value vals[] = {{{vals}}};\n\n"
                       f"\t\trasp__ep_write({desc}, vals);\n\t}}\n}}\n")
            out.append(f"void rasp_event_{e['api']}({api_params(fields)})\n{{\n"
                       f"\tif (lttng_ust_tracepoint_enabled({p['lttng']}, {e['symbol']}))\n"
                       f"\t\tlttng_ust_do_tracepoint({p['lttng']}, {e['symbol']}{call_args});\n"
                       f"\trasp__event_{e['api']}_ep({', '.join(f['name'] for f in fields)});\n}}\n")
    return "\n".join(out)


def gen_inline_header(m, rel):
    out = [banner(rel), "#ifndef RASP_EVENTS_INLINE_H\n#define RASP_EVENTS_INLINE_H\n",
           "/* For librasp's own code only (not installed: these read librasp's hidden symbols).\n"
           " * rasp__event_<name>_on() answers as rasp_event_<name>_enabled() does, without a call:\n"
           " * the runtime checks its sampling state at every slow path, where three calls were half\n"
           " * of the check. For a check that only asks whether anything changed, the raw words:\n"
           " * rasp__event_<name>_word() (the LTTng tracepoint's state) and rasp__events_mask_peek()\n"
           " * (the EventPipe session's events); an event is on while its word is nonzero or its\n"
           " * descriptor's bit (RASP_DESC_*) is set in the mask. rasp__events_epoch_peek() reads the\n"
           " * EventPipe session epoch without pinning the thread's records to it\n"
           " * (rasp_events_session_epoch() pins). The epoch only grows, and a thread's reads of it\n"
           " * never go back, so its pin lies between an epoch it read through\n"
           " * rasp_events_session_epoch() and the current one: a peek equal to that epoch means no\n"
           " * session started since, and the pin is still that epoch. rasp__events_state_peek()\n"
           " * reads both in one word, (epoch << 32) | mask, which changes when either does (acquire:\n"
           " * read first, it orders the epoch and mask read after it). */\n",
           "#include <stdatomic.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n"
           "#include \"rasp-event-desc.h\"\n",
           "#ifdef RASP_EVENTS_CALLS\n"
           "/* Code built outside librasp that includes this (the runtime's white-box tests, which\n"
           " * link librasp for its events) cannot read its hidden symbols: the exported calls. The\n"
           " * mask then carries each event's state, whichever side enables it, and the words are 0\n"
           " * (as if LTTng enabled nothing). */\n"
           "#include \"rasp/events.h\"\n"]
    mask_terms = []
    for p in m.providers:
        for e in p["events"]:
            desc = f"RASP_DESC_{macro(p['lttng'])}_{macro(e['symbol'])}"
            out.append(f"static inline bool rasp__event_{e['api']}_on(void)\n{{\n"
                       f"\treturn rasp_event_{e['api']}_enabled();\n}}\n")
            out.append(f"static inline int rasp__event_{e['api']}_word(void)\n{{\n"
                       f"\treturn 0;\n}}\n")
            if not e["lttng_only"]:
                fields = e["template"]["fields"]
                out.append(f"static inline void rasp__event_{e['api']}_ep({api_params(fields)})\n{{\n"
                           f"\trasp_event_{e['api']}({', '.join(f['name'] for f in fields)});\n}}\n")
            mask_terms.append(f"(uint64_t)rasp_event_{e['api']}_enabled() << {desc}")
    out.append("static inline uint64_t rasp__events_mask_peek(void)\n{\n\treturn "
               + " |\n\t       ".join(mask_terms) + ";\n}\n")
    out.append("static inline uint32_t rasp__events_epoch_peek(void)\n{\n"
               "\treturn rasp_events_session_epoch();\n}\n")
    out.append("static inline uint64_t rasp__events_state_peek(void)\n{\n"
               "\treturn (uint64_t)rasp__events_epoch_peek() << 32 | (uint32_t)rasp__events_mask_peek();\n}\n")
    out.append("#else\n")
    # Hidden: librasp defines them, so a check reads each with one load from its address (as
    # a symbol that might be another object's, it took a load of the address first).
    out.append("#define RASP__HIDDEN __attribute__((visibility(\"hidden\")))")
    out.append("extern _Atomic uint64_t rasp__ep_mask RASP__HIDDEN;\n"
               "extern _Atomic uint32_t rasp__ep_epoch RASP__HIDDEN;\n"
               "extern _Atomic uint64_t rasp__ep_state RASP__HIDDEN;\n")
    # Each tracepoint's whole struct under a hidden name of librasp's (an alias, defined in
    # rasp-events.c), opaque here: its state is read at its address plus the offset, one
    # load (through a pointer to the state, two: 2 instructions a slow path).
    out.append("/* LTTng-UST 2.13's struct lttng_ust_tracepoint: a uint32_t, two pointers, then the\n"
               " * state (rasp-events.c asserts it). */\n"
               "#define RASP__LTTNG_STATE_OFFSET (3 * sizeof(void *))\n"
               "struct rasp__lttng_tp;")
    for p in m.providers:
        for e in p["events"]:
            out.append(f"extern const struct rasp__lttng_tp rasp__lttng_tp_{e['api']} RASP__HIDDEN;")
    out.append("")
    out.append("static inline uint64_t rasp__events_mask_peek(void)\n{\n"
               "\treturn atomic_load_explicit(&rasp__ep_mask, memory_order_relaxed);\n}\n")
    for p in m.providers:
        for e in p["events"]:
            desc = f"RASP_DESC_{macro(p['lttng'])}_{macro(e['symbol'])}"
            if e["lttng_only"]:
                out.append(f"/* {p['lttng']}:{e['symbol']}: its LTTng state; on while an LTTng session "
                           f"enables it (LTTng only). */\n"
                           f"static inline int rasp__event_{e['api']}_word(void)\n{{\n"
                           f"\treturn *(const volatile int *)((const char *)&rasp__lttng_tp_{e['api']} +\n"
                           f"\t\t\t\t\t RASP__LTTNG_STATE_OFFSET);\n}}\n\n"
                           f"static inline bool rasp__event_{e['api']}_on(void)\n{{\n"
                           f"\treturn rasp__event_{e['api']}_word() != 0;\n}}\n")
                continue
            fields = e["template"]["fields"]
            out.append(f"/* {p['lttng']}:{e['symbol']}'s EventPipe half alone (its LTTng one is\n"
                       f" * another event's: rasp:outputs). */\n"
                       f"void rasp__event_{e['api']}_ep({api_params(fields)}) RASP__HIDDEN;\n")
            out.append(f"/* {p['lttng']}:{e['symbol']}: its LTTng state; on while an LTTng session "
                       f"or the EventPipe session enables it. */\n"
                       f"static inline int rasp__event_{e['api']}_word(void)\n{{\n"
                       f"\treturn *(const volatile int *)((const char *)&rasp__lttng_tp_{e['api']} +\n"
                       f"\t\t\t\t\t RASP__LTTNG_STATE_OFFSET);\n}}\n\n"
                       f"static inline bool rasp__event_{e['api']}_on(void)\n{{\n"
                       f"\treturn rasp__event_{e['api']}_word() != 0 ||\n"
                       f"\t       ((rasp__events_mask_peek() >> {desc}) & 1);\n}}\n")
    out.append("static inline uint32_t rasp__events_epoch_peek(void)\n{\n"
               "\treturn atomic_load_explicit(&rasp__ep_epoch, memory_order_relaxed);\n}\n")
    out.append("static inline uint64_t rasp__events_state_peek(void)\n{\n"
               "\treturn atomic_load_explicit(&rasp__ep_state, memory_order_acquire);\n}\n")
    out.append("#endif /* RASP_EVENTS_CALLS */\n")
    out.append("#endif /* RASP_EVENTS_INLINE_H */")
    return "\n".join(out) + "\n"


def md_escape(s):
    return s.replace("|", "\\|")


def gen_docs(m, rel):
    out = [f"<!-- Generated by {GENERATOR} from {rel}. Do not edit: change the manifest and rebuild;",
           "     a test fails while this file differs from what the generator produces. -->",
           "# Event reference", "",
           "Every event rasp emits, as declared in the manifest. In LTTng a provider's name drops",
           "`Microsoft-` and `Windows-` and turns `-` into `_`; the event name is the event symbol;",
           "every field is a separate LTTng field, in manifest order. No loglevel is declared, as in",
           "CoreCLR, so `lttng list -u` shows LTTng's default (`TRACE_DEBUG_LINE`).", ""]
    for p in m.providers:
        out += [f"## Provider `{p['name']}`", "",
                "| attribute | value |", "|---|---|",
                f"| GUID | `{{{p['guid'][1:-1]}}}` |",
                f"| LTTng provider | `{p['lttng']}` |"]
        for k in p["keywords"].values():
            out.append(f"| keyword `{k['name']}` | `0x{k['mask']:x}` |")
        for t in p["tasks"].values():
            out.append(f"| task `{t['name']}` | {t['value']} |")
        out.append("")
        for mp in p["maps"].values():
            out.append(f"Value map `{mp['name']}`: " +
                       ", ".join(f"{v} = {md_escape(msg)}" for v, msg in mp["entries"]) + ".")
            out.append("")
        for e in p["events"]:
            out += [f"### `{p['lttng']}:{e['symbol']}`", "",
                    f"Event {e['id']} version {e['version']}, level {e['level_name'][4:]} ({e['level']}), "
                    f"keywords {', '.join('`%s`' % k for k in e['keywords']) or 'none'} "
                    f"(`0x{e['keyword_mask']:x}`), task `{e['task'] or '-'}`. "
                    f"C API: `rasp_event_{e['api']}()`."
                    + (" LTTng only: EventPipe never carries it." if e["lttng_only"] else ""), ""]
            if e.get("doc"):
                out += [e["doc"], ""]
            fields = e["template"]["fields"]
            if not fields:
                out += ["No payload.", ""]
                continue
            out += ["| # | field | manifest type | LTTng / CTF | meaning |", "|---|---|---|---|---|"]
            for i, f in enumerate(fields, 1):
                mtype = f"`{f['in']}`" + (f", map `{f['map']}`" if f["map"] else "") + \
                        (f", shown as `{f['out']}`" if f["out"] else "") + \
                        (f", count `{f['count']}`" if f.get("count") else "")
                ctf = IN_TYPES[f['in']][3]
                if f.get("count"):
                    ctf = f"sequence of {ctf}, length `{f['count']}`"
                out.append(f"| {i} | `{f['name']}` | {mtype} | {ctf} | "
                           f"{md_escape(f['doc'])} |")
            out.append("")
    return "\n".join(out)


# inType -> the codec's field type (rasp-event-desc.h)
DESC_TYPES = {
    "win:Int8": "RASP_FT_I8", "win:UInt8": "RASP_FT_U8", "win:Int16": "RASP_FT_I16",
    "win:UInt16": "RASP_FT_U16", "win:Int32": "RASP_FT_I32", "win:UInt32": "RASP_FT_U32",
    "win:Int64": "RASP_FT_I64", "win:UInt64": "RASP_FT_U64", "win:Pointer": "RASP_FT_PTR",
    "win:Boolean": "RASP_FT_BOOL32", "win:Float": "RASP_FT_F32", "win:Double": "RASP_FT_F64",
    "win:UnicodeString": "RASP_FT_UTF16Z", "win:AnsiString": "RASP_FT_ANSIZ",
}


def gen_desc_header(m, rel, reads):
    out = [banner(rel), "#ifndef RASP_EVENT_DESC_H\n#define RASP_EVENT_DESC_H\n",
           "/* Every event rasp emits or reads, as data: provider, id, version, level, keywords and\n"
           " * the payload's fields in order with their binary types. The NetTrace (EventPipe) codec\n"
           " * encodes and decodes payloads through these tables, so a manifest change changes the\n"
           " * LTTng provider, the C API and the EventPipe layout together. Internal: not installed. */\n",
           "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n",
           "enum rasp_field_type {",
           "\tRASP_FT_I8, RASP_FT_U8, RASP_FT_I16, RASP_FT_U16, RASP_FT_I32, RASP_FT_U32,",
           "\tRASP_FT_I64, RASP_FT_U64,",
           "\tRASP_FT_PTR,	   /* pointer-sized unsigned: 8 bytes, or the trace's pointer size */",
           "\tRASP_FT_BOOL32, /* 4-byte boolean (win:Boolean) */",
           "\tRASP_FT_F32, RASP_FT_F64,",
           "\tRASP_FT_UTF16Z, /* win:UnicodeString: UTF-16LE, NUL-terminated (UTF-8 in LTTng) */",
           "\tRASP_FT_ANSIZ,  /* win:AnsiString: bytes, NUL-terminated */",
           "};\n",
           "struct rasp_field_desc {\n\tconst char *name;\n\tenum rasp_field_type type;\n"
           "\t/* >= 0: an array of `type`, its length in field `count` (an earlier one); -1: one\n"
           "\t * value. */\n\tint count;\n};\n",
           "struct rasp_event_desc {",
           "\tconst char *provider;	     /* manifest provider name (EventPipe's) */",
           "\tconst char *lttng;	     /* \"Provider:Symbol\", LTTng's event name */",
           "\tconst char *symbol;",
           "\tuint32_t id, version, level;",
           "\tuint64_t keywords;",
           "\tconst struct rasp_field_desc *fields;",
           "\tsize_t nfields;",
           "\tbool emitted; /* rasp emits it to EventPipe (else only reads it, or emits it to LTTng\n"
           "\t\t       * only) */",
           "};\n",
           "extern const struct rasp_event_desc rasp_event_descs[];",
           "extern const size_t rasp_event_ndescs;\n",
           "/* Indexes into rasp_event_descs. */"]
    i = 0
    for p in merged_providers(m, reads):
        for e in p["events"]:
            out.append(f"#define RASP_DESC_{macro(p['lttng'])}_{macro(e['symbol'])} {i}")
            i += 1
    out.append(f"/* How many there are (rasp_event_ndescs, as a constant). */\n#define RASP_EVENT_NDESCS {i}")
    out.append("\n#endif /* RASP_EVENT_DESC_H */")
    return "\n".join(out) + "\n"


def gen_desc_source(m, rel, reads):
    # Emitted to EventPipe: an LTTng-only event (rasp:outputs) never is.
    emitted = {(p["name"], e["id"], e["version"]) for p in m.providers for e in p["events"]
               if not e["lttng_only"]}
    out = [banner(rel), "/* The event descriptor tables (rasp-event-desc.h). */\n",
           "#include \"rasp-event-desc.h\"\n"]
    rows = []
    for p in merged_providers(m, reads):
        for e in p["events"]:
            name = f"fields_{macro(p['lttng']).lower()}_{macro(e['symbol']).lower()}"
            fields = e["template"]["fields"]
            if fields:
                out.append(f"static const struct rasp_field_desc {name}[] = {{")
                for f in fields:
                    cnt = next((k for k, c in enumerate(fields) if c["name"] == f.get("count")), -1)
                    out.append(f"\t{{\"{f['name']}\", {DESC_TYPES[f['in']]}, {cnt}}},")
                out.append("};")
            rows.append(f"\t{{\"{p['name']}\", \"{p['lttng']}:{e['symbol']}\", \"{e['symbol']}\", "
                        f"{e['id']}, {e['version']}, {e['level']}, 0x{e['keyword_mask']:x}ULL, "
                        f"{name if fields else 'NULL'}, {len(fields)}, "
                        f"{'true' if (p['name'], e['id'], e['version']) in emitted else 'false'}}},")
    out.append("\nconst struct rasp_event_desc rasp_event_descs[] = {")
    out += rows
    out.append("};\n")
    out.append("const size_t rasp_event_ndescs = sizeof(rasp_event_descs) / sizeof(rasp_event_descs[0]);")
    return "\n".join(out) + "\n"


def outputs(m):
    files = ["rasp/event-meta.h", "rasp/events.h", "rasp-tp-probes.c", "rasp-events.c",
             "rasp-events-inline.h", "rasp-event-desc.h", "rasp-event-desc.c"]
    files += [f"rasp-tp-{p['lttng']}.h" for p in m.providers]
    return files


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--out-dir", help="directory for the generated C sources and headers")
    ap.add_argument("--docs", help="write the event reference (Markdown) here")
    ap.add_argument("--list-outputs", action="store_true",
                    help="print the files --out-dir would receive, one a line, and exit")
    ap.add_argument("--name", help="manifest path as written into generated banners "
                    "(default: the path given)")
    ap.add_argument("--read", action="append", default=[], metavar="MANIFEST",
                    help="a manifest of events rasp reads but never emits: metadata only")
    args = ap.parse_args(argv)
    rel = args.name or args.manifest
    try:
        m = Manifest(args.manifest)
        reads = [Manifest(r, read_only=True) for r in args.read]
        merged_providers(m, reads)
    except ManifestError as e:
        print(e, file=sys.stderr)
        return 1
    if args.list_outputs:
        print("\n".join(outputs(m)))
        return 0
    if args.out_dir:
        d = args.out_dir
        write_if_changed(os.path.join(d, "rasp/event-meta.h"), gen_meta(m, rel, reads))
        write_if_changed(os.path.join(d, "rasp/events.h"), gen_api_header(m, rel))
        write_if_changed(os.path.join(d, "rasp-tp-probes.c"), gen_probes(m, rel))
        write_if_changed(os.path.join(d, "rasp-events.c"), gen_api_source(m, rel))
        write_if_changed(os.path.join(d, "rasp-events-inline.h"), gen_inline_header(m, rel))
        write_if_changed(os.path.join(d, "rasp-event-desc.h"), gen_desc_header(m, rel, reads))
        write_if_changed(os.path.join(d, "rasp-event-desc.c"), gen_desc_source(m, rel, reads))
        for p in m.providers:
            write_if_changed(os.path.join(d, f"rasp-tp-{p['lttng']}.h"), gen_tp_header(m, p, rel))
    if args.docs:
        write_if_changed(args.docs, gen_docs(m, rel) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
