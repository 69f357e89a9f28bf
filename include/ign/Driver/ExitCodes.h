//===- ExitCodes.h - ignc's process exit codes ------------------*- C++ -*-===//
//
// Documented in docs/exit-codes.md; targets' subcommands use them too.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_EXITCODES_H
#define IGN_DRIVER_EXITCODES_H

namespace ign {

/// Process exit codes, documented in docs/exit-codes.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,    // bad command line
  kExitImport = 2,   // the model cannot be read or imported
  kExitTarget = 3,   // the requested target is unknown or not built
  kExitOutput = 4,   // an output file cannot be written
  kExitLowering = 5, // an op of the model cannot be compiled yet
  kExitRuntime = 6,  // a bundle is invalid, refused, or fails to run
  kExitClaims = 7,   // ignc report --verify: a claim does not hold
};

} // namespace ign

#endif // IGN_DRIVER_EXITCODES_H
