// Slurm's compressed node lists (sacct NodeList, scontrol show hostnames): "gpu[001-064,100],login1",
// several bracket groups in one name ("r[1-2]n[01-04]": every combination, as Slurm's hostlist does),
// zero padding kept from the range's first number ("[08-10]" -> 08 09 10), a suffix after the bracket.
// Written by hand: the one library that does this is libslurm's slurm_hostlist_*, and the CLI must not
// depend on one Slurm release's ABI for a string function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope::cli {

// Appends the names of `list` to `out` in Slurm's order. False with `error` set (and `out` unchanged)
// for a list that is not Slurm's syntax or would expand past `max_names` (a "n[0-99999999]" typo must
// not allocate gigabytes). "" and sacct's "None assigned" (a job that never started) expand to nothing.
bool expand_node_list(std::string_view list, std::vector<std::string>& out, std::string& error,
                      std::size_t max_names = 1u << 20);

}  // namespace stallscope::cli
