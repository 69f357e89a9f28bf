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

/// Whether every input of `op` misses loop `a` or loop `b`: in a register
/// tile over the two, each input's loads are shared by several outputs.
bool sharesLoads(linalg::LinalgOp op, unsigned a, unsigned b) {
  return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return !map.isFunctionOfDim(a) || !map.isFunctionOfDim(b);
  });
}

/// The largest of e, e/2, ..., 1 that divides `range` (e a power of two).
int64_t dividingElems(int64_t range, int64_t e) {
  while (e > 1 && range % e != 0)
    e /= 2;
  return std::max<int64_t>(e, 1);
}

/// Threads over `n` tiles: `t` where it divides n, else the divisor of n
/// nearest to `t` (by ratio) between t/4 and min(2t, maxThreads), else `t`
/// (the last workgroup then has a partial tile).
int64_t dividingThreads(int64_t n, int64_t t, int64_t maxThreads) {
  if (n % t == 0)
    return t;
  int64_t best = 0;
  double bestRatio = 0;
  for (int64_t d = std::max<int64_t>(1, t / 4);
       d <= std::min(2 * t, maxThreads); ++d) {
    double ratio = d > t ? double(d) / t : double(t) / d;
    if (n % d == 0 && (!best || ratio < bestRatio)) {
      best = d;
      bestRatio = ratio;
    }
  }
  return best ? best : t;
}

/// Sets `m`'s register tile (OpMapping::reductionTile, registerOutputs)
/// where `op` has one: every workgroup tile must divide its loop (each
/// thread's tile then has one static size) and a thread must hold 2 to
/// kMaxRegisterOutputs outputs.
void setRegisterTile(linalg::LinalgOp op, ArrayRef<int64_t> ranges,
                     OpMapping &m) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t outputs = 1;
  std::vector<int64_t> tile(ranges.size(), 0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (iterators[i] == utils::IteratorType::reduction) {
      tile[i] = 1;
      continue;
    }
    if (m.workgroupTile[i] == 0) {
      outputs *= ranges[i]; // runs whole inside each thread
      continue;
    }
    if (ranges[i] % m.workgroupTile[i] != 0)
      return;
    outputs *=
        m.threads[i] ? m.workgroupTile[i] / m.threads[i] : m.workgroupTile[i];
  }
  if (outputs < 2 || outputs > kMaxRegisterOutputs)
    return;
  m.reductionTile = tile;
  m.registerOutputs = outputs;
}

/// A workgroup's threads along x and y and each thread's elements along
/// x, y and z (z's not spread over threads).
struct Split {
  int64_t tx, ty, ex, ey, ez;
};

/// The split of `op`'s mapped loops under knobs `s`, or false with `why`.
bool splitLoops(linalg::LinalgOp op, ArrayRef<unsigned> loops,
                ArrayRef<int64_t> ranges, const GpuSchedule &s,
                const ChipLimits &limits, Split &split, std::string &why) {
  // Threads shift from x to y where the x loop is short, and all go to x
  // where there is no y loop; the product stays the knobs'. The elements
  // per thread are an op with a reduction's register tile: it prefers
  // elements and threads that divide its loops, so that every thread's
  // tile has one static size. Other ops take one element per thread
  // (many workgroups for a GPU's many cores), more only where the grid
  // would exceed the chip's.
  bool reduces = llvm::is_contained(op.getIteratorTypesArray(),
                                    utils::IteratorType::reduction);
  int64_t total = s.threadsX * s.threadsY;
  int64_t rangeX = ranges[loops[0]];
  int64_t rangeY = loops.size() > 1 ? ranges[loops[1]] : 1;
  // The tile's second loop is z where the inputs share loads along x and
  // z but not along x and y (a convolution: its input does not read the
  // filters' loop z, its weights neither pixel loop).
  bool tileZ = reduces && loops.size() > 2 &&
               !sharesLoads(op, loops[0], loops[1]) &&
               sharesLoads(op, loops[0], loops[2]);
  int64_t ex = reduces ? dividingElems(rangeX, s.elemsX) : 1;
  int64_t ey = reduces && !tileZ ? dividingElems(rangeY, s.elemsY) : 1;
  int64_t ez = tileZ ? dividingElems(ranges[loops[2]], s.elemsY) : 1;
  int64_t tx = std::min(loops.size() > 1 ? s.threadsX : total,
                        powerOf2Ceil(ceilDiv(rangeX, ex)));
  if (reduces)
    tx = dividingThreads(
        rangeX / ex, tx,
        std::min(limits.maxWorkgroupSize[0], limits.maxInvocations));
  int64_t ty = 1;
  if (loops.size() > 1) {
    ty = std::min(std::max<int64_t>(1, total / tx),
                  powerOf2Ceil(ceilDiv(rangeY, ey)));
    if (reduces)
      ty = dividingThreads(
          rangeY / ey, ty,
          std::min(limits.maxWorkgroupSize[1], limits.maxInvocations / tx));
  }
  // More elements per thread where the grid would exceed the chip's.
  while (ceilDiv(rangeX, tx * ex) > limits.maxWorkgroupCount[0])
    ex *= 2;
  while (loops.size() > 1 &&
         ceilDiv(rangeY, ty * ey) > limits.maxWorkgroupCount[1])
    ey *= 2;
  if (loops.size() > 2 &&
      ceilDiv(ranges[loops[2]], ez) > limits.maxWorkgroupCount[2]) {
    why = "a third parallel loop longer than the chip's workgroup count";
    return false;
  }
  split = {tx, ty, ex, ey, ez};
  return true;
}

} // namespace

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

std::string whyOneThread(linalg::LinalgOp op) {
  if (!readsInIncreasingOrder(op))
    return "reads a loop backwards (linalg tiles only increasing accesses)";
  if (mappedLoops(op, op.getStaticLoopRanges()).empty())
    return "no parallel loop";
  return "";
}

search::Schedule GpuSchedule::knobs() const {
  search::Schedule s = {{kThreadsX, threadsX},
                        {kThreadsY, threadsY},
                        {kElemsX, elemsX},
                        {kElemsY, elemsY}};
  if (stagedGemm)
    s[kStagedGemm] = *stagedGemm;
  if (groupReduce)
    s[kGroupReduce] = *groupReduce;
  if (rowLaunch)
    s[kRowLaunch] = *rowLaunch;
  return s;
}

GpuSchedule defaultGpuSchedule(const ChipLimits &limits) {
  GpuSchedule s;
  // Two subgroups' worth of threads along x and four rows: enough threads
  // to hide latency on every chip, well under every chip's limit.
  s.threadsX = std::min<int64_t>(std::max<int64_t>(limits.subgroupSize, 16) * 2,
                                 limits.maxWorkgroupSize[0]);
  s.threadsY = std::max<int64_t>(
      1, std::min<int64_t>(4, limits.maxInvocations / s.threadsX));
  // A 4x4 register tile: each reduction step loads 4 + 4 values for 16
  // multiply-adds (a 256^3 matmul on lavapipe: 52 ms with one output per
  // thread, 8.2 ms with 4x4, 9.4 ms with 8x8).
  s.elemsX = s.elemsY = 4;
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
  if (tuned && tuned->count(kStagedGemm))
    s.stagedGemm = tuned->at(kStagedGemm);
  if (tuned && tuned->count(kGroupReduce))
    s.groupReduce = tuned->at(kGroupReduce);
  if (tuned && tuned->count(kRowLaunch))
    s.rowLaunch = tuned->at(kRowLaunch);
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
                 {kElemsX, {1, 2, 4, 8}},
                 {kElemsY, {1, 2, 4, 8}}};
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
  Split split;
  if (!splitLoops(op, loops, ranges, s, limits, split, why))
    return std::nullopt;
  auto [tx, ty, ex, ey, ez] = split;
  OpMapping m;
  m.workgroupTile.assign(ranges.size(), 0);
  m.threads.assign(ranges.size(), 0);
  int64_t tiles[3] = {tx * ex, ty * ey, ez};
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
  if (llvm::is_contained(op.getIteratorTypesArray(),
                         utils::IteratorType::reduction))
    setRegisterTile(op, ranges, m);
  return m;
}

} // namespace ign::gpu
