//===- WorkerProcess.h - run a command in a child with a time limit -*- C++
//-*-//
//
// Candidates are built and measured in child processes, so that a schedule
// that crashes the compiler or the kernel, or hangs, costs one record and
// never the tuning run.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_WORKERPROCESS_H
#define IGN_SEARCH_WORKERPROCESS_H

#include <string>
#include <vector>

namespace ign::search {

struct WorkerResult {
  bool started = false;  // false: the command could not be started
  bool timedOut = false; // killed at the time limit
  int exitCode = -1;     // when it exited
  int signal = 0;        // when a signal ended it (SIGSEGV, ...)
  std::string out, err;  // captured stdout and stderr (err: last 64 KiB)
  /// What it cost: CPU seconds (user + system, of the child and what it
  /// waited for) and wall seconds from start to exit.
  double cpuSeconds = 0, wallSeconds = 0;

  bool ok() const { return started && !timedOut && !signal && exitCode == 0; }
  /// "exit code 3", "killed by signal 11 (Segmentation fault)", "timed out
  /// after 10 s", with the last line of stderr.
  std::string describe(double timeoutSeconds) const;
};

/// Runs argv[0] (a path) with `argv`, stdin closed, and waits at most
/// `timeoutSeconds` (then SIGKILLs it and its process group).
WorkerResult runWorker(const std::vector<std::string> &argv,
                       double timeoutSeconds);

/// Runs several commands at once, at most `jobs` at a time; results in the
/// order of `commands`.
std::vector<WorkerResult>
runWorkers(const std::vector<std::vector<std::string>> &commands, int jobs,
           double timeoutSeconds);

/// How spawnChild connects a child's streams.
struct SpawnOptions {
  bool pipeStdin = false;  // else /dev/null
  bool pipeStderr = true;  // else inherited
  bool searchPath = false; // argv[0] looked up in PATH
  /// Written when the program cannot be executed (then exit code 127),
  /// to stdout when `failureOnStdout`, else to stderr.
  std::string failureLine = "exec failed\n";
  bool failureOnStdout = false;
};
/// A started child, in its own process group: its pid and the parent's
/// ends of its pipes (-1 where a stream is not piped).
struct SpawnedChild {
  int pid = -1;
  int stdinFd = -1, stdoutFd = -1, stderrFd = -1;
};
/// Starts `argv` with its stdout piped (and stdin, stderr as asked); false
/// when no pipe or process could be made.
bool spawnChild(const std::vector<std::string> &argv,
                const SpawnOptions &options, SpawnedChild &child);

/// CPU seconds (user + system) of this process so far, and with
/// `withChildren` of the children it has waited for.
double processCpuSeconds(bool withChildren);

/// The path of the running executable (/proc/self/exe).
std::string selfExecutable();

} // namespace ign::search

#endif // IGN_SEARCH_WORKERPROCESS_H
