//===- LowerIndexing.cpp - einsum, gather_nd, scatter, top-k, pool indices ===//
//
// Reference forms for ops whose outputs are addressed by computed indices.
// Scatters and top-k search inside the body of a linalg.generic (scf.for
// over the candidates): quadratic, simple and obviously right, which is
// what the reference lowering is for.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace ign::lowering {
namespace {

Value idx(OpBuilder &b, Location l, int64_t v) {
  return b.create<arith::ConstantIndexOp>(l, v);
}
Value toIndex(OpBuilder &b, Location l, Value v) {
  return b.create<arith::IndexCastOp>(l, b.getIndexType(), v);
}

/// Output elements from their index vectors (no input maps).
Value generate(OpBuilder &b, Location loc, RankedTensorType type,
               function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  Value init =
      b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{type}, ValueRange{}, ValueRange{init},
          SmallVector<AffineMap>{b.getMultiDimIdentityMap(type.getRank())},
          iterators(type.getRank()),
          [&](OpBuilder &nb, Location nl, ValueRange) {
            SmallVector<Value> ivs;
            for (int64_t d = 0; d < type.getRank(); ++d)
              ivs.push_back(nb.create<linalg::IndexOp>(nl, d));
            nb.create<linalg::YieldOp>(nl, body(nb, nl, ivs));
          })
      .getResult(0);
}

/// Whether scatter `op` compares its integers unsigned: unsigned elements
/// (makeSignless marks the op), or bool, whose max is an or, min an and.
bool comparesUnsigned(Operation *op) {
  return isUnsignedOp(op) ||
         getElementTypeOrSelf(op->getOperand(0).getType()).isInteger(1);
}

Value combine(OpBuilder &b, Location l, StringRef reduction, Value acc, Value v,
              bool uns) {
  bool fl = isFloat(v.getType());
  if (reduction == "add")
    return fl ? Value(b.create<arith::AddFOp>(l, acc, v))
              : Value(b.create<arith::AddIOp>(l, acc, v));
  if (reduction == "mul")
    return fl ? Value(b.create<arith::MulFOp>(l, acc, v))
              : Value(b.create<arith::MulIOp>(l, acc, v));
  if (reduction == "max")
    return fl    ? Value(b.create<arith::MaximumFOp>(l, acc, v))
           : uns ? Value(b.create<arith::MaxUIOp>(l, acc, v))
                 : Value(b.create<arith::MaxSIOp>(l, acc, v));
  if (reduction == "min")
    return fl    ? Value(b.create<arith::MinimumFOp>(l, acc, v))
           : uns ? Value(b.create<arith::MinUIOp>(l, acc, v))
                 : Value(b.create<arith::MinSIOp>(l, acc, v));
  return v; // none: the last write wins
}

struct EinsumLowering : OpRewritePattern<EinsumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EinsumOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto [lhs, rhs] = op.getEquation().split("->");
    SmallVector<StringRef> terms;
    lhs.split(terms, ',');
    auto outType = rtype(op);
    Type et = outType.getElementType();
    // Iteration dims: output dims first (ellipsis included), then each
    // summed letter.
    auto letters = [](StringRef t, int &ellipsisAt) {
      std::string s;
      ellipsisAt = -1;
      for (size_t i = 0; i < t.size(); ++i) {
        if (t.substr(i).starts_with("...")) {
          ellipsisAt = s.size();
          i += 2;
        } else if (llvm::isAlpha(t[i])) {
          s.push_back(t[i]);
        }
      }
      return s;
    };
    int outEll;
    std::string out = letters(rhs, outEll);
    int64_t ellRank = outType.getRank() - out.size();
    llvm::DenseMap<char, int64_t> dimOf;
    int64_t nd = 0;
    SmallVector<int64_t> ellDims; // iteration dims of the broadcast dims
    for (int64_t i = 0, pos = 0; i < outType.getRank(); ++i) {
      if (outEll >= 0 && i >= outEll && i < outEll + ellRank) {
        ellDims.push_back(nd++);
        continue;
      }
      dimOf[out[pos++]] = nd++;
    }
    int64_t parallel = nd;
    SmallVector<AffineMap> maps;
    for (auto [t, v] : llvm::zip(terms, op.getInputs())) {
      int ell;
      std::string ls = letters(t, ell);
      auto vt = tensorType(v);
      int64_t er = vt.getRank() - ls.size();
      SmallVector<AffineExpr> exprs;
      for (int64_t i = 0, pos = 0; i < vt.getRank(); ++i) {
        if (ell >= 0 && i >= ell && i < ell + er) {
          // Align this operand's ellipsis dims to the right of the output's.
          int64_t k = i - ell + (ellRank - er);
          exprs.push_back(vt.getDimSize(i) == 1 && k >= 0 &&
                                  outType.getDimSize(outEll + k) != 1
                              ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(ellDims[k], ctx));
          continue;
        }
        char c = ls[pos++];
        if (!dimOf.count(c))
          dimOf[c] = nd++;
        exprs.push_back(getAffineDimExpr(dimOf[c], ctx));
      }
      maps.push_back(AffineMap::get(0, 0, exprs, ctx));
    }
    // Rebuild the maps with the final dim count.
    for (AffineMap &m : maps)
      m = AffineMap::get(nd, 0, m.getResults(), ctx);
    maps.push_back(AffineMap::get(
        nd, 0, AffineMap::getMultiDimIdentityMap(parallel, ctx).getResults(),
        ctx));
    Value acc = filled(b, loc, outType, scalar(b, loc, et, 0));
    bool fl = isFloat(et);
    Value r = b.create<linalg::GenericOp>(
                   loc, TypeRange{outType}, op.getInputs(), ValueRange{acc},
                   maps, iterators(parallel, nd - parallel),
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     Value p = a[0];
                     for (size_t i = 1; i + 1 < a.size(); ++i)
                       p = fl ? Value(nb.create<arith::MulFOp>(nl, p, a[i]))
                              : Value(nb.create<arith::MulIOp>(nl, p, a[i]));
                     Value s =
                         fl ? Value(nb.create<arith::AddFOp>(nl, a.back(), p))
                            : Value(nb.create<arith::AddIOp>(nl, a.back(), p));
                     nb.create<linalg::YieldOp>(nl, s);
                   })
                  .getResult(0);
    b.replaceOp(op, r);
    return success();
  }
};

struct GatherNDLowering : OpRewritePattern<GatherNDOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherNDOp op,
                                PatternRewriter &b) const override {
    Value data = op.getData(), indices = op.getIndices();
    auto dt = tensorType(data), it = tensorType(indices);
    int64_t bd = op.getBatchDims(), q = it.getRank(), m = it.getShape().back();
    Value r = generate(
        b, op.getLoc(), rtype(op),
        [&](OpBuilder &nb, Location nl, ValueRange iv) {
          SmallVector<Value> src(iv.begin(), iv.begin() + bd);
          SmallVector<Value> at(iv.begin(), iv.begin() + (q - 1));
          for (int64_t k = 0; k < m; ++k) {
            at.push_back(idx(nb, nl, k));
            Value i =
                toIndex(nb, nl, nb.create<tensor::ExtractOp>(nl, indices, at));
            at.pop_back();
            src.push_back(safeIndex(nb, nl, i, dt.getDimSize(bd + k)));
          }
          for (size_t d = q - 1; d < iv.size(); ++d)
            src.push_back(iv[d]);
          return nb.create<tensor::ExtractOp>(nl, data, src).getResult();
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// Along an axis longer than this, ScatterElements writes its updates one
/// by one (linear) instead of gathering them per output element (which
/// scans the axis for each one: vectorizable, but quadratic).
constexpr int64_t kScatterScanLimit = 16;

/// ScatterElements as a loop nest over the updates in row-major order, each
/// one combined into the output (a copy of data) at its target: linear in
/// the updates, and the same order (the last of equal targets wins).
Value scatterByUpdates(PatternRewriter &b, ScatterElementsOp op) {
  Location loc = op.getLoc();
  Value indices = op.getIndices(), updates = op.getUpdates();
  auto ut = tensorType(updates), dt = tensorType(op.getData());
  int64_t axis = op.getAxis();
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < ut.getRank(); ++d) {
    lbs.push_back(idx(b, loc, 0));
    ubs.push_back(idx(b, loc, ut.getDimSize(d)));
    steps.push_back(idx(b, loc, 1));
  }
  auto nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{op.getData()},
      [&](OpBuilder &nb, Location nl, ValueRange iv,
          ValueRange out) -> scf::ValueVector {
        SmallVector<Value> at(iv);
        at[axis] = safeIndex(
            nb, nl,
            toIndex(nb, nl, nb.create<tensor::ExtractOp>(nl, indices, iv)),
            dt.getDimSize(axis));
        Value acc = nb.create<tensor::ExtractOp>(nl, out[0], at);
        Value u = nb.create<tensor::ExtractOp>(nl, updates, iv);
        Value next =
            combine(nb, nl, op.getReduction(), acc, u, comparesUnsigned(op));
        return {nb.create<tensor::InsertOp>(nl, next, out[0], at).getResult()};
      });
  return nest.results.front();
}

/// out[p] = data[p] combined with every update whose target is p, in order.
struct ScatterElementsLowering : OpRewritePattern<ScatterElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterElementsOp op,
                                PatternRewriter &b) const override {
    Value data = op.getData(), indices = op.getIndices(),
          updates = op.getUpdates();
    auto ut = tensorType(updates), dt = tensorType(data);
    int64_t axis = op.getAxis(), rank = ut.getRank();
    StringRef reduction = op.getReduction();
    if (ut.getDimSize(axis) > kScatterScanLimit && ut.getNumElements() > 0) {
      b.replaceOp(op, scatterByUpdates(b, op));
      return success();
    }
    Value r = generate(
        b, op.getLoc(), rtype(op),
        [&](OpBuilder &nb, Location nl, ValueRange iv) {
          Value init = nb.create<tensor::ExtractOp>(nl, data, iv);
          // Updates that can land here share every coordinate but the axis.
          Value lb = idx(nb, nl, 0), ub = idx(nb, nl, ut.getDimSize(axis)),
                one = idx(nb, nl, 1);
          Value inRange = scalar(nb, nl, nb.getI1Type(), 1);
          for (int64_t d = 0; d < rank; ++d)
            if (d != axis) {
              Value ok =
                  nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ult, iv[d],
                                           idx(nb, nl, ut.getDimSize(d)));
              inRange = nb.create<arith::AndIOp>(nl, inRange, ok);
            }
          auto loop = nb.create<scf::ForOp>(
              nl, lb, ub, one, ValueRange{init},
              [&](OpBuilder &lb2, Location ll, Value k, ValueRange acc) {
                SmallVector<Value> at(iv);
                for (int64_t d = 0; d < rank; ++d)
                  if (d != axis)
                    at[d] = lb2.create<arith::MinUIOp>(
                        ll, iv[d], idx(lb2, ll, ut.getDimSize(d) - 1));
                at[axis] = k;
                Value target = safeIndex(
                    lb2, ll,
                    toIndex(lb2, ll,
                            lb2.create<tensor::ExtractOp>(ll, indices, at)),
                    dt.getDimSize(axis));
                Value hit = lb2.create<arith::AndIOp>(
                    ll, inRange,
                    lb2.create<arith::CmpIOp>(ll, arith::CmpIPredicate::eq,
                                              target, iv[axis]));
                Value u = lb2.create<tensor::ExtractOp>(ll, updates, at);
                Value next = combine(lb2, ll, reduction, acc[0], u,
                                     comparesUnsigned(op));
                lb2.create<scf::YieldOp>(ll, Value(lb2.create<arith::SelectOp>(
                                                 ll, hit, next, acc[0])));
              });
          return loop.getResult(0);
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// out[p] = data[p] combined with every update slice addressed to p.
struct ScatterNDLowering : OpRewritePattern<ScatterNDOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterNDOp op,
                                PatternRewriter &b) const override {
    Value data = op.getData(), indices = op.getIndices(),
          updates = op.getUpdates();
    auto it = tensorType(indices), dt = tensorType(data);
    int64_t q = it.getRank(), k = it.getShape().back();
    int64_t count = 1;
    for (int64_t d = 0; d + 1 < q; ++d)
      count *= it.getDimSize(d);
    StringRef reduction = op.getReduction();
    auto flatIdxType = RankedTensorType::get({count, k}, it.getElementType());
    Value flatIdx = reshape(b, op.getLoc(), indices, flatIdxType.getShape());
    SmallVector<int64_t> uShape{count};
    for (int64_t d = k; d < dt.getRank(); ++d)
      uShape.push_back(dt.getDimSize(d));
    Value flatUpd = reshape(b, op.getLoc(), updates, uShape);
    Value r = generate(
        b, op.getLoc(), rtype(op),
        [&](OpBuilder &nb, Location nl, ValueRange iv) {
          Value init = nb.create<tensor::ExtractOp>(nl, data, iv);
          auto loop = nb.create<scf::ForOp>(
              nl, idx(nb, nl, 0), idx(nb, nl, count), idx(nb, nl, 1),
              ValueRange{init},
              [&](OpBuilder &lb, Location ll, Value j, ValueRange acc) {
                Value hit = scalar(lb, ll, lb.getI1Type(), 1);
                for (int64_t c = 0; c < k; ++c) {
                  Value t = safeIndex(
                      lb, ll,
                      toIndex(lb, ll,
                              lb.create<tensor::ExtractOp>(
                                  ll, flatIdx, ValueRange{j, idx(lb, ll, c)})),
                      dt.getDimSize(c));
                  hit = lb.create<arith::AndIOp>(
                      ll, hit,
                      lb.create<arith::CmpIOp>(ll, arith::CmpIPredicate::eq, t,
                                               iv[c]));
                }
                SmallVector<Value> at{j};
                for (size_t d = k; d < iv.size(); ++d)
                  at.push_back(iv[d]);
                Value u = lb.create<tensor::ExtractOp>(ll, flatUpd, at);
                Value next =
                    combine(lb, ll, reduction, acc[0], u, comparesUnsigned(op));
                lb.create<scf::YieldOp>(ll, Value(lb.create<arith::SelectOp>(
                                                ll, hit, next, acc[0])));
              });
          return loop.getResult(0);
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// Top-k: the element of rank j (0 = best) along the axis fills output j;
/// rank(i) counts the elements that come before element i (better value, or
/// equal value at a lower index).
struct TopKLowering : OpRewritePattern<TopKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TopKOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto xt = tensorType(x);
    Type et = xt.getElementType();
    int64_t axis = op.getAxis(), n = xt.getDimSize(axis);
    bool largest = op.getLargest();
    auto valType = cast<RankedTensorType>(op.getValues().getType());
    auto better = [&](OpBuilder &nb, Location nl, Value a, Value c) -> Value {
      if (isFloat(et))
        return nb.create<arith::CmpFOp>(
            nl, largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
            a, c);
      return nb.create<arith::CmpIOp>(
          nl, largest ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt,
          a, c);
    };
    // The index (along the axis) of the element of rank j at position iv.
    auto pick = [&](OpBuilder &nb, Location nl, ValueRange iv) -> Value {
      Value j = iv[axis];
      auto outer = nb.create<scf::ForOp>(
          nl, idx(nb, nl, 0), idx(nb, nl, n), idx(nb, nl, 1),
          ValueRange{idx(nb, nl, 0)},
          [&](OpBuilder &ob, Location ol, Value i, ValueRange found) {
            SmallVector<Value> at(iv);
            at[axis] = i;
            Value xi = ob.create<tensor::ExtractOp>(ol, x, at);
            auto inner = ob.create<scf::ForOp>(
                ol, idx(ob, ol, 0), idx(ob, ol, n), idx(ob, ol, 1),
                ValueRange{idx(ob, ol, 0)},
                [&](OpBuilder &ib, Location il, Value m, ValueRange rank) {
                  SmallVector<Value> at2(iv);
                  at2[axis] = m;
                  Value xm = ib.create<tensor::ExtractOp>(il, x, at2);
                  Value eq = isFloat(et)
                                 ? Value(ib.create<arith::CmpFOp>(
                                       il, arith::CmpFPredicate::OEQ, xm, xi))
                                 : Value(ib.create<arith::CmpIOp>(
                                       il, arith::CmpIPredicate::eq, xm, xi));
                  Value earlier = ib.create<arith::CmpIOp>(
                      il, arith::CmpIPredicate::ult, m, i);
                  Value before = ib.create<arith::OrIOp>(
                      il, better(ib, il, xm, xi),
                      ib.create<arith::AndIOp>(il, eq, earlier));
                  Value inc =
                      ib.create<arith::AddIOp>(il, rank[0], idx(ib, il, 1));
                  ib.create<scf::YieldOp>(il, Value(ib.create<arith::SelectOp>(
                                                  il, before, inc, rank[0])));
                });
            Value is = ob.create<arith::CmpIOp>(ol, arith::CmpIPredicate::eq,
                                                inner.getResult(0), j);
            ob.create<scf::YieldOp>(
                ol, Value(ob.create<arith::SelectOp>(ol, is, i, found[0])));
          });
      return outer.getResult(0);
    };
    Value values = generate(
        b, loc, valType, [&](OpBuilder &nb, Location nl, ValueRange iv) {
          SmallVector<Value> at(iv);
          at[axis] = pick(nb, nl, iv);
          return nb.create<tensor::ExtractOp>(nl, x, at).getResult();
        });
    auto idxType = cast<RankedTensorType>(op.getIndices().getType());
    Value indices = generate(
        b, loc, idxType, [&](OpBuilder &nb, Location nl, ValueRange iv) {
          return nb
              .create<arith::IndexCastOp>(nl, nb.getI64Type(), pick(nb, nl, iv))
              .getResult();
        });
    b.replaceOp(op, {values, indices});
    return success();
  }
};

/// Builds NonMaxSuppression's selection for one batch and class (scalar
/// loops; NonMaxSuppressionLowering).
struct BoxSelection {
  OpBuilder &b;
  Location loc;
  NonMaxSuppressionOp op;
  Value batch, cls;           // index
  Value iouLimit, scoreLimit; // f32
  Value maxOut;               // i64
  int64_t n, width;           // boxes; kept at most (selected's last dim)
  /// The candidates over the score limit (box indices, i64 [N], in index
  /// order), their scores (f32 [N]) and how many (index): listed once per
  /// class. A candidate taken gets the score -inf in the steps' copy.
  Value candidates, candidateScores, numCandidates;

  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value f(double v) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(float(v)));
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return b.create<arith::CmpFOp>(loc, p, x, y);
  }
  Value both(Value x, Value y) { return b.create<arith::AndIOp>(loc, x, y); }

  /// Whether boxes i and j (index) overlap by more than the IoU limit.
  Value overlaps(Value i, Value j) {
    auto coord = [&](Value box, int64_t k) -> Value {
      return b.create<tensor::ExtractOp>(loc, op.getBoxes(),
                                         ValueRange{batch, box, c(k)});
    };
    Value y1i = coord(i, 0), x1i = coord(i, 1), y2i = coord(i, 2),
          x2i = coord(i, 3), y1j = coord(j, 0), x1j = coord(j, 1),
          y2j = coord(j, 2), x2j = coord(j, 3);
    auto sub = [&](Value x, Value y) -> Value {
      return b.create<arith::SubFOp>(loc, x, y);
    };
    auto mul = [&](Value x, Value y) -> Value {
      return b.create<arith::MulFOp>(loc, x, y);
    };
    Value h = sub(b.create<arith::MinimumFOp>(loc, y2i, y2j),
                  b.create<arith::MaximumFOp>(loc, y1i, y1j));
    Value w = sub(b.create<arith::MinimumFOp>(loc, x2i, x2j),
                  b.create<arith::MaximumFOp>(loc, x1i, x1j));
    Value inter = mul(h, w);
    Value areaI = mul(sub(y2i, y1i), sub(x2i, x1i));
    Value areaJ = mul(sub(y2j, y1j), sub(x2j, x1j));
    Value uni = sub(b.create<arith::AddFOp>(loc, areaI, areaJ), inter);
    auto positive = [&](Value v) {
      return cmpf(arith::CmpFPredicate::OGT, v, f(0));
    };
    Value meets = both(both(both(positive(h), positive(w)),
                            both(positive(areaI), positive(areaJ))),
                       positive(uni));
    Value iou = b.create<arith::DivFOp>(loc, inter, uni);
    return both(meets, cmpf(arith::CmpFPredicate::OGT, iou, iouLimit));
  }

  /// The box index of candidate `k` (index).
  Value candidate(OpBuilder &at, Location l, Value k) {
    return at.create<arith::IndexCastOp>(
        l, at.getIndexType(), at.create<tensor::ExtractOp>(l, candidates, k));
  }

  /// The position in `candidates` of the best one left (i64, -1 if none;
  /// `left` holds their scores, -inf once taken): a scan in index order, so
  /// equal scores keep the lower index.
  Value best(Value left) {
    Value none = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(-1));
    Value lowest = f(-std::numeric_limits<float>::infinity());
    auto scan = b.create<scf::ForOp>(
        loc, c(0), numCandidates, c(1), ValueRange{none, lowest},
        [&](OpBuilder &sb, Location sl, Value k, ValueRange acc) {
          Value s = sb.create<tensor::ExtractOp>(sl, left, k);
          Value better = sb.create<arith::CmpFOp>(sl, arith::CmpFPredicate::OGT,
                                                  s, acc[1]);
          Value k64 = sb.create<arith::IndexCastOp>(sl, sb.getI64Type(), k);
          sb.create<scf::YieldOp>(
              sl,
              ValueRange{sb.create<arith::SelectOp>(sl, better, k64, acc[0]),
                         sb.create<arith::SelectOp>(sl, better, s, acc[1])});
        });
    return scan.getResult(0);
  }

  /// The row of `selected` cleared to -1, and the candidates over the score
  /// limit listed (sets candidates and numCandidates).
  Value prepare(Value selected) {
    auto scan = b.create<scf::ForOp>(
        loc, c(0), c(n), c(1),
        ValueRange{selected,
                   b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{n},
                                             b.getI64Type()),
                   b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{n},
                                             b.getF32Type()),
                   c(0)},
        [&](OpBuilder &sb, Location sl, Value k, ValueRange acc) {
          Value s = sb.create<tensor::ExtractOp>(sl, op.getScores(),
                                                 ValueRange{batch, cls, k});
          Value over = sb.create<arith::CmpFOp>(sl, arith::CmpFPredicate::OGT,
                                                s, scoreLimit);
          // Written at the list's end either way; counted when over.
          Value k64 = sb.create<arith::IndexCastOp>(sl, sb.getI64Type(), k);
          Value listed = sb.create<tensor::InsertOp>(sl, k64, acc[1], acc[3]);
          Value scored = sb.create<tensor::InsertOp>(sl, s, acc[2], acc[3]);
          Value one = sb.create<arith::ConstantIndexOp>(sl, 1);
          Value count = sb.create<arith::SelectOp>(
              sl, over, sb.create<arith::AddIOp>(sl, acc[3], one), acc[3]);
          sb.create<scf::YieldOp>(sl,
                                  ValueRange{acc[0], listed, scored, count});
        });
    candidates = scan.getResult(1);
    candidateScores = scan.getResult(2);
    numCandidates = scan.getResult(3);
    auto clear = b.create<scf::ForOp>(
        loc, c(0), c(width), c(1), ValueRange{scan.getResult(0)},
        [&](OpBuilder &sb, Location sl, Value r, ValueRange acc) {
          Value none =
              sb.create<arith::ConstantOp>(sl, sb.getI64IntegerAttr(-1));
          sb.create<scf::YieldOp>(
              sl, Value(sb.create<tensor::InsertOp>(
                      sl, none, acc[0], ValueRange{batch, cls, r})));
        });
    return clear.getResult(0);
  }

  /// Whether a box kept so far (selected[batch, cls, 0..count)) overlaps
  /// box j.
  Value suppressed(Value selected, Value count, Value j) {
    auto scan = b.create<scf::ForOp>(
        loc, c(0), count, c(1),
        ValueRange{b.create<arith::ConstantOp>(loc, b.getBoolAttr(false))},
        [&](OpBuilder &sb, Location sl, Value r, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(sb.getInsertionBlock(), sb.getInsertionPoint());
          Value kept = b.create<arith::IndexCastOp>(
              sl, b.getIndexType(),
              b.create<tensor::ExtractOp>(sl, selected,
                                          ValueRange{batch, cls, r}));
          b.create<scf::YieldOp>(
              sl, Value(b.create<arith::OrIOp>(sl, acc[0], overlaps(kept, j))));
        });
    return scan.getResult(0);
  }

  /// One step: take the best candidate left and keep it unless suppressed.
  /// State: selected, the candidates' scores left, count (index), active
  /// (i1).
  SmallVector<Value> step(ValueRange state) {
    Value selected = state[0], left = state[1], count = state[2];
    Value pick = best(left);
    Value found = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::sge, pick,
        b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0)));
    auto taken = b.create<scf::IfOp>(
        loc, found,
        [&](OpBuilder &tb, Location tl) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
          Value at = b.create<arith::IndexCastOp>(tl, b.getIndexType(), pick);
          Value nowLeft = b.create<tensor::InsertOp>(
              tl, f(-std::numeric_limits<float>::infinity()), left, at);
          Value box = b.create<tensor::ExtractOp>(tl, candidates, at);
          Value j = b.create<arith::IndexCastOp>(tl, b.getIndexType(), box);
          Value keep = b.create<arith::XOrIOp>(
              tl, suppressed(selected, count, j),
              b.create<arith::ConstantOp>(tl, b.getBoolAttr(true)));
          auto written = b.create<scf::IfOp>(
              tl, keep,
              [&](OpBuilder &wb, Location wl) {
                wb.create<scf::YieldOp>(
                    wl, Value(wb.create<tensor::InsertOp>(
                            wl, box, selected, ValueRange{batch, cls, count})));
              },
              [&](OpBuilder &wb, Location wl) {
                wb.create<scf::YieldOp>(wl, selected);
              });
          Value next = b.create<arith::SelectOp>(
              tl, keep, b.create<arith::AddIOp>(tl, count, c(1)), count);
          Value more = b.create<arith::AndIOp>(
              tl,
              b.create<arith::CmpIOp>(
                  tl, arith::CmpIPredicate::slt,
                  b.create<arith::IndexCastOp>(tl, b.getI64Type(), next),
                  maxOut),
              b.create<arith::CmpIOp>(tl, arith::CmpIPredicate::slt, next,
                                      c(width)));
          b.create<scf::YieldOp>(
              tl, ValueRange{written.getResult(0), nowLeft, next, more});
        },
        [&](OpBuilder &eb, Location el) {
          eb.create<scf::YieldOp>(
              el, ValueRange{
                      selected, left, count,
                      eb.create<arith::ConstantOp>(el, eb.getBoolAttr(false))});
        });
    return SmallVector<Value>(taken.getResults());
  }
};

/// NonMaxSuppression's selection as scalar loops for each batch and class:
/// the row is cleared to -1, then each step scans for the best candidate
/// not taken yet, takes it, and keeps it unless a kept box overlaps it,
/// until max_output are kept or no candidate is left (then the remaining
/// steps do nothing). O(steps x N) per class in time, O(N) in memory.
struct NonMaxSuppressionLowering : OpRewritePattern<NonMaxSuppressionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NonMaxSuppressionOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getSelected().getType());
    int64_t batches = type.getDimSize(0), classes = type.getDimSize(1),
            width = type.getDimSize(2),
            n = cast<RankedTensorType>(op.getScores().getType()).getDimSize(2);
    auto scalarOf = [&](Value t) {
      return b.create<tensor::ExtractOp>(loc, t, ValueRange{}).getResult();
    };
    Value maxOut = scalarOf(op.getMaxOutput()),
          iouLimit = scalarOf(op.getIouThreshold()),
          scoreLimit = scalarOf(op.getScoreThreshold());
    Value init =
        b.create<tensor::EmptyOp>(loc, type.getShape(), b.getI64Type());
    auto nest = scf::buildLoopNest(
        b, loc, {idx(b, loc, 0), idx(b, loc, 0)},
        {idx(b, loc, batches), idx(b, loc, classes)},
        {idx(b, loc, 1), idx(b, loc, 1)}, ValueRange{init},
        [&](OpBuilder &nb, Location nl, ValueRange bc,
            ValueRange acc) -> scf::ValueVector {
          BoxSelection sel{nb,       nl,         op,     bc[0], bc[1],
                           iouLimit, scoreLimit, maxOut, n,     width};
          // The row to -1 and the candidates listed.
          Value cleared = sel.prepare(acc[0]);
          Value active = nb.create<arith::CmpIOp>(
              nl, arith::CmpIPredicate::sgt, maxOut,
              nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0)));
          auto steps = nb.create<scf::ForOp>(
              nl, sel.c(0), sel.numCandidates, sel.c(1),
              ValueRange{cleared, sel.candidateScores, sel.c(0), active},
              [&](OpBuilder &sb, Location sl, Value, ValueRange state) {
                auto run = sb.create<scf::IfOp>(
                    sl, state[3],
                    [&](OpBuilder &tb, Location) {
                      BoxSelection inner = sel;
                      OpBuilder::InsertionGuard guard(nb);
                      nb.setInsertionPoint(tb.getInsertionBlock(),
                                           tb.getInsertionPoint());
                      tb.create<scf::YieldOp>(sl, inner.step(state));
                    },
                    [&](OpBuilder &eb, Location) {
                      eb.create<scf::YieldOp>(sl, state);
                    });
                sb.create<scf::YieldOp>(sl, run.getResults());
              });
          return {steps.getResult(0)};
        });
    b.replaceOp(op, nest.results.front());
    return success();
  }
};

} // namespace

void populateIndexingPatterns(RewritePatternSet &patterns) {
  patterns.add<EinsumLowering, GatherNDLowering, ScatterElementsLowering,
               ScatterNDLowering, TopKLowering, NonMaxSuppressionLowering>(
      patterns.getContext());
}

} // namespace ign::lowering
