# Source me: `. contrib/dev-cluster/env.sh` points Slurm commands at the private dev cluster.
export SLURM_CONF="${STALLSCOPE_CLUSTER_DIR:-/tmp/stallscope-cluster}/etc/slurm.conf"
