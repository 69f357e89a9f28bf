#!/usr/bin/env python3
"""The device check's results (device-check.json, written by device_check.py
on the GPU machine) as a markdown table: per case, the match against
onnxruntime, ignc's device time (CUDA, and Vulkan where the case has a
Vulkan bundle), torch's, their ratio, and the analytical model's prediction.

  python3 benchmarks/gpu/device_check_table.py device-check.json [more.json]

A case in several files takes its last file's row that ran (a case skipped
for the time budget in one run keeps the row of the run that reached it).
"""
import json
import sys


def fmt(v, spec=".3f"):
    return "" if v is None else format(v, spec)


def rows(paths):
    cases, machine = {}, ""
    for path in paths:
        data = json.load(open(path))
        machine = data.get("machine", {}).get("nvidia_smi", machine)
        for c in data["cases"]:
            if "skipped" not in c or c["name"] not in cases:
                cases[c["name"]] = c
    return machine, [cases[n] for n in sorted(cases)]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    machine, cases = rows(sys.argv[1:])
    print(f"GPU: {machine}\n")
    print("| case | matches | rel L2 | ignc CUDA ms | predicted ms | torch ms | "
          "ignc / torch | ignc Vulkan ms | Vulkan ms, host-visible memory | Vulkan rel L2 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        v = c.get("vulkan", {})
        status = "yes" if c.get("ok") else (c.get("error") or c.get("skipped") or "no")
        vk_ms = fmt(v.get("device_ms")) if v.get("ok") else v.get("error", "")[:60]
        print(f"| {c['name']} | {status[:60]} | {fmt(c.get('rel_l2'), '.1e')} | "
              f"{fmt(c.get('ignc_device_ms'))} | {fmt(c.get('predicted_ms'))} | "
              f"{fmt(c.get('torch_median_ms'))} | {fmt(c.get('ignc_over_torch'), '.2f')} | "
              f"{vk_ms} | {fmt(v.get('host_device_ms'))} | {fmt(v.get('rel_l2'), '.1e')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
