//===- FilledAccumulators.cpp - register tiles of filled outputs ----------===//

#include "FilledAccumulators.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace ign::host {

namespace {

/// Whether `slice` reads none of what `insert` wrote (`slice` a slice of
/// `insert`'s result; static offsets and sizes, apart along some dim).
bool readsNoneOf(tensor::ExtractSliceOp slice, tensor::InsertSliceOp insert) {
  ArrayRef<int64_t> at = slice.getStaticOffsets(),
                    size = slice.getStaticSizes();
  ArrayRef<int64_t> wrote = insert.getStaticOffsets();
  ArrayRef<int64_t> wide = insert.getStaticSizes();
  if (at.size() != wrote.size() || !slice.hasUnitStride() ||
      !insert.hasUnitStride())
    return false;
  for (size_t d = 0; d < at.size(); ++d) {
    if (ShapedType::isDynamic(at[d]) || ShapedType::isDynamic(size[d]) ||
        ShapedType::isDynamic(wrote[d]) || ShapedType::isDynamic(wide[d]))
      return false;
    if (at[d] + size[d] <= wrote[d] || wrote[d] + wide[d] <= at[d])
      return true;
  }
  return false;
}

} // namespace

TypedAttr fillValueOf(Value init) {
  while (auto slice = init.getDefiningOp<tensor::ExtractSliceOp>()) {
    init = slice.getSource();
    auto insert = init.getDefiningOp<tensor::InsertSliceOp>();
    if (insert && readsNoneOf(slice, insert))
      init = insert.getDest();
  }
  auto fill = init.getDefiningOp<linalg::FillOp>();
  TypedAttr value;
  if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return {};
  return value;
}

void markFilledAccumulators(TypedAttr value,
                            ArrayRef<utils::IteratorType> iterators,
                            const scf::SCFTilingResult &tiled) {
  size_t parallel = llvm::count(iterators, utils::IteratorType::parallel);
  if (!value || tiled.loops.size() != iterators.size())
    return;
  for (size_t l = parallel; l < tiled.loops.size(); ++l) {
    auto loop = dyn_cast<scf::ForOp>(tiled.loops[l]);
    std::optional<int64_t> trips =
        loop ? constantTripCount(loop.getLowerBound(), loop.getUpperBound(),
                                 loop.getStep())
             : std::nullopt;
    if (!trips)
      return;
    if (*trips > 1) {
      loop->setAttr(kFilledAccumulators, value);
      return;
    }
  }
}

} // namespace ign::host
