//===- ScaleSim.h - SCALE-Sim-compatible layer simulation -------*- C++ -*-===//
//
// Reads SCALE-Sim's topology files, runs each layer's GEMM through the
// simulator with SCALE-Sim's fixed mapping for the configured dataflow, and
// writes SCALE-Sim's COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv. The
// version matched is SCALE-Sim 3.0.0 (docs/systolic.md).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_SCALESIM_H
#define IGN_TARGETS_SYSTOLIC_SCALESIM_H

#include "GemmMapping.h"
#include "Result.h"
#include "Simulator.h"

#include <string>
#include <vector>

namespace ign::systolic {

struct TopologyLayer {
  std::string name;
  int64_t ifmapH = 0, ifmapW = 0, filterH = 0, filterW = 0, channels = 0,
          filters = 0, strideH = 1, strideW = 1;
  bool gemmForm = false; // from a GEMM topology (name, M, N, K)
  /// SCALE-Sim's output size: ceil((ifmap - filter + stride) / stride).
  int64_t ofmapH() const;
  int64_t ofmapW() const;
  /// The layer's GEMM: M output pixels, K window, N filters.
  GemmShape gemm() const;
  int64_t macs() const;
};

/// Conv form: "name, ifmap h, ifmap w, filter h, filter w, channels,
/// filters, stride," (layers named with "DP" split per channel, as SCALE-Sim
/// does). GEMM form (\p gemm): "name, M, N, K,".
Result<std::vector<TopologyLayer>> parseTopology(const std::string &path,
                                                 bool gemm);

struct LayerResult {
  TopologyLayer layer;
  Report report;
  FoldStats folds;
  /// SCALE-Sim's columns.
  int64_t totalCycles = 0;             // compute span, cycles numbered from 0
  int64_t totalCyclesInclPrefetch = 0; // first DMA to last store
  int64_t stallCycles = 0;
  double overallUtil = 0, mappingEfficiency = 0, computeUtil = 0;
  double ifmapSramBw = 0, filterSramBw = 0, ofmapSramBw = 0;
  double ifmapDramBw = 0, filterDramBw = 0, ofmapDramBw = 0;
};

/// The layer's GEMM buffers on \p machine: A as the ifmap of an implicit
/// im2col for a convolution whose geometry fits MVIN_IM2COL, else dense.
GemmBuffers layerBuffers(const ArrayConfig &machine,
                         const TopologyLayer &layer);

/// Simulates \p layer on \p machine with \p mapping (SCALE-Sim's own:
/// `{dataflow, 0, /*accumulate=*/false}`), timing only. A convolution's
/// windows move by MVIN_IM2COL from the ifmap (its unique bytes, as
/// SCALE-Sim's prefetcher fetches them) where the geometry fits.
Result<LayerResult> simulateLayer(const ArrayConfig &machine,
                                  const TopologyLayer &layer,
                                  const GemmMapping &mapping);

/// Writes COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and REPORT.json to
/// \p dir (created if missing).
Status writeScaleSimReports(const std::string &dir,
                            const std::vector<LayerResult> &results);

} // namespace ign::systolic

#endif
