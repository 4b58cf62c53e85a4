// Generics: allocates as generic-heavy code does, so that a report of it has the long type
// names and the framework frames of real programs: List<Dictionary<string, int>>, nested
// types (Outer.Inner, Outer<T>.Inner<U>), arrays of generics, multi-dimensional and jagged
// arrays, tuples, LINQ iterators, closures, string building. The work is fixed (no clock, no
// randomness), so two runs allocate the same objects from the same code.
//
//   dotnet Generics.dll [--scale K]
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;

namespace Generics;

sealed class Outer
{
    public sealed class Inner
    {
        public readonly int Value;
        public Inner(int value) { Value = value; }
    }
}

sealed class Outer<T>
{
    public sealed class Inner<U>
    {
        public readonly T First;
        public readonly U Second;
        public Inner(T first, U second) { First = first; Second = second; }
    }

    public sealed class Leaf
    {
        public readonly T Value;
        public Leaf(T value) { Value = value; }
    }
}

readonly record struct Point(int X, int Y);

sealed record Order(int Id, string Customer, decimal Amount);

static class Program
{
    // Live references, so nothing is optimized away; replaced round after round.
    static readonly object[] Keep = new object[256];
    static int next;

    static void Hold(object o) => Keep[next++ & 255] = o;

    static List<Dictionary<string, int>> Tables(int round)
    {
        var list = new List<Dictionary<string, int>>();
        for (int i = 0; i < 8; i++) {
            var d = new Dictionary<string, int>();
            for (int j = 0; j < 16; j++)
                d["k" + ((round + i * 16 + j) % 97).ToString(CultureInfo.InvariantCulture)] = j;
            list.Add(d);
        }
        return list;
    }

    static Dictionary<string, List<KeyValuePair<Tuple<int, string>, Outer<long>.Inner<Dictionary<string, int[]>>>>> Deep(int round)
    {
        var map = new Dictionary<string, List<KeyValuePair<Tuple<int, string>, Outer<long>.Inner<Dictionary<string, int[]>>>>>();
        for (int i = 0; i < 4; i++) {
            var list = new List<KeyValuePair<Tuple<int, string>, Outer<long>.Inner<Dictionary<string, int[]>>>>();
            for (int j = 0; j < 4; j++) {
                var inner = new Dictionary<string, int[]> { ["a"] = new int[j + 1] };
                list.Add(new KeyValuePair<Tuple<int, string>, Outer<long>.Inner<Dictionary<string, int[]>>>(
                    Tuple.Create(j, "t"), new Outer<long>.Inner<Dictionary<string, int[]>>(round, inner)));
            }
            map["m" + i.ToString(CultureInfo.InvariantCulture)] = list;
        }
        return map;
    }

    static object Arrays(int round)
    {
        var grid = new int[8, 8];
        var jagged = new int[4][];
        for (int i = 0; i < jagged.Length; i++)
            jagged[i] = new int[i + 4];
        var maps = new Dictionary<string, int>[4];
        for (int i = 0; i < maps.Length; i++)
            maps[i] = new Dictionary<string, int> { ["x"] = round };
        var pairs = new KeyValuePair<string, int>[16];
        var points = new Point[32];
        var tuples = new (int, string)[8];
        var nested = new Outer.Inner[8];
        for (int i = 0; i < nested.Length; i++)
            nested[i] = new Outer.Inner(i);
        var leaves = new Outer<string>.Leaf[4];
        for (int i = 0; i < leaves.Length; i++)
            leaves[i] = new Outer<string>.Leaf("leaf");
        return new object[] { grid, jagged, maps, pairs, points, tuples, nested, leaves };
    }

    static object Linq(int round)
    {
        var orders = new List<Order>();
        for (int i = 0; i < 64; i++)
            orders.Add(new Order(i, "c" + (i % 7).ToString(CultureInfo.InvariantCulture), i * 1.5m));
        var byCustomer = orders.Where(o => o.Amount > round % 10)
                               .GroupBy(o => o.Customer)
                               .ToDictionary(g => g.Key, g => g.Select(o => o.Id).ToList());
        var ids = orders.Select(o => o.Id * 2).Where(x => x % 3 != 0).ToArray();
        return new object[] { byCustomer, ids };
    }

    static string Text(int round)
    {
        var sb = new StringBuilder();
        for (int i = 0; i < 32; i++)
            sb.Append("line ").Append(i).Append(':').Append(round).Append('\n');
        return string.Join(",", sb.ToString().Split('\n').Select(s => s.ToUpperInvariant()));
    }

    static int Main(string[] args)
    {
        int scale = 1;
        for (int i = 0; i < args.Length; i++) {
            if (args[i] == "--scale" && i + 1 < args.Length)
                scale = int.Parse(args[++i], CultureInfo.InvariantCulture);
            else {
                Console.Error.WriteLine("usage: Generics [--scale K]");
                return 2;
            }
        }
        for (int round = 0; round < 4000 * scale; round++) {
            Hold(Tables(round));
            Hold(Deep(round));
            Hold(Arrays(round));
            Hold(Linq(round));
            Hold(Text(round));
        }
        Console.WriteLine("done: " + (4000 * scale).ToString(CultureInfo.InvariantCulture) + " rounds");
        return 0;
    }
}
