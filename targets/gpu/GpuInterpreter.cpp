//===- GpuInterpreter.cpp - mapped GPU kernels run on the CPU -------------===//
//
// A lockstep SIMT interpreter of mapped kernels (GpuInterpreter.h).
//
//===----------------------------------------------------------------------===//

#include "GpuInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

using namespace mlir;

namespace ign::gpu {

namespace {

Type elementOf(Type t) {
  if (auto s = dyn_cast<ShapedType>(t))
    return s.getElementType();
  return t;
}

int64_t elementsOf(Type t) {
  auto v = dyn_cast<VectorType>(t);
  return v ? v.getNumElements() : 1;
}

/// `x` rounded to float type `t`.
double roundTo(Type t, double x) {
  if (t.isF64())
    return x;
  if (t.isF32())
    return double(float(x));
  llvm::APFloat v(x);
  bool lost = false;
  v.convert(cast<FloatType>(t).getFloatSemantics(),
            llvm::APFloat::rmNearestTiesToEven, &lost);
  v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return v.convertToDouble();
}

Elem intElem(int64_t x) {
  Elem e;
  e.i = x;
  return e;
}

unsigned widthOf(Type t) {
  return t.isIndex() ? 64 : t.getIntOrFloatBitWidth();
}

/// `x` wrapped to `t`'s width, sign-extended (i1 as 0 or 1).
int64_t wrap(Type t, int64_t x) {
  unsigned w = widthOf(t);
  if (w == 1)
    return x & 1;
  if (w >= 64)
    return x;
  uint64_t m = (uint64_t(1) << w) - 1, u = uint64_t(x) & m;
  return (u >> (w - 1)) ? int64_t(u | ~m) : int64_t(u);
}

uint64_t unsignedOf(Type t, int64_t x) {
  unsigned w = widthOf(t);
  return w >= 64 ? uint64_t(x) : uint64_t(x) & ((uint64_t(1) << w) - 1);
}

/// combine(a, b) of gpu.subgroup_reduce's `kind` on elements of type `t`.
Elem reduceElems(mlir::gpu::AllReduceOperation kind, Type t, Elem a, Elem b) {
  using K = mlir::gpu::AllReduceOperation;
  Elem out;
  if (isa<FloatType>(t)) {
    double x = a.f, y = b.f, nan = std::nan("");
    bool either = std::isnan(x) || std::isnan(y);
    double v = kind == K::ADD        ? x + y
               : kind == K::MUL      ? x * y
               : kind == K::MAXNUMF  ? std::fmax(x, y)
               : kind == K::MINNUMF  ? std::fmin(x, y)
               : kind == K::MAXIMUMF ? (either ? nan : std::max(x, y))
                                     : (either ? nan : std::min(x, y));
    out.f = roundTo(t, v);
    return out;
  }
  int64_t x = a.i, y = b.i;
  uint64_t ux = unsignedOf(t, x), uy = unsignedOf(t, y);
  int64_t v = 0;
  switch (kind) {
  case K::ADD:
    v = int64_t(uint64_t(x) + uint64_t(y));
    break;
  case K::MUL:
    v = int64_t(uint64_t(x) * uint64_t(y));
    break;
  case K::MAXSI:
    v = std::max(x, y);
    break;
  case K::MINSI:
    v = std::min(x, y);
    break;
  case K::MAXUI:
    v = int64_t(std::max(ux, uy));
    break;
  case K::MINUI:
    v = int64_t(std::min(ux, uy));
    break;
  case K::AND:
    v = x & y;
    break;
  case K::OR:
    v = x | y;
    break;
  case K::XOR:
    v = x ^ y;
    break;
  default:
    break;
  }
  out.i = wrap(t, v);
  return out;
}

/// A buffer: bytes, and for workgroup memory the threads that wrote and
/// read each element since the last barrier (-1: none; -2: several).
struct Buffer {
  char *data = nullptr;
  int64_t bytes = 0;
  bool workgroup = false;
  std::vector<int32_t> writer, reader;
};

int64_t bytesOf(Type element) {
  return element.isIndex() ? 8
                           : std::max(1u, element.getIntOrFloatBitWidth() / 8);
}

Elem readElem(const char *p, Type t) {
  Elem e;
  if (t.isF64()) {
    std::memcpy(&e.f, p, 8);
  } else if (t.isF32()) {
    float f;
    std::memcpy(&f, p, 4);
    e.f = f;
  } else if (isa<FloatType>(t)) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    llvm::APFloat v(cast<FloatType>(t).getFloatSemantics(),
                    llvm::APInt(16, bits));
    bool lost = false;
    v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    e.f = v.convertToDouble();
  } else {
    int64_t n = bytesOf(t), x = 0;
    std::memcpy(&x, p, n);
    e.i = wrap(t, x);
  }
  return e;
}

void writeElem(char *p, Type t, Elem e) {
  if (t.isF64()) {
    std::memcpy(p, &e.f, 8);
  } else if (t.isF32()) {
    float f = float(e.f);
    std::memcpy(p, &f, 4);
  } else if (isa<FloatType>(t)) {
    llvm::APFloat v(e.f);
    bool lost = false;
    v.convert(cast<FloatType>(t).getFloatSemantics(),
              llvm::APFloat::rmNearestTiesToEven, &lost);
    uint16_t bits = uint16_t(v.bitcastToAPInt().getZExtValue());
    std::memcpy(p, &bits, 2);
  } else {
    std::memcpy(p, &e.i, bytesOf(t));
  }
}

/// An elementwise arith or math op on one element of each operand: its
/// operands and result types, and the results as `out` takes them.
struct ElementOp {
  Operation *op;
  ArrayRef<Elem> in;
  Elem &out;
  Type t, r; // the first operand's and the result's element types
  double a, b;
  int64_t x, y;

  ElementOp(Operation *op, ArrayRef<Elem> in, Elem &out)
      : op(op), in(in), out(out), t(elementOf(op->getOperand(0).getType())),
        r(elementOf(op->getResult(0).getType())), a(in[0].f),
        b(in.size() > 1 ? in[1].f : 0), x(in[0].i),
        y(in.size() > 1 ? in[1].i : 0) {}

  bool f(double v) {
    out.f = roundTo(r, v);
    return true;
  }
  bool i(int64_t v) {
    out.i = wrap(r, v);
    return true;
  }
  uint64_t u(unsigned k) { return unsignedOf(t, in[k].i); }

  /// False for an op none of these knows (or a division by zero).
  bool eval() { return floats() || integers() || compares() || maths(); }

  bool floats() {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](arith::AddFOp) { return f(a + b); })
        .Case([&](arith::SubFOp) { return f(a - b); })
        .Case([&](arith::MulFOp) { return f(a * b); })
        .Case([&](arith::DivFOp) { return f(a / b); })
        .Case([&](arith::RemFOp) { return f(std::fmod(a, b)); })
        .Case([&](arith::NegFOp) { return f(-a); })
        .Case([&](arith::MaximumFOp) {
          return f(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
        })
        .Case([&](arith::MinimumFOp) {
          return f(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
        })
        .Case([&](arith::MaxNumFOp) { return f(std::fmax(a, b)); })
        .Case([&](arith::MinNumFOp) { return f(std::fmin(a, b)); })
        .Case([&](arith::ExtFOp) { return f(a); })
        .Case([&](arith::TruncFOp) { return f(a); })
        .Case([&](arith::SIToFPOp) { return f(double(x)); })
        .Case([&](arith::UIToFPOp) { return f(double(u(0))); })
        .Default([](Operation *) { return false; });
  }

  /// arith.bitcast between a float and an integer of its width.
  bool bitcast() {
    unsigned w = widthOf(r);
    if (isa<FloatType>(t) == isa<FloatType>(r))
      return false;
    if (isa<FloatType>(t)) { // float bits as an integer
      llvm::APFloat v(a);
      bool lost = false;
      v.convert(cast<FloatType>(t).getFloatSemantics(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      return i(int64_t(v.bitcastToAPInt().getZExtValue()));
    }
    llvm::APFloat v(cast<FloatType>(r).getFloatSemantics(),
                    llvm::APInt(w, uint64_t(x)));
    bool lost = false;
    v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    out.f = v.convertToDouble();
    return true;
  }

  bool integers() {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](arith::BitcastOp) { return bitcast(); })
        .Case([&](arith::FPToSIOp) { return i(int64_t(a)); })
        .Case([&](arith::FPToUIOp) { return i(int64_t(uint64_t(a))); })
        .Case([&](arith::AddIOp) { return i(x + y); })
        .Case([&](arith::SubIOp) { return i(x - y); })
        .Case([&](arith::MulIOp) {
          return i(int64_t(uint64_t(x) * uint64_t(y)));
        })
        .Case([&](arith::DivSIOp) { return y != 0 && i(x / y); })
        .Case([&](arith::RemSIOp) { return y != 0 && i(x % y); })
        .Case([&](arith::DivUIOp) {
          return u(1) != 0 && i(int64_t(u(0) / u(1)));
        })
        .Case([&](arith::RemUIOp) {
          return u(1) != 0 && i(int64_t(u(0) % u(1)));
        })
        .Case([&](arith::AndIOp) { return i(x & y); })
        .Case([&](arith::OrIOp) { return i(x | y); })
        .Case([&](arith::XOrIOp) { return i(x ^ y); })
        .Case(
            [&](arith::ShLIOp) { return i(int64_t(uint64_t(x) << (y & 63))); })
        .Case([&](arith::ShRUIOp) { return i(int64_t(u(0) >> (y & 63))); })
        .Case([&](arith::ShRSIOp) { return i(x >> (y & 63)); })
        .Case([&](arith::MaxSIOp) { return i(std::max(x, y)); })
        .Case([&](arith::MinSIOp) { return i(std::min(x, y)); })
        .Case([&](arith::MaxUIOp) { return i(int64_t(std::max(u(0), u(1)))); })
        .Case([&](arith::MinUIOp) { return i(int64_t(std::min(u(0), u(1)))); })
        .Case([&](arith::ExtSIOp) { return i(x); })
        .Case([&](arith::ExtUIOp) { return i(int64_t(u(0))); })
        .Case([&](arith::TruncIOp) { return i(x); })
        .Case([&](arith::IndexCastOp) { return i(x); })
        .Case([&](arith::IndexCastUIOp) { return i(int64_t(u(0))); })
        .Default([](Operation *) { return false; });
  }

  bool compares() {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](arith::SelectOp) {
          out = in[0].i ? in[1] : in[2];
          return true;
        })
        .Case([&](arith::CmpIOp c) {
          using P = arith::CmpIPredicate;
          uint64_t ux = u(0), uy = u(1);
          bool v = false;
          switch (c.getPredicate()) {
          case P::eq:
            v = x == y;
            break;
          case P::ne:
            v = x != y;
            break;
          case P::slt:
            v = x < y;
            break;
          case P::sle:
            v = x <= y;
            break;
          case P::sgt:
            v = x > y;
            break;
          case P::sge:
            v = x >= y;
            break;
          case P::ult:
            v = ux < uy;
            break;
          case P::ule:
            v = ux <= uy;
            break;
          case P::ugt:
            v = ux > uy;
            break;
          case P::uge:
            v = ux >= uy;
            break;
          }
          out.i = v;
          return true;
        })
        .Case([&](arith::CmpFOp c) {
          using P = arith::CmpFPredicate;
          bool unordered = std::isnan(a) || std::isnan(b), v = false;
          switch (c.getPredicate()) {
          case P::AlwaysFalse:
            v = false;
            break;
          case P::OEQ:
            v = !unordered && a == b;
            break;
          case P::OGT:
            v = !unordered && a > b;
            break;
          case P::OGE:
            v = !unordered && a >= b;
            break;
          case P::OLT:
            v = !unordered && a < b;
            break;
          case P::OLE:
            v = !unordered && a <= b;
            break;
          case P::ONE:
            v = !unordered && a != b;
            break;
          case P::ORD:
            v = !unordered;
            break;
          case P::UEQ:
            v = unordered || a == b;
            break;
          case P::UGT:
            v = unordered || a > b;
            break;
          case P::UGE:
            v = unordered || a >= b;
            break;
          case P::ULT:
            v = unordered || a < b;
            break;
          case P::ULE:
            v = unordered || a <= b;
            break;
          case P::UNE:
            v = unordered || a != b;
            break;
          case P::UNO:
            v = unordered;
            break;
          case P::AlwaysTrue:
            v = true;
            break;
          }
          out.i = v;
          return true;
        })
        .Default([](Operation *) { return false; });
  }

  bool maths() {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](math::ExpOp) { return f(std::exp(a)); })
        .Case([&](math::Exp2Op) { return f(std::exp2(a)); })
        .Case([&](math::LogOp) { return f(std::log(a)); })
        .Case([&](math::Log2Op) { return f(std::log2(a)); })
        .Case([&](math::Log1pOp) { return f(std::log1p(a)); })
        .Case([&](math::TanhOp) { return f(std::tanh(a)); })
        .Case([&](math::ErfOp) { return f(std::erf(a)); })
        .Case([&](math::SqrtOp) { return f(std::sqrt(a)); })
        .Case([&](math::RsqrtOp) { return f(1 / std::sqrt(a)); })
        .Case([&](math::AbsFOp) { return f(std::fabs(a)); })
        .Case([&](math::FloorOp) { return f(std::floor(a)); })
        .Case([&](math::CeilOp) { return f(std::ceil(a)); })
        .Case([&](math::SinOp) { return f(std::sin(a)); })
        .Case([&](math::CosOp) { return f(std::cos(a)); })
        .Case([&](math::PowFOp) { return f(std::pow(a, b)); })
        .Case([&](math::FmaOp) { return f(std::fma(a, b, in[2].f)); })
        .Default([](Operation *) { return false; });
  }
};

using Mask = std::vector<char>;

/// The interpreter of one kernel call: the host function's values (one
/// thread) and, during a launch, a block's.
class Machine : public SimtBlock {
public:
  Machine(ModuleOp module, const WarpOps &warpOps, int64_t subgroupSize)
      : module(module), warpOps(warpOps), subgroupSize(subgroupSize) {}

  LogicalResult runHost(func::FuncOp kernel,
                        std::vector<std::vector<char>> &buffers);
  std::string why;

  // SimtBlock
  int64_t threads() const override { return threadCount; }
  bool active(int64_t t) const override { return (*mask)[t]; }
  const Elems &value(Value v, int64_t t) override { return values[v][t]; }
  void set(Value v, int64_t t, Elems e) override {
    auto &slot = values[v];
    slot.resize(threadCount);
    slot[t] = std::move(e);
  }
  FailureOr<Elem> load(Value memref, ArrayRef<int64_t> indices, int64_t t,
                       std::string &why) override;

private:
  LogicalResult fail(Operation *op, const llvm::Twine &what) {
    if (!why.empty())
      return failure(); // the first failure says what went wrong
    llvm::raw_string_ostream os(why);
    os << op->getName() << " at " << op->getLoc() << ": " << what;
    return failure();
  }
  FailureOr<char *> address(Value memref, ArrayRef<int64_t> indices, int64_t t,
                            bool store, std::string &why);
  LogicalResult runBlock(Block &block, Operation *&terminator);
  LogicalResult exec(Operation *op);
  LogicalResult execFor(scf::ForOp loop);
  LogicalResult execIf(scf::IfOp branch);
  LogicalResult execLaunch(mlir::gpu::LaunchFuncOp launch);
  LogicalResult execGlobal(memref::GetGlobalOp get);
  LogicalResult execConstant(arith::ConstantOp c);
  LogicalResult execElementwise(Operation *op);
  LogicalResult execBarrier(Operation *op);
  LogicalResult execSubgroupReduce(mlir::gpu::SubgroupReduceOp reduce);
  LogicalResult execVectorOp(Operation *op);
  Buffer *newBuffer(int64_t bytes, bool workgroup);
  /// A value of the host function (one thread).
  int64_t hostInt(Value v) { return values[v][0][0].i; }

  ModuleOp module;
  const WarpOps &warpOps;
  int64_t subgroupSize;
  /// Each value's elements per thread. An unordered_map: references to
  /// its entries stay valid while others are added.
  struct Hash {
    size_t operator()(Value v) const {
      return std::hash<const void *>()(v.getAsOpaquePointer());
    }
  };
  std::unordered_map<Value, std::vector<Elems>, Hash> values;
  llvm::DenseMap<Value, Buffer *> buffersOf;
  std::deque<Buffer> buffers;
  std::deque<std::vector<char>> storage;
  int64_t threadCount = 1;
  const Mask *mask = nullptr;
  std::array<int64_t, 3> blockSize{1, 1, 1}, gridSize{1, 1, 1},
      blockId{0, 0, 0};
};

Buffer *Machine::newBuffer(int64_t bytes, bool workgroup) {
  // Fresh memory reads as NaN (0xff bytes) until written.
  storage.emplace_back(size_t(bytes), char(0xff));
  Buffer &b = buffers.emplace_back();
  b.data = storage.back().data();
  b.bytes = bytes;
  b.workgroup = workgroup;
  return &b;
}

FailureOr<char *> Machine::address(Value memref, ArrayRef<int64_t> indices,
                                   int64_t t, bool store, std::string &why) {
  auto type = cast<MemRefType>(memref.getType());
  Buffer *b = buffersOf.lookup(memref);
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (!b || failed(getStridesAndOffset(type, strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic) || !type.hasStaticShape()) {
    why = "a buffer without a static shape and layout";
    return failure();
  }
  int64_t element = offset;
  for (auto [d, i] : llvm::enumerate(indices)) {
    if (i < 0 || i >= type.getDimSize(d)) {
      why = "index " + std::to_string(i) + " of dim " + std::to_string(d) +
            " (size " + std::to_string(type.getDimSize(d)) + ") in thread " +
            std::to_string(t);
      return failure();
    }
    element += i * strides[d];
  }
  int64_t size = bytesOf(type.getElementType());
  if (element < 0 || (element + 1) * size > b->bytes) {
    why = "element " + std::to_string(element) + " past its buffer";
    return failure();
  }
  if (b->workgroup) {
    int32_t &w = b->writer[element], &r = b->reader[element];
    int32_t self = int32_t(t);
    bool race = (w >= 0 && w != self) || (store && r != -1 && r != self);
    if (race) {
      why = "thread " + std::to_string(t) + (store ? " writes" : " reads") +
            " workgroup memory another thread used since the last barrier";
      return failure();
    }
    (store ? w : r) = r == -1 || r == self || store ? self : -2;
  }
  return b->data + element * size;
}

FailureOr<Elem> Machine::load(Value memref, ArrayRef<int64_t> indices,
                              int64_t t, std::string &why) {
  FailureOr<char *> p = address(memref, indices, t, false, why);
  if (failed(p))
    return failure();
  return readElem(*p, cast<MemRefType>(memref.getType()).getElementType());
}

LogicalResult Machine::runBlock(Block &block, Operation *&terminator) {
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      terminator = &op;
      return success();
    }
    if (failed(exec(&op)))
      return failure();
  }
  terminator = nullptr;
  return success();
}

/// Each thread runs its own trip count (bounds may differ by thread): an
/// iteration runs under the mask of the threads still in the loop.
LogicalResult Machine::execFor(scf::ForOp loop) {
  const Mask *outer = mask;
  std::vector<int64_t> iv(threadCount), ub(threadCount), step(threadCount);
  for (int64_t t = 0; t < threadCount; ++t) {
    if (!(*outer)[t])
      continue;
    iv[t] = values[loop.getLowerBound()][t][0].i;
    ub[t] = values[loop.getUpperBound()][t][0].i;
    step[t] = values[loop.getStep()][t][0].i;
    if (step[t] <= 0)
      return fail(loop, "a step that is not positive");
  }
  Block *body = loop.getBody();
  for (auto [arg, init] :
       llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
    values[arg] = values[init];
  Mask inner(threadCount, 0);
  LogicalResult result = success();
  while (succeeded(result)) {
    bool any = false;
    auto &ivs = values[loop.getInductionVar()];
    ivs.resize(threadCount);
    for (int64_t t = 0; t < threadCount; ++t) {
      inner[t] = (*outer)[t] && iv[t] < ub[t];
      any |= bool(inner[t]);
      ivs[t] = Elems{intElem(iv[t])};
    }
    if (!any)
      break;
    mask = &inner;
    Operation *yield = nullptr;
    result = runBlock(*body, yield);
    mask = outer;
    if (failed(result))
      break;
    // Copies first: a yield may pass one iter_arg into another's place.
    std::vector<std::vector<Elems>> next;
    for (Value v : yield->getOperands())
      next.push_back(values[v]);
    for (auto [arg, v] : llvm::zip(loop.getRegionIterArgs(), next))
      for (int64_t t = 0; t < threadCount; ++t)
        if (inner[t])
          values[arg][t] = v[t];
    for (int64_t t = 0; t < threadCount; ++t)
      iv[t] += inner[t] ? step[t] : 0;
  }
  mask = outer;
  for (auto [res, arg] : llvm::zip(loop.getResults(), loop.getRegionIterArgs()))
    values[res] = values[arg];
  return result;
}

LogicalResult Machine::execIf(scf::IfOp branch) {
  const Mask *outer = mask;
  auto &cond = values[branch.getCondition()];
  for (auto result : branch.getResults())
    values[result].resize(threadCount);
  for (bool side : {true, false}) {
    Region &region = side ? branch.getThenRegion() : branch.getElseRegion();
    Mask inner(threadCount, 0);
    bool any = false;
    for (int64_t t = 0; t < threadCount; ++t) {
      inner[t] = (*outer)[t] && (cond[t][0].i != 0) == side;
      any |= bool(inner[t]);
    }
    if (!any || region.empty())
      continue;
    mask = &inner;
    Operation *yield = nullptr;
    LogicalResult r = runBlock(region.front(), yield);
    mask = outer;
    if (failed(r))
      return failure();
    for (auto [result, v] :
         llvm::zip(branch.getResults(), yield->getOperands()))
      for (int64_t t = 0; t < threadCount; ++t)
        if (inner[t])
          values[result][t] = values[v][t];
  }
  return success();
}

LogicalResult Machine::execConstant(arith::ConstantOp c) {
  Type t = c.getType();
  Type e = elementOf(t);
  Elems elems;
  auto push = [&](Attribute a) {
    Elem x;
    if (auto f = dyn_cast<FloatAttr>(a))
      x.f = roundTo(e, f.getValueAsDouble());
    else
      x.i = wrap(e, cast<IntegerAttr>(a).getValue().getSExtValue());
    elems.push_back(x);
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    for (Attribute a : dense.getValues<Attribute>())
      push(a);
  } else if (isa<FloatAttr, IntegerAttr>(c.getValue())) {
    push(c.getValue());
  } else {
    return fail(c, "a constant of this kind");
  }
  values[c.getResult()].assign(threadCount, elems);
  return success();
}

LogicalResult Machine::execElementwise(Operation *op) {
  int64_t n = elementsOf(op->getResult(0).getType());
  auto &out = values[op->getResult(0)];
  out.resize(threadCount);
  SmallVector<Elem, 3> in(op->getNumOperands());
  for (int64_t t = 0; t < threadCount; ++t) {
    if (!(*mask)[t])
      continue;
    Elems result(n);
    for (int64_t e = 0; e < n; ++e) {
      for (auto [k, v] : llvm::enumerate(op->getOperands())) {
        const Elems &x = values[v][t];
        in[k] = x.size() == 1 ? x[0] : x[e];
      }
      if (!ElementOp(op, in, result[e]).eval())
        return fail(op, "not an op the interpreter runs (or a division by "
                        "zero)");
    }
    out[t] = std::move(result);
  }
  return success();
}

LogicalResult Machine::execBarrier(Operation *op) {
  for (int64_t t = 0; t < threadCount; ++t)
    if (!(*mask)[t])
      return fail(op, "a barrier not every thread of the block reaches");
  for (Buffer &b : buffers)
    if (b.workgroup) {
      std::fill(b.writer.begin(), b.writer.end(), -1);
      std::fill(b.reader.begin(), b.reader.end(), -1);
    }
  return success();
}

/// Each subgroup's active threads (consecutive linear ids) get the
/// reduction of their values.
LogicalResult Machine::execSubgroupReduce(mlir::gpu::SubgroupReduceOp reduce) {
  Type t = reduce.getType();
  if (!t.isIntOrFloat())
    return fail(reduce, "a reduction of a vector");
  auto &out = values[reduce.getResult()];
  out.resize(threadCount);
  const std::vector<Elems> &in = values[reduce.getValue()];
  for (int64_t first = 0; first < threadCount; first += subgroupSize) {
    int64_t end = std::min(threadCount, first + subgroupSize);
    // CUDA's shuffles name the whole warp: all of a subgroup's threads
    // reduce together, or none.
    int64_t active = std::count_if(mask->begin() + first, mask->begin() + end,
                                   [](char m) { return m != 0; });
    if (active != 0 && active != end - first)
      return fail(reduce, "a subgroup reduction some of a subgroup's "
                          "threads do not reach");
    std::optional<Elem> total;
    for (int64_t l = first; l < end; ++l)
      if ((*mask)[l])
        total =
            total ? reduceElems(reduce.getOp(), t, *total, in[l][0]) : in[l][0];
    for (int64_t l = first; l < end; ++l)
      if ((*mask)[l])
        out[l] = Elems{*total};
  }
  return success();
}

LogicalResult Machine::execGlobal(memref::GetGlobalOp get) {
  auto global = module.lookupSymbol<memref::GlobalOp>(get.getName());
  auto init =
      global ? dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr())
             : DenseElementsAttr();
  auto type = cast<MemRefType>(get.getType());
  if (!init || !type.hasStaticShape())
    return fail(get, "a global without a static initial value");
  Type e = type.getElementType();
  Buffer *b = newBuffer(type.getNumElements() * bytesOf(e), false);
  int64_t i = 0;
  for (Attribute a : init.getValues<Attribute>()) {
    Elem x;
    if (auto f = dyn_cast<FloatAttr>(a))
      x.f = f.getValueAsDouble();
    else
      x.i = cast<IntegerAttr>(a).getValue().getSExtValue();
    writeElem(b->data + i++ * bytesOf(e), e, x);
  }
  buffersOf[get.getResult()] = b;
  return success();
}

LogicalResult Machine::execLaunch(mlir::gpu::LaunchFuncOp launch) {
  auto func = module.lookupSymbol<mlir::gpu::GPUFuncOp>(launch.getKernelAttr());
  if (!func)
    return fail(launch, "a kernel not in the module");
  auto dims = [&](mlir::gpu::KernelDim3 d) {
    return std::array<int64_t, 3>{hostInt(d.x), hostInt(d.y), hostInt(d.z)};
  };
  std::array<int64_t, 3> grid = dims(launch.getGridSizeOperandValues());
  std::array<int64_t, 3> block = dims(launch.getBlockSizeOperandValues());
  // The host's values, kept while the blocks run.
  auto hostValues = std::move(values);
  SmallVector<Buffer *> args;
  SmallVector<Elems> scalars;
  for (Value v : launch.getKernelOperands()) {
    args.push_back(buffersOf.lookup(v));
    scalars.push_back(hostValues.count(v) ? hostValues[v][0] : Elems());
  }
  int64_t threads = block[0] * block[1] * block[2];
  Mask all(threads, 1);
  const Mask *hostMask = mask;
  int64_t hostThreads = threadCount;
  threadCount = threads;
  mask = &all;
  blockSize = block;
  gridSize = grid;
  LogicalResult result = success();
  Block &body = func.getBody().front();
  for (int64_t z = 0; z < grid[2] && succeeded(result); ++z)
    for (int64_t y = 0; y < grid[1] && succeeded(result); ++y)
      for (int64_t x = 0; x < grid[0] && succeeded(result); ++x) {
        blockId = {x, y, z};
        values.clear();
        for (auto [arg, buffer, scalar] :
             llvm::zip(func.getArguments(), args, scalars)) {
          if (buffer)
            buffersOf[arg] = buffer;
          else
            values[arg].assign(threads, scalar);
        }
        size_t firstShared = buffers.size();
        for (BlockArgument a : func.getWorkgroupAttributions()) {
          auto type = cast<MemRefType>(a.getType());
          Buffer *b = newBuffer(
              type.getNumElements() * bytesOf(type.getElementType()), true);
          b->writer.assign(type.getNumElements(), -1);
          b->reader.assign(type.getNumElements(), -1);
          buffersOf[a] = b;
        }
        Operation *terminator = nullptr;
        result = runBlock(body, terminator);
        // The block's workgroup memory ends with it.
        while (buffers.size() > firstShared) {
          buffers.pop_back();
          storage.pop_back();
        }
      }
  values = std::move(hostValues);
  threadCount = hostThreads;
  mask = hostMask;
  return result;
}

/// The flat index of `position` (a prefix of `shape`'s dims) and the
/// elements it selects.
std::pair<int64_t, int64_t> flatSlice(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> position) {
  int64_t flat = 0, count = 1;
  for (auto [d, p] : llvm::enumerate(position))
    flat = flat * shape[d] + p;
  for (size_t d = position.size(); d < shape.size(); ++d) {
    flat *= shape[d];
    count *= shape[d];
  }
  return {flat, count};
}

/// vector.extract and vector.insert at constant positions, vector.bitcast
/// (the elements' bytes reread), and llvm.extractvalue of a struct of
/// scalars (a struct's elements are its fields, flattened).
LogicalResult Machine::execVectorOp(Operation *op) {
  Value result = op->getResult(0);
  std::vector<Elems> out(threadCount);
  auto each = [&](auto f) {
    for (int64_t t = 0; t < threadCount; ++t)
      if ((*mask)[t])
        out[t] = f(t);
    values[result] = std::move(out);
    return success();
  };
  if (auto ex = dyn_cast<vector::ExtractOp>(op)) {
    if (!ex.getDynamicPosition().empty())
      return fail(op, "an extract at a position not constant");
    auto [flat, count] =
        flatSlice(ex.getSourceVectorType().getShape(), ex.getStaticPosition());
    return each([&, flat = flat, count = count](int64_t t) {
      const Elems &v = values[ex.getVector()][t];
      return Elems(v.begin() + flat, v.begin() + flat + count);
    });
  }
  if (auto in = dyn_cast<vector::InsertOp>(op)) {
    if (!in.getDynamicPosition().empty())
      return fail(op, "an insert at a position not constant");
    auto [flat, count] =
        flatSlice(in.getDestVectorType().getShape(), in.getStaticPosition());
    return each([&, flat = flat, count = count](int64_t t) {
      Elems v = values[in.getDest()][t];
      const Elems &x = values[in.getSource()][t];
      std::copy(x.begin(), x.begin() + count, v.begin() + flat);
      return v;
    });
  }
  if (auto cast = dyn_cast<vector::BitCastOp>(op)) {
    Type from = cast.getSourceVectorType().getElementType();
    Type to = cast.getResultVectorType().getElementType();
    int64_t n = cast.getResultVectorType().getNumElements();
    return each([&](int64_t t) {
      const Elems &v = values[cast.getSource()][t];
      std::vector<char> bytes(v.size() * bytesOf(from));
      for (auto [i, e] : llvm::enumerate(v))
        writeElem(bytes.data() + i * bytesOf(from), from, e);
      Elems r;
      for (int64_t i = 0; i < n; ++i)
        r.push_back(readElem(bytes.data() + i * bytesOf(to), to));
      return r;
    });
  }
  auto ev = cast<LLVM::ExtractValueOp>(op);
  if (ev.getPosition().size() != 1)
    return fail(op, "an extractvalue other than of a struct's field");
  int64_t field = ev.getPosition()[0];
  return each(
      [&](int64_t t) { return Elems{values[ev.getContainer()][t][field]}; });
}

LogicalResult Machine::exec(Operation *op) {
  auto dimOf = [](mlir::gpu::Dimension d) { return int(d); };
  auto uniform = [&](Value v, int64_t x) {
    values[v].assign(threadCount, Elems{intElem(x)});
    return success();
  };
  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return execConstant(c);
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return execFor(loop);
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return execIf(branch);
  if (auto launch = dyn_cast<mlir::gpu::LaunchFuncOp>(op))
    return execLaunch(launch);
  if (auto get = dyn_cast<memref::GetGlobalOp>(op))
    return execGlobal(get);
  if (isa<mlir::gpu::BarrierOp>(op))
    return execBarrier(op);
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    auto type = alloc.getType();
    if (!type.hasStaticShape())
      return fail(op, "an allocation without a static shape");
    buffersOf[alloc] = newBuffer(
        type.getNumElements() * bytesOf(type.getElementType()), false);
    return success();
  }
  if (isa<memref::DeallocOp>(op))
    return success();
  if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
    buffersOf[op->getResult(0)] = buffersOf.lookup(view.getViewSource());
    return success();
  }
  if (auto id = dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
    auto &out = values[id];
    out.resize(threadCount);
    int d = dimOf(id.getDimension());
    for (int64_t t = 0; t < threadCount; ++t) {
      int64_t coords[3] = {t % blockSize[0], t / blockSize[0] % blockSize[1],
                           t / (blockSize[0] * blockSize[1])};
      out[t] = Elems{intElem(coords[d])};
    }
    return success();
  }
  if (auto id = dyn_cast<mlir::gpu::BlockIdOp>(op))
    return uniform(id, blockId[dimOf(id.getDimension())]);
  if (auto dim = dyn_cast<mlir::gpu::BlockDimOp>(op))
    return uniform(dim, blockSize[dimOf(dim.getDimension())]);
  if (auto dim = dyn_cast<mlir::gpu::GridDimOp>(op))
    return uniform(dim, gridSize[dimOf(dim.getDimension())]);
  if (auto size = dyn_cast<mlir::gpu::SubgroupSizeOp>(op))
    return uniform(size, subgroupSize);
  if (auto reduce = dyn_cast<mlir::gpu::SubgroupReduceOp>(op))
    return execSubgroupReduce(reduce);
  if (auto ld = dyn_cast<memref::LoadOp>(op)) {
    auto &out = values[ld.getResult()];
    out.resize(threadCount);
    for (int64_t t = 0; t < threadCount; ++t) {
      if (!(*mask)[t])
        continue;
      SmallVector<int64_t> at;
      for (Value i : ld.getIndices())
        at.push_back(values[i][t][0].i);
      std::string what;
      FailureOr<Elem> e = load(ld.getMemRef(), at, t, what);
      if (failed(e))
        return fail(op, what);
      out[t] = Elems{*e};
    }
    return success();
  }
  if (auto st = dyn_cast<memref::StoreOp>(op)) {
    for (int64_t t = 0; t < threadCount; ++t) {
      if (!(*mask)[t])
        continue;
      SmallVector<int64_t> at;
      for (Value i : st.getIndices())
        at.push_back(values[i][t][0].i);
      std::string what;
      FailureOr<char *> p = address(st.getMemRef(), at, t, true, what);
      if (failed(p))
        return fail(op, what);
      writeElem(*p, st.getMemRefType().getElementType(),
                values[st.getValueToStore()][t][0]);
    }
    return success();
  }
  if (isa<vector::ExtractOp, vector::InsertOp, vector::BitCastOp,
          LLVM::ExtractValueOp>(op))
    return execVectorOp(op);
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
      op->getNumResults() == 1)
    return execElementwise(op);
  if (warpOps) {
    std::string what;
    if (std::optional<LogicalResult> r = warpOps(op, *this, what)) {
      if (failed(*r))
        return fail(op, what);
      return success();
    }
  }
  return fail(op, "not an op the interpreter runs");
}

LogicalResult Machine::runHost(func::FuncOp kernel,
                               std::vector<std::vector<char>> &args) {
  Mask one(1, 1);
  mask = &one;
  if (args.size() != kernel.getNumArguments()) {
    why = "the kernel takes " + std::to_string(kernel.getNumArguments()) +
          " buffers, not " + std::to_string(args.size());
    return failure();
  }
  for (auto [arg, bytes] : llvm::zip(kernel.getArguments(), args)) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.hasStaticShape() ||
        int64_t(bytes.size()) !=
            type.getNumElements() * bytesOf(type.getElementType())) {
      why = "argument " + std::to_string(arg.getArgNumber()) +
            " is not a static buffer of the bytes given";
      return failure();
    }
    Buffer &b = buffers.emplace_back();
    b.data = bytes.data();
    b.bytes = int64_t(bytes.size());
    buffersOf[arg] = &b;
  }
  Operation *terminator = nullptr;
  return runBlock(kernel.getBody().front(), terminator);
}

} // namespace

LogicalResult interpretMappedKernel(func::FuncOp kernel,
                                    std::vector<std::vector<char>> &buffers,
                                    std::string &why, const WarpOps &warpOps,
                                    int64_t subgroupSize) {
  auto module = kernel->getParentOfType<ModuleOp>();
  if (!module) {
    why = "the kernel is not in a module";
    return failure();
  }
  if (subgroupSize < 1) {
    why = "a subgroup of " + std::to_string(subgroupSize) + " threads";
    return failure();
  }
  Machine machine(module, warpOps, subgroupSize);
  if (succeeded(machine.runHost(kernel, buffers)))
    return success();
  why = machine.why;
  return failure();
}

} // namespace ign::gpu
