//===- Tuning.h - the search agent on the selected target -------*- C++ -*-===//

#ifndef IGN_DRIVER_TUNING_H
#define IGN_DRIVER_TUNING_H

#include "ign/Driver/Driver.h"
#include "ign/Search/Search.h"
#include "ign/Target/TargetRegistry.h"

#include <optional>

namespace ign {

struct TuningRun {
  std::vector<KernelSummary> kernels; // per task, in launch order
  std::vector<search::SearchTask> tasks;
  search::SearchSummary summary;
  int threads = 1;
  std::string fingerprint;
  double peakGflops = 0; // of the threads measurements used
  double cpuSeconds = 0; // of ignc and its workers while searching
  /// The latencies are the target's analytical model's predictions.
  bool predicted = false;
};

/// Tunes the kernels of `module` (consumed) that the selected target runs,
/// with its space, features and runner, recording every measurement in
/// `db`. nullopt after printing an error.
std::optional<TuningRun>
tuneModel(mlir::ModuleOp module, const target::Selection &selection,
          const target::TargetConfig &config, const TuneOptions &tune,
          search::TuningDatabase &db, Verbosity verbosity);

/// The report as JSON (returned) and as a human table (into `table`).
std::string tuningReport(const TuningRun &run, const std::string &modelPath,
                         std::string *table);

} // namespace ign

#endif // IGN_DRIVER_TUNING_H
