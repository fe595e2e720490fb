#!/usr/bin/env python3
"""Checks stallscope output files from a real Slurm job (used by run_cluster_tests.sh).

check_json.py FILE... [--job ID] [--step STEP] [--gpus N]
Every file must parse: *.json as one document, *.jsonl line by line (a torn last line is tolerated,
as the timeline contract allows). With --job/--step/--gpus, the Slurm context must appear in some
document: a key job_id / step_id equal to the value, and a key "gpus" whose value is a list of N
entries or a comma-separated string of N entries (the step's GPUs as the scheduler sees them).
"""
import json
import sys


def walk(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def gpu_count(value):
    if isinstance(value, list):
        return len(value)
    if isinstance(value, str):
        return len([x for x in value.split(",") if x.strip()])
    return None


def main(argv):
    files, want = [], {}
    i = 0
    while i < len(argv):
        if argv[i] in ("--job", "--step", "--gpus"):
            want[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            files.append(argv[i])
            i += 1
    docs = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            print(f"{path}: {e.strerror}")
            return 1
        if path.endswith(".jsonl"):
            lines = text.splitlines()
            for n, line in enumerate(lines):
                try:
                    docs.append(json.loads(line))
                except ValueError as e:
                    if n == len(lines) - 1 and not text.endswith("\n"):
                        continue  # torn last line
                    print(f"{path}:{n + 1}: not JSON: {e}")
                    return 1
        else:
            try:
                docs.append(json.loads(text))
            except ValueError as e:
                print(f"{path}: not JSON: {e}")
                return 1
    pairs = [kv for d in docs for kv in walk(d)]
    if "job" in want and not any(k == "job_id" and str(v) == want["job"] for k, v in pairs):
        print(f"no job_id == {want['job']} in {files}")
        return 1
    if "step" in want and not any(k == "step_id" and str(v) == want["step"] for k, v in pairs):
        print(f"no step_id == {want['step']} in {files}")
        return 1
    if "gpus" in want:
        counts = [gpu_count(v) for k, v in pairs if k == "gpus"]
        if int(want["gpus"]) not in counts:
            print(f"no 'gpus' with {want['gpus']} entries in {files} (saw counts {counts})")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
