//===- LowerRecurrent.cpp - LSTM, GRU and RNN as a loop over time ---------===//
//
// Each direction is an scf.for over time carrying the hidden (and cell)
// state as tensors; the cell is written with ign ops (gemm, split,
// activations), which the same conversion then lowers. The input
// projections of all time steps are one GEMM before the loop
// ([seq * batch, in] x W^T), and each step computes h x R^T: both are Gemms
// with transB on the weights as stored ([gates * hidden, in]), dot
// products with their contiguous rows (the host's dot-product tiles; a
// weight transposed per run was gathered element by element, and a
// transposed R read in pieces of rows KB apart at every step). Gate orders
// follow ONNX: LSTM i, o, f, c; GRU z, r, h.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace ign::lowering {
namespace {

/// Builds ign ops for one recurrent cell with static shapes.
struct CellBuilder {
  OpBuilder &b;
  Location loc;
  Type et;

  RankedTensorType typeOf(Value v) { return tensorType(v); }

  template <typename OpT> Value unary(Value x) {
    return b.create<OpT>(loc, typeOf(x), x);
  }
  template <typename OpT> Value binary(Value x, Value y) {
    auto shape = *broadcastShapes(typeOf(x).getShape(), typeOf(y).getShape());
    return b.create<OpT>(loc, RankedTensorType::get(shape, et), x, y);
  }
  Value constant(double v) {
    auto t = RankedTensorType::get({}, et);
    return b.create<ConstantOp>(
        loc, t, DenseElementsAttr::get(t, b.getFloatAttr(et, v)));
  }
  /// x . w^T (+ bias): x [batch, in], w [gates*hidden, in] as stored.
  Value linearByRows(Value x, Value w, Value bias) {
    int64_t batch = typeOf(x).getDimSize(0), n = typeOf(w).getDimSize(0);
    auto outType = RankedTensorType::get({batch, n}, et);
    return b.create<GemmOp>(loc, outType, x, w, bias, b.getF32FloatAttr(1),
                            b.getF32FloatAttr(1), b.getBoolAttr(false),
                            b.getBoolAttr(true));
  }
  /// x . w^T (+ bias) for every time step at once: x [seq, batch, in],
  /// w [n, in] as stored -> [seq, batch, n].
  Value projectAll(Value x, Value w, Value bias) {
    auto t = typeOf(x);
    int64_t seq = t.getDimSize(0), batch = t.getDimSize(1);
    int64_t in = t.getDimSize(2), n = typeOf(w).getDimSize(0);
    Value rows =
        b.create<ReshapeOp>(loc, RankedTensorType::get({seq * batch, in}, et),
                            x, b.getI64ArrayAttr({seq * batch, in}));
    return b.create<ReshapeOp>(loc, RankedTensorType::get({seq, batch, n}, et),
                               linearByRows(rows, w, bias),
                               b.getI64ArrayAttr({seq, batch, n}));
  }
  /// GRU's R [3*hidden, hidden] as each gate's R_g [hidden, hidden], and
  /// its bias Rb as each gate's part (null when there is none).
  void gateParts(Value r, Value rb, int64_t hidden, SmallVectorImpl<Value> &rs,
                 SmallVectorImpl<Value> &rbParts) {
    for (int k = 0; k < 3; ++k) {
      SmallVector<OpFoldResult> off{b.getIndexAttr(k * hidden),
                                    b.getIndexAttr(0)},
          sz{b.getIndexAttr(hidden), b.getIndexAttr(hidden)},
          st(2, b.getIndexAttr(1));
      rs.push_back(b.create<tensor::ExtractSliceOp>(
          loc, RankedTensorType::get({hidden, hidden}, et), r, off, sz, st));
      if (!rb) {
        rbParts.push_back(Value());
        continue;
      }
      SmallVector<OpFoldResult> o1{b.getIndexAttr(k * hidden)},
          s1{b.getIndexAttr(hidden)}, t1{b.getIndexAttr(1)};
      rbParts.push_back(b.create<tensor::ExtractSliceOp>(
          loc, RankedTensorType::get({hidden}, et), rb, o1, s1, t1));
    }
  }
  SmallVector<Value> split(Value x, int64_t parts) {
    auto t = typeOf(x);
    int64_t size = t.getDimSize(1) / parts;
    SmallVector<Type> types(parts,
                            RankedTensorType::get({t.getDimSize(0), size}, et));
    SmallVector<int64_t> sizes(parts, size);
    auto op = b.create<SplitOp>(loc, types, x, 1, b.getI64ArrayAttr(sizes));
    return SmallVector<Value>(op.getResults());
  }
  /// ONNX recurrent activation by name, with optional alpha/beta.
  FailureOr<Value> activation(StringRef name, Value x,
                              std::optional<double> alpha,
                              std::optional<double> beta) {
    if (name == "Sigmoid")
      return unary<SigmoidOp>(x);
    if (name == "Tanh")
      return unary<TanhOp>(x);
    if (name == "Relu")
      return unary<ReluOp>(x);
    if (name == "Softsign")
      return unary<SoftsignOp>(x);
    if (name == "Softplus")
      return unary<SoftplusOp>(x);
    if (name == "Affine")
      return binary<AddOp>(binary<MulOp>(x, constant(alpha.value_or(1))),
                           constant(beta.value_or(0)));
    if (name == "ScaledTanh")
      return binary<MulOp>(
          unary<TanhOp>(binary<MulOp>(x, constant(beta.value_or(1)))),
          constant(alpha.value_or(1)));
    if (name == "LeakyRelu")
      return b
          .create<LeakyReluOp>(loc, typeOf(x), x,
                               b.getF32FloatAttr(alpha.value_or(0.01)))
          .getResult();
    if (name == "ThresholdedRelu")
      return b
          .create<ThresholdedReluOp>(loc, typeOf(x), x,
                                     b.getF32FloatAttr(alpha.value_or(1)))
          .getResult();
    if (name == "HardSigmoid")
      return b
          .create<HardSigmoidOp>(loc, typeOf(x), x,
                                 b.getF32FloatAttr(alpha.value_or(0.2)),
                                 b.getF32FloatAttr(beta.value_or(0.5)))
          .getResult();
    if (name == "Elu")
      return b
          .create<EluOp>(loc, typeOf(x), x,
                         b.getF32FloatAttr(alpha.value_or(1)))
          .getResult();
    return failure();
  }
};

/// A 2-D slice [index] of a 3-D tensor along dim 0: [a, b, c] -> [b, c].
Value slice3(OpBuilder &b, Location loc, Value t, OpFoldResult index) {
  auto type = tensorType(t);
  SmallVector<OpFoldResult> off{index, b.getIndexAttr(0), b.getIndexAttr(0)},
      sz{b.getIndexAttr(1), b.getIndexAttr(type.getDimSize(1)),
         b.getIndexAttr(type.getDimSize(2))},
      st(3, b.getIndexAttr(1));
  auto resultType = RankedTensorType::get(
      {type.getDimSize(1), type.getDimSize(2)}, type.getElementType());
  return b.create<tensor::ExtractSliceOp>(loc, resultType, t, off, sz, st);
}

/// An ONNX recurrent activation with its alpha and beta, when it takes them.
struct Act {
  StringRef name;
  std::optional<double> alpha, beta;
};

/// The op's activations, each with its parameters: activation alpha/beta are
/// consumed in order by the activations that take them (ONNX lists them that
/// way).
template <typename OpT> SmallVector<Act> activationsOf(OpT op) {
  SmallVector<StringRef> acts;
  for (Attribute a : op.getActivations())
    acts.push_back(cast<StringAttr>(a).getValue());
  SmallVector<double> alphas, betas;
  for (Attribute a : op.getActivationAlpha())
    alphas.push_back(cast<FloatAttr>(a).getValueAsDouble());
  for (Attribute a : op.getActivationBeta())
    betas.push_back(cast<FloatAttr>(a).getValueAsDouble());
  size_t paramIndex = 0;
  auto paramsFor = [&](StringRef name) {
    bool takesAlpha = name == "Affine" || name == "ScaledTanh" ||
                      name == "LeakyRelu" || name == "ThresholdedRelu" ||
                      name == "HardSigmoid" || name == "Elu";
    bool takesBeta =
        name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid";
    std::optional<double> a, bt;
    if (takesAlpha && paramIndex < alphas.size())
      a = alphas[paramIndex];
    if (takesBeta && paramIndex < betas.size())
      bt = betas[paramIndex];
    if (takesAlpha || takesBeta)
      ++paramIndex;
    return std::make_pair(a, bt);
  };
  SmallVector<Act> activations;
  for (StringRef name : acts) {
    auto [a, bt] = paramsFor(name);
    activations.push_back({name, a, bt});
  }
  return activations;
}

/// One direction's slices of the op's weights and initial states.
struct DirectionInputs {
  Value w, r, wb, rb, h0, c0;
  SmallVector<Value> peep;
};

/// Builds the loops over time of one LSTM, GRU or RNN op, one direction
/// after the other.
template <typename OpT> class RecurrentBuilder {
public:
  static constexpr bool isLSTM = std::is_same_v<OpT, LSTMOp>;
  static constexpr bool isGRU = std::is_same_v<OpT, GRUOp>;
  static constexpr int64_t gates = isLSTM ? 4 : isGRU ? 3 : 1;
  static constexpr size_t actsPerDir = isLSTM ? 3 : isGRU ? 2 : 1;

  RecurrentBuilder(OpT op, PatternRewriter &b, ArrayRef<Act> activations)
      : op(op), b(b), loc(op.getLoc()), activations(activations),
        et(tensorType(op.getX()).getElementType()), cb{b, loc, et} {
    auto xt = tensorType(op.getX());
    seq = xt.getDimSize(0);
    batch = xt.getDimSize(1);
    hidden = op.getHiddenSize();
    dirs = op.getDirection() == "bidirectional" ? 2 : 1;
    if (auto c = op.getClipAttr())
      clip = c.getValueAsDouble();
    stateType = RankedTensorType::get({batch, hidden}, et);
  }

  /// The op's results: Y, then the last hidden (and cell) state of each
  /// direction.
  SmallVector<Value> build() {
    Value seqLens = op.getSequenceLens();
    auto yType = rtype(op);
    Value y = filled(b, loc, yType, scalar(b, loc, et, 0));
    SmallVector<Value> lastH, lastC;
    for (int64_t d = 0; d < dirs; ++d) {
      bool reverse = op.getDirection() == "reverse" || d == 1;
      DirectionInputs in = sliceDirection(d);
      // Once per direction: the input projections of every step (GRU: R
      // as each gate's part).
      Value xw = op.getProjectedInput() ? projectedSlice(d)
                                        : cb.projectAll(op.getX(), in.w, in.wb);
      SmallVector<Value> rs, rbParts;
      if constexpr (isGRU)
        cb.gateParts(in.r, in.rb, hidden, rs, rbParts);
      else
        rs.push_back(in.r);
      Value lb = b.create<arith::ConstantIndexOp>(loc, 0);
      Value ub = b.create<arith::ConstantIndexOp>(loc, seq);
      Value step = b.create<arith::ConstantIndexOp>(loc, 1);
      SmallVector<Value> inits{in.h0, y};
      if constexpr (isLSTM)
        inits.push_back(in.c0);
      auto loop = b.create<scf::ForOp>(loc, lb, ub, step, inits);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        buildTimeStep(loop, d, reverse, seqLens, xw, rs, in.rb, rbParts,
                      in.peep);
      }
      lastH.push_back(loop.getResult(0));
      y = loop.getResult(1);
      if constexpr (isLSTM)
        lastC.push_back(loop.getResult(2));
    }
    SmallVector<Value> results{y, stack(lastH)};
    if constexpr (isLSTM)
      results.push_back(stack(lastC));
    return results;
  }

  /// The op's results as one scf.forall over (time step, direction x part)
  /// whose iterations of one step are independent: part p of a direction
  /// computes hidden units [p * units, (p + 1) * units) from the whole
  /// previous state, which it reads from Y (from initial_h at the first
  /// step); the cell state and Y_h are updated in place. The function is
  /// marked kTimeStepsAttr: the host runs the forall's iterations step by
  /// step, each step's parts on the runtime's threads
  /// (docs/host-schedule.md).
  SmallVector<Value> buildStepped(int64_t parts) {
    auto statesType = RankedTensorType::get({dirs, batch, hidden}, et);
    auto empty = [&](RankedTensorType t) -> Value {
      return b.create<tensor::EmptyOp>(loc, t.getShape(), et);
    };
    SmallVector<Value> outs{empty(rtype(op)), empty(statesType)};
    if constexpr (isLSTM)
      outs.push_back(empty(statesType));
    SmallVector<OpFoldResult> counts{b.getIndexAttr(seq),
                                     b.getIndexAttr(dirs * parts)};
    auto forall = b.create<scf::ForallOp>(loc, counts, outs, std::nullopt);
    // On the function: canonicalization rebuilds a forall without its
    // attributes when it drops an unused output.
    if (auto kernel = op->template getParentOfType<func::FuncOp>())
      kernel->setAttr(kTimeStepsAttr, b.getI64IntegerAttr(seq));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    SteppedPart part = partOf(forall, parts);
    auto [newH, newC] = steppedCell(part, forall.getRegionIterArgs());
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    auto args = forall.getRegionIterArgs();
    insertPart(newH, args[0], {part.time, part.dir}, part);
    insertPart(newH, args[1], {part.dir}, part);
    if constexpr (isLSTM)
      insertPart(newC, args[2], {part.dir}, part);
    return SmallVector<Value>(forall.getResults());
  }

private:
  /// An iteration of the stepped forall: direction, time index (reversed
  /// for a reverse direction), the previous step's time index (any valid
  /// one at the first step), whether it is the first step, and the offset
  /// of its hidden units.
  struct SteppedPart {
    Value dir, time, prevTime, first, unitOffset;
    int64_t units;
  };

  SteppedPart partOf(scf::ForallOp forall, int64_t parts) {
    auto c = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIndexOp>(loc, v);
    };
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
      return b.create<arith::CmpIOp>(loc, p, x, y);
    };
    Value t = forall.getInductionVar(0), q = forall.getInductionVar(1);
    SteppedPart part;
    part.units = hidden / parts;
    part.dir = b.create<arith::DivUIOp>(loc, q, c(parts));
    part.unitOffset = b.create<arith::MulIOp>(
        loc, b.create<arith::RemUIOp>(loc, q, c(parts)), c(part.units));
    Value reverse = dirs == 2 ? cmp(arith::CmpIPredicate::eq, part.dir, c(1))
                              : b.create<arith::ConstantIntOp>(
                                    loc, op.getDirection() == "reverse", 1);
    Value back = b.create<arith::SubIOp>(loc, c(seq - 1), t);
    part.time = b.create<arith::SelectOp>(loc, reverse, back, t);
    part.first = cmp(arith::CmpIPredicate::eq, t, c(0));
    Value prev = b.create<arith::SelectOp>(
        loc, reverse, b.create<arith::AddIOp>(loc, part.time, c(1)),
        b.create<arith::SubIOp>(loc, part.time, c(1)));
    part.prevTime = b.create<arith::SelectOp>(loc, part.first, part.time, prev);
    return part;
  }

  /// A slice of `t` at `offsets` (index values or attributes) of `sizes`,
  /// as a tensor of shape `kept` (the slice with its unit dims dropped).
  Value sliceAt(Value t, ArrayRef<OpFoldResult> offsets,
                ArrayRef<int64_t> sizes, ArrayRef<int64_t> kept) {
    SmallVector<OpFoldResult> sz, st(sizes.size(), b.getIndexAttr(1));
    for (int64_t s : sizes)
      sz.push_back(b.getIndexAttr(s));
    return b.create<tensor::ExtractSliceOp>(
        loc, RankedTensorType::get(kept, et), t, offsets, sz, st);
  }

  /// `first` ? `initial` : `later` (tensors of one type).
  Value atFirstStep(Value first, Value initial, Value later) {
    auto condType = RankedTensorType::get({}, b.getI1Type());
    Value cond = b.create<tensor::FromElementsOp>(loc, condType, first);
    return b.create<SelectOp>(loc, cb.typeOf(later), cond, initial, later);
  }

  /// The part's new hidden state [batch, units] and (LSTM) cell state.
  std::pair<Value, Value> steppedCell(const SteppedPart &part,
                                      ValueRange outs) {
    OpFoldResult zero = b.getIndexAttr(0);
    int64_t u = part.units, gh = gates * hidden;
    auto add = [&](Value x, int64_t v) -> Value {
      return b.create<arith::AddIOp>(loc, x,
                                     b.create<arith::ConstantIndexOp>(loc, v));
    };
    // The whole previous state.
    Value h0 = op.getInitialH()
                   ? sliceAt(op.getInitialH(), {part.dir, zero, zero},
                             {1, batch, hidden}, {batch, hidden})
                   : filled(b, loc, stateType, scalar(b, loc, et, 0));
    Value h =
        atFirstStep(part.first, h0,
                    sliceAt(outs[0], {part.prevTime, part.dir, zero, zero},
                            {1, 1, batch, hidden}, {batch, hidden}));
    // Each gate's input projection, R rows and R bias for the part.
    Value dirGates = b.create<arith::MulIOp>(
        loc, part.dir, b.create<arith::ConstantIndexOp>(loc, gh));
    SmallVector<Value> xs, rs, rbs;
    for (int64_t g = 0; g < gates; ++g) {
      Value unit = add(part.unitOffset, g * hidden);
      xs.push_back(
          sliceAt(op.getX(),
                  {part.time, zero,
                   b.create<arith::AddIOp>(loc, dirGates, unit).getResult()},
                  {1, batch, u}, {batch, u}));
      rs.push_back(sliceAt(op.getR(), {part.dir, unit, zero}, {1, u, hidden},
                           {u, hidden}));
      rbs.push_back(
          op.getB() ? sliceAt(op.getB(), {part.dir, add(unit, gh)}, {1, u}, {u})
                    : Value());
    }
    ArrayRef<Act> acts = activations.take_front(actsPerDir);
    if constexpr (isGRU) {
      Value hOwn = sliceAt(h, {zero, part.unitOffset}, {batch, u}, {batch, u});
      return {gruCell(acts, xs, h, hOwn, rs, rbs), Value()};
    }
    SmallVector<Value> pre;
    for (int64_t g = 0; g < gates; ++g)
      pre.push_back(cb.binary<AddOp>(xs[g], cb.linearByRows(h, rs[g], rbs[g])));
    if constexpr (isLSTM) {
      auto cType = RankedTensorType::get({batch, u}, et);
      Value c0 =
          op.getInitialC()
              ? sliceAt(op.getInitialC(), {part.dir, zero, part.unitOffset},
                        {1, batch, u}, {batch, u})
              : filled(b, loc, cType, scalar(b, loc, et, 0));
      Value c = atFirstStep(part.first, c0,
                            sliceAt(outs[2], {part.dir, zero, part.unitOffset},
                                    {1, batch, u}, {batch, u}));
      SmallVector<Value> peep;
      if (Value p = op.getPeepholes())
        for (int k = 0; k < 3; ++k)
          peep.push_back(sliceAt(
              p, {part.dir, add(part.unitOffset, k * hidden)}, {1, u}, {u}));
      return lstmGates(acts, pre, c, peep);
    }
    return {act(acts[0], pre[0]), Value()};
  }

  /// Writes the part's `state` [batch, units] into `into` at the leading
  /// indices `lead`, the part's units of the last dim.
  void insertPart(Value state, Value into, ArrayRef<Value> lead,
                  const SteppedPart &part) {
    auto type = cast<RankedTensorType>(into.getType());
    SmallVector<OpFoldResult> off(lead.begin(), lead.end()), sz, st;
    for (size_t i = 0; i < lead.size(); ++i)
      sz.push_back(b.getIndexAttr(1));
    off.append({b.getIndexAttr(0), part.unitOffset});
    sz.append({b.getIndexAttr(batch), b.getIndexAttr(part.units)});
    st.assign(type.getRank(), b.getIndexAttr(1));
    b.create<tensor::ParallelInsertSliceOp>(loc, state, into, off, sz, st);
  }

  /// Direction d's part of a projected X: [seq, batch, gates * hidden].
  Value projectedSlice(int64_t d) {
    int64_t n = gates * hidden;
    SmallVector<OpFoldResult> off{b.getIndexAttr(0), b.getIndexAttr(0),
                                  b.getIndexAttr(d * n)},
        sz{b.getIndexAttr(seq), b.getIndexAttr(batch), b.getIndexAttr(n)},
        st(3, b.getIndexAttr(1));
    return b.create<tensor::ExtractSliceOp>(
        loc, RankedTensorType::get({seq, batch, n}, et), op.getX(), off, sz,
        st);
  }

  /// Direction d's W (unless X is projected), R, biases, initial states and
  /// (LSTM) peepholes.
  DirectionInputs sliceDirection(int64_t d) {
    DirectionInputs in;
    if (Value w = op.getW())
      in.w = slice3(b, loc, w, b.getIndexAttr(d));
    in.r = slice3(b, loc, op.getR(), b.getIndexAttr(d));
    if (Value bias = op.getB()) {
      // B [dirs, 2*gates*hidden]: Wb then Rb.
      SmallVector<OpFoldResult> off{b.getIndexAttr(d), b.getIndexAttr(0)},
          sz{b.getIndexAttr(1), b.getIndexAttr(gates * hidden)},
          st(2, b.getIndexAttr(1));
      auto one = RankedTensorType::get({gates * hidden}, et);
      in.wb = b.create<tensor::ExtractSliceOp>(loc, one, bias, off, sz, st);
      off[1] = b.getIndexAttr(gates * hidden);
      in.rb = b.create<tensor::ExtractSliceOp>(loc, one, bias, off, sz, st);
    }
    in.h0 = op.getInitialH()
                ? slice3(b, loc, op.getInitialH(), b.getIndexAttr(d))
                : filled(b, loc, stateType, scalar(b, loc, et, 0));
    if constexpr (isLSTM) {
      in.c0 = op.getInitialC()
                  ? slice3(b, loc, op.getInitialC(), b.getIndexAttr(d))
                  : filled(b, loc, stateType, scalar(b, loc, et, 0));
      if (Value p = op.getPeepholes()) {
        // P [dirs, 3*hidden]: i, o, f.
        for (int k = 0; k < 3; ++k) {
          SmallVector<OpFoldResult> off{b.getIndexAttr(d),
                                        b.getIndexAttr(k * hidden)},
              sz{b.getIndexAttr(1), b.getIndexAttr(hidden)},
              st(2, b.getIndexAttr(1));
          in.peep.push_back(b.create<tensor::ExtractSliceOp>(
              loc, RankedTensorType::get({hidden}, et), p, off, sz, st));
        }
      }
    }
    return in;
  }

  /// The body of direction d's loop over time: one cell step, Y's row, and
  /// the yield of the new states.
  void buildTimeStep(scf::ForOp loop, int64_t d, bool reverse, Value seqLens,
                     Value xw, ArrayRef<Value> rs, Value rb,
                     ArrayRef<Value> rbParts, ArrayRef<Value> peep) {
    Value t = loop.getInductionVar();
    Value tt =
        reverse ? Value(b.create<arith::SubIOp>(
                      loc, b.create<arith::ConstantIndexOp>(loc, seq - 1), t))
                : t;
    Value h = loop.getRegionIterArgs()[0];
    Value yAcc = loop.getRegionIterArgs()[1];
    Value xProj = slice3(b, loc, xw, tt);
    ArrayRef<Act> acts = activations.slice(d * actsPerDir, actsPerDir);
    Value newH, newC;
    if constexpr (isLSTM) {
      std::tie(newH, newC) = lstmCell(
          acts, xProj, h, loop.getRegionIterArgs()[2], rs[0], rb, peep);
    } else if constexpr (isGRU) {
      newH = gruCell(acts, cb.split(xProj, 3), h, h, rs, rbParts);
    } else {
      Value pre = cb.binary<AddOp>(xProj, cb.linearByRows(h, rs[0], rb));
      newH = act(acts[0], pre);
    }
    Value yRow = newH;
    if (seqLens) {
      // Entries whose sequence ended keep their state and output 0.
      Value mask = unfinished(seqLens, t);
      auto keep = [&](Value fresh, Value old) -> Value {
        return b.create<SelectOp>(loc, cb.typeOf(fresh), mask, fresh, old);
      };
      Value zeros = filled(b, loc, stateType, scalar(b, loc, et, 0));
      yRow = keep(newH, zeros);
      newH = keep(newH, h);
      if constexpr (isLSTM)
        newC = keep(newC, loop.getRegionIterArgs()[2]);
    }
    // Y[tt, d] = the new hidden state (0 past a sequence's end).
    SmallVector<OpFoldResult> off{tt, b.getIndexAttr(d), b.getIndexAttr(0),
                                  b.getIndexAttr(0)},
        sz{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(batch),
           b.getIndexAttr(hidden)},
        st(4, b.getIndexAttr(1));
    Value newY = b.create<tensor::InsertSliceOp>(loc, yRow, yAcc, off, sz, st);
    SmallVector<Value> yields{newH, newY};
    if constexpr (isLSTM)
      yields.push_back(newC);
    b.create<scf::YieldOp>(loc, yields);
  }

  /// An activation of the cell, on its input clipped when the op has a clip.
  Value act(const Act &a, Value v) {
    if (clip)
      v = b.create<ClipOp>(loc, cb.typeOf(v), v, b.getF64FloatAttr(-*clip),
                           b.getF64FloatAttr(*clip));
    return *cb.activation(a.name, v, a.alpha, a.beta);
  }

  /// LSTM's step (activations f, g, h): the new hidden and cell states.
  std::pair<Value, Value> lstmCell(ArrayRef<Act> acts, Value xProj, Value h,
                                   Value c, Value r, Value rb,
                                   ArrayRef<Value> peep) {
    Value pre = cb.binary<AddOp>(xProj, cb.linearByRows(h, r, rb));
    return lstmGates(acts, cb.split(pre, 4), c, peep);
  }

  /// LSTM's step from its gates' pre-activations (i, o, f, c).
  std::pair<Value, Value> lstmGates(ArrayRef<Act> acts, ArrayRef<Value> g,
                                    Value c, ArrayRef<Value> peep) {
    const Act &f = acts[0];
    Value gi = g[0], go = g[1], gf = g[2], gc = g[3];
    if (!peep.empty()) {
      gi = cb.binary<AddOp>(gi, cb.binary<MulOp>(c, peep[0]));
      gf = cb.binary<AddOp>(gf, cb.binary<MulOp>(c, peep[2]));
    }
    Value it = act(f, gi), ft = act(f, gf);
    Value ct = act(acts[1], gc);
    Value newC =
        cb.binary<AddOp>(cb.binary<MulOp>(ft, c), cb.binary<MulOp>(it, ct));
    if (!peep.empty())
      go = cb.binary<AddOp>(go, cb.binary<MulOp>(newC, peep[1]));
    Value ot = act(f, go);
    Value hc = *cb.activation(acts[2].name, newC, acts[2].alpha, acts[2].beta);
    return {cb.binary<MulOp>(ot, hc), newC};
  }

  /// GRU's step (activations f, g): the new hidden state of the units
  /// `hOwn` holds (of all of `h`'s with a whole R), from each gate's input
  /// projection `gx` (z, r, h) and R part `rs`.
  Value gruCell(ArrayRef<Act> acts, ArrayRef<Value> gx, Value h, Value hOwn,
                ArrayRef<Value> rs, ArrayRef<Value> rbParts) {
    const Act &f = acts[0];
    Value zt =
        act(f, cb.binary<AddOp>(gx[0], cb.linearByRows(h, rs[0], rbParts[0])));
    Value rt =
        act(f, cb.binary<AddOp>(gx[1], cb.linearByRows(h, rs[1], rbParts[1])));
    Value hh;
    if (op.getLinearBeforeReset())
      hh = cb.binary<AddOp>(
          gx[2], cb.binary<MulOp>(rt, cb.linearByRows(h, rs[2], rbParts[2])));
    else
      hh = cb.binary<AddOp>(
          gx[2], cb.linearByRows(cb.binary<MulOp>(rt, h), rs[2], rbParts[2]));
    Value ht = act(acts[1], hh);
    Value one = cb.constant(1);
    return cb.binary<AddOp>(cb.binary<MulOp>(cb.binary<SubOp>(one, zt), ht),
                            cb.binary<MulOp>(zt, hOwn));
  }

  /// [batch, 1] booleans: whether each entry's sequence is still running at
  /// step t.
  Value unfinished(Value seqLens, Value t) {
    auto maskType = RankedTensorType::get({batch, 1}, b.getI1Type());
    MLIRContext *ctx = b.getContext();
    Value maskInit =
        b.create<tensor::EmptyOp>(loc, maskType.getShape(), b.getI1Type());
    return b
        .create<linalg::GenericOp>(
            loc, TypeRange{maskType}, ValueRange{seqLens}, ValueRange{maskInit},
            SmallVector<AffineMap>{
                AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx),
                AffineMap::getMultiDimIdentityMap(2, ctx)},
            iterators(2),
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value len = a[0];
              Value now = nb.create<arith::IndexCastOp>(nl, len.getType(), t);
              nb.create<linalg::YieldOp>(
                  nl, Value(nb.create<arith::CmpIOp>(
                          nl, arith::CmpIPredicate::slt, now, len)));
            })
        .getResult(0);
  }

  /// The directions' states stacked: [dirs, batch, hidden].
  Value stack(ArrayRef<Value> states) {
    auto type = RankedTensorType::get({dirs, batch, hidden}, et);
    Value acc = b.create<tensor::EmptyOp>(loc, type.getShape(), et);
    for (int64_t d = 0; d < dirs; ++d) {
      SmallVector<OpFoldResult> off{b.getIndexAttr(d), b.getIndexAttr(0),
                                    b.getIndexAttr(0)},
          sz{b.getIndexAttr(1), b.getIndexAttr(batch), b.getIndexAttr(hidden)},
          st(3, b.getIndexAttr(1));
      acc = b.create<tensor::InsertSliceOp>(loc, states[d], acc, off, sz, st);
    }
    return acc;
  }

  OpT op;
  PatternRewriter &b;
  Location loc;
  ArrayRef<Act> activations;
  Type et;
  CellBuilder cb;
  int64_t seq, batch, hidden, dirs;
  std::optional<double> clip;
  RankedTensorType stateType;
};

/// Below this many FLOPs in a step's product with R (per direction), the
/// steps stay a loop. Measured on Zen 4: silero VAD's 128-unit LSTM
/// (131 kFLOP a step, about 3 microseconds) took 0.29 ms over 100 steps as
/// a loop and 0.34 in steps on one or two threads; a 256-unit GRU
/// (393 kFLOP) 0.45 -> 0.27 ms on two threads, the same on one.
constexpr int64_t kMinStepFlops = 1 << 18;

template <typename OpT> struct RecurrentLowering : OpRewritePattern<OpT> {
  RecurrentLowering(MLIRContext *ctx, int64_t maxParts)
      : OpRewritePattern<OpT>(ctx), maxParts(maxParts) {}

  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    using Builder = RecurrentBuilder<OpT>;
    // sequence_lens masks finished batch entries; per-entry reversal is not
    // lowered yet.
    Value seqLens = op.getSequenceLens();
    if (seqLens && op.getDirection() != "forward")
      return b.notifyMatchFailure(op, "sequence_lens with a reverse direction");
    if constexpr (Builder::isLSTM)
      if (op.getInputForget())
        return b.notifyMatchFailure(op, "input_forget");
    int64_t dirs = op.getDirection() == "bidirectional" ? 2 : 1;
    SmallVector<Act> activations = activationsOf(op);
    if (activations.size() != Builder::actsPerDir * dirs)
      return b.notifyMatchFailure(op, "activation count");
    Builder builder(op, b, activations);
    int64_t parts = steppedParts(op, activations);
    b.replaceOp(op, parts ? builder.buildStepped(parts) : builder.build());
    return success();
  }

  /// Hidden-unit parts per direction for the stepped form (0: a loop over
  /// time): at most maxParts, each at least 32 units and a multiple of 8,
  /// with at least two parts in all. Only for a projected input without
  /// sequence_lens whose directions share their activations, for a GRU
  /// whose reset gate applies after R (before, every unit's reset gate
  /// would be needed before any part's product), and for steps of at least
  /// kMinStepFlops per direction.
  int64_t steppedParts(OpT op, ArrayRef<Act> acts) const {
    using Builder = RecurrentBuilder<OpT>;
    auto x = dyn_cast<RankedTensorType>(op.getX().getType());
    if (maxParts < 1 || !op.getProjectedInput() || op.getSequenceLens() || !x ||
        x.getDimSize(0) < 2)
      return 0;
    int64_t hidden = op.getHiddenSize();
    if (2 * x.getDimSize(1) * Builder::gates * hidden * hidden < kMinStepFlops)
      return 0;
    if constexpr (Builder::isGRU)
      if (!op.getLinearBeforeReset())
        return 0;
    int64_t dirs = op.getDirection() == "bidirectional" ? 2 : 1;
    for (size_t i = 0; dirs == 2 && i < Builder::actsPerDir; ++i) {
      const Act &a = acts[i], &r = acts[i + Builder::actsPerDir];
      if (a.name != r.name || a.alpha != r.alpha || a.beta != r.beta)
        return 0;
    }
    for (int64_t parts = maxParts; parts > 1; parts /= 2)
      if (hidden % parts == 0 && hidden / parts >= 32 &&
          (hidden / parts) % 8 == 0)
        return parts;
    return dirs == 2 ? 1 : 0;
  }

  int64_t maxParts;
};

} // namespace

void populateRecurrentPatterns(RewritePatternSet &patterns,
                               int64_t steppedParts) {
  patterns.add<RecurrentLowering<LSTMOp>, RecurrentLowering<GRUOp>,
               RecurrentLowering<RNNOp>>(patterns.getContext(), steppedParts);
}

} // namespace ign::lowering
