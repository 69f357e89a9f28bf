//===- ign-opt.cpp - mlir-opt with the ign dialect, for lit tests ---------===//

#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "GpuMapping.h"
#include "RegisterTiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  // `ignc --emit=gpu` prints each GPU kernel with its mapping script:
  // `ign-opt --split-input-file --transform-interpreter` replays it.
  mlir::transform::registerInterpreterPass();
  ign::registerIgnConversionPasses();
  ign::registerIgnTransformsPasses();
  ign::gpu::registerRegisterTilesPass();
  mlir::DialectRegistry registry;
  registry.insert<ign::IgnDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect>();
  ign::gpu::registerGpuMappingDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ign optimizer driver\n", registry));
}
