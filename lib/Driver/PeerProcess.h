//===- PeerProcess.h - a baseline runtime in a child process ----*- C++ -*-===//
//
// `ignc report` measures peers (onnxruntime) in the same run as ignc's
// bundles, interleaved round by round: the peer is a child process (a
// script shipped with ignc) answering JSON requests, one line each, so
// that ignc itself never links a peer.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_PEERPROCESS_H
#define IGN_DRIVER_PEERPROCESS_H

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace ign {

class PeerProcess {
public:
  /// Starts `argv` (argv[0] looked up in PATH); null and `error` when it
  /// cannot be started.
  static std::unique_ptr<PeerProcess>
  start(const std::vector<std::string> &argv, std::string &error);
  ~PeerProcess();
  PeerProcess(const PeerProcess &) = delete;
  PeerProcess &operator=(const PeerProcess &) = delete;

  /// Sends one request and waits at most `timeoutSeconds` for its reply.
  /// nullopt and `error` when the peer died, timed out, printed no JSON or
  /// answered {"error": ...}.
  std::optional<nlohmann::json> call(const nlohmann::json &request,
                                     double timeoutSeconds, std::string &error);

private:
  PeerProcess(pid_t pid, int in, int out) : pid_(pid), in_(in), out_(out) {}
  bool readLine(std::string &line, double timeoutSeconds, std::string &error);
  pid_t pid_;
  int in_, out_;
  std::string pending_;
};

} // namespace ign

#endif // IGN_DRIVER_PEERPROCESS_H
