//===- Driver.h - what the ignc command does, as a library ------*- C++ -*-===//
//
// The CLI in tools/ignc only parses flags into DriverOptions and calls here.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_DRIVER_H
#define IGN_DRIVER_DRIVER_H

#include "ign/Import/OnnxImporter.h"

#include <string>
#include <vector>

namespace ign {

/// Process exit codes, documented in docs/exit-codes.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,        // bad command line
  kExitImport = 2,       // the model cannot be read or imported
  kExitTarget = 3,       // the requested target is unknown or not built
  kExitOutput = 4,       // an output file cannot be written
  kExitInternal = 70,    // a bug in ignc
};

enum class Verbosity { Quiet, Normal, Verbose };

struct DriverOptions {
  std::string modelPath;
  std::string target = "host";
  std::string outputPath;
  std::string emit; // "" (bundle) or "ign"
  bool printWeights = false;
  Verbosity verbosity = Verbosity::Normal;
  ImportOptions import;
};

/// A compilation target known to ignc and whether this build can use it.
struct TargetInfo {
  const char *name;
  const char *description;
  bool available;
};
const std::vector<TargetInfo> &knownTargets();

/// Runs one compilation; diagnostics go to stderr in ignc's format.
int runCompile(const DriverOptions &options);

/// Prints the target list (`ignc targets`).
int printTargets();

} // namespace ign

#endif // IGN_DRIVER_DRIVER_H
