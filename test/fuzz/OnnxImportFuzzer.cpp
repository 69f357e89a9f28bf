//===- OnnxImportFuzzer.cpp - the ONNX importer on arbitrary bytes --------===//
//
// Built twice: as fuzz-onnx-import (binary ModelProto, .onnx) and as
// fuzz-onnx-text-import (ONNX's text syntax, .onnxtxt). Whatever the bytes,
// the import either succeeds with a module that verifies or fails with a
// diagnostic; a crash, a sanitizer report or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Import/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdlib>

#ifndef IGN_FUZZ_SUFFIX
#define IGN_FUZZ_SUFFIX ".onnx"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext();
    ctx->loadDialect<ign::IgnDialect, mlir::func::FuncDialect>();
    ctx->printOpOnDiagnostic(false);
    return ctx;
  }();
  mlir::ScopedDiagnosticHandler quiet(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  ign::fuzz::FuzzFile file(data, size, IGN_FUZZ_SUFFIX);
  ign::ImportOptions options;
  // ONNX's shape inference (the cross-check) runs in a forked child per
  // model: its crashes are libonnx's, contained there, and a fork per input
  // would slow the fuzzer tenfold. The harness fuzzes ign's own import.
  options.crossCheckShapes = false;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ign::importOnnxFile(*context, file.path, options);
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort(); // the importer built IR that does not verify
  return 0;
}
