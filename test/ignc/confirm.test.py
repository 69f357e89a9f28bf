"""Helpers of confirm.test.

plant REC.json OUT.json: OUT holds one record copied from REC's default
record, with a slow schedule (the default's with one accumulator, no
packing, no split) that claims to run in a third of the default's time: a
lucky measurement.
check REC.json: the export after confirmation holds a `confirmed` record
with the default's schedule and a `confirm` record of the slow schedule,
measured well slower than the default side by side.
"""
import json
import sys

SLOW = {"c0.cols": 1, "c0.pack": 0, "c0.rows": 1, "split.0": 1, "split.2": 1}


def records(path):
    return json.load(open(path))["records"]


def default_of(recs):
    return next(r for r in recs if r["origin"] == "default")


def plant(src, out):
    d = default_of(records(src))
    r = dict(d)
    r["schedule"] = dict(d["schedule"], **SLOW)
    r["origin"] = "random"
    r["median_ns"] = d["median_ns"] / 3
    r["created"] = "2026-01-01T00:00:00Z"
    json.dump({"format": "ignc-tuning-records", "version": 1,
               "records": [r]}, open(out, "w"))


def check(src):
    recs = records(src)
    d = default_of(recs)
    confirmed = [r for r in recs if r["origin"] == "confirmed"]
    confirm = [r for r in recs if r["origin"] == "confirm"]
    assert len(confirmed) == 1 and confirmed[0]["schedule"] == d["schedule"], recs
    assert len(confirm) == 1 and confirm[0]["schedule"] == dict(
        d["schedule"], **SLOW), recs
    slow = confirm[0]
    assert slow["status"] == "ok" and slow["rel_l2"] < 1e-4, slow
    assert slow["median_ns"] > 1.5 * confirmed[0]["median_ns"], (slow, confirmed)
    ratio = float(slow["message"].split()[0][1:])
    assert ratio > 1.5 and "of the default side by side" in slow["message"], slow


if __name__ == "__main__":
    if sys.argv[1] == "plant":
        plant(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2])
