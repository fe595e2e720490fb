#include "tests/support/run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace stallscope::test {
namespace {

std::vector<std::string> merged_env(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        bool overridden = false;
        for (const auto& x : extra) overridden = overridden || x.substr(0, x.find('=')) == name;
        if (!overridden) env.push_back(entry);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd, int err_fd,
            int extra_fd_3) {
    std::vector<std::string> full_env = merged_env(env);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : full_env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int devnull = ::open("/dev/null", O_RDWR);
        ::dup2(devnull, 0);
        ::dup2(out_fd >= 0 ? out_fd : devnull, 1);
        ::dup2(err_fd >= 0 ? err_fd : devnull, 2);
        if (extra_fd_3 >= 0) ::dup2(extra_fd_3, 3);
        for (int fd = extra_fd_3 >= 0 ? 4 : 3; fd < 1024; ++fd) ::close(fd);
        ::execve(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    return pid;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          double timeout_seconds, int extra_fd_3) {
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe");
    ProcessResult r;
    const double start = now();
    const pid_t pid = spawn(argv, env, out_pipe[1], err_pipe[1], extra_fd_3);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        const double left = start + timeout_seconds - now();
        if (left <= 0) {
            ::kill(pid, SIGKILL);
            break;
        }
        if (::poll(fds, 2, static_cast<int>(left * 1000) + 1) <= 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            } else {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.seconds = now() - start;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    return r;
}

int start_process(const std::vector<std::string>& argv, const std::vector<std::string>& env, int extra_fd_3) {
    return spawn(argv, env, -1, -1, extra_fd_3);
}

int wait_process(int pid, double timeout_seconds) {
    const double deadline = now() + timeout_seconds;
    int status = 0;
    while (now() < deadline) {
        if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        ::usleep(20000);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
}

std::string make_temp_dir(const char* tag) {
    std::string tmpl = std::string("/tmp/stallscope-") + tag + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
    return tmpl;
}

}  // namespace stallscope::test
