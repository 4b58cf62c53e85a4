#!/usr/bin/env bash
# CTest dotnet-generics: a .NET developer's first reports of a generic-heavy .NET 10 program
# (Generics/), recorded twice with the runtime's own EventPipe file session (stacks and the
# rundown's method names included). Checks, each printed:
#  - rasp report on a terminal (a pseudo-terminal of 80x24, then 120x40) fits it: every line
#    within the width, the largest rows only and "… N more rows (--top 0 for all)";
#  - types named as C# writes them (List<int>, Dictionary<string, int[]>, int[,]) and, with
#    --raw-names, as the runtime does (System.Collections.Generic.List`1[System.Int32]);
#    JSON keeps every name whole;
#  - --by site names the program's own methods (Generics.Program.*), not the framework's
#    helpers that --site leaf names; --site-exclude moves a method's bytes to its caller;
#  - --by stack rows read differently from one another (grouped as they are named);
#  - rasp diff --by site between the two runs of the same code flags nothing, and fits the
#    terminal too.
# "FAIL: ..." fails the test.
#   run-generics.sh DOTNET PYTHON3 OUT RASP WORK
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: run-generics.sh DOTNET PYTHON3 OUT RASP WORK" >&2; exit 2; }
dotnet=$1 python=$2 out=$3 rasp=$4 work=$5
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

for run in 1 2; do
  echo "+ DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath=$work/run$run.nettrace" \
       "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4" \
       "$dotnet $out/Generics/Generics.dll"
  DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath="$work/run$run.nettrace" \
  DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x80000000000:4' \
    "$dotnet" "$out/Generics/Generics.dll" || fail "Generics exited with status $?"
  [ -s "$work/run$run.nettrace" ] || fail "no trace from run $run"
done

"$python" - "$rasp" "$work" <<'EOF'
import fcntl, json, os, pty, re, struct, subprocess, sys, termios, unicodedata

rasp, work = sys.argv[1], sys.argv[2]
t1, t2 = f"{work}/run1.nettrace", f"{work}/run2.nettrace"
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def columns(line):
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def on_terminal(cols, rows, *args):
    """rasp's output on a pseudo-terminal of cols x rows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    print("+ (on a %dx%d terminal) rasp %s" % (cols, rows, " ".join(args)))
    p = subprocess.Popen([rasp, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                         close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            d = os.read(master, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    os.close(master)
    check(p.wait(timeout=60) == 0, f"rasp {' '.join(args)} on a terminal exits 0")
    return out.decode().replace("\r\n", "\n")


def run(*args):
    print("+ rasp " + " ".join(args))
    return subprocess.run([rasp, *args], check=True, capture_output=True, text=True).stdout


# 1. The first report fits the terminal.
full = run("report", "--top", "0", t1)
widest = max(columns(l) for l in full.splitlines())
nrows = json.loads(run("report", "--format", "json", t1))["rows"]
print(f"off a terminal: {len(full.splitlines())} lines, the widest {widest} columns, "
      f"{len(nrows)} rows")
for cols, rows in ((80, 24), (120, 40)):
    out = on_terminal(cols, rows, "report", t1)
    print(out)
    lines = out.splitlines()
    w = max(columns(l) for l in lines)
    check(w <= cols, f"{cols}x{rows}: the widest line is {w} columns (want <= {cols})")
    check(len(lines) < rows, f"{cols}x{rows}: {len(lines)} lines (want < {rows})")
    check(re.search(r"\n… \d+ more rows \(--top 0 for all\)\n", out) is not None,
          f"{cols}x{rows}: says how many more rows there are")
    check("\nstring " in out, f"{cols}x{rows}: the largest type, string, is shown")
    out = on_terminal(cols, rows, "report", "--by", "site", t1)
    w = max(columns(l) for l in out.splitlines())
    check(w <= cols, f"{cols}x{rows} --by site: the widest line is {w} columns")

# 2. Names as C# writes them; the runtime's with --raw-names; JSON whole.
rep = json.loads(run("report", "--format", "json", t1))
names = {r["type"] for r in rep["rows"]}
check(rep["names"] == "csharp", f"the JSON report says its names are C#'s ({rep['names']})")
for want in ("string", "int[]", "List<int>", "Dictionary<string, int[]>", "int[,]",
             "Entry<string, int>[]", "(int, string)[]", "Tuple<int, string>"):
    check(want in names, f"type {want} is named as C# writes it")
check(not any("`" in n for n in names), "no runtime-form name (with '`') among C#'s")
longest = max(names, key=len)
check("…" not in longest, f"JSON keeps the longest name whole ({len(longest)} characters)")
raw = {r["type"] for r in json.loads(run("report", "--format", "json", "--raw-names", t1))["rows"]}
check("System.Collections.Generic.List`1[System.Int32]" in raw and "System.String" in raw,
      "--raw-names: the runtime's names")
check(len(raw) == len(names), f"as many types either way ({len(raw)}, {len(names)})")

# 3. Sites in the program's own code.
sites = json.loads(run("report", "--format", "json", "--by", "site", t1))["rows"]
top = [r["site"] for r in sites[:5]]
check(all(s.startswith("Generics.Program.") for s in top), f"the 5 largest sites are the "
      f"program's own: {top}")
own = sum(r["bytes"] for r in sites if r["site"].startswith("Generics."))
check(own >= 0.95 * rep["total"]["bytes"], f"the program's own methods hold "
      f"{100 * own / rep['total']['bytes']:.1f}% of the bytes (want >= 95%)")
leaf = json.loads(run("report", "--format", "json", "--by", "site", "--site", "leaf", t1))
check(leaf["site"] == "leaf" and any(not r["site"].startswith("Generics.")
                                     for r in leaf["rows"][:3]),
      f"--site leaf names framework helpers: {[r['site'] for r in leaf['rows'][:3]]}")
tables = [r for r in sites if r["site"].startswith("Generics.Program.Tables(")]
check(len(tables) == 1, "Generics.Program.Tables(int) is a site")
ex = json.loads(run("report", "--format", "json", "--by", "site",
                    "--site-exclude", "Generics.Program.Tables*", t1))
check(ex["site_exclude"] == ["Generics.Program.Tables*"], "the JSON report keeps the pattern")
check(not any(r["site"].startswith("Generics.Program.Tables") for r in ex["rows"])
      and any(r["site"].startswith("Generics.Program.Main(") for r in ex["rows"]),
      "--site-exclude moves Tables' bytes to its caller, Main")

# 4. Stack rows: grouped as they are named, so no two read the same.
stacks = json.loads(run("report", "--format", "json", "--by", "stack", t1))["rows"]
texts = [" < ".join(f["name"] for f in r["stack"]) for r in stacks]
check(len(texts) == len(set(texts)), f"{len(texts)} stack rows, {len(set(texts))} distinct")

# 5. The same code twice: nothing flagged by site.
print("+ rasp diff --by site run1 run2")
d = subprocess.run([rasp, "diff", "--by", "site", "--format", "json", t1, t2],
                   capture_output=True, text=True)
check(d.returncode == 0, f"rasp diff --by site exits 0 ({d.returncode}): {d.stderr.strip()}")
diff = json.loads(d.stdout)
flagged = [r for r in diff["rows"] if r.get("significant")]
for cols, rows in ((80, 24), (120, 40)):
    out = on_terminal(cols, rows, "diff", "--by", "site", t1, t2)
    print(out)
    w = max(columns(l) for l in out.splitlines())
    check(w <= cols, f"{cols}x{rows} rasp diff --by site: the widest line is {w} columns")
check(not flagged, f"rasp diff --by site between two runs flags nothing "
      f"({[(r.get('site'), r.get('change')) for r in flagged]})")
sys.exit(1 if failures else 0)
EOF
echo "PASS: dotnet-generics"
