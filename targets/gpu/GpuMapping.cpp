//===- GpuMapping.cpp - a bufferized kernel onto GPU workgroups -----------===//
//
// Builds and applies the Transform-dialect script of a kernel's GPU
// schedule, then lowers and outlines its launches (GpuMapping.h).
//
//===----------------------------------------------------------------------===//

#include "GpuMapping.h"
#include "RegisterTiles.h"

#include "ign/Conversion/KernelBufferization.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/TransformOps/SCFTransformOps.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;

namespace ign::gpu {

namespace {

constexpr llvm::StringLiteral kOpTag = "ign.gpu_op";

std::string listOf(ArrayRef<int64_t> values) {
  return "[" +
         llvm::join(llvm::map_range(
                        values, [](int64_t v) { return std::to_string(v); }),
                    ", ") +
         "]";
}

/// `#gpu.block<x>, ...` for the loops a level distributes (nonzero
/// `sizes`), in loop order; every such loop is a mapped loop.
std::string mappingOf(const OpMapping &m, ArrayRef<int64_t> sizes,
                      llvm::StringRef kind) {
  std::vector<std::string> dims;
  unsigned mapped = 0;
  for (unsigned i = 0; i < sizes.size(); ++i) {
    if (m.workgroupTile[i] == 0)
      continue;
    if (sizes[i] != 0)
      dims.push_back(
          llvm::formatv("#gpu.{0}<{1}>", kind, m.dims[mapped]).str());
    ++mapped;
  }
  return "[" + llvm::join(dims, ", ") + "]";
}

/// The script's steps for op `index`'s register tile (if it has one): its
/// reduction loops tiled by one out of the thread's op, outermost, and
/// annotated for RegisterTiles.h, which unrolls the element loops inside.
std::string registerTileSteps(unsigned index, const OpMapping &m) {
  if (m.reductionTile.empty())
    return "";
  size_t loops = llvm::count(m.reductionTile, 1);
  std::string handles, types;
  for (size_t i = 0; i < loops; ++i) {
    handles += llvm::formatv(", %rloop{0}_{1}", index, i).str();
    types += ", !transform.any_op";
  }
  std::string out =
      llvm::formatv("    %rtile{0}{1} = transform.structured.tile_using_for "
                    "%thread{0} tile_sizes {2} : (!transform.any_op) -> "
                    "(!transform.any_op{3})\n",
                    index, handles, listOf(m.reductionTile), types)
          .str();
  for (size_t i = 0; i < loops; ++i)
    out += llvm::formatv("    transform.annotate %rloop{0}_{1} \"{2}\" : "
                         "!transform.any_op\n",
                         index, i, kRegisterTileLoop)
               .str();
  return out;
}

/// The script's steps for op `index`: tile to workgroups, then to
/// threads (and a register tile's reduction loops out of the thread's
/// op), then map both levels onto a gpu.launch.
std::string opSteps(unsigned index, const OpMapping &m) {
  return llvm::formatv(
             R"(    %op{0} = transform.structured.match attributes {{{1} = {0} : i64} in %root : (!transform.any_op) -> !transform.any_op
    %tile{0}, %wg{0} = transform.structured.tile_using_forall %op{0} tile_sizes {2} (mapping = {3}) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %thread{0}, %tf{0} = transform.structured.tile_using_forall %tile{0} num_threads {4} (mapping = {5}) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
{7}    %launch{0} = transform.gpu.map_forall_to_blocks %wg{0} generate_gpu_launch : (!transform.any_op) -> !transform.any_op
    %mapped{0} = transform.gpu.map_nested_forall_to_threads %launch{0} block_dims = {6} : (!transform.any_op) -> !transform.any_op
)",
             index, kOpTag, listOf(m.workgroupTile),
             mappingOf(m, m.workgroupTile, "block"), listOf(m.threads),
             mappingOf(m, m.threads, "thread"), listOf(m.blockSize),
             registerTileSteps(index, m))
      .str();
}

/// The script's step for op `index` that has no parallel loop (a
/// reduction to one element, a scalar's fill): wrapped in a one-iteration
/// scf.forall (wrapInOneWorkgroup), it runs as one thread of one
/// workgroup.
std::string singleThreadSteps(unsigned index) {
  return llvm::formatv(
             R"(    %op{0} = transform.structured.match attributes {{{1} = {0} : i64} in %root : (!transform.any_op) -> !transform.any_op
    %launch{0} = transform.gpu.map_forall_to_blocks %op{0} generate_gpu_launch : (!transform.any_op) -> !transform.any_op
)",
             index, kOpTag)
      .str();
}

/// Puts `op` into a one-iteration scf.forall mapped to a workgroup, which
/// takes over the op's tag.
void wrapInOneWorkgroup(linalg::LinalgOp op) {
  OpBuilder b(op);
  MLIRContext *ctx = op->getContext();
  Location loc = op.getLoc();
  auto mapping = b.getArrayAttr(
      {mlir::gpu::GPUBlockMappingAttr::get(ctx, mlir::gpu::MappingId::DimX)});
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto forall = b.create<scf::ForallOp>(
      loc, ArrayRef<OpFoldResult>{zero}, ArrayRef<OpFoldResult>{one},
      ArrayRef<OpFoldResult>{one}, ValueRange{}, mapping);
  op->moveBefore(forall.getBody()->getTerminator());
  forall->setAttr(kOpTag, op->getAttr(kOpTag));
  op->removeAttr(kOpTag);
}

/// Clones the view ops (and constants) a launch body uses from outside
/// into it, so that outlining passes the base buffers (kernel arguments
/// and scratch allocations) and the views fold into loads and stores.
void sinkViewsIntoLaunch(mlir::gpu::LaunchOp launch) {
  for (bool changed = true; changed;) {
    changed = false;
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(launch.getBody(), above);
    OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
    for (Value v : above) {
      Operation *def = v.getDefiningOp();
      if (!def ||
          !(isa<ViewLikeOpInterface>(def) || matchPattern(def, m_Constant())))
        continue;
      Operation *clone = b.clone(*def);
      replaceAllUsesInRegionWith(
          v, clone->getResult(cast<OpResult>(v).getResultNumber()),
          launch.getBody());
      changed = true;
    }
  }
}

/// What may stay in the kernel function after outlining.
bool staysOnHost(Operation *op) {
  return isa<arith::ConstantOp, memref::AllocOp, memref::DeallocOp,
             memref::GetGlobalOp, mlir::gpu::LaunchFuncOp, func::ReturnOp>(
             op) ||
         isa<ViewLikeOpInterface>(op);
}

} // namespace

void rewriteReshapesAsViews(func::FuncOp kernel) {
  SmallVector<tensor::ReshapeOp> reshapes;
  kernel.walk([&](tensor::ReshapeOp r) { reshapes.push_back(r); });
  for (tensor::ReshapeOp r : reshapes) {
    auto from = cast<RankedTensorType>(r.getSource().getType());
    auto to = cast<RankedTensorType>(r.getType());
    if (!from.hasStaticShape() || !to.hasStaticShape())
      continue;
    OpBuilder b(r);
    Location loc = r.getLoc();
    Value v = r.getSource();
    // Through one dimension (or none, for one element): a collapse then
    // an expand, with empty reassociations to and from rank 0.
    auto all = [](int64_t rank) {
      SmallVector<ReassociationIndices> groups;
      if (rank > 0) {
        groups.emplace_back(rank);
        std::iota(groups[0].begin(), groups[0].end(), 0);
      }
      return groups;
    };
    if (from.getRank() > 1 || (from.getRank() == 1 && to.getRank() == 0))
      v = b.create<tensor::CollapseShapeOp>(
          loc, v, all(to.getRank() == 0 ? 0 : from.getRank()));
    if (cast<RankedTensorType>(v.getType()) != to)
      v = b.create<tensor::ExpandShapeOp>(
          loc, to, v,
          all(cast<RankedTensorType>(v.getType()).getRank() ? to.getRank()
                                                            : 0));
    r.replaceAllUsesWith(v);
    r.erase();
  }
}

LogicalResult unrollRecurrences(func::FuncOp kernel, int64_t maxOps,
                                std::string &why) {
  // Innermost loops first (post-order), so that an outer loop unrolls
  // bodies already flat.
  SmallVector<scf::ForOp> loops;
  kernel.walk([&](scf::ForOp loop) {
    if (loop->walk([](linalg::LinalgOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      loops.push_back(loop);
  });
  IRRewriter rewriter(kernel.getContext());
  for (scf::ForOp loop : loops) {
    std::optional<int64_t> trips = constantTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    int64_t ops = 0;
    loop->walk([&](linalg::LinalgOp) { ++ops; });
    if (!trips || *trips * ops > maxOps) {
      why = trips ? "a loop of " + std::to_string(*trips) + " steps of " +
                        std::to_string(ops) + " ops (over " +
                        std::to_string(maxOps) + " dispatches)"
                  : "a loop without a constant trip count";
      return failure();
    }
    if (*trips == 0) {
      rewriter.replaceOp(loop, loop.getInitArgs());
      continue;
    }
    // Unrolled by its trip count, the loop runs once and is replaced by
    // its body (loopUnrollByFactor promotes it).
    if (failed(loopUnrollByFactor(loop, uint64_t(*trips)))) {
      why = "a loop that does not unroll";
      return failure();
    }
  }
  return success();
}

void fuseElementwiseChains(func::FuncOp kernel) {
  RewritePatternSet patterns(kernel.getContext());
  linalg::populateElementwiseOpsFusionPatterns(
      patterns, [](OpOperand *operand) {
        Operation *producer = operand->get().getDefiningOp();
        return producer && producer->hasOneUse();
      });
  (void)applyPatternsAndFoldGreedily(kernel, std::move(patterns));
}

namespace {

/// Replaces `op` (on buffers) by its parts along `loop`: [0, at) and
/// [at, end). Returns the parts, or none (op kept) where tiling fails.
SmallVector<linalg::LinalgOp> splitAlong(linalg::LinalgOp op, unsigned loop,
                                         int64_t at) {
  auto tileable = cast<TilingInterface>(op.getOperation());
  OpBuilder b(op);
  SmallVector<Range> domain = tileable.getIterationDomain(b);
  SmallVector<OpFoldResult> offsets, sizes;
  for (const Range &r : domain) {
    offsets.push_back(r.offset);
    sizes.push_back(r.size);
  }
  std::optional<int64_t> end = getConstantIntValue(sizes[loop]);
  if (!end || *end <= at)
    return {};
  SmallVector<linalg::LinalgOp> parts;
  for (auto [from, size] : {std::pair{int64_t(0), at}, {at, *end - at}}) {
    offsets[loop] = b.getIndexAttr(from);
    sizes[loop] = b.getIndexAttr(size);
    FailureOr<TilingResult> tiled =
        tileable.getTiledImplementation(b, offsets, sizes);
    if (failed(tiled) || tiled->tiledOps.size() != 1 ||
        !isa<linalg::LinalgOp>(tiled->tiledOps[0])) {
      for (linalg::LinalgOp p : parts)
        p->erase();
      if (succeeded(tiled))
        for (Operation *t : tiled->tiledOps)
          t->erase();
      return {};
    }
    parts.push_back(cast<linalg::LinalgOp>(tiled->tiledOps[0]));
  }
  op->erase();
  return parts;
}

bool peelable(linalg::LinalgOp op, func::FuncOp kernel) {
  if (op->getParentOp() != kernel.getOperation() ||
      !op.hasPureBufferSemantics() ||
      !llvm::is_contained(op.getIteratorTypesArray(),
                          utils::IteratorType::reduction) ||
      !whyOneThread(op).empty())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  int64_t iterations = 1;
  for (int64_t r : ranges)
    iterations *= r;
  return iterations >= kPeelMinIterations;
}

} // namespace

void splitSmallReductions(func::FuncOp kernel) {
  SmallVector<linalg::LinalgOp> ops;
  kernel.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumReductionLoops() == 1 &&
        op.getNumDpsInits() == 1)
      ops.push_back(op);
  });
  IRRewriter rewriter(kernel.getContext());
  for (linalg::LinalgOp op : ops) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      continue;
    int64_t outputs = 1, length = 1;
    for (auto [range, iterator] :
         llvm::zip_equal(ranges, op.getIteratorTypesArray()))
      (iterator == utils::IteratorType::reduction ? length : outputs) *= range;
    if (length < kSplitMinLength || outputs >= kSplitMaxOutputs)
      continue;
    int64_t parts = kSplitMaxParts;
    while (parts > 1 && (length % parts || length / parts < kSplitMinChunk))
      parts /= 2;
    if (parts < 2)
      continue;
    unsigned index =
        cast<ShapedType>(op.getDpsInitOperand(0)->get().getType()).getRank();
    rewriter.setInsertionPoint(op);
    (void)linalg::splitReduction(rewriter, op, [&](linalg::LinalgOp) {
      return linalg::SplitReductionOptions{parts, index,
                                           /*innerParallel=*/false};
    });
  }
}

void peelForRegisterTiles(func::FuncOp kernel) {
  SmallVector<linalg::LinalgOp> ops;
  kernel.walk([&](linalg::LinalgOp op) {
    if (peelable(op, kernel))
      ops.push_back(op);
  });
  for (linalg::LinalgOp op : ops) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned, 3> loops = mappedLoops(op, ranges);
    SmallVector<linalg::LinalgOp> pieces = {op};
    for (unsigned d = 0; d < std::min<size_t>(2, loops.size()); ++d) {
      int64_t range = ranges[loops[d]];
      int64_t at = range - range % kPeelMultiple;
      if (range % kPeelMultiple == 0 || at < range - at)
        continue;
      SmallVector<linalg::LinalgOp> next;
      for (linalg::LinalgOp piece : pieces) {
        SmallVector<linalg::LinalgOp> parts = splitAlong(piece, loops[d], at);
        if (parts.empty())
          next.push_back(piece);
        llvm::append_range(next, parts);
      }
      pieces = std::move(next);
    }
  }
}

void registerGpuMappingDialects(DialectRegistry &registry) {
  linalg::registerTransformDialectExtension(registry);
  mlir::gpu::registerTransformDialectExtension(registry);
  scf::registerTransformDialectExtension(registry);
  linalg::registerTilingInterfaceExternalModels(registry);
  registry.insert<transform::TransformDialect, mlir::gpu::GPUDialect,
                  affine::AffineDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, linalg::LinalgDialect,
                  tensor::TensorDialect>();
}

void prepareGpuContext(MLIRContext *ctx) {
  registerKernelLoweringInterfaces(ctx);
  DialectRegistry registry;
  registerGpuMappingDialects(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<transform::TransformDialect, mlir::gpu::GPUDialect,
                   affine::AffineDialect, arith::ArithDialect,
                   math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                   linalg::LinalgDialect>();
}

std::string buildTransformScript(func::FuncOp kernel,
                                 const GpuSchedule &schedule,
                                 const ChipLimits &limits, std::string &why,
                                 std::vector<DispatchNote> &notes,
                                 const ChipNumbers *numbers,
                                 const OwnLaunches *own) {
  std::string steps;
  unsigned index = 0;
  bool nested = false;
  SmallVector<linalg::LinalgOp> singles;
  kernel.walk<WalkOrder::PreOrder>([&](Operation *any) {
    if (isa<mlir::gpu::LaunchOp>(any)) {
      notes.push_back(own ? own->lookup(any) : DispatchNote());
      return WalkResult::skip();
    }
    auto op = dyn_cast<linalg::LinalgOp>(any);
    if (!op)
      return WalkResult::advance();
    if (op->getParentOp() != kernel.getOperation()) {
      nested = true;
      return WalkResult::interrupt();
    }
    op->setAttr(kOpTag, IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                         index));
    notes.push_back({whyOneThread(op)});
    std::optional<OpMapping> m;
    if (notes.back().oneThread.empty()) {
      m = mapOp(op, schedule, limits, why);
      if (!m) {
        why = op->getName().getStringRef().str() + ": " + why;
        return WalkResult::interrupt();
      }
    }
    if (int64_t n = longestThreadLoop(op, m ? &*m : nullptr);
        limits.maxLoopIterations > 0 && n > limits.maxLoopIterations) {
      why = op->getName().getStringRef().str() + ": a loop of " +
            std::to_string(n) +
            " iterations in one thread, and the driver "
            "stops loops after " +
            std::to_string(limits.maxLoopIterations);
      return WalkResult::interrupt();
    }
    if (numbers) {
      DispatchEstimate e =
          estimateDispatch(op, m ? &*m : nullptr, limits, *numbers);
      notes.back().predictedMs = e.ms;
      notes.back().bound = e.bound;
    }
    if (!m) {
      singles.push_back(op);
      steps += singleThreadSteps(index++);
      return WalkResult::advance();
    }
    notes.back().registerOutputs = m->registerOutputs;
    steps += opSteps(index++, *m);
    return WalkResult::advance();
  });
  for (linalg::LinalgOp op : singles)
    wrapInOneWorkgroup(op);
  if (nested)
    why = "a linalg op inside a loop of the kernel";
  if (!why.empty())
    return "";
  return "module attributes {transform.with_named_sequence} {\n"
         "  transform.named_sequence @__transform_main(%root: "
         "!transform.any_op {transform.readonly}) {\n" +
         steps + "    transform.yield\n  }\n}\n";
}

LogicalResult mapKernelToGpu(ModuleOp module, func::FuncOp kernel,
                             llvm::StringRef script, std::string &why) {
  MLIRContext *ctx = module.getContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return success();
  });
  auto fail = [&](llvm::StringRef step) {
    why = (step + (diagnostics.empty() ? "" : ": " + diagnostics)).str();
    return failure();
  };
  OwningOpRef<ModuleOp> transforms = parseSourceString<ModuleOp>(script, ctx);
  if (!transforms)
    return fail("the mapping script does not parse");
  Operation *entry = transforms->lookupSymbol("__transform_main");
  if (!entry || failed(transform::applyTransformNamedSequence(
                    module, entry, *transforms, transform::TransformOptions())))
    return fail("the mapping script failed");
  kernel.walk([](mlir::gpu::LaunchOp launch) { sinkViewsIntoLaunch(launch); });
  PassManager pm(ctx);
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createConvertLinalgToLoopsPass());
  fn.addPass(memref::createFoldMemRefAliasOpsPass());
  fn.addPass(createLowerAffinePass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  // Each thread's outputs in registers, then the unrolled tiles' repeated
  // loads merged and their index arithmetic folded.
  fn.addPass(createRegisterTilesPass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  pm.addPass(createGpuLauchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  if (failed(pm.run(module)))
    return fail("lowering the launches failed");
  for (Operation &op : kernel.getBody().front())
    if (!staysOnHost(&op))
      return fail(
          ("'" + op.getName().getStringRef() + "' stays outside every launch")
              .str());
  return success();
}

} // namespace ign::gpu
