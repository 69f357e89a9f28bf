//===- GpuLaunches.cpp - a mapped kernel's launches, as data --------------===//
//
// The launches of a mapped kernel and what their arguments are bound to
// (GpuLaunches.h).
//
//===----------------------------------------------------------------------===//

#include "GpuLaunches.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace ign::gpu {

namespace {

std::optional<int64_t> constantOf(Value v) {
  return getConstantIntValue(getAsOpFoldResult(v));
}

/// The bytes of a constant buffer as SPIR-V reads them: row-major
/// elements of their own width, booleans as bytes.
std::optional<std::string> constantBytes(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  Attribute initial = global ? global.getInitialValueAttr() : nullptr;
  // Large constants are resources: their blob holds the bytes as stored.
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(initial)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || resource.getElementType().isInteger(1))
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    return std::string(data.begin(), data.end());
  }
  auto value = dyn_cast_or_null<DenseElementsAttr>(initial);
  if (!value)
    return std::nullopt;
  std::string bytes;
  auto append = [&](const APInt &bits) {
    int64_t n = std::max<int64_t>(1, (bits.getBitWidth() + 7) / 8);
    for (int64_t i = 0; i < n; ++i)
      bytes.push_back(char(bits.extractBitsAsZExtValue(
          std::min<int64_t>(8, bits.getBitWidth() - 8 * i), 8 * i)));
  };
  if (isa<FloatType>(value.getElementType()))
    for (const APFloat &f : value.getValues<APFloat>())
      append(f.bitcastToAPInt());
  else if (value.getElementType().isIntOrIndex())
    for (const APInt &i : value.getValues<APInt>())
      append(i);
  else
    return std::nullopt;
  return bytes;
}

/// The binding of launch argument `v`: a kernel argument, a scratch buffer
/// (an allocation) or a constant (a global).
std::optional<Binding> bindingOf(Value v, func::FuncOp kernel,
                                 KernelLaunches &out,
                                 llvm::DenseMap<Operation *, int64_t> &seen,
                                 std::string &why) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape()) {
    why = "a launch argument that is not a buffer of static shape";
    return std::nullopt;
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (arg.getOwner()->getParentOp() == kernel.getOperation())
      return Binding{Binding::Arg, arg.getArgNumber()};
  Operation *def = v.getDefiningOp();
  if (auto it = seen.find(def); it != seen.end())
    return Binding{isa<memref::AllocOp>(def) ? Binding::Scratch
                                             : Binding::Const,
                   it->second};
  if (isa_and_nonnull<memref::AllocOp>(def)) {
    out.scratchBytes.push_back(storageBytes(type));
    return Binding{Binding::Scratch, seen[def] = out.scratchBytes.size() - 1};
  }
  if (auto get = dyn_cast_or_null<memref::GetGlobalOp>(def)) {
    std::optional<std::string> bytes = constantBytes(get);
    if (!bytes) {
      why = "a constant whose bytes are not in the module";
      return std::nullopt;
    }
    out.constants.push_back(std::move(*bytes));
    return Binding{Binding::Const, seen[def] = out.constants.size() - 1};
  }
  why = "a launch argument that is neither a kernel argument, a scratch "
        "buffer nor a constant";
  return std::nullopt;
}

} // namespace

int64_t storageBytes(MemRefType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

std::vector<int64_t> argumentBytes(llvm::ArrayRef<Type> types) {
  std::vector<int64_t> bytes;
  for (Type t : types) {
    auto m = dyn_cast<MemRefType>(t);
    bytes.push_back(m && m.hasStaticShape() ? storageBytes(m) : 0);
  }
  return bytes;
}

FailureOr<KernelLaunches> collectLaunches(func::FuncOp kernel,
                                          std::string &why) {
  KernelLaunches out;
  llvm::DenseMap<Operation *, int64_t> seen;
  for (auto launch : kernel.getOps<mlir::gpu::LaunchFuncOp>()) {
    Launch d;
    d.module = launch.getKernelModuleName().str();
    d.entry = launch.getKernelName().str();
    mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value sizes[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    for (int i = 0; i < 6; ++i) {
      std::optional<int64_t> c = constantOf(sizes[i]);
      if (!c || *c < 1) {
        why = "a launch whose size is not a constant";
        return failure();
      }
      (i < 3 ? d.groups : d.local)[i % 3] = *c;
    }
    for (Value v : launch.getKernelOperands()) {
      std::optional<Binding> b = bindingOf(v, kernel, out, seen, why);
      if (!b)
        return failure();
      d.bindings.push_back(*b);
    }
    out.launches.push_back(std::move(d));
  }
  if (out.launches.empty()) {
    why = "no launch";
    return failure();
  }
  return out;
}

} // namespace ign::gpu
