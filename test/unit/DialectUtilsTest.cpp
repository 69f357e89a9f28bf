//===- DialectUtilsTest.cpp - shape helpers of the ign dialect ------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

TEST(BroadcastShapes, NumpyRules) {
  auto r = ign::broadcastShapes({2, 1, 4}, {3, 1});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (llvm::SmallVector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*ign::broadcastShapes({}, {5}), (llvm::SmallVector<int64_t>{5}));
  EXPECT_EQ(*ign::broadcastShapes({0, 1}, {1, 3}),
            (llvm::SmallVector<int64_t>{0, 3}));
}

TEST(BroadcastShapes, IncompatibleDimsFail) {
  EXPECT_FALSE(ign::broadcastShapes({2, 3}, {4}).has_value());
  EXPECT_FALSE(ign::broadcastShapes({2}, {3}).has_value());
}

TEST(ToI64Vector, ReadsIntegerArrays) {
  MLIRContext ctx;
  Builder b(&ctx);
  EXPECT_EQ(ign::toI64Vector(b.getI64ArrayAttr({3, -1, 7})),
            (llvm::SmallVector<int64_t>{3, -1, 7}));
  EXPECT_TRUE(ign::toI64Vector(ArrayAttr()).empty());
}

/// Type inference refuses bad input with a diagnostic instead of crashing.
TEST(TypeInference, ReshapeElementCountMismatchIsAnError) {
  MLIRContext ctx;
  ctx.loadDialect<ign::IgnDialect>();
  Builder b(&ctx);
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  OpBuilder ob(&ctx);
  auto type = RankedTensorType::get({2, 3}, b.getF32Type());
  auto attr = DenseElementsAttr::get(type, 1.0f);
  auto c = ob.create<ign::ConstantOp>(b.getUnknownLoc(), type, attr);
  llvm::SmallVector<Type> types;
  auto attrs =
      b.getDictionaryAttr({b.getNamedAttr("shape", b.getI64ArrayAttr({4, 2}))});
  EXPECT_TRUE(failed(ign::ReshapeOp::inferReturnTypes(
      &ctx, b.getUnknownLoc(), ValueRange{c.getResult()}, attrs, nullptr, {},
      types)));
  EXPECT_NE(message.find("cannot reshape"), std::string::npos) << message;
  types.clear();
  auto good =
      b.getDictionaryAttr({b.getNamedAttr("shape", b.getI64ArrayAttr({3, 2}))});
  ASSERT_TRUE(succeeded(ign::ReshapeOp::inferReturnTypes(
      &ctx, b.getUnknownLoc(), ValueRange{c.getResult()}, good, nullptr, {},
      types)));
  EXPECT_EQ(types[0], RankedTensorType::get({3, 2}, b.getF32Type()));
  c->erase();
}

TEST(TypeInference, MissingAttributeIsAnErrorNotACrash) {
  MLIRContext ctx;
  ctx.loadDialect<ign::IgnDialect>();
  Builder b(&ctx);
  OpBuilder ob(&ctx);
  int errors = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &) {
    ++errors;
    return success();
  });
  auto type = RankedTensorType::get({2, 3}, b.getF32Type());
  auto c = ob.create<ign::ConstantOp>(b.getUnknownLoc(), type,
                                      DenseElementsAttr::get(type, 0.0f));
  llvm::SmallVector<Type> types;
  EXPECT_TRUE(failed(ign::TransposeOp::inferReturnTypes(
      &ctx, b.getUnknownLoc(), ValueRange{c.getResult()},
      b.getDictionaryAttr({}), nullptr, {}, types)));
  EXPECT_EQ(errors, 1);
  c->erase();
}
