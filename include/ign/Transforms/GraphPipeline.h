//===- GraphPipeline.h - an imported model into outlined kernels -*- C++
//-*-===//
//
// The graph stage of the flow, the same for every target: cleanups (CSE,
// dead ops, batch norms folded into weights), convolutions as matmuls,
// padding split off, reshapes sunk, fusion into kernels and outlining. A
// target chooses its policy; `ign-opt --ign-graph-pipeline` runs it too.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TRANSFORMS_GRAPHPIPELINE_H
#define IGN_TRANSFORMS_GRAPHPIPELINE_H

#include "ign/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace ign {

/// A target's choices for the graph pipeline.
struct GraphPolicy {
  /// Fuse ops into kernels (false: one op per kernel, --no-fuse).
  bool fuse = true;
  /// Ungrouped convolutions become matmuls (im2col columns or a 1x1 view);
  /// off for the reference schedule, which keeps the convolutions.
  bool convToMatmul = true;
  /// With T > 0, ungrouped convolutions stay convolutions with blocked
  /// filters-last weights, T filters a block (directConvolutions), instead
  /// of im2col matmuls: the host's direct register tiles read their input
  /// in place and their weights block by block.
  int64_t directConvFilterBlock = 0;
  /// With M > 0, convolutions get zero input channels up to a multiple of
  /// M (padChannels): the matrix unit's steps (the host's AMX tiles with
  /// --precision=bf16: 32).
  int64_t convChannelMultiple = 0;
  /// With M > 0, filters that no block divides are padded to whole blocks
  /// before pixel tiles are considered (directConvolutions'
  /// padFiltersFirst) when the input channels are a multiple of M: where the
  /// padded convolution computes faster than pixel tiles would (the host's
  /// AMX blocks: 1; bf16 pair tiles, which take channels in pairs: 2).
  int64_t padFiltersFirst = 0;
  /// Constant weights of Gemms with transB are transposed at compile time
  /// (untransposeConstantWeights).
  bool untransposeWeights = false;
  /// Keep im2col columns with few pixels a kernel of their own (the host's
  /// threads split a convolution by pixels); off for an accelerator that
  /// moves windows itself.
  bool separateThinColumns = true;
  /// Quantized contractions (integerMatmuls): i32 convolutions of bytes in
  /// f32 where that is exact (a CPU target), and ...
  bool integerConvsInFloat = false;
  /// ... matmuls in integers (a CPU with integer dot products: bytes with
  /// VNNI, 16-bit words with AVX2's vpmaddwd).
  IntegerOperands integerMatmuls = IntegerOperands::None;
};

/// Runs the graph pipeline on `module`'s @main and the graph functions of
/// its ign.ifs, and returns @main (each now a sequence of kernel calls and
/// ign.ifs). Graph functions no ign.if launches any more are erased.
/// Diagnostics at the failing op.
mlir::FailureOr<mlir::func::FuncOp> runGraphPipeline(mlir::ModuleOp module,
                                                     const GraphPolicy &policy);

/// Erases @main and the graph functions once the launch plan holds them:
/// only kernels remain for the targets to lower.
void eraseGraphs(mlir::ModuleOp module);

} // namespace ign

#endif // IGN_TRANSFORMS_GRAPHPIPELINE_H
