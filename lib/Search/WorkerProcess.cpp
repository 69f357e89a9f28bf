//===- WorkerProcess.cpp - run a command in a child with a time limit -----===//

#include "ign/Search/WorkerProcess.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ign::search {

std::string WorkerResult::describe(double timeoutSeconds) const {
  std::string what;
  if (!started)
    what = "could not start the worker";
  else if (timedOut)
    what = "timed out after " + std::to_string(int(timeoutSeconds)) + " s";
  else if (signal)
    what = "killed by signal " + std::to_string(signal) + " (" +
           strsignal(signal) + ")";
  else
    what = "exit code " + std::to_string(exitCode);
  // The last non-empty line of stderr says why, for our own workers.
  std::string e = err;
  while (!e.empty() && (e.back() == '\n' || e.back() == ' '))
    e.pop_back();
  if (size_t nl = e.rfind('\n'); nl != std::string::npos)
    e = e.substr(nl + 1);
  if (!e.empty())
    what += ": " + e.substr(0, 400);
  return what;
}

bool spawnChild(const std::vector<std::string> &argv,
                const SpawnOptions &options, SpawnedChild &child) {
  if (argv.empty())
    return false;
  // [0] read end, [1] write end; -1 where the stream is not a pipe.
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto closeAll = [&] {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
      if (fd >= 0)
        close(fd);
  };
  if ((options.pipeStdin && pipe2(in, O_CLOEXEC) != 0) ||
      pipe2(out, O_CLOEXEC) != 0 ||
      (options.pipeStderr && pipe2(err, O_CLOEXEC) != 0)) {
    closeAll();
    return false;
  }
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    closeAll();
    return false;
  }
  if (pid == 0) {
    // Its own process group, so a timeout kills whatever it started.
    setpgid(0, 0);
    dup2(options.pipeStdin ? in[0] : open("/dev/null", O_RDONLY), 0);
    dup2(out[1], 1);
    if (options.pipeStderr)
      dup2(err[1], 2);
    if (options.searchPath)
      execvp(args[0], args.data());
    else
      execv(args[0], args.data());
    int fd = options.failureOnStdout ? 1 : 2;
    (void)!write(fd, options.failureLine.data(), options.failureLine.size());
    _exit(127);
  }
  for (int *fd : {&in[0], &out[1], &err[1]})
    if (*fd >= 0)
      close(*fd);
  child = {pid, in[1], out[0], err[0]};
  return true;
}

namespace {

struct Child {
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  std::chrono::steady_clock::time_point start;
  WorkerResult result;
  bool done = false;
};

bool spawn(const std::vector<std::string> &argv, Child &c) {
  SpawnedChild child;
  SpawnOptions options;
  options.failureLine = "worker: exec failed\n";
  if (!spawnChild(argv, options, child))
    return false;
  c.pid = child.pid;
  c.outFd = child.stdoutFd;
  c.errFd = child.stderrFd;
  c.start = std::chrono::steady_clock::now();
  c.result.started = true;
  return true;
}

void drain(int &fd, std::string &into, size_t keep) {
  if (fd < 0)
    return;
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, size_t(n));
    if (into.size() > keep)
      into.erase(0, into.size() - keep);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(fd);
    fd = -1;
  }
}

double seconds(const timeval &t) {
  return double(t.tv_sec) + double(t.tv_usec) / 1e6;
}

double cpuOf(const struct rusage &u) {
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void finish(Child &c) {
  int status = 0;
  struct rusage usage {};
  while (wait4(c.pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  c.result.cpuSeconds = cpuOf(usage);
  c.result.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start)
          .count();
  if (WIFEXITED(status))
    c.result.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status) && !c.result.timedOut)
    c.result.signal = WTERMSIG(status);
  c.done = true;
}

} // namespace

std::vector<WorkerResult>
runWorkers(const std::vector<std::vector<std::string>> &commands, int jobs,
           double timeoutSeconds) {
  std::vector<Child> children(commands.size());
  size_t next = 0, running = 0, finished = 0;
  jobs = std::max(1, jobs);
  auto timeout = std::chrono::duration<double>(timeoutSeconds);
  while (finished < commands.size()) {
    while (running < size_t(jobs) && next < commands.size()) {
      Child &c = children[next++];
      if (spawn(commands[next - 1], c))
        ++running;
      else {
        c.done = true;
        ++finished;
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<Child *, bool>> owners;
    for (Child &c : children) {
      if (c.pid < 0 || c.done)
        continue;
      if (c.outFd >= 0) {
        fds.push_back({c.outFd, POLLIN, 0});
        owners.push_back({&c, true});
      }
      if (c.errFd >= 0) {
        fds.push_back({c.errFd, POLLIN, 0});
        owners.push_back({&c, false});
      }
    }
    if (!fds.empty())
      poll(fds.data(), fds.size(), 50);
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents) {
        Child &c = *owners[i].first;
        if (owners[i].second)
          drain(c.outFd, c.result.out, size_t(64) << 20);
        else
          drain(c.errFd, c.result.err, 65536);
      }
    auto now = std::chrono::steady_clock::now();
    for (Child &c : children) {
      if (c.pid < 0 || c.done)
        continue;
      if (now - c.start > timeout && !c.result.timedOut) {
        c.result.timedOut = true;
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
      }
      // Both pipes closed: the child is gone (or closed them); reap it.
      if (c.outFd < 0 && c.errFd < 0) {
        finish(c);
        --running;
        ++finished;
      } else if (c.result.timedOut) {
        for (int *fd : {&c.outFd, &c.errFd})
          if (*fd >= 0) {
            close(*fd);
            *fd = -1;
          }
        finish(c);
        --running;
        ++finished;
      }
    }
    if (fds.empty() && running == 0 && next >= commands.size())
      break;
  }
  std::vector<WorkerResult> results;
  for (Child &c : children)
    results.push_back(std::move(c.result));
  return results;
}

WorkerResult runWorker(const std::vector<std::string> &argv,
                       double timeoutSeconds) {
  return runWorkers({argv}, 1, timeoutSeconds).front();
}

double processCpuSeconds(bool withChildren) {
  struct rusage self {
  }, children{};
  getrusage(RUSAGE_SELF, &self);
  if (withChildren)
    getrusage(RUSAGE_CHILDREN, &children);
  return cpuOf(self) + (withChildren ? cpuOf(children) : 0);
}

std::string selfExecutable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return "";
  return std::string(buf, size_t(n));
}

} // namespace ign::search
