#include "helper/sacct_command.h"

#include "helper/cli_args.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>

extern char** environ;

namespace stallscope::cli {
namespace {

std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    const auto nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

std::string unguessable_delimiter() {
    unsigned char bytes[8] = {};
    if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
        for (auto& b : bytes) b = static_cast<unsigned char>(::random());
    std::string out = "#~";
    for (unsigned char b : bytes) {
        out += "0123456789abcdef"[b >> 4];
        out += "0123456789abcdef"[b & 15];
    }
    return out + "~#";
}

SacctResult run_sacct(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      std::size_t max_bytes) {
    SacctResult result;
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return {false, "", std::string("pipe: ") + std::strerror(errno)};
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]), ::close(out_pipe[1]);
        return {false, "", std::string("pipe: ") + std::strerror(errno)};
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]), ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]), ::close(err_pipe[0]);
        return {false, "", argv[0] + ": " + std::strerror(rc)};
    }
    std::string err;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool timed_out = false, truncated = false;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[65536];
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
                continue;
            }
            std::string& sink = i == 0 ? result.out : err;
            if (sink.size() + static_cast<std::size_t>(n) > (i == 0 ? max_bytes : 65536u)) {
                truncated = i == 0;
                if (truncated) break;
                continue;
            }
            sink.append(buf, static_cast<std::size_t>(n));
        }
        if (truncated) break;
    }
    for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    if (timed_out || truncated) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        result.error = argv[0] + " did not answer within " + std::to_string(timeout.count() / 1000) + " s";
    } else if (truncated) {
        result.error = argv[0] + " printed more than " + std::to_string(max_bytes >> 20) + " MiB";
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        result.ok = true;
    } else {
        const std::string said = last_line(err);
        result.error = !said.empty() ? said
                       : WIFEXITED(status)
                           ? argv[0] + " exited with status " + std::to_string(WEXITSTATUS(status))
                           : argv[0] + " killed by signal " + std::to_string(WTERMSIG(status));
    }
    return result;
}

void check_sacct_since(const std::string& since) {
    static const std::regex forms(
        R"(\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?|\d{2}/\d{2}(/\d{2})?|\d{4}(\d{2})?|\d{2}:\d{2}(:\d{2})?([AaPp][Mm])?)"
        R"(|now([+-]\d+(seconds|minutes|hours|days|weeks)?)?|today|midnight|noon|elevenses|fika|teatime)");
    if (!std::regex_match(since, forms))
        throw UsageError("--since '" + since +
                         "' is not a sacct time (YYYY-MM-DD[THH:MM[:SS]], HH:MM, now-2days, today, ...)");
}

}  // namespace stallscope::cli
