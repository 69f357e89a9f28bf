//===- ScaleSimCommand.h - ignc sim: SCALE-Sim topologies -------*- C++ -*-===//
//
// `ignc sim`: the layers of a SCALE-Sim topology on the systolic simulator,
// with SCALE-Sim's reports written (docs/systolic.md). A subcommand the
// systolic target adds to ignc.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_SYSTOLIC_SCALESIMCOMMAND_H
#define IGN_TARGETS_SYSTOLIC_SCALESIMCOMMAND_H

#include <string>

namespace ign::systolic {

struct SimCommand {
  std::string config;   // a SCALE-Sim .cfg
  std::string chip;     // or a preset (gemmini-16, tpu-v1, scale-32)
  std::string topology; // a SCALE-Sim topology .csv
  bool gemm = false;    // the topology is in GEMM form (name, M, N, K)
  std::string outputDir;
  std::string mapping = "scalesim"; // or "tuned"
  std::string dataflow;             // override the config's dataflow
  bool json = false;                // print REPORT.json to stdout
};

int runSimCommand(const SimCommand &command);

} // namespace ign::systolic

#endif
