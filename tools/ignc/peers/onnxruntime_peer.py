#!/usr/bin/env python3
"""onnxruntime as a baseline for `ignc report` (never a dependency of ignc).

ignc starts this script and talks to it in JSON lines on stdin/stdout, so
that onnxruntime's runs interleave with ignc's in one measurement:

  {"cmd": "load", "model": PATH, "threads": T, "sets": [{NAME: NPY}, ...]}
      -> {"ok": true, "version": "1.x", "inputs": [...]}
  {"cmd": "run", "n": N, "flush_mb": F}
      -> {"ms": [...]}   N runs rotating over the input sets; with F > 0
                         a buffer of F MiB is written before each (cold)
  {"cmd": "outputs", "set": I, "dir": D}
      -> {"outputs": [{"name": ..., "path": D/I_k.npy}, ...]}
  {"cmd": "quit"}

Any failure answers {"error": "..."}.
"""
import json
import os
import sys
import time


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    try:
        import numpy as np
        import onnxruntime as ort
    except Exception as e:  # noqa: BLE001 - any import failure is the answer
        reply({"error": "onnxruntime is not installed for %s (%s)" % (sys.executable, e)})
        return
    session, sets, turn = None, [], 0
    for line in sys.stdin:
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "load":
                so = ort.SessionOptions()
                so.intra_op_num_threads = int(req["threads"])
                so.inter_op_num_threads = 1
                so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                session = ort.InferenceSession(req["model"], so,
                                               providers=["CPUExecutionProvider"])
                names = [i.name for i in session.get_inputs()]
                sets = [{n: np.load(p) for n, p in s.items()} for s in req["sets"]]
                missing = [n for n in names if sets and n not in sets[0]]
                if missing:
                    reply({"error": "the model's input(s) %s are not inputs of the bundle "
                                    "(frozen at compile time?)" % ", ".join(missing)})
                    session = None
                    continue
                sets = [{n: s[n] for n in names} for s in sets]
                reply({"ok": True, "version": ort.__version__, "inputs": names})
            elif cmd == "run":
                flush = None
                if req.get("flush_mb", 0) > 0:
                    flush = np.zeros(int(req["flush_mb"]) << 18, dtype=np.float32)
                ms = []
                for _ in range(int(req["n"])):
                    if flush is not None:
                        flush += 1.0
                    feeds = sets[turn % len(sets)]
                    turn += 1
                    start = time.perf_counter()
                    session.run(None, feeds)
                    ms.append((time.perf_counter() - start) * 1e3)
                reply({"ms": ms})
            elif cmd == "outputs":
                index = int(req["set"])
                values = session.run(None, sets[index])
                out = []
                for k, (meta, value) in enumerate(zip(session.get_outputs(), values)):
                    path = os.path.join(req["dir"], "%d_%d.npy" % (index, k))
                    np.save(path, np.ascontiguousarray(value))
                    out.append({"name": meta.name, "path": path})
                reply({"outputs": out})
            elif cmd == "quit":
                return
            else:
                reply({"error": "unknown command %r" % cmd})
        except Exception as e:  # noqa: BLE001 - reported to ignc, which goes on
            reply({"error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
