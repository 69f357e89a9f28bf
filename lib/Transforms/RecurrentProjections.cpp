//===- RecurrentProjections.cpp - input projections outside the time loop ===//
//
// A recurrent layer multiplies every step's input by W before the step's
// recurrence; those products do not depend on the state, so they are one
// Gemm over all steps ([seq * batch, in] x W^T + Wb) per direction. As an
// op of its own that Gemm is a kernel of its own: it gets a workgroup
// split over the runtime's threads and weights packed at compile time,
// where inside the recurrent kernel it ran on one thread, read W by
// gathers (40 inputs are no whole vector) and allocated its result on
// every call. The recurrent op keeps R and reads the projections
// (`projected_input`).
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace ign {

#define GEN_PASS_DEF_HOISTRECURRENTPROJECTIONS
#include "ign/Transforms/Passes.h.inc"

namespace {

/// Gates per hidden unit: LSTM 4, GRU 3, RNN 1.
template <typename OpT> constexpr int64_t gatesOf() {
  if constexpr (std::is_same_v<OpT, LSTMOp>)
    return 4;
  else if constexpr (std::is_same_v<OpT, GRUOp>)
    return 3;
  else
    return 1;
}

/// Whether `op`'s projections can move out: static shapes, more than one
/// step, and a form the lowering takes (it refuses the rest, naming why).
template <typename OpT> bool isHoistable(OpT op) {
  if (op.getProjectedInput() || !op.getW())
    return false;
  auto x = dyn_cast<RankedTensorType>(op.getX().getType());
  auto w = dyn_cast<RankedTensorType>(op.getW().getType());
  if (!x || !w || !x.hasStaticShape() || !w.hasStaticShape() ||
      x.getRank() != 3 || w.getRank() != 3 || x.getDimSize(0) < 2)
    return false;
  if (op.getSequenceLens() && op.getDirection() != "forward")
    return false;
  if constexpr (std::is_same_v<OpT, LSTMOp>)
    if (op.getInputForget())
      return false;
  return true;
}

/// Every direction's Wb (B [dirs, 2n] holds Wb, then Rb), [dirs * n]: a
/// weight of its own when B is an f32 constant, else slices joined.
Value inputBiases(OpBuilder &b, Location loc, Value bias, int64_t dirs,
                  int64_t n) {
  auto type = cast<RankedTensorType>(bias.getType());
  auto resultType = RankedTensorType::get({dirs * n}, type.getElementType());
  if (auto values = constantFloats(bias);
      values && type.getElementType().isF32()) {
    std::vector<float> wb;
    for (int64_t d = 0; d < dirs; ++d)
      wb.insert(wb.end(), values->begin() + d * 2 * n,
                values->begin() + d * 2 * n + n);
    return makeWeight(b, loc, resultType, std::move(wb),
                      weightName(bias, "_input"));
  }
  Value wb = b.createOrFold<SliceOp>(loc, bias, b.getI64ArrayAttr({0, 0}),
                                     b.getI64ArrayAttr({dirs, n}),
                                     b.getI64ArrayAttr({1, 1}));
  return b.createOrFold<ReshapeOp>(loc, wb, b.getI64ArrayAttr({dirs * n}));
}

/// W [dirs, n, in] as the [dirs * n, in] matrix it is stored as: a weight
/// of its own when it is an f32 constant (later rewrites lay out only
/// constants at compile time: a reshaped one was read by gathers), else a
/// reshape.
Value asMatrix(OpBuilder &b, Location loc, Value w, int64_t rows,
               int64_t cols) {
  auto type = cast<RankedTensorType>(w.getType());
  if (auto values = constantFloats(w); values && type.getElementType().isF32())
    return makeWeight(
        b, loc, RankedTensorType::get({rows, cols}, type.getElementType()),
        std::move(*values), weightName(w, "_matrix"));
  return b.createOrFold<ReshapeOp>(loc, w, b.getI64ArrayAttr({rows, cols}));
}

/// `x` [seq, batch, in] . W^T + Wb of every direction at once (W [dirs, n,
/// in] is [dirs * n, in] as stored) -> [seq, batch, dirs * n].
template <typename OpT> Value project(OpBuilder &b, OpT op, int64_t n) {
  Location loc = op.getLoc();
  auto x = cast<RankedTensorType>(op.getX().getType());
  int64_t seq = x.getDimSize(0), batch = x.getDimSize(1), in = x.getDimSize(2);
  int64_t dirs = op.getDirection() == "bidirectional" ? 2 : 1;
  Value rows = b.createOrFold<ReshapeOp>(loc, op.getX(),
                                         b.getI64ArrayAttr({seq * batch, in}));
  Value w = asMatrix(b, loc, op.getW(), dirs * n, in);
  Value bias = op.getB() ? inputBiases(b, loc, op.getB(), dirs, n) : Value();
  Value y = b.create<GemmOp>(loc, rows, w, bias, b.getF32FloatAttr(1),
                             b.getF32FloatAttr(1), b.getBoolAttr(false),
                             b.getBoolAttr(true));
  return b.createOrFold<ReshapeOp>(loc, y,
                                   b.getI64ArrayAttr({seq, batch, dirs * n}));
}

template <typename OpT> void hoist(OpT op) {
  OpBuilder b(op);
  Value projected =
      project(b, op, gatesOf<OpT>() * int64_t(op.getHiddenSize()));
  op.getXMutable().assign(projected);
  op.getWMutable().clear();
  op.setProjectedInput(true);
}

/// One step of a recurrent cell unrolled in the graph (torch's LSTMCell in
/// a Python loop): `gemm(gather(x, t, axis 0), W, b)` with a scalar step
/// index t into x [steps, m, k]. Steps that share x, W, b and the
/// attributes are one Gemm over all of x.
struct UnrolledStep {
  GemmOp gemm;
  GatherOp gather;
};

/// `gemm` as such a step, or nullopt.
std::optional<UnrolledStep> unrolledStep(GemmOp gemm) {
  auto gather = gemm.getA().getDefiningOp<GatherOp>();
  if (!gather || gemm.getTransA() || gather.getAxis() != 0)
    return std::nullopt;
  auto x = dyn_cast<RankedTensorType>(gather.getData().getType());
  auto index = dyn_cast<RankedTensorType>(gather.getIndices().getType());
  auto out = dyn_cast<RankedTensorType>(gemm.getType());
  if (!x || !index || !out || !x.hasStaticShape() || !out.hasStaticShape() ||
      x.getRank() != 3 || index.getRank() != 0 || out.getRank() != 2 ||
      out.getDimSize(0) != x.getDimSize(1))
    return std::nullopt;
  // A bias must broadcast over every step's rows alike: [n] or [1, n].
  if (Value c = gemm.getC()) {
    auto type = dyn_cast<RankedTensorType>(c.getType());
    if (!type || type.getRank() > 2 ||
        (type.getRank() == 2 && type.getDimSize(0) != 1))
      return std::nullopt;
  }
  return UnrolledStep{gemm, gather};
}

/// The steps of one projection: the first (in block order) gives the
/// shared operands; all in one block.
void hoistUnrolledSteps(MutableArrayRef<UnrolledStep> steps) {
  GemmOp first = steps.front().gemm;
  Value x = steps.front().gather.getData();
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t count = xType.getDimSize(0), m = xType.getDimSize(1),
          k = xType.getDimSize(2);
  auto outType = cast<RankedTensorType>(first.getType());
  int64_t n = outType.getDimSize(1);
  OpBuilder b(first);
  Location loc = first.getLoc();
  Value rows =
      b.createOrFold<ReshapeOp>(loc, x, b.getI64ArrayAttr({count * m, k}));
  Value all = b.create<GemmOp>(
      loc, RankedTensorType::get({count * m, n}, outType.getElementType()),
      rows, first.getB(), first.getC(), first.getAlphaAttr(),
      first.getBetaAttr(), first.getTransAAttr(), first.getTransBAttr());
  Value perStep =
      b.createOrFold<ReshapeOp>(loc, all, b.getI64ArrayAttr({count, m, n}));
  for (UnrolledStep &step : steps) {
    b.setInsertionPoint(step.gemm);
    Value row =
        b.create<GatherOp>(step.gemm.getLoc(), outType, perStep,
                           step.gather.getIndices(), b.getI64IntegerAttr(0));
    step.gemm.getResult().replaceAllUsesWith(row);
    step.gemm.erase();
    if (step.gather->use_empty())
      step.gather.erase();
  }
}

/// Unrolled recurrent cells: steps that share x, W, bias and attributes
/// become one Gemm over x, each step's product a row gather of it, where
/// they cover at least half of x's steps (each step was a matrix-vector
/// product that streamed all of W: CRNN's 4096 -> 400 projection, 40 steps
/// of 6.5 MB, 4.6 of its 14.4 ms).
void hoistUnrolledCells(func::FuncOp func) {
  llvm::MapVector<std::tuple<Value, Value, Value, Attribute>,
                  SmallVector<UnrolledStep>>
      groups;
  func.walk([&](GemmOp gemm) {
    if (auto step = unrolledStep(gemm))
      groups[{step->gather.getData(), gemm.getB(), gemm.getC(),
              gemm->getAttrDictionary()}]
          .push_back(*step);
  });
  for (auto &[key, steps] : groups) {
    int64_t count =
        cast<RankedTensorType>(std::get<0>(key).getType()).getDimSize(0);
    Block *block = steps.front().gemm->getBlock();
    if (steps.size() < 2 || int64_t(steps.size()) * 2 < count ||
        llvm::any_of(steps, [&](const UnrolledStep &s) {
          return s.gemm->getBlock() != block;
        }))
      continue;
    llvm::sort(steps, [](const UnrolledStep &a, const UnrolledStep &b) {
      return a.gemm->isBeforeInBlock(b.gemm);
    });
    hoistUnrolledSteps(steps);
  }
}

} // namespace

void hoistRecurrentProjections(func::FuncOp func) {
  hoistUnrolledCells(func);
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    bool hoistable =
        llvm::TypeSwitch<Operation *, bool>(op)
            .Case<LSTMOp, GRUOp, RNNOp>([](auto r) { return isHoistable(r); })
            .Default(false);
    if (hoistable)
      ops.push_back(op);
  });
  for (Operation *op : ops)
    llvm::TypeSwitch<Operation *>(op).Case<LSTMOp, GRUOp, RNNOp>(
        [](auto r) { hoist(r); });
}

namespace {
struct HoistRecurrentProjectionsPass
    : public impl::HoistRecurrentProjectionsBase<
          HoistRecurrentProjectionsPass> {
  void runOnOperation() override { hoistRecurrentProjections(getOperation()); }
};
} // namespace

} // namespace ign
