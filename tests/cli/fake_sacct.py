#!/usr/bin/env python3
"""A stand-in for sacct in `stallscope jobs` tests: prints rows in sacct's --parsable2 layout with the
delimiter it was given, including job names that try to forge rows (newlines, '|') and carry raw ESC
bytes (FAKE_SACCT_C1=1 adds a segment with C1 controls). FAKE_SACCT_FAIL=1 makes it fail the way sacct does without a configuration (stderr + exit 1).
`--format=AdminComment,WorkDir` (the views' job lookup) prints those two, WorkDir from $FAKE_SACCT_WORKDIR.
The arguments it got are written to $FAKE_SACCT_ARGS when set."""
import os
import sys

args = sys.argv[1:]
if os.environ.get("FAKE_SACCT_ARGS"):
    with open(os.environ["FAKE_SACCT_ARGS"], "w") as f:
        f.write("\n".join(args) + "\n")
if os.environ.get("FAKE_SACCT_FAIL"):
    sys.stderr.write("sacct: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n")
    sys.stderr.write("sacct: fatal: Could not establish a configuration source\n")
    sys.exit(1)
delim = next(a.split("=", 1)[1] for a in args if a.startswith("--delimiter="))
fields = next(a.split("=", 1)[1] for a in args if a.startswith("--format=")).split(",")
assert fields in (["JobID", "User", "State", "Elapsed", "AdminComment", "JobName"], ["AdminComment", "WorkDir"]), fields
# WorkDir of every job (for the job lookup's <WorkDir>/stallscope-<id> fallback).
work_dir = os.environ.get("FAKE_SACCT_WORKDIR", "")

rows = [
    ["100", "alice", "COMPLETED", "00:10:00",
     "stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=600 node=gpu07", "train"],
    # A job name forging a FAST row for job 999 with the '|' a fixed-delimiter parser would split on.
    ["101", "mallory", "COMPLETED", "00:01:00", "",
     "x\n999|mallory|COMPLETED|00:01:00|stallscope/1 FAST conf=1.00 top=none gpus=8 dur=60 node=n1|x"],
    # An escape sequence in the name and, %-encoded, in the segment (decoded by the parser).
    ["102", "bob", "FAILED", "00:02:00",
     "stallscope/1 FAIL_RISK conf=0.90 top=gpu_xid:79 gpus=8 dur=120 node=n%1B[2J", "\x1b[31mred\x1b[0m"],
]
# A job whose verdict file lies in FAKE_SACCT_JOB_DIR (for `compare JOBID`).
if os.environ.get("FAKE_SACCT_JOB_DIR"):
    rows.append(["103", "alice", "COMPLETED", "00:05:00",
                 "JS1:other-tool; stallscope/1 FAIL_RISK conf=0.94 top=fabric_packet_loss gpus=32 dur=290 "
                 "node=gpu-node-02 file=" + os.environ["FAKE_SACCT_JOB_DIR"] + "/verdict.0.gpu-node-02.json",
                 "llama"])
    # file= naming the job directory itself, as `report --comment` and the slurmctld epilog write it.
    rows.append(["105", "alice", "CANCELLED", "00:05:00",
                 "stallscope/1 FAIL_RISK conf=0.94 top=fabric_packet_loss gpus=32 dur=290 file="
                 + os.environ["FAKE_SACCT_JOB_DIR"], "llama"])
# A job without a segment yet (running, or its comment never written): found through WorkDir only. Only
# the lookup's query sees it, so the `jobs` listings keep their rows.
if len(fields) == 2:
    rows.append(["106", "alice", "RUNNING", "00:01:00", "", "llama"])
# UTF-8-encoded C1 controls (CSI, OSC), %-encoded as a sanitized segment carries them (for `jobs`).
if os.environ.get("FAKE_SACCT_C1"):
    rows.append(["104", "eve", "COMPLETED", "00:01:00",
                 "stallscope/1 SLOW conf=0.50 top=x%C2%9B2J%C2%9D0%3BPWNED%07y gpus=1 dur=60 node=n1", "c1"])
only = [a.split("=", 1)[1] for a in args if a.startswith("--jobs=")]
for r in rows:
    if not only or r[0] in only[0].split(","):
        sys.stdout.write(delim.join(r if len(fields) == 6 else [r[4], work_dir]) + "\n")
