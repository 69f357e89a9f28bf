//===- Tuning.h - the search agent on the host target -----------*- C++ -*-===//

#ifndef IGN_DRIVER_TUNING_H
#define IGN_DRIVER_TUNING_H

#include "HostCompiler.h"
#include "SystolicCompiler.h"
#include "ign/Driver/Driver.h"
#include "ign/Search/Search.h"

#include <optional>

namespace ign {

struct TuningRun {
  std::vector<KernelSummary> kernels; // per task, in launch order
  std::vector<search::SearchTask> tasks;
  search::SearchSummary summary;
  int threads = 1;
};

/// Tunes the kernels `module` (consumed) would compile to, recording every
/// measurement in `db`. nullopt after printing an error.
std::optional<TuningRun>
tuneModel(mlir::ModuleOp module, const host::HostOptions &hostOptions,
          const TuneOptions &tune, search::TuningDatabase &db,
          const std::string &fingerprint, Verbosity verbosity);

/// Tunes the array kernels of `module` (consumed) for the systolic
/// `machine` with the search agent: candidates are built, run on the
/// cycle-level simulator (the measurement: simulated time at the chip's
/// clock) and checked against a reference GEMM in this process.
std::optional<TuningRun>
tuneSystolicModel(mlir::ModuleOp module, const host::HostOptions &hostOptions,
                  const systolic::ArrayConfig &machine, const TuneOptions &tune,
                  search::TuningDatabase &db, const std::string &fingerprint,
                  Verbosity verbosity);

/// The report as JSON (returned) and as a human table (into `table`).
/// `peakGflops` <= 0: the host's measured FMA peak times the threads.
std::string tuningReport(const TuningRun &run, const std::string &modelPath,
                         const std::string &fingerprint, std::string *table,
                         double peakGflops = 0);

} // namespace ign

#endif // IGN_DRIVER_TUNING_H
