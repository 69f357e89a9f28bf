"""Tampers with a bundle or a tuning database as an attacker (or an
accident) would, for report-verify.test.

  tamper_bundle.py weight IN.ignb OUT.ignb
      doubles every value of the bundle's largest f32 weight and rewrites
      the section and header checksums, so that the runtime accepts it.
  tamper_bundle.py slow-schedule RECORDS.json OUT.json TASK
      adds a record for TASK whose schedule is the default's with register
      tiles off (c0.cols 1), timed as the fastest and marked as the pick of
      a confirmation (the latest confirmed record is what a compile applies,
      whether or not the tuning run confirmed another), so a compile
      applies it.
"""
import json
import struct
import sys


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def tamper_weight(src, dst):
    data = bytearray(open(src, "rb").read())
    count, table = struct.unpack_from("<IQ", data, 12)
    sections = {}
    for i in range(count):
        kind, _, offset, size, _ = struct.unpack_from("<IIQQQ", data, table + 64 * i)
        sections[kind] = (i, offset, size)
    _, moff, msize = sections[1]
    manifest = json.loads(bytes(data[moff:moff + msize]).rstrip(b"\0"))
    weights = [w for w in manifest["weights"] if w["dtype"] == "f32"]
    w = max(weights, key=lambda w: w["bytes"])
    index, woff, wsize = sections[2]
    start = woff + w["offset"]
    n = w["bytes"] // 4
    values = struct.unpack_from("<%df" % n, data, start)
    struct.pack_into("<%df" % n, data, start, *[2 * v + 0.5 for v in values])
    struct.pack_into("<Q", data, table + 64 * index + 24, fnv1a(data[woff:woff + wsize]))
    struct.pack_into("<Q", data, 48, fnv1a(data[:48]))
    open(dst, "wb").write(data)
    print(w["name"])


def slow_schedule(src, dst, task):
    doc = json.load(open(src))
    default = next(r for r in doc["records"]
                   if r["task"] == task and r["origin"] == "default")
    slow = dict(default)
    slow["schedule"] = dict(default["schedule"], **{"c0.cols": 1})
    slow["median_ns"] = slow["min_ns"] = slow["p90_ns"] = 1.0
    slow["origin"] = "confirmed"
    slow["created"] = "2000-01-01T00:00:00Z"
    doc["records"].append(slow)
    json.dump(doc, open(dst, "w"))


if __name__ == "__main__":
    if sys.argv[1] == "weight":
        tamper_weight(sys.argv[2], sys.argv[3])
    else:
        # TASK, or a file holding it
        task = sys.argv[4]
        try:
            task = open(task).read().strip()
        except OSError:
            pass
        slow_schedule(sys.argv[2], sys.argv[3], task)
