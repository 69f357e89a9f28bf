"""Checks of report.test: what an `ignc report` JSON must hold."""
import json
import sys


def check_report(path, bundle):
    r = json.load(open(path))
    assert r["format"] == "ignc-report", r.keys()
    e = r["end_to_end"]
    for who in ("bundle", "default", "onnxruntime"):
        for kind in ("warm", "cold"):
            s = e[who][kind]
            assert s["runs"] > 0 and 0 < s["p10_ms"] <= s["median_ms"] <= s["p90_ms"], (who, s)
    for key in ("speedup_vs_default", "speedup_vs_onnxruntime"):
        i = e[key]
        assert 0 < i["lo"] <= i["value"] * 1.0001 and i["value"] <= i["hi"] * 1.0001, (key, i)
    m = r["measurement"]
    assert len(set(m["input_sets"])) == 3 and m["outputs_poisoned"], m
    assert m["rounds"] == 2 and m["warm_runs_per_round"] == 4 and m["threads"] > 0, m
    assert m["affinity"], m
    env = r["environment"]
    assert env["cpu_model"] and env["cpu_features"] and env["llvm_version"], env
    assert len(r["bundle"]["sha256"]) == 64 and len(r["model"]["sha256"]) == 64
    assert r["bundle"]["weights_sha256"], "no weight digests"
    assert r["machine"]["peak_gflops"] > 0 and r["machine"]["bandwidth_gbs"] > 0
    tuned = [k for k in r["kernels"] if k["schedule"]["kind"] == "tuned"]
    assert tuned, "no tuned kernel"
    for k in r["kernels"]:
        assert k["tuned"]["runs"] == 8, k
        if k["flops"]:
            assert k["roofline"]["gflops"] > 0, k
    t = r["tuning"]
    assert t["trials"] == 16 and t["by_status"]["ok"] == 16, t
    assert t["worker_cpu_seconds"] > 0 and t["cpu_seconds"] > 0, t
    assert len(t["runs"]) == 1 and t["runs"][0]["new_trials"] == 16, t
    curves = [k["tuning"]["best_curve_ms"] for k in r["kernels"] if "tuning" in k]
    assert sum(len(c) for c in curves) == 16, curves
    for c in curves:  # best so far never gets worse
        assert all(b <= a for a, b in zip(c, c[1:]) if a > 0), c
    validated = [k for k in r["kernels"] if "validation" in k.get("tuning", {})]
    assert all(k["tuning"]["validation"]["rel_l2"] < 1e-4 for k in validated)
    for s in r["correctness"]:
        for against in ("reference", "onnxruntime"):
            assert all(o["pass"] and o["rel_l2"] < 1e-4 for o in s[against]), s
    ids = [c["id"] for c in r["claims"]]
    for needed in ("latency", "speedup/default", "speedup/onnxruntime",
                   "correct/reference", "correct/onnxruntime"):
        assert needed in ids, ids
    assert any(bundle in c for c in r["reproduce"]), r["reproduce"]


if __name__ == "__main__":
    if sys.argv[1] == "check-report":
        check_report(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "task-of":
        r = json.load(open(sys.argv[2]))
        print(next(k["task"] for k in r["kernels"] if k["name"] == sys.argv[3]))
