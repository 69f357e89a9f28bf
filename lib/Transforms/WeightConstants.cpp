//===- WeightConstants.cpp - reading and making weight constants ----------===//

#include "WeightConstants.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace ign {

std::optional<std::vector<float>> constantFloats(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  auto type = cast<RankedTensorType>(c.getType());
  if (!type.getElementType().isF32())
    return std::nullopt;
  size_t n = type.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    auto values = dense.getValues<float>();
    return std::vector<float>(values.begin(), values.end());
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != n * sizeof(float))
      return std::nullopt;
    std::vector<float> out(n);
    std::memcpy(out.data(), blob->getData().data(), n * sizeof(float));
    return out;
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> constantIntegers(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  auto type = cast<RankedTensorType>(c.getType());
  auto it = dyn_cast<IntegerType>(type.getElementType());
  if (!it || (it.getWidth() != 8 && it.getWidth() != 32))
    return std::nullopt;
  size_t n = type.getNumElements();
  std::vector<int64_t> out;
  out.reserve(n);
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    for (const APInt &x : dense.getValues<APInt>())
      out.push_back(it.isUnsigned() ? int64_t(x.getZExtValue())
                                    : x.getSExtValue());
    return out;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue());
  AsmResourceBlob *blob =
      resource ? resource.getRawHandle().getBlob() : nullptr;
  size_t bytes = it.getWidth() / 8;
  if (!blob || blob->getData().size() != n * bytes)
    return std::nullopt;
  const char *data = blob->getData().data();
  for (size_t i = 0; i < n; ++i) {
    if (bytes == 4) {
      int32_t x;
      std::memcpy(&x, data + 4 * i, 4);
      out.push_back(x);
    } else {
      out.push_back(it.isUnsigned() ? int64_t(uint8_t(data[i]))
                                    : int64_t(int8_t(data[i])));
    }
  }
  return out;
}

template <typename T>
static Value makeBlobConstant(OpBuilder &b, Location loc, RankedTensorType type,
                              std::vector<T> values, llvm::StringRef name) {
  auto *owned = new std::vector<T>(std::move(values));
  AsmResourceBlob blob(
      llvm::ArrayRef<char>(reinterpret_cast<const char *>(owned->data()),
                           owned->size() * sizeof(T)),
      alignof(T), [owned](void *, size_t, size_t) { delete owned; },
      /*dataIsMutable=*/false);
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return b.create<ConstantOp>(loc, type, attr);
}

Value makeWeight(OpBuilder &b, Location loc, RankedTensorType type,
                 std::vector<float> values, llvm::StringRef name) {
  return makeBlobConstant(b, loc, type, std::move(values), name);
}

Value makeWeight(OpBuilder &b, Location loc, RankedTensorType type,
                 std::vector<int8_t> values, llvm::StringRef name) {
  return makeBlobConstant(b, loc, type, std::move(values), name);
}

Value makeWeight(OpBuilder &b, Location loc, RankedTensorType type,
                 std::vector<int16_t> values, llvm::StringRef name) {
  return makeBlobConstant(b, loc, type, std::move(values), name);
}

std::string weightName(Value v, llvm::StringRef suffix) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (auto r = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
    return (r.getRawHandle().getKey() + suffix).str();
  return ("folded" + suffix).str();
}

} // namespace ign
