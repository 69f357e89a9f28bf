#!/usr/bin/env python3
"""Two bundles of one model timed alternately, as a whole and per kernel.

  python3 benchmarks/bundle_ab.py A.ignb B.ignb [--ignc build/bin/ignc]
      [--rounds 8] [--threads 2] [--repeat 20] [--kernels 10]

Rounds alternate the order (A B, B A, ...); each round is one `ignc bench
--json` per bundle. Prints the median of each bundle's round medians and
B/A, then the launches whose median (over rounds) moved most either way:
e.g. a tuned bundle (B) against the default one (A) of the same model, to
see which kernels' tuned schedules carry over into the model.
"""
import argparse
import json
import statistics
import subprocess


def bench(ignc, bundle, threads, repeat):
    out = subprocess.run([ignc, "bench", bundle, "--json", "--threads", str(threads),
                          "--repeat", str(repeat)],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    kernels = {f"{i:03d} {k['name']}": k["median_ms"] for i, k in enumerate(j["kernels"])}
    return j["latency_ms"]["median"], kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--ignc", default="build/bin/ignc")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--kernels", type=int, default=10, help="launches listed each way")
    args = ap.parse_args()
    total = {args.a: [], args.b: []}
    per = {args.a: {}, args.b: {}}
    for r in range(args.rounds):
        for x in (args.a, args.b) if r % 2 == 0 else (args.b, args.a):
            t, ks = bench(args.ignc, x, args.threads, args.repeat)
            total[x].append(t)
            for name, ms in ks.items():
                per[x].setdefault(name, []).append(ms)
    ma, mb = (statistics.median(total[x]) for x in (args.a, args.b))
    print(f"A {ma:.3f} ms  B {mb:.3f} ms  B/A {mb / ma:.3f}  "
          f"({args.rounds} rounds, {args.threads} thread(s))")
    rows = sorted((statistics.median(per[args.b][n]) - statistics.median(per[args.a][n]), n)
                  for n in per[args.a] if n in per[args.b])
    k = args.kernels
    for d, n in rows[:k] + rows[max(k, len(rows) - k):]:
        a, b = statistics.median(per[args.a][n]), statistics.median(per[args.b][n])
        print(f"{n:44s} A {a * 1e3:9.1f} us  B {b * 1e3:9.1f} us  {d * 1e3:+9.1f}")


if __name__ == "__main__":
    main()
