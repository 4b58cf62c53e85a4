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
// Both end with "events=N lost=M pointer_size=P". Exit 1 with a message on stderr when
// TraceEvent cannot read the file, 2 on a usage error.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Parsers.Clr;

namespace NetTraceDump;

static class Program
{
    static int Main(string[] args)
    {
        bool summary = false;
        string? path = null;
        foreach (string a in args)
        {
            if (a == "--summary")
                summary = true;
            else if (a.StartsWith('-') || path != null)
            {
                Console.Error.WriteLine("usage: NetTraceDump [--summary] FILE.nettrace");
                return 2;
            }
            else
                path = a;
        }
        if (path == null)
        {
            Console.Error.WriteLine("usage: NetTraceDump [--summary] FILE.nettrace");
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
}
