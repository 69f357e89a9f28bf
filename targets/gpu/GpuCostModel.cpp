//===- GpuCostModel.cpp - predicted time of a GPU dispatch ----------------===//
//
// The analytical model of GpuCostModel.h.
//
//===----------------------------------------------------------------------===//

#include "GpuCostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace ign::gpu {

namespace {

/// Lane-cycles and flops of one iteration of an op's body.
struct BodyCost {
  double laneCycles = 0, flops = 0;
};

BodyCost bodyCost(linalg::LinalgOp op) {
  BodyCost c;
  for (Operation &o : op.getBlock()->without_terminator()) {
    if (isa<linalg::IndexOp, arith::ConstantOp>(o))
      continue;
    // A multiply whose only use is an add: one FMA, issued with the add.
    if (isa<arith::MulFOp>(o) && o.hasOneUse() &&
        isa<arith::AddFOp>(*o.user_begin())) {
      c.flops += 1;
      continue;
    }
    bool slow = isa<math::MathDialect>(o.getDialect()) &&
                !isa<math::AbsFOp, math::FloorOp, math::CeilOp,
                     math::CopySignOp, math::RoundOp, math::FmaOp>(o);
    c.laneCycles += slow ? 4 : 1;
    c.flops += isa<math::FmaOp>(o) ? 2 : 1;
  }
  return c;
}

double product(ArrayRef<int64_t> v) {
  double p = 1;
  for (int64_t x : v)
    p *= double(x);
  return p;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Per loop, the extent one thread covers (every loop whole without a
/// mapping).
SmallVector<int64_t> threadExtents(ArrayRef<int64_t> ranges,
                                   const OpMapping *m) {
  SmallVector<int64_t> e(ranges);
  for (size_t i = 0; m && i < ranges.size(); ++i) {
    if (m->threads[i] > 0)
      e[i] = ceilDiv(m->workgroupTile[i], m->threads[i]);
    else if (m->workgroupTile[i] > 0)
      e[i] = m->workgroupTile[i];
  }
  return e;
}

/// Per loop, the extent one workgroup covers.
SmallVector<int64_t> workgroupExtents(ArrayRef<int64_t> ranges,
                                      const OpMapping *m) {
  SmallVector<int64_t> e(ranges);
  for (size_t i = 0; m && i < ranges.size(); ++i)
    if (m->workgroupTile[i] > 0)
      e[i] = std::min(m->workgroupTile[i], ranges[i]);
  return e;
}

/// The product of `extents` over the loops `input` reads.
double footprint(linalg::LinalgOp op, OpOperand *input,
                 ArrayRef<int64_t> extents) {
  AffineMap map = op.getMatchingIndexingMap(input);
  double p = 1;
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    if (map.isFunctionOfDim(d))
      p *= double(extents[d]);
  return p;
}

int64_t bytesOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  int64_t bits = shaped.getElementType().getIntOrFloatBitWidth();
  return shaped.getNumElements() * std::max<int64_t>(1, bits / 8);
}

int64_t elementBytes(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  Type t = shaped ? shaped.getElementType() : v.getType();
  return t.isIntOrFloat() ? std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8)
                          : 4;
}

/// Loads and stores one thread issues.
double threadLoads(linalg::LinalgOp op, ArrayRef<int64_t> ranges,
                   const OpMapping *m) {
  SmallVector<int64_t> perThread = threadExtents(ranges, m);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  double outputs = 1, steps = 1;
  for (size_t i = 0; i < ranges.size(); ++i)
    (iterators[i] == utils::IteratorType::reduction ? steps : outputs) *=
        double(perThread[i]);
  bool reduces = steps > 1 ||
                 llvm::is_contained(iterators, utils::IteratorType::reduction);
  double loads = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!isa<ShapedType>(input->get().getType()))
      continue; // a scalar: in a register
    if (m && m->registerOutputs > 0) {
      // Each reduction step loads the tile's extent of what it reads.
      SmallVector<int64_t> tile(perThread);
      for (size_t i = 0; i < ranges.size(); ++i)
        if (iterators[i] == utils::IteratorType::reduction)
          tile[i] = 1;
      loads += steps * footprint(op, input, tile);
    } else {
      loads += steps * outputs; // every iteration loads it
    }
  }
  // An accumulator is loaded and stored once; a parallel op stores each.
  return loads + (reduces ? 2 : 1) * outputs;
}

/// The share of the chip's lanes a grid of `groups` workgroups of
/// `groupThreads` keeps busy.
double utilization(double groups, double groupThreads, int64_t subgroup,
                   double lanes) {
  double padded = double(ceilDiv(int64_t(groupThreads), subgroup) * subgroup);
  double issued = groups * padded;
  double slots = lanes * kLatencyHiding;
  double fill = std::min(1.0, issued / slots);
  double tail = 1;
  if (issued > slots) {
    double waves = std::ceil(issued / slots);
    tail = issued / (waves * slots);
  }
  return groupThreads / padded * fill * tail;
}

} // namespace

DispatchEstimate estimateDispatch(linalg::LinalgOp op, const OpMapping *mapping,
                                  const ChipLimits &limits,
                                  const ChipNumbers &numbers) {
  DispatchEstimate e;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return e;
  BodyCost body = bodyCost(op);
  double iterations = product(ranges);
  e.flops = iterations * body.flops;
  double groups = mapping ? product(mapping->gridSize) : 1;
  double groupThreads = mapping ? product(mapping->blockSize) : 1;
  double threads = groups * groupThreads;
  SmallVector<int64_t> perThread = threadExtents(ranges, mapping);
  e.issueCycles = threads * (product(perThread) * body.laneCycles +
                             threadLoads(op, ranges, mapping));
  double lanes = double(numbers.computeUnits) * numbers.lanesPerUnit();
  e.utilization = utilization(groups, groupThreads, limits.subgroupSize, lanes);
  double issueSeconds =
      e.issueCycles / (lanes * numbers.clockMHz * 1e6 * e.utilization);
  // Memory: every buffer once from DRAM; each workgroup's inputs over its
  // tile (and the whole reduction) from the cache.
  for (OpOperand &operand : op->getOpOperands())
    e.dramBytes += double(bytesOf(operand.get().getType()));
  SmallVector<int64_t> perGroup = workgroupExtents(ranges, mapping);
  for (OpOperand *input : op.getDpsInputOperands())
    if (isa<ShapedType>(input->get().getType()))
      e.cacheBytes += groups * footprint(op, input, perGroup) *
                      double(elementBytes(input->get()));
  double bandwidth = numbers.bandwidthGBs * 1e9;
  double memorySeconds =
      std::max(e.dramBytes / bandwidth,
               e.cacheBytes / (bandwidth * kCacheBandwidthRatio));
  double launchSeconds = kLaunchMicroseconds * 1e-6;
  e.bound = issueSeconds >= memorySeconds ? "issue" : "memory";
  if (launchSeconds > std::max(issueSeconds, memorySeconds))
    e.bound = "launch";
  e.ms = (std::max(issueSeconds, memorySeconds) + launchSeconds) * 1e3;
  return e;
}

std::optional<double> predictKernel(func::FuncOp kernel,
                                    const GpuSchedule &schedule,
                                    const ChipLimits &limits,
                                    const ChipNumbers &numbers) {
  double ms = 0;
  bool mapped = true;
  kernel.walk([&](linalg::LinalgOp op) {
    std::string why;
    std::optional<OpMapping> m;
    if (whyOneThread(op).empty()) {
      m = mapOp(op, schedule, limits, why);
      if (!m) {
        mapped = false;
        return WalkResult::interrupt();
      }
    }
    ms += estimateDispatch(op, m ? &*m : nullptr, limits, numbers).ms;
    return WalkResult::advance();
  });
  return mapped ? std::optional<double>(ms) : std::nullopt;
}

GpuSchedule modelDefaultSchedule(func::FuncOp kernel, const ChipLimits &limits,
                                 const ChipNumbers &numbers) {
  GpuSchedule best = defaultGpuSchedule(limits);
  std::optional<double> bestMs = predictKernel(kernel, best, limits, numbers);
  if (!bestMs)
    return best;
  static const int64_t shapes[][2] = {{32, 4}, {16, 8}, {64, 4}, {16, 16},
                                      {32, 8}, {64, 2}, {128, 1}};
  for (auto [tx, ty] : shapes)
    for (int64_t ex : {1, 2, 4, 8})
      for (int64_t ey : {1, 2, 4, 8}) {
        GpuSchedule s{tx, ty, ex, ey};
        if (tx * ty > limits.maxInvocations ||
            tx > limits.maxWorkgroupSize[0] || ty > limits.maxWorkgroupSize[1])
          continue;
        std::optional<double> ms = predictKernel(kernel, s, limits, numbers);
        if (ms && *ms < 0.98 * *bestMs) {
          best = s;
          bestMs = ms;
        }
      }
  return best;
}

} // namespace ign::gpu
