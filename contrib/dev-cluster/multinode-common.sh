# Shared by up-multinode.sh / down-multinode.sh / tests (sourced after common.sh).
NODES=${STALLSCOPE_MULTINODE_NODES:-3}
SUBNET=${STALLSCOPE_MULTINODE_SUBNET:-10.77.0}
HOST_ADDR=$SUBNET.1
# Interface and namespace names carry the port base, so two clusters never share one.
BRIDGE=ssbr$CTLD_PORT
node_names() { seq 1 "$NODES" | sed 's/^/n/'; }
node_addr() { echo "$SUBNET.$((10 + $1))"; }
netns_name() { echo "ss$CTLD_PORT-n$1"; }
veth_name() { echo "ssv$CTLD_PORT-$1"; }
