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

template <typename OpT> struct RecurrentLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    constexpr bool isLSTM = std::is_same_v<OpT, LSTMOp>;
    constexpr bool isGRU = std::is_same_v<OpT, GRUOp>;
    constexpr int64_t gates = isLSTM ? 4 : isGRU ? 3 : 1;
    constexpr size_t actsPerDir = isLSTM ? 3 : isGRU ? 2 : 1;
    // sequence_lens masks finished batch entries; per-entry reversal is not
    // lowered yet.
    Value seqLens = op.getSequenceLens();
    if (seqLens && op.getDirection() != "forward")
      return b.notifyMatchFailure(op, "sequence_lens with a reverse direction");
    if constexpr (isLSTM)
      if (op.getInputForget())
        return b.notifyMatchFailure(op, "input_forget");
    auto xt = tensorType(op.getX());
    Type et = xt.getElementType();
    int64_t seq = xt.getDimSize(0), batch = xt.getDimSize(1);
    int64_t hidden = op.getHiddenSize();
    int64_t dirs = op.getDirection() == "bidirectional" ? 2 : 1;
    SmallVector<StringRef> acts;
    for (Attribute a : op.getActivations())
      acts.push_back(cast<StringAttr>(a).getValue());
    if (acts.size() != actsPerDir * dirs)
      return b.notifyMatchFailure(op, "activation count");
    SmallVector<double> alphas, betas;
    for (Attribute a : op.getActivationAlpha())
      alphas.push_back(cast<FloatAttr>(a).getValueAsDouble());
    for (Attribute a : op.getActivationBeta())
      betas.push_back(cast<FloatAttr>(a).getValueAsDouble());
    std::optional<double> clip;
    if (auto c = op.getClipAttr())
      clip = c.getValueAsDouble();

    CellBuilder cb{b, loc, et};
    auto stateType = RankedTensorType::get({batch, hidden}, et);
    auto yType = rtype(op);
    Value y = filled(b, loc, yType, scalar(b, loc, et, 0));
    SmallVector<Value> lastH, lastC;
    // Activation alpha/beta are consumed in order by the activations that
    // take them (ONNX lists them that way).
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
    struct Act {
      StringRef name;
      std::optional<double> alpha, beta;
    };
    SmallVector<Act> activations;
    for (StringRef name : acts) {
      auto [a, bt] = paramsFor(name);
      activations.push_back({name, a, bt});
    }

    for (int64_t d = 0; d < dirs; ++d) {
      bool reverse = op.getDirection() == "reverse" || d == 1;
      Value w = slice3(b, loc, op.getW(), b.getIndexAttr(d));
      Value r = slice3(b, loc, op.getR(), b.getIndexAttr(d));
      Value wb, rb;
      if (Value bias = op.getB()) {
        // B [dirs, 2*gates*hidden]: Wb then Rb.
        SmallVector<OpFoldResult> off{b.getIndexAttr(d), b.getIndexAttr(0)},
            sz{b.getIndexAttr(1), b.getIndexAttr(gates * hidden)},
            st(2, b.getIndexAttr(1));
        auto one = RankedTensorType::get({gates * hidden}, et);
        wb = b.create<tensor::ExtractSliceOp>(loc, one, bias, off, sz, st);
        off[1] = b.getIndexAttr(gates * hidden);
        rb = b.create<tensor::ExtractSliceOp>(loc, one, bias, off, sz, st);
      }
      Value h0 = op.getInitialH()
                     ? slice3(b, loc, op.getInitialH(), b.getIndexAttr(d))
                     : filled(b, loc, stateType, scalar(b, loc, et, 0));
      Value c0;
      SmallVector<Value> peep;
      if constexpr (isLSTM) {
        c0 = op.getInitialC()
                 ? slice3(b, loc, op.getInitialC(), b.getIndexAttr(d))
                 : filled(b, loc, stateType, scalar(b, loc, et, 0));
        if (Value p = op.getPeepholes()) {
          // P [dirs, 3*hidden]: i, o, f.
          for (int k = 0; k < 3; ++k) {
            SmallVector<OpFoldResult> off{b.getIndexAttr(d),
                                          b.getIndexAttr(k * hidden)},
                sz{b.getIndexAttr(1), b.getIndexAttr(hidden)},
                st(2, b.getIndexAttr(1));
            peep.push_back(b.create<tensor::ExtractSliceOp>(
                loc, RankedTensorType::get({hidden}, et), p, off, sz, st));
          }
        }
      }
      // Once per direction: the input projections of every step (GRU: R
      // as each gate's part).
      Value xw = cb.projectAll(op.getX(), w, wb);
      SmallVector<Value> rs, rbParts;
      if constexpr (isGRU)
        cb.gateParts(r, rb, hidden, rs, rbParts);
      else
        rs.push_back(r);
      auto f = activations[d * actsPerDir];
      Value lb = b.create<arith::ConstantIndexOp>(loc, 0);
      Value ub = b.create<arith::ConstantIndexOp>(loc, seq);
      Value step = b.create<arith::ConstantIndexOp>(loc, 1);
      SmallVector<Value> inits{h0, y};
      if constexpr (isLSTM)
        inits.push_back(c0);
      auto loop = b.create<scf::ForOp>(loc, lb, ub, step, inits);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        Value t = loop.getInductionVar();
        Value tt =
            reverse
                ? Value(b.create<arith::SubIOp>(
                      loc, b.create<arith::ConstantIndexOp>(loc, seq - 1), t))
                : t;
        Value h = loop.getRegionIterArgs()[0];
        Value yAcc = loop.getRegionIterArgs()[1];
        Value xProj = slice3(b, loc, xw, tt);
        auto act = [&](const Act &a, Value v) -> Value {
          if (clip)
            v = b.create<ClipOp>(loc, cb.typeOf(v), v,
                                 b.getF64FloatAttr(-*clip),
                                 b.getF64FloatAttr(*clip));
          return *cb.activation(a.name, v, a.alpha, a.beta);
        };
        Value newH, newC;
        if constexpr (isLSTM) {
          Value c = loop.getRegionIterArgs()[2];
          Value pre = cb.binary<AddOp>(xProj, cb.linearByRows(h, rs[0], rb));
          auto g = cb.split(pre, 4); // i, o, f, c
          Value gi = g[0], go = g[1], gf = g[2], gc = g[3];
          if (!peep.empty()) {
            gi = cb.binary<AddOp>(gi, cb.binary<MulOp>(c, peep[0]));
            gf = cb.binary<AddOp>(gf, cb.binary<MulOp>(c, peep[2]));
          }
          Value it = act(f, gi), ft = act(f, gf);
          Value ct = act(activations[d * actsPerDir + 1], gc);
          newC = cb.binary<AddOp>(cb.binary<MulOp>(ft, c),
                                  cb.binary<MulOp>(it, ct));
          if (!peep.empty())
            go = cb.binary<AddOp>(go, cb.binary<MulOp>(newC, peep[1]));
          Value ot = act(f, go);
          Value hc = *cb.activation(activations[d * actsPerDir + 2].name, newC,
                                    activations[d * actsPerDir + 2].alpha,
                                    activations[d * actsPerDir + 2].beta);
          newH = cb.binary<MulOp>(ot, hc);
        } else if constexpr (isGRU) {
          auto gx = cb.split(xProj, 3); // z, r, h
          Value zt = act(f, cb.binary<AddOp>(
                                gx[0], cb.linearByRows(h, rs[0], rbParts[0])));
          Value rt = act(f, cb.binary<AddOp>(
                                gx[1], cb.linearByRows(h, rs[1], rbParts[1])));
          Value hh;
          bool lbr = false;
          if constexpr (isGRU)
            lbr = op.getLinearBeforeReset();
          if (lbr)
            hh = cb.binary<AddOp>(
                gx[2],
                cb.binary<MulOp>(rt, cb.linearByRows(h, rs[2], rbParts[2])));
          else
            hh =
                cb.binary<AddOp>(gx[2], cb.linearByRows(cb.binary<MulOp>(rt, h),
                                                        rs[2], rbParts[2]));
          Value ht = act(activations[d * actsPerDir + 1], hh);
          Value one = cb.constant(1);
          newH =
              cb.binary<AddOp>(cb.binary<MulOp>(cb.binary<SubOp>(one, zt), ht),
                               cb.binary<MulOp>(zt, h));
        } else {
          Value pre = cb.binary<AddOp>(xProj, cb.linearByRows(h, rs[0], rb));
          newH = act(f, pre);
        }
        Value yRow = newH;
        if (seqLens) {
          // Entries whose sequence ended keep their state and output 0.
          auto maskType = RankedTensorType::get({batch, 1}, b.getI1Type());
          MLIRContext *ctx = b.getContext();
          Value maskInit = b.create<tensor::EmptyOp>(loc, maskType.getShape(),
                                                     b.getI1Type());
          Value mask =
              b.create<linalg::GenericOp>(
                   loc, TypeRange{maskType}, ValueRange{seqLens},
                   ValueRange{maskInit},
                   SmallVector<AffineMap>{
                       AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx),
                       AffineMap::getMultiDimIdentityMap(2, ctx)},
                   iterators(2),
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     Value len = a[0];
                     Value now =
                         nb.create<arith::IndexCastOp>(nl, len.getType(), t);
                     nb.create<linalg::YieldOp>(
                         nl, Value(nb.create<arith::CmpIOp>(
                                 nl, arith::CmpIPredicate::slt, now, len)));
                   })
                  .getResult(0);
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
        Value newY =
            b.create<tensor::InsertSliceOp>(loc, yRow, yAcc, off, sz, st);
        SmallVector<Value> yields{newH, newY};
        if constexpr (isLSTM)
          yields.push_back(newC);
        b.create<scf::YieldOp>(loc, yields);
      }
      lastH.push_back(loop.getResult(0));
      y = loop.getResult(1);
      if constexpr (isLSTM)
        lastC.push_back(loop.getResult(2));
    }
    auto stack = [&](ArrayRef<Value> states) -> Value {
      auto type = RankedTensorType::get({dirs, batch, hidden}, et);
      Value acc = b.create<tensor::EmptyOp>(loc, type.getShape(), et);
      for (int64_t d = 0; d < dirs; ++d) {
        SmallVector<OpFoldResult> off{b.getIndexAttr(d), b.getIndexAttr(0),
                                      b.getIndexAttr(0)},
            sz{b.getIndexAttr(1), b.getIndexAttr(batch),
               b.getIndexAttr(hidden)},
            st(3, b.getIndexAttr(1));
        acc = b.create<tensor::InsertSliceOp>(loc, states[d], acc, off, sz, st);
      }
      return acc;
    };
    SmallVector<Value> results{y, stack(lastH)};
    if constexpr (isLSTM)
      results.push_back(stack(lastC));
    b.replaceOp(op, results);
    return success();
  }
};

} // namespace

void populateRecurrentPatterns(RewritePatternSet &patterns) {
  patterns.add<RecurrentLowering<LSTMOp>, RecurrentLowering<GRUOp>,
               RecurrentLowering<RNNOp>>(patterns.getContext());
}

} // namespace ign::lowering
