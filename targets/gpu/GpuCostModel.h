//===- GpuCostModel.h - predicted time of a GPU dispatch --------*- C++ -*-===//
//
// The GPU layer's analytical model: the time one linalg op takes as a
// dispatch under its mapping (GpuSchedule.h), from a chip's public numbers
// (compute units, clock, fp32 peak, memory bandwidth). It ranks candidate
// schedules for chips this machine does not have (the Vulkan presets;
// CUDA chips without a GPU at hand), and `ignc inspect` shows its figures
// as *predicted*, never as measurements.
//
// A roofline with occupancy:
// - issue: every thread issues its op's arithmetic (a multiply feeding an
//   add is one FMA; exp, tanh, erf, log, pow and the like four) and its
//   loads, one lane-cycle each; a register tile's loads are shared by its
//   outputs (per reduction step, each input loads the tile's extent of the
//   loops it reads), otherwise every iteration loads every input;
// - lanes: the chip runs computeUnits x lanesPerUnit lanes (peak / 2 /
//   clock), and needs kLatencyHiding threads per lane to keep them busy;
//   partial subgroups waste lanes and the last wave of workgroups may run
//   part-full;
// - memory: the buffers' bytes once from DRAM, and each workgroup's input
//   footprint (its tile over the whole reduction) from the cache at
//   kCacheBandwidthRatio times DRAM's bandwidth;
// - a fixed launch cost per dispatch.
// The time is the larger of issue and memory time plus the launch.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUCOSTMODEL_H
#define IGN_TARGETS_GPU_GPUCOSTMODEL_H

#include "GpuSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

#include <string>

namespace ign::gpu {

/// Threads per lane a chip needs in flight to hide memory latency.
inline constexpr double kLatencyHiding = 4;
/// On-chip caches' bandwidth over DRAM's.
inline constexpr double kCacheBandwidthRatio = 4;
/// Microseconds one dispatch costs beyond its work.
inline constexpr double kLaunchMicroseconds = 4;

/// A chip's public numbers; a chip without them gets no prediction.
struct ChipNumbers {
  int64_t computeUnits = 0;
  double clockMHz = 0, peakGflops = 0, bandwidthGBs = 0;

  bool known() const {
    return computeUnits > 0 && clockMHz > 0 && peakGflops > 0 &&
           bandwidthGBs > 0;
  }
  /// fp32 lanes of one compute unit (an FMA per lane and cycle).
  double lanesPerUnit() const {
    return peakGflops * 1e3 / (2 * clockMHz * double(computeUnits));
  }
};

/// The model's figures for one dispatch.
struct DispatchEstimate {
  double flops = 0;       // the op's arithmetic (an FMA counts two)
  double issueCycles = 0; // lane-cycles of arithmetic and loads
  double dramBytes = 0, cacheBytes = 0;
  double utilization = 0; // share of the chip's lanes kept busy
  double ms = 0;
  std::string bound; // "issue", "memory" or "launch"
};

/// The predicted time of `op` (a linalg op on buffers, before mapping) as
/// one dispatch under `mapping` (null: one thread of one workgroup) on a
/// chip with `limits` and `numbers` (numbers.known() must hold).
DispatchEstimate estimateDispatch(mlir::linalg::LinalgOp op,
                                  const OpMapping *mapping,
                                  const ChipLimits &limits,
                                  const ChipNumbers &numbers);

/// The predicted time of `kernel` (bufferized, before mapping) under
/// `schedule`: its ops' dispatches summed; nullopt where an op has no
/// mapping under it.
std::optional<double> predictKernel(mlir::func::FuncOp kernel,
                                    const GpuSchedule &schedule,
                                    const ChipLimits &limits,
                                    const ChipNumbers &numbers);

/// The default schedule of `kernel` on a chip with numbers: of a small set
/// of workgroup shapes and register tiles, the one the model predicts
/// fastest (the fixed default unless another is predicted at least 2%
/// faster).
GpuSchedule modelDefaultSchedule(mlir::func::FuncOp kernel,
                                 const ChipLimits &limits,
                                 const ChipNumbers &numbers);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUCOSTMODEL_H
