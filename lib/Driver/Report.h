//===- Report.h - `ignc report`: the pieces report and verify share -*- C++
//-*-===//
//
// A report measures a bundle against the same model compiled with default
// schedules and with the reference lowering, and against onnxruntime, in
// one interleaved run (ReportMeasure.h); `--verify` repeats that
// measurement and checks the report's claims against it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_REPORT_H
#define IGN_DRIVER_REPORT_H

#include "PeerProcess.h"
#include "ReportMeasure.h"
#include "ign/Driver/Driver.h"
#include "ign/Target/TargetRegistry.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ign::search {
class TuningDatabase;
}

namespace ign::report {

/// One measurement of a bundle: contenders, inputs, peer and samples.
struct Measurement {
  std::string workDir;
  InputSets inputs;
  Contender tuned, defaults, reference;
  std::unique_ptr<PeerProcess> peer;
  std::string peerVersion, peerUnavailable; // one of them is set
  MeasureOptions options;
  std::vector<Samples> samples; // tuned, defaults, then the peer's
  /// The target's bound on float outputs' relative L2 (0: the dtype's).
  double modelRelL2 = 0;
  ~Measurement();
};

/// The manifest's compile.args (empty for bundles written before them).
std::vector<std::string> recordedArgs(const nlohmann::json &manifest);

/// The target, chip and options a bundle was compiled for.
struct BundleTarget {
  target::Selection selection;
  target::TargetConfig config;
};
std::optional<BundleTarget> bundleTarget(const nlohmann::json &manifest);

/// The model the bundle was compiled from: --model, else its manifest's
/// source beside the bundle or in the working directory; "" and `error`
/// when none is found or its digest differs from the manifest's.
std::string findModel(const ReportOptions &options,
                      const nlohmann::json &manifest, std::string &error);

/// Compiles the default and reference variants, opens every contender,
/// starts the peer and measures. False and `error` on failure (the peer's
/// failure is not one: peerUnavailable says why it is missing).
bool measure(const ReportOptions &options, const std::string &modelPath,
             Measurement &m, std::string &error);

/// Per input set (the first `sets`) and output: the tuned bundle's error
/// against the reference lowering's outputs and against the peer's.
nlohmann::json checkCorrectness(Measurement &m, bool withPeer, int sets);

/// This machine: CPU, features, cores, OS, ignc and LLVM versions.
nlohmann::json environment();
/// environment() and the fingerprint of the bundle's target and chip (a
/// GPU's device, for instance).
nlohmann::json environmentFor(const nlohmann::json &manifest);
/// Which fields of two environments differ (those that change speed).
std::vector<std::string> environmentDifferences(const nlohmann::json &a,
                                                const nlohmann::json &b);

/// Per-weight SHA-256 digests of a bundle file (by weight name).
nlohmann::json weightDigests(const std::string &bundlePath,
                             const nlohmann::json &manifest);

/// What the kernels' roofline is measured against.
struct Machine {
  double peakGflops = 0, bandwidthGBs = 0;
};
/// Per kernel of the bundle: its times, speedup over its default-schedule
/// twin, roofline and (with a database) its tuning records.
nlohmann::json kernelsSection(Measurement &m, const Machine &machine,
                              search::TuningDatabase *db);
/// End-to-end distributions and speedups of a measurement.
nlohmann::json endToEnd(const Measurement &m);

/// The report as a self-contained HTML page (the JSON embedded).
std::string renderHtml(const nlohmann::json &report);
/// The report JSON inside a report file (JSON, or HTML from renderHtml).
std::optional<nlohmann::json> readReportFile(const std::string &path,
                                             std::string &error);

/// `ignc report --verify`.
int verifyReport(const ReportOptions &options);

} // namespace ign::report

#endif // IGN_DRIVER_REPORT_H
