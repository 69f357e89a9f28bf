//===- Passes.td - ign conversion passes -----------------------------------===//

#ifndef IGN_CONVERSION_PASSES_TD
#define IGN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertIgnToLinalg : Pass<"convert-ign-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower ign ops to target-neutral linalg/tensor/arith/math";
  let description = [{
    The reference lowering: every ign op becomes linalg (generic or named),
    tensor, arith and math ops on tensors, with no tiling. It is the
    correctness oracle for every schedule and target. An op it cannot lower
    is reported at its location (the ONNX node).
  }];
  let dependentDialects = [
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"recurrentParts", "recurrent-parts", "int64_t", /*default=*/"0",
           "lower recurrent layers as an scf.forall over time steps and up "
           "to this many parts of each direction's hidden units, marked "
           "ign.time_steps (0: a loop over time)">
  ];
}

#endif // IGN_CONVERSION_PASSES_TD
