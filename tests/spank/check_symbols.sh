#!/bin/sh
# stallscope.so must export exactly the SPANK surface (version script) and must not depend on any of
# its own C++ symbols at load time (a missing definition only shows up when srun dlopens it, because
# the plugin cannot link with --no-undefined: slurm_error/spank_* come from srun/slurmstepd).
set -eu
so=$1
command -v nm >/dev/null || { echo "skipped: nm not found"; exit 77; }
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
want="plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_job_epilog slurm_spank_task_exit slurm_spank_user_init spank_plugin_version "
if [ "$exported" != "$want" ]; then
    echo "unexpected exports: $exported"
    exit 1
fi
undefined=$(nm -D --undefined-only "$so" | awk '{print $2}' | grep -E '^_ZN10stallscope' || true)
if [ -n "$undefined" ]; then
    echo "undefined stallscope symbols: $undefined"
    exit 1
fi
if nm -D --undefined-only "$so" | awk '{print $2}' | grep -qE '^slurm_(load|update)_job'; then
    echo "plugin must not use libslurm job APIs"
    exit 1
fi
echo "ok: $exported"
