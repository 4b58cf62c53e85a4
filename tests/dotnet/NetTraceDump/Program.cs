// NetTraceDump: prints the AllocationSampled events (Microsoft-Windows-DotNETRuntime 303) of a
// .nettrace file exactly as TraceEvent (EventPipeEventSource, Clr.AllocationSampling) decodes
// them: an oracle for rasp's own nettrace reader and writer.
//
//   dotnet NetTraceDump.dll FILE.nettrace             one line per event, in the order
//     TraceEvent dispatches them (time order, threads merged; not the byte order of the file):
//     pid TAB tid TAB kind TAB clrInstanceId TAB typeId(hex) TAB typeName TAB address(hex)
//     TAB objectSize TAB sampledByteOffset
//   dotnet NetTraceDump.dll --summary FILE.nettrace   one line per (typeName, kind):
//     typeName TAB kind TAB samples TAB sum of objectSize
//   dotnet NetTraceDump.dll --sites FILE.nettrace ETLX  one line per (typeName, site) where
//     site is the innermost frame of the sample's stack as TraceEvent's TraceLog resolves it
//     (converting the file to ETLX, with the method load and rundown events):
//     typeName TAB site TAB samples TAB sum of objectSize; "?" when the stack is missing.
//   dotnet NetTraceDump.dll --rasp FILE.nettrace  one line per event of rasp's own provider
//     (Rasp-Runtime), decoded by TraceEvent as a dynamic event from the file's metadata (no
//     parser of TraceEvent knows them): pid TAB tid TAB id TAB name, then TAB field=value for
//     each payload field in order (integers in decimal); "events=N" counts these events.
// All end with "events=N lost=M pointer_size=P". Exit 1 with a message on stderr when
// TraceEvent cannot read the file, 2 on a usage error.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Etlx;
using Microsoft.Diagnostics.Tracing.Parsers.Clr;

namespace NetTraceDump;

static class Program
{
    static int Main(string[] args)
    {
        const string usage = "usage: NetTraceDump [--summary] FILE.nettrace | --sites FILE.nettrace ETLX"
            + " | --rasp FILE.nettrace";
        if (args.Length == 3 && args[0] == "--sites")
            return Sites(args[1], args[2]);
        if (args.Length == 2 && args[0] == "--rasp")
            return Rasp(args[1]);
        bool summary = false;
        string? path = null;
        foreach (string a in args)
        {
            if (a == "--summary")
                summary = true;
            else if (a.StartsWith('-') || path != null)
            {
                Console.Error.WriteLine(usage);
                return 2;
            }
            else
                path = a;
        }
        if (path == null)
        {
            Console.Error.WriteLine(usage);
            return 2;
        }

        var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false), 1 << 16);
        stdout.NewLine = "\n";
        try
        {
            long events = 0;
            var perType = new SortedDictionary<(string type, int kind), (long samples, long bytes)>();
            int pointerSize;
            int lost;
            using (var source = new EventPipeEventSource(path))
            {
                source.Clr.AllocationSampling += (AllocationSampledTraceData d) =>
                {
                    events++;
                    int kind = (int)d.AllocationKind;
                    if (summary)
                    {
                        var key = (d.TypeName, kind);
                        perType.TryGetValue(key, out var v);
                        perType[key] = (v.samples + 1, v.bytes + d.ObjectSize);
                        return;
                    }
                    stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                        $"{d.ProcessID}\t{d.ThreadID}\t{kind}\t{d.ClrInstanceID}\t0x{d.TypeID:x}\t{d.TypeName}\t0x{d.Address:x}\t{d.ObjectSize}\t{d.SampledByteOffset}"));
                };
                source.Process();
                pointerSize = source.PointerSize;
                lost = source.EventsLost;
            }
            foreach (var kv in perType)
                stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{kv.Key.type}\t{kv.Key.kind}\t{kv.Value.samples}\t{kv.Value.bytes}"));
            stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"events={events} lost={lost} pointer_size={pointerSize}"));
            stdout.Flush();
            return 0;
        }
        catch (Exception e)
        {
            stdout.Flush();
            Console.Error.WriteLine($"NetTraceDump: {path}: {e.GetType().Name}: {e.Message}");
            return 1;
        }
    }

    // --rasp: Rasp-Runtime's events through TraceEvent's DynamicTraceEventParser, which builds
    // each event's layout from the metadata the file carries (field names and types).
    static int Rasp(string path)
    {
        var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false), 1 << 16);
        stdout.NewLine = "\n";
        try
        {
            long events = 0;
            int pointerSize, lost;
            using (var source = new EventPipeEventSource(path))
            {
                source.Dynamic.All += (TraceEvent d) =>
                {
                    if (d.ProviderName != "Rasp-Runtime")
                        return;
                    events++;
                    var line = new StringBuilder();
                    line.Append(string.Create(CultureInfo.InvariantCulture,
                        $"{d.ProcessID}\t{d.ThreadID}\t{(int)d.ID}\t{d.EventName}"));
                    for (int i = 0; i < d.PayloadNames.Length; i++)
                        line.Append('\t').Append(d.PayloadNames[i]).Append('=')
                            .Append(Convert.ToString(d.PayloadValue(i), CultureInfo.InvariantCulture));
                    stdout.WriteLine(line.ToString());
                };
                source.Process();
                pointerSize = source.PointerSize;
                lost = source.EventsLost;
            }
            stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"events={events} lost={lost} pointer_size={pointerSize}"));
            stdout.Flush();
            return 0;
        }
        catch (Exception e)
        {
            stdout.Flush();
            Console.Error.WriteLine($"NetTraceDump: {path}: {e.GetType().Name}: {e.Message}");
            return 1;
        }
    }

    // --sites: each sample's innermost resolved frame, the way PerfView names it (the method's
    // full name; TraceLog resolves managed code from MethodLoadVerbose / MethodDCEndVerbose).
    static int Sites(string path, string etlx)
    {
        var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false), 1 << 16);
        stdout.NewLine = "\n";
        try
        {
            long events = 0;
            var perSite = new SortedDictionary<(string type, string site), (long samples, long bytes)>(
                Comparer<(string, string)>.Create((a, b) =>
                {
                    int c = string.CompareOrdinal(a.Item1, b.Item1);
                    return c != 0 ? c : string.CompareOrdinal(a.Item2, b.Item2);
                }));
            TraceLog.CreateFromEventPipeDataFile(path, etlx);
            int pointerSize, lost;
            using (var log = new TraceLog(etlx))
            {
                foreach (TraceEvent ev in log.Events)
                {
                    if (ev is not AllocationSampledTraceData d)
                        continue;
                    events++;
                    TraceCallStack? stack = ev.CallStack();
                    string site = "?";
                    if (stack != null)
                    {
                        string name = stack.CodeAddress.FullMethodName;
                        site = string.IsNullOrEmpty(name) ? $"0x{stack.CodeAddress.Address:x}" : name;
                    }
                    var key = (d.TypeName, site);
                    perSite.TryGetValue(key, out var v);
                    perSite[key] = (v.samples + 1, v.bytes + d.ObjectSize);
                }
                pointerSize = log.PointerSize;
                lost = log.EventsLost;
            }
            foreach (var kv in perSite)
                stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{kv.Key.type}\t{kv.Key.site}\t{kv.Value.samples}\t{kv.Value.bytes}"));
            stdout.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"events={events} lost={lost} pointer_size={pointerSize}"));
            stdout.Flush();
            return 0;
        }
        catch (Exception e)
        {
            stdout.Flush();
            Console.Error.WriteLine($"NetTraceDump: {path}: {e.GetType().Name}: {e.Message}");
            return 1;
        }
    }
}
