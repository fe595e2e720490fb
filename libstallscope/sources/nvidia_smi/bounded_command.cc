#include "libstallscope/sources/nvidia_smi/bounded_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stallscope {

namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

}  // namespace

CommandResult run_bounded_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                  std::size_t max_output_bytes) {
    CommandResult result;
    if (argv.empty()) {
        result.error = "empty command";
        return result;
    }
    // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    int out_pipe[2] = {-1, -1};
    int exec_pipe[2] = {-1, -1};  // CLOEXEC: EOF means exec worked; 4 bytes means errno of a failed exec
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
        result.error = std::string("pipe: ") + std::strerror(errno);
        close_fd(out_pipe[0]), close_fd(out_pipe[1]), close_fd(exec_pipe[0]), close_fd(exec_pipe[1]);
        return result;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.error = std::string("fork: ") + std::strerror(errno);
        close_fd(out_pipe[0]), close_fd(out_pipe[1]), close_fd(exec_pipe[0]), close_fd(exec_pipe[1]);
        return result;
    }
    if (pid == 0) {
        // Own process group, so a deadline kill also takes whatever the tool forked.
        ::setpgid(0, 0);
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, nullptr);
        const int devnull = ::open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            ::dup2(devnull, STDIN_FILENO);
            ::dup2(devnull, STDERR_FILENO);
        }
        ::dup2(out_pipe[1], STDOUT_FILENO);
        const int report_fd = ::fcntl(exec_pipe[1], F_DUPFD_CLOEXEC, 3);
        // Keep only the exec-error pipe past fd 2: move it to 3 first, then close everything above it.
        if (report_fd >= 0 && report_fd != 3) {
            ::dup3(report_fd, 3, O_CLOEXEC);
        }
#ifdef SYS_close_range
        if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
            for (int fd = 4; fd < 1024; ++fd) ::close(fd);
        ::execvp(args[0], args.data());
        const int err = errno;
        (void)!::write(3, &err, sizeof err);
        ::_exit(127);
    }
    close_fd(out_pipe[1]);
    close_fd(exec_pipe[1]);

    int exec_errno = 0;
    ssize_t n;
    do {
        n = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    } while (n < 0 && errno == EINTR);
    close_fd(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof exec_errno)) {
        result.error = argv[0] + ": " + std::strerror(exec_errno);
        close_fd(out_pipe[0]);
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        return result;
    }
    result.started = true;

    const auto deadline = Clock::now() + timeout;
    char chunk[4096];
    bool eof = false;
    while (!eof) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            result.timed_out = true;
            break;
        }
        pollfd pfd{out_pipe[0], POLLIN, 0};
        const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;  // timeout is handled at the top of the loop
        n = ::read(out_pipe[0], chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            eof = true;
            break;
        }
        if (result.output.size() + static_cast<std::size_t>(n) > max_output_bytes) {
            result.truncated = true;
            break;
        }
        result.output.append(chunk, static_cast<std::size_t>(n));
    }
    close_fd(out_pipe[0]);

    // Reap: after EOF the child is usually done; still bounded by the same deadline.
    int status = 0;
    pid_t waited = 0;
    if (eof) {
        while ((waited = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) ::usleep(1000);
        if (waited == 0) result.timed_out = true;
    }
    if (!eof || waited <= 0) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
        }
    }
    if (waited == pid) {
        if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
    }
    if (result.timed_out) {
        result.error = argv[0] + ": no answer within " + std::to_string(timeout.count()) + " ms (killed)";
    } else if (result.truncated) {
        result.error =
            argv[0] + ": more than " + std::to_string(max_output_bytes) + " bytes of output (killed)";
    } else if (result.term_signal) {
        result.error = argv[0] + ": killed by signal " + std::to_string(result.term_signal);
    } else if (result.exit_status != 0) {
        result.error = argv[0] + ": exit status " + std::to_string(result.exit_status);
    }
    return result;
}

}  // namespace stallscope
