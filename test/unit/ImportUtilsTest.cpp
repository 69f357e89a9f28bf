//===- ImportUtilsTest.cpp - importer utilities
//----------------------------===//

#include "../../lib/Import/ImporterImpl.h"
#include "ign/Import/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using ign::import::HostTensor;

TEST(ParseShape, AcceptsDimsAndScalars) {
  EXPECT_EQ(*ign::parseShape("1x3x224x224"),
            (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(*ign::parseShape("7"), (std::vector<int64_t>{7}));
  EXPECT_TRUE(ign::parseShape("scalar")->empty());
  EXPECT_TRUE(ign::parseShape("")->empty());
}

TEST(ParseShape, RejectsMalformedText) {
  EXPECT_FALSE(ign::parseShape("1x").has_value());
  EXPECT_FALSE(ign::parseShape("1x-3").has_value());
  EXPECT_FALSE(ign::parseShape("ax3").has_value());
  EXPECT_FALSE(ign::parseShape("1,3").has_value());
}

TEST(HostTensor, WrapIntFollowsTheElementType) {
  MLIRContext ctx;
  Builder b(&ctx);
  HostTensor t;
  t.elementType = b.getIntegerType(8);
  EXPECT_EQ(t.wrapInt(200), -56);
  t.elementType = b.getIntegerType(8, /*isSigned=*/false);
  EXPECT_EQ(t.wrapInt(-1), 255);
  t.elementType = b.getI1Type();
  EXPECT_EQ(t.wrapInt(5), 1);
  t.elementType = b.getI64Type();
  EXPECT_EQ(t.wrapInt(INT64_MIN), INT64_MIN);
}

TEST(HostTensor, RoundTripsThroughDenseAttributes) {
  MLIRContext ctx;
  Builder b(&ctx);
  for (Type element :
       {Type(b.getF32Type()), Type(b.getF16Type()), Type(b.getI64Type()),
        Type(b.getI1Type()), Type(b.getIntegerType(8, false))}) {
    HostTensor t;
    t.shape = {2, 2};
    t.elementType = element;
    t.allocate();
    for (int64_t i = 0; i < 4; ++i)
      t.set(i, 0.5 * i, t.wrapInt(i));
    auto back = HostTensor::fromAttr(t.toAttr());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->shape, t.shape);
    EXPECT_EQ(back->floats, t.floats);
    EXPECT_EQ(back->ints, t.ints);
  }
}

TEST(Strides, RowMajor) {
  EXPECT_EQ(ign::import::stridesOf({2, 3, 4}),
            (llvm::SmallVector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(ign::import::stridesOf({}).empty());
}
