//===- GpuSchedule.cpp - the GPU schedule of a kernel, as data ------------===//
//
// Knobs, their space and the per-op mapping they give (GpuSchedule.h).
//
//===----------------------------------------------------------------------===//

#include "GpuSchedule.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace ign::gpu {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The smallest power of two >= n (n >= 1).
int64_t powerOf2Ceil(int64_t n) {
  return int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(n, 1))));
}

int64_t knobOr(const search::Schedule *s, const char *name, int64_t value) {
  if (!s)
    return value;
  auto it = s->find(name);
  return it == s->end() ? value : it->second;
}

/// Whether every operand reads every loop with a non-negative coefficient.
/// Linalg's tiling computes each operand's slice from the loops' first
/// elements, which is wrong for a flipped access (-d + c, as a transposed
/// convolution reads its weights) even along loops it does not tile.
bool readsInIncreasingOrder(linalg::LinalgOp op) {
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr e : map.getResults()) {
      SmallVector<int64_t> coefficients;
      if (failed(getFlattenedAffineExpr(e, map.getNumDims(),
                                        map.getNumSymbols(), &coefficients)) ||
          llvm::any_of(coefficients, [](int64_t c) { return c < 0; }))
        return false;
    }
  return true;
}

/// The loops a workgroup grid covers, innermost first: the last parallel
/// loop (x), and the parallel loops before it that are longer than one
/// (y, z).
SmallVector<unsigned, 3> mappedLoops(linalg::LinalgOp op,
                                     ArrayRef<int64_t> ranges) {
  SmallVector<unsigned, 3> loops;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = iterators.size(); i-- > 0 && loops.size() < 3;) {
    if (iterators[i] != utils::IteratorType::parallel)
      continue;
    if (loops.empty() || ranges[i] > 1)
      loops.push_back(i);
  }
  return loops;
}

} // namespace

std::string whyOneThread(linalg::LinalgOp op) {
  if (!readsInIncreasingOrder(op))
    return "reads a loop backwards (linalg tiles only increasing accesses)";
  if (mappedLoops(op, op.getStaticLoopRanges()).empty())
    return "no parallel loop";
  return "";
}

search::Schedule GpuSchedule::knobs() const {
  return {{kThreadsX, threadsX},
          {kThreadsY, threadsY},
          {kElemsX, elemsX},
          {kElemsY, elemsY}};
}

GpuSchedule defaultGpuSchedule(const ChipLimits &limits) {
  GpuSchedule s;
  // Two subgroups' worth of threads along x and four rows: enough threads
  // to hide latency on every chip, well under every chip's limit.
  s.threadsX = std::min<int64_t>(std::max<int64_t>(limits.subgroupSize, 16) * 2,
                                 limits.maxWorkgroupSize[0]);
  s.threadsY = std::max<int64_t>(
      1, std::min<int64_t>(4, limits.maxInvocations / s.threadsX));
  return s;
}

GpuSchedule scheduleFromKnobs(const search::Schedule *tuned,
                              const ChipLimits &limits) {
  GpuSchedule d = defaultGpuSchedule(limits);
  GpuSchedule s;
  s.threadsX = knobOr(tuned, kThreadsX, d.threadsX);
  s.threadsY = knobOr(tuned, kThreadsY, d.threadsY);
  s.elemsX = knobOr(tuned, kElemsX, d.elemsX);
  s.elemsY = knobOr(tuned, kElemsY, d.elemsY);
  return s;
}

search::ScheduleSpace gpuScheduleSpace(const ChipLimits &limits) {
  search::ScheduleSpace space;
  std::vector<int64_t> threadsX, threadsY;
  for (int64_t t = 4; t <= std::min<int64_t>(256, limits.maxWorkgroupSize[0]);
       t *= 2)
    threadsX.push_back(t);
  for (int64_t t = 1; t <= std::min<int64_t>(16, limits.maxWorkgroupSize[1]);
       t *= 2)
    threadsY.push_back(t);
  space.knobs = {{kThreadsX, threadsX},
                 {kThreadsY, threadsY},
                 {kElemsX, {1, 2, 4}},
                 {kElemsY, {1, 2, 4}}};
  space.defaults = defaultGpuSchedule(limits).knobs();
  int64_t maxInvocations = limits.maxInvocations;
  space.legal = [maxInvocations](const search::Schedule &s) {
    return s.at(kThreadsX) * s.at(kThreadsY) <= maxInvocations;
  };
  return space;
}

int64_t longestThreadLoop(linalg::LinalgOp op, const OpMapping *mapping) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t longest = 1;
  for (size_t i = 0; i < ranges.size(); ++i) {
    int64_t n = ranges[i];
    if (mapping && mapping->threads[i] > 0)
      n = ceilDiv(mapping->workgroupTile[i], mapping->threads[i]);
    else if (mapping && mapping->workgroupTile[i] > 0)
      n = mapping->workgroupTile[i]; // spread over workgroups only
    longest = std::max(longest, n);
  }
  return longest;
}

std::optional<OpMapping> mapOp(linalg::LinalgOp op, const GpuSchedule &s,
                               const ChipLimits &limits, std::string &why) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic)) {
    why = "a loop of dynamic size";
    return std::nullopt;
  }
  SmallVector<unsigned, 3> loops = mappedLoops(op, ranges);
  if (loops.empty()) {
    why = "no parallel loop";
    return std::nullopt;
  }
  // Threads shift from x to y where the x loop is short, and all go to x
  // where there is no y loop; the product stays the knobs'.
  int64_t total = s.threadsX * s.threadsY;
  int64_t rangeX = ranges[loops[0]];
  int64_t tx = std::min(loops.size() > 1 ? s.threadsX : total,
                        powerOf2Ceil(ceilDiv(rangeX, s.elemsX)));
  int64_t ty = 1, ex = s.elemsX, ey = s.elemsY;
  if (loops.size() > 1)
    ty = std::min(total / tx, powerOf2Ceil(ceilDiv(ranges[loops[1]], ey)));
  // More elements per thread where the grid would exceed the chip's.
  while (ceilDiv(rangeX, tx * ex) > limits.maxWorkgroupCount[0])
    ex *= 2;
  while (loops.size() > 1 &&
         ceilDiv(ranges[loops[1]], ty * ey) > limits.maxWorkgroupCount[1])
    ey *= 2;
  if (loops.size() > 2 && ranges[loops[2]] > limits.maxWorkgroupCount[2]) {
    why = "a third parallel loop longer than the chip's workgroup count";
    return std::nullopt;
  }
  OpMapping m;
  m.workgroupTile.assign(ranges.size(), 0);
  m.threads.assign(ranges.size(), 0);
  int64_t tiles[3] = {tx * ex, ty * ey, 1};
  int64_t threads[3] = {tx, ty, 0};
  for (unsigned d = 0; d < loops.size(); ++d) {
    m.workgroupTile[loops[d]] = tiles[d];
    m.threads[loops[d]] = threads[d];
    m.gridSize[d] = ceilDiv(ranges[loops[d]], tiles[d]);
  }
  m.blockSize = {tx, ty, 1};
  for (unsigned i = 0; i < ranges.size(); ++i)
    for (unsigned d = 0; d < loops.size(); ++d)
      if (loops[d] == i)
        m.dims.push_back("xyz"[d]);
  return m;
}

} // namespace ign::gpu
