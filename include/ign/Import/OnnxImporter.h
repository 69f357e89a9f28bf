//===- OnnxImporter.h - ONNX model -> ign dialect ---------------*- C++ -*-===//
//
// Reads an ONNX model (binary protobuf, or ONNX's text syntax for .onnxtxt
// files) and builds a module holding `func.func @main` in the ign dialect with
// fully static shapes. Errors are MLIR diagnostics located at the ONNX node.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_IMPORT_ONNXIMPORTER_H
#define IGN_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace ign {

struct ImportOptions {
  /// Shapes that replace the declared shape of graph inputs (binds symbolic
  /// dims), keyed by input name.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs frozen to constant values read from TensorProto (.pb)
  /// files, keyed by input name.
  std::map<std::string, std::string> frozenInputs;
  /// Initializers of at least this many bytes become dense_resource blobs
  /// instead of inline dense attributes.
  size_t resourceThresholdBytes = 256;
  /// Run ONNX's own shape inference and warn where it disagrees with ours.
  bool crossCheckShapes = true;
};

/// Imports the model at `path`. Returns null after emitting diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options);

/// Reads an ONNX TensorProto file (the backend tests' input_N.pb). On
/// failure returns false with `error` set.
bool readTensorProtoFile(const std::string &path, std::string &name,
                         std::string &dtype, std::vector<int64_t> &shape,
                         std::string &bytes, std::string &error);

/// Parses a shape such as "1x3x224x224" ("" or "scalar" for rank 0).
std::optional<std::vector<int64_t>> parseShape(llvm::StringRef text);

} // namespace ign

#endif // IGN_IMPORT_ONNXIMPORTER_H
