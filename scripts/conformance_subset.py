#!/usr/bin/env python3
"""The inference subset of an end-to-end conformance run.

Reads `ign-conformance run DATA -v` output (a file, or standard input) and
counts the models of ONNX's backend tests that are inference: everything
but training (optimizers, training_mode), string, sequence/optional and
random-output (Bernoulli) cases. Prints the pass rate and what is left,
grouped by the unsupported operator or the failure's first words.

  ./build/bin/ign-conformance run /usr/share/libonnx-testdata/data -v > run.txt
  python3 scripts/conformance_subset.py run.txt
"""
import collections
import re
import sys

TRAINING = re.compile(r"adagrad|adam|momentum|training|gradient")
STRINGS = re.compile(r"strnorm|string|STRING|tfidf|regex|label_encoder")
SEQUENCES = re.compile(r"(?<!reverse)sequence|optional|_opt\b|_opt_|_seq\b|_seq_")
RANDOM = re.compile(r"bernoulli")
NOT_TENSORS = re.compile(r"(?<!Reverse)Sequence|Optional|not a tensor|STRING")


def main():
    try:
        text = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    except OSError as e:
        sys.exit(f"conformance_subset: cannot read {sys.argv[1]}: {e.strerror}")
    rows = []
    for line in text:
        m = re.match(r"(PASS|FAIL|UNSUPPORTED) (\S+?)(?::|$)(.*)", line.strip())
        if m:
            rows.append(m.groups())
    subset = [r for r in rows
              if not any(p.search(r[1]) for p in (TRAINING, STRINGS, SEQUENCES, RANDOM))
              and not NOT_TENSORS.search(r[2])]
    passed = sum(r[0] == "PASS" for r in subset)
    print(f"{len(rows)} models; inference subset {len(subset)}: {passed} pass "
          f"({100.0 * passed / max(len(subset), 1):.1f}%)")
    left = collections.Counter()
    for status, _, why in subset:
        if status != "PASS":
            m = re.search(r"operators \(\d+\): (\w+)", why)
            left[m.group(1) if m else why.strip()[:70]] += 1
    for what, count in left.most_common():
        print(f"{count:4d}  {what}", flush=True)


if __name__ == "__main__":
    main()
