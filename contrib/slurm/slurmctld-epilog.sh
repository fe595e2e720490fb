#!/bin/bash
# stallscope EpilogSlurmctld: put the stallscope/1 segment into AdminComment after the job ended, for
# jobs whose comment the plugin could not write while they ran (scancel, time limit, node failure:
# `scontrol update` refuses finished jobs, research/spank-design.md §0.5), or for sites that run the
# plugin with comment=none and prefer one controller-side writer.
#
#   slurm.conf:  EpilogSlurmctld=/usr/lib/stallscope/slurmctld-epilog.sh
#
# Runs as SlurmUser on the controller; needs SlurmUser=root (or sudo rights for runuser) because the
# verdict files are read *as the job user* (never as a privileged user: the directory is the user's).
# It needs the job's output directory on a filesystem the controller sees (shared /home or /scratch);
# otherwise it does nothing. Like Princeton's jobstats epilog it uses
# `sacctmgr -i modify job where jobid=N set AdminComment=...` (works after the job ended, for root,
# SlurmUser and Operators) and keeps every foreign segment (e.g. jobstats `JS1:...`) byte for byte,
# replacing only a previous `stallscope/...` segment ("; " separates segments, 1024 characters max).
# Slurm 22.05.8 caveat (verified on the dev cluster): sacctmgr lowercases the whole value it sets
# (`set AdminComment=JS1:AbC` stores `js1:abc`, quoted or not; Comment too). So this script never
# rewrites foreign content that contains upper-case letters (it would corrupt e.g. jobstats' base64),
# and the segment it writes reads `stallscope/1 slow conf=...`: compare labels case-insensitively.
# Never fails the job: every problem is logged to stderr (slurmctld's log) and the script exits 0.
#
# Environment (from slurmctld): SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_WORK_DIR (22.05+), and
# optionally STALLSCOPE_BIN (the stallscope binary, default /usr/bin/stallscope), STALLSCOPE_EPILOG_DELAY
# (seconds to wait so the job-complete record reaches slurmdbd first; default 5, as jobstats does) and
# STALLSCOPE_OUTPUT_BASE (the plugin's output base when it is neither the submit dir nor the work dir,
# e.g. output_dir=/scratch/%u: set it to /scratch/<user>) and STALLSCOPE_EPILOG_LOCK (the lock file that
# keeps reports one at a time on this controller, default /run/stallscope-slurmctld-epilog.lock: set it
# to a file SlurmUser can create when SlurmUser is not root).
#
# Where the verdict is: the plugin's default (output_dir=submit) is <submit dir>/stallscope-<jobid>, but
# slurmctld gives this script only the work dir, which differs for jobs submitted with --chdir. So the
# candidates, first verdict wins: STALLSCOPE_OUTPUT_BASE, the submit dir from the batch job's saved
# environment (StateSaveLocation/hash.<id%10>/job.<id>/environment, SLURM_SUBMIT_DIR), the work dir.
# Every candidate is user-controlled text, which is fine only because it is read as the job user
# (runuser): a path the user chose can only show the user's own files, and the segment is sanitized.
#
# Bounds: the files are the job's, so the report's reader caps what it takes (GPUs, ports, reasons and
# nesting per verdict, each file once whatever its hard links, recordings per directory) and, behind
# that, this script runs it with 2 GiB of address space and 60 s of CPU (prlimit, applied after runuser:
# runuser's PAM session runs pam_limits, which could raise limits set before it), one thread, 60 s of
# wall time, and one report at a time on this controller (flock; a job waits up to 120 s for its turn,
# then gives up and says so): a job array finishing at once cannot run hundreds of them side by side.
set -u
export PATH=/usr/bin:/bin:/usr/sbin:/sbin  # exported: timeout and runuser search it too
say() { echo "stallscope-epilog: job ${SLURM_JOB_ID:-?}: $*" >&2; }
job=${SLURM_JOB_ID:-}
user=${SLURM_JOB_USER:-}
[[ "$job" =~ ^[0-9]+(_[0-9]+)?$ ]] || { say "no valid SLURM_JOB_ID"; exit 0; }
[ -n "$user" ] && id "$user" >/dev/null 2>&1 || { say "unknown job user '$user'"; exit 0; }
# SLURM_SUBMIT_DIR of a batch job, from slurmctld's own copy of its environment (NUL-separated).
submit_dir_of() {
    local ssl env_file
    ssl=$(timeout 10 scontrol show config 2>/dev/null | sed -n 's/^StateSaveLocation *= *//p')
    [[ "$1" =~ ^[0-9]+$ && "$ssl" == /* ]] || return 0
    env_file="$ssl/hash.$(($1 % 10))/job.$1/environment"
    [ -f "$env_file" ] && [ ! -L "$env_file" ] || return 0
    tr '\0' '\n' <"$env_file" | grep -a -m1 -o 'SLURM_SUBMIT_DIR=/.*' | cut -d= -f2- | head -c 4096
}
candidates=()
[ -n "${STALLSCOPE_OUTPUT_BASE:-}" ] && candidates+=("$STALLSCOPE_OUTPUT_BASE")
submit=$(submit_dir_of "$job")
[ -n "$submit" ] && candidates+=("$submit")
[ -n "${SLURM_JOB_WORK_DIR:-}" ] && candidates+=("$SLURM_JOB_WORK_DIR")
[ "${#candidates[@]}" -gt 0 ] || { say "no output base known (submit dir, work dir); nothing to do"; exit 0; }
dirs=()
for base in "${candidates[@]}"; do
    [[ "$base" == /* ]] && dirs+=("${base%/}/stallscope-$job")
done
sleep "${STALLSCOPE_EPILOG_DELAY:-5}"

# Current AdminComment from the accounting DB. -P prints the field verbatim; more than one line means
# the value contains a newline we cannot round-trip safely.
current=$(timeout 10 sacct -n -X -P -j "$job" -o AdminComment 2>/dev/null) || { say "sacct failed"; exit 0; }
[ "$(printf '%s' "$current" | wc -l)" -le 0 ] || { say "AdminComment spans lines; leaving it"; exit 0; }
case "; $current" in *"; stallscope/"*) exit 0 ;; esac  # the plugin already wrote it

# The segment the job's writer would have written: `stallscope report --comment` merges every node's
# verdict in the directory (top=code:subject of the root cause, nodes=, missing=, stragglers=, gpus=,
# dur=), read-only, as the job user, bounded; a node without a verdict is replayed from its timeline.
# --ended: the job is over, so a seconds-old timeline without a verdict is a helper that died (missing=),
# not a step still running.
stallscope=${STALLSCOPE_BIN:-/usr/bin/stallscope}
[ -x "$stallscope" ] || { say "no stallscope binary at $stallscope (STALLSCOPE_BIN)"; exit 0; }
lock=${STALLSCOPE_EPILOG_LOCK:-/run/stallscope-slurmctld-epilog.lock}
{ exec 9>>"$lock"; } 2>/dev/null || { say "cannot open the lock $lock (STALLSCOPE_EPILOG_LOCK)"; exit 0; }
flock -w 120 9 || { say "another job's report held $lock for 120 s; not reading this job's files"; exit 0; }
segment=
for d in "${dirs[@]}"; do  # in order of preference: the first directory with a recording wins
    segment=$(timeout -k 5 60 runuser -u "$user" -- prlimit --as=2147483648 --cpu=60 -- \
        "$stallscope" report --comment --ended --jobs 1 "$d" 2>/dev/null) && [ -n "$segment" ] && break
    segment=
done
exec 9>&-  # the lock covers reading the job's files only
segment=$(printf '%s' "$segment" | head -n 1 | tr -c '[:print:]' '?' | tr ';' ',' | cut -c1-1024)
case "$segment" in "stallscope/1 "?*) ;; *) say "no verdict in ${dirs[*]}"; exit 0 ;; esac

if [[ "$current" =~ [A-Z] ]]; then
    say "AdminComment has mixed-case foreign content that sacctmgr would lowercase; leaving it"
    exit 0
fi
if [ -n "$current" ]; then merged="$current; $segment"; else merged="$segment"; fi
if [ "${#merged}" -gt 1024 ]; then
    room=$((1024 - ${#current} - 2))
    [ "$room" -ge 24 ] || { say "AdminComment full; leaving it"; exit 0; }
    merged="$current; ${segment:0:$room}"
fi
timeout 10 sacctmgr -i modify job where jobid="$job" set AdminComment="$merged" >/dev/null 2>&1 ||
    say "sacctmgr modify job failed"
exit 0
