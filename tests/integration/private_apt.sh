# shellcheck shell=bash
# Sourced by slurm_headers_test.sh and slurm_newest_cluster.sh: apt-get on one Debian suite's index in a
# private state, so a package of another release can be downloaded without reading or touching the host's
# sources, preferences, lists or cache (nothing is installed).
# private_apt DIR SUITE MIRROR: makes DIR's state and sets the array apt_opts for `apt-get "${apt_opts[@]}"`.
# Check-Valid-Until off, as in slurm_root.sh: the mirror reachable from CI machines can be a frozen
# snapshot whose sid Release file has expired; the packages are still signed and verified.
private_apt() {
    local dir=$1 suite=$2 mirror=$3
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$dir/sources.list"
    apt_opts=(-q -o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts=/nonexistent
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Acquire::Languages=none
        -o Acquire::Check-Valid-Until=false)
}
