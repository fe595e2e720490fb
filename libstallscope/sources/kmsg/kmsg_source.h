// Xid events from the kernel log: <dev>/kmsg (a character device: one record per read, started at the
// end so only Xids during the run count) or, in fixture mode, a regular file read from where the last
// sample stopped. Runs after the GPU sources so each Xid can be mapped to a GPU by PCI bus id.
#pragma once

#include <memory>
#include <string>

#include "libstallscope/sources/source.h"

namespace stallscope {

// Reads an fd opened elsewhere (e.g. /dev/kmsg opened by a privileged parent, which needs CAP_SYSLOG
// under dmesg_restrict=1, and handed to the unprivileged helper). The source owns and closes `fd`; it
// reads from the fd's current position, so the opener decides where to start (lseek SEEK_END right after
// opening). `label` names the log in warnings.
std::unique_ptr<Source> make_kmsg_source_from_fd(int fd, std::string label);

}  // namespace stallscope
