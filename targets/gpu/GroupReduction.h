//===- GroupReduction.h - a workgroup per reduced output --------*- C++ -*-===//
//
// The mapping script gives each output of a reduction (a softmax's row
// maximum, a layer norm's mean) one thread that loops over the whole
// reduction: BERT's 128 rows of 768 are 128 threads, a sliver of a GPU. The
// GPU layer's group reduction (every backend's) gives each output a
// workgroup instead: its threads combine strided elements of the reduced
// loops into partials, then halve them in workgroup memory between
// barriers (a tree of log2(threads) steps), and thread 0 combines the
// result into the output (or into a fill right before, which it takes
// over). It takes ops whose body is `out = combine(out, x)` with combine
// one associative op (add, mul, max, min of floats; add, mul, max, min,
// and, or, xor of integers) and x computed from the inputs (GemmSide's
// analysis, StagedGemm.h), with at least kMinGroupLength reduced elements
// per output. The kGroupReduce knob (GpuSchedule.h) chooses it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GROUPREDUCTION_H
#define IGN_TARGETS_GPU_GROUPREDUCTION_H

#include "GpuMapping.h"
#include "StagedGemm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>

namespace ign::gpu {

struct GpuChip;

/// A reduction as a launch sees it: `out = combine(out, x)`.
struct Reduction {
  mutable mlir::linalg::LinalgOp op;   // its accessors are not const
  mlir::Operation *combiner = nullptr; // combine(out, x) in the body
  mlir::TypedAttr identity;            // combine(identity, y) == y
  GemmSide x;
  llvm::SmallVector<unsigned> parallel, reduced; // the op's loops, in order
  llvm::SmallVector<int64_t> ranges;
  int64_t outputs = 1, length = 1;
};

/// `op` as `out = combine(out, x)` with one associative combiner over
/// static buffers, its output indexed by exactly its parallel loops, or
/// nullopt with `why`.
std::optional<Reduction> analyzeReduction(mlir::linalg::LinalgOp op,
                                          std::string &why);

/// The subgroup op of `r`'s combiner, where one converts on every backend
/// (f32 and i32; SPIR-V has no group and/or/xor conversion in MLIR 19) and
/// keeps its meaning: not maxnumf/minnumf, whose NaN operands Vulkan's
/// group FMax/FMin leave undefined (subgroupTotal guards maximumf's).
std::optional<mlir::gpu::AllReduceOperation> subgroupKind(const Reduction &r);

/// Whether two or more inputs of `r` each skip a parallel loop longer than
/// 1: the outputs share those operands (a GEMM's rows and columns, also
/// one of fewer than kMinGemmExtent rows), which register tiles reuse and a
/// workgroup per output would read again. A GEMV's matrix skips only the
/// vector's loop of 1.
bool sharesOperands(const Reduction &r);

/// Whether `r`'s largest input is contiguous along an output loop (a GEMV
/// x[1, K] @ W[K, N]: consecutive outputs read consecutive elements of W).
/// A thread per output then reads it coalesced (vectorized on a CPU
/// device); a workgroup per output would read it a row apart a thread (on
/// lavapipe BERT's pooler GEMV took 5.6 ms so against 3.0).
bool readsAlongOutputs(const Reduction &r);

/// combine(a, y): `r`'s combiner cloned at `b` on new operands.
mlir::Value combineWith(mlir::OpBuilder &b, const Reduction &r, mlir::Value a,
                        mlir::Value y);

/// In a launch of `threads` threads along x (`tid`), every thread reaching
/// it: the combination of every thread's `partial` by subgroup reductions
/// of `kind` (subgroupKind(r)). Each subgroup's first lane stores its
/// subgroup's result in `shared` (workgroup memory, one element a
/// subgroup), a barrier, the first subgroup reduces those. Exact in thread
/// 0 (the identity elsewhere); with `broadcast`, in every thread (thread 0
/// stores it at shared[threads], a second barrier). The subgroup size is
/// read at run time (gpu.subgroup_size); subgroups are taken to be runs of
/// consecutive threads (lane tid % size, subgroup tid / size): CUDA's
/// warps are, and so are the 1-D workgroups of every Vulkan driver seen
/// (MLIR 19 lowers no gpu.lane_id to SPIR-V).
mlir::Value subgroupTotal(mlir::OpBuilder &b, mlir::Location loc,
                          const Reduction &r,
                          mlir::gpu::AllReduceOperation kind, mlir::Value tid,
                          int64_t threads, mlir::Value partial,
                          mlir::Value shared, bool broadcast);

/// The fewest reduced elements per output that take a group reduction
/// (shorter ones keep a thread each).
inline constexpr int64_t kMinGroupLength = 128;
/// A group's most threads (fewer for shorter reductions: about four
/// elements a thread, at least a subgroup).
inline constexpr int64_t kMaxGroupThreads = 256;

/// The threads of the group reducing `length` elements on a chip of
/// `limits`: a power of two, about length / 4, between the subgroup size
/// and min(kMaxGroupThreads, the chip's threads a workgroup).
int64_t groupThreads(int64_t length, const ChipLimits &limits);

/// The group reductions of `kernel` (bufferized) that take one on `chip`,
/// each replacing its op (and a fill of its output right before) by a
/// launch, with its note (the model's time where the chip has numbers).
OwnLaunches emitGroupReductions(mlir::func::FuncOp kernel, const GpuChip &chip);

/// Whether some op of `kernel` (bufferized) would take a group reduction:
/// then its knobs have kGroupReduce.
bool hasGroupReductions(mlir::func::FuncOp kernel, const GpuChip &chip);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GROUPREDUCTION_H
