#include "spank/flight_recorder_env.h"

#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "spank/nccl_env.h"

namespace stallscope::spank {

FlightRecorderPlan plan_flight_recorder_env(bool enabled, const std::vector<std::string>& job_env,
                                            std::string_view dump_prefix, std::string_view pipe_prefix,
                                            std::string_view pipe_problem) {
    FlightRecorderPlan plan;
    if (!enabled) return plan;
    auto has = [&](std::string_view name) { return find_env(job_env, name, nullptr); };
    // Rule 0: the job chose its own buffer (0: no flight recorder, it costs some jobs 4-9 %). Nothing
    // else either: a dump or pipe prefix without the job's buffer is not ours to arm.
    for (const char* name : {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"}) {
        std::string value;
        if (find_env(job_env, name, &value)) {
            plan.note = std::string("the job sets ") + name + "='" + value.substr(0, 32) +
                        "': flight recorder left as the job set it";
            return plan;
        }
    }
    auto add = [&](std::string_view name, std::string_view value) {
        if (!has(name)) plan.set.emplace_back(std::string(name), std::string(value));
    };
    // Both names: older releases read only TORCH_NCCL_TRACE_BUFFER_SIZE (and arm the pipe only when it
    // is > 0), newer ones TORCH_FR_BUFFER_SIZE first.
    add("TORCH_NCCL_TRACE_BUFFER_SIZE", kFlightRecorderEntries);
    add("TORCH_FR_BUFFER_SIZE", kFlightRecorderEntries);
    // Dump on the watchdog's timeout; also makes the monitor wake every second, so a FIFO request is
    // answered within ~1 s instead of the 480 s heartbeat.
    add("TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
    // A failed dump file is only logged by PyTorch (DebugInfoWriter::write): safe even if the dir is gone.
    if (!dump_prefix.empty() && !has("TORCH_FR_DUMP_TEMP_FILE") && !has("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")) {
        add("TORCH_FR_DUMP_TEMP_FILE", dump_prefix);
        add("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", dump_prefix);
    }
    if (has("TORCH_NCCL_DEBUG_INFO_PIPE_FILE") || has("TORCH_FR_DEBUG_INFO_PIPE_FILE")) return plan;
    if (pipe_prefix.empty()) {
        plan.note = "no flight-recorder pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE not set): " +
                    std::string(pipe_problem.empty() ? "no checked directory" : pipe_problem);
        return plan;
    }
    add("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", pipe_prefix);
    return plan;
}

std::string pipe_dir_problem(const struct stat& st, const struct statvfs& vfs, long fs_type, uid_t uid) {
    if (!S_ISDIR(st.st_mode)) return "not a directory";
    if (st.st_uid != uid) return "owned by uid " + std::to_string(st.st_uid) + ", not the job's";
    if ((st.st_mode & 07777) != 0700) return "mode is not 0700";
    // mkfifo needs an inode; the FIFO itself no blocks, but a full filesystem is no place to start.
    if (vfs.f_favail < 64) return "no free inodes";
    if (vfs.f_bavail == 0) return "no free space";
    switch (static_cast<unsigned long>(fs_type)) {
        case 0x6969:      // NFS
        case 0x0BD00BD0:  // Lustre
        case 0x47504653:  // GPFS
        case 0xFF534D42:  // CIFS
        case 0xFE534D42:  // SMB2
        case 0x19830326:  // BeeGFS
        case 0x00C36400:  // CephFS
        case 0x65735546:  // FUSE
            return "not on a node-local filesystem";
        default:
            return "";
    }
}

std::string prepare_pipe_dir(const std::string& dir, uid_t uid, gid_t gid) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return "cannot create " + dir + ": " + std::strerror(errno);
    // Through one fd from here on: a name swapped for a link between the checks is never followed.
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "cannot open " + dir + ": " + std::strerror(errno);
    struct stat st {};
    std::string problem;
    if (::fstat(fd, &st) != 0) {
        problem = std::string("fstat: ") + std::strerror(errno);
    } else if (st.st_uid != uid && st.st_uid == ::geteuid()) {
        // Just made by us (root): hand it to the job user. One the user already owns is kept as it is.
        if (::fchown(fd, uid, gid) != 0 || ::fchmod(fd, 0700) != 0 || ::fstat(fd, &st) != 0)
            problem = std::string("cannot give it to the job user: ") + std::strerror(errno);
    }
    struct statvfs vfs {};
    struct statfs fs {};
    if (problem.empty() && (::fstatvfs(fd, &vfs) != 0 || ::fstatfs(fd, &fs) != 0))
        problem = std::string("statfs: ") + std::strerror(errno);
    if (problem.empty()) problem = pipe_dir_problem(st, vfs, static_cast<long>(fs.f_type), uid);
    ::close(fd);
    return problem.empty() ? "" : dir + ": " + problem;
}

}  // namespace stallscope::spank
