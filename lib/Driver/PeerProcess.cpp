//===- PeerProcess.cpp - a baseline runtime in a child process ------------===//

#include "PeerProcess.h"
#include "ign/Search/WorkerProcess.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ign {

std::unique_ptr<PeerProcess>
PeerProcess::start(const std::vector<std::string> &argv, std::string &error) {
  search::SpawnOptions options;
  options.pipeStdin = true;
  options.pipeStderr = false; // the peer's warnings reach the user
  options.searchPath = true;
  options.failureLine = "{\"error\": \"cannot execute the peer\"}\n";
  options.failureOnStdout = true;
  search::SpawnedChild child;
  if (!search::spawnChild(argv, options, child)) {
    error = "cannot start the peer process";
    return nullptr;
  }
  signal(SIGPIPE, SIG_IGN); // a dead peer is an error reply, not our end
  return std::unique_ptr<PeerProcess>(
      new PeerProcess(child.pid, child.stdinFd, child.stdoutFd));
}

PeerProcess::~PeerProcess() {
  std::string request = "{\"cmd\": \"quit\"}\n";
  (void)!write(in_, request.data(), request.size());
  close(in_);
  close(out_);
  for (int waited = 0; waited < 50; ++waited) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_)
      return;
    usleep(100000);
  }
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

bool PeerProcess::readLine(std::string &line, double timeoutSeconds,
                           std::string &error) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeoutSeconds);
  while (true) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      error = "no answer within " + std::to_string(int(timeoutSeconds)) + " s";
      return false;
    }
    pollfd fd{out_, POLLIN, 0};
    if (poll(&fd, 1, int(std::min<long long>(left, 1000))) <= 0)
      continue;
    char buf[65536];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    error = "the peer process exited";
    return false;
  }
}

std::optional<nlohmann::json> PeerProcess::call(const nlohmann::json &request,
                                                double timeoutSeconds,
                                                std::string &error) {
  std::string text = request.dump() + "\n";
  bool sent = write(in_, text.data(), text.size()) == ssize_t(text.size());
  // A peer gone before the request still said why on its way out (a
  // program that could not be executed): read that first.
  std::string line;
  if (!readLine(line, sent ? timeoutSeconds : 5, error)) {
    if (!sent)
      error = "the peer process is gone";
    return std::nullopt;
  }
  nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) {
    error = "the peer answered '" + line.substr(0, 200) + "'";
    return std::nullopt;
  }
  if (reply.contains("error")) {
    error = reply["error"].is_string() ? reply["error"].get<std::string>()
                                       : reply["error"].dump();
    return std::nullopt;
  }
  return reply;
}

} // namespace ign
