//===- HostTensor.cpp - tensors known at import time ----------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/APFloat.h"

using namespace mlir;

namespace ign::import {

std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims) {
  constexpr int64_t kLimit = int64_t(1) << 40;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kLimit / d))
      return std::nullopt;
    n *= d;
  }
  return n;
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void HostTensor::allocate() {
  ints.clear();
  floats.clear();
  if (isFloat())
    floats.assign(numElements(), 0.0);
  else
    ints.assign(numElements(), 0);
}

int64_t HostTensor::wrapInt(int64_t v) const {
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width >= 64)
    return v;
  if (width == 1)
    return v != 0;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t bits = uint64_t(v) & mask;
  if (elementType.isUnsignedInteger())
    return int64_t(bits);
  // Sign-extend.
  uint64_t sign = uint64_t(1) << (width - 1);
  return int64_t((bits ^ sign) - sign);
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

DenseElementsAttr HostTensor::toAttr() const {
  auto t = type();
  if (auto ft = dyn_cast<FloatType>(elementType)) {
    SmallVector<APFloat> values;
    values.reserve(floats.size());
    for (double d : floats) {
      APFloat v(d);
      bool lost;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
    return DenseElementsAttr::get(t, values);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width == 1) {
    SmallVector<bool> bits(ints.begin(), ints.end());
    return DenseElementsAttr::get(t, ArrayRef<bool>(bits));
  }
  SmallVector<APInt> values;
  values.reserve(ints.size());
  for (int64_t v : ints)
    values.push_back(APInt(64, uint64_t(v), /*isSigned=*/true).trunc(width));
  return DenseElementsAttr::get(t, values);
}

std::optional<HostTensor> HostTensor::fromAttr(DenseElementsAttr attr) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  HostTensor t;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  t.elementType = type.getElementType();
  if (t.isFloat()) {
    for (APFloat v : attr.getValues<APFloat>())
      t.floats.push_back(v.convertToDouble());
  } else if (auto it = dyn_cast<IntegerType>(t.elementType)) {
    for (APInt v : attr.getValues<APInt>())
      t.ints.push_back(it.isUnsigned() || it.getWidth() == 1
                           ? int64_t(v.getZExtValue())
                           : v.getSExtValue());
  } else {
    return std::nullopt;
  }
  return t;
}

Type convertElementType(MLIRContext *ctx, int32_t onnxType) {
  using TP = onnx::TensorProto;
  Builder b(ctx);
  switch (onnxType) {
  case TP::FLOAT:
    return b.getF32Type();
  case TP::DOUBLE:
    return b.getF64Type();
  case TP::FLOAT16:
    return b.getF16Type();
  case TP::BFLOAT16:
    return b.getBF16Type();
  case TP::INT8:
    return b.getIntegerType(8);
  case TP::INT16:
    return b.getIntegerType(16);
  case TP::INT32:
    return b.getIntegerType(32);
  case TP::INT64:
    return b.getIntegerType(64);
  case TP::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case TP::UINT16:
    return b.getIntegerType(16, false);
  case TP::UINT32:
    return b.getIntegerType(32, false);
  case TP::UINT64:
    return b.getIntegerType(64, false);
  case TP::BOOL:
    return b.getI1Type();
  default:
    return nullptr;
  }
}

} // namespace ign::import
