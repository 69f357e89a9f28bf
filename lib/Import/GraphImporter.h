//===- GraphImporter.h - the state of one model's import --------*- C++ -*-===//
//
// GraphImporter walks a model's graph (and the subgraphs of its control-flow
// nodes) and builds the ign module; NodeImporter (ImporterImpl.h) gives the
// operator handlers their view of one node. Control flow (If, Loop, Scan)
// is in ImportControlFlow.cpp, the rest in OnnxImporter.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_IMPORT_GRAPHIMPORTER_H
#define IGN_LIB_IMPORT_GRAPHIMPORTER_H

#include "ImporterImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <deque>
#include <set>
#include <string>
#include <vector>

namespace ign::import {

using namespace mlir;

/// Reads a TensorProto's data as little-endian bytes, whatever field or
/// external file holds it. Moves raw_data out of the proto (no second copy).
FailureOr<std::string> takeTensorBytes(onnx::TensorProto &t,
                                       llvm::StringRef modelDir, Type element,
                                       int64_t count, Location loc);

/// A host tensor of `shape` and `element` from little-endian bytes.
HostTensor hostFromBytes(llvm::ArrayRef<int64_t> shape, Type element,
                         llvm::StringRef bytes);

/// An argument of a graph function that is an input of its subgraph: the
/// input's name (empty: the subgraph does not name it) and type.
struct GraphArg {
  std::string name;
  Type type;
};

/// A Scan's axes and directions (ImportControlFlow.cpp).
struct ScanLayout;

/// The outer values a subgraph reads, by name, in argument order.
struct Captures {
  std::vector<std::string> names;
  SmallVector<Value> values;
};

/// The state of one model's import.
class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const ImportOptions &options,
                std::string file, std::string dir)
      : ctx(&ctx), builder(&ctx), options(options), file(std::move(file)),
        dir(std::move(dir)) {}

  MLIRContext *ctx;
  OpBuilder builder;
  const ImportOptions &options;
  std::string file, dir;
  int64_t opset = 0;

  llvm::StringMap<Value> values;
  llvm::StringMap<HostTensor> constants;
  llvm::StringMap<onnx::TensorProto *> lazyInitializers;
  /// Tensors the importer made (a dequantized weight), which
  /// lazyInitializers may point into.
  std::deque<onnx::TensorProto> madeTensors;
  llvm::StringMap<unsigned> useCounts;
  llvm::StringMap<std::vector<int64_t>> onnxShapes; // ONNX inference hints
  unsigned blobCounter = 0;
  /// Function bodies expanded so far, and how deeply they are nested now.
  unsigned functionCounter = 0, functionDepth = 0;
  /// Values whose size depends on the data (ImportDataDependent.cpp): their
  /// type is an upper bound; `shape` (i64 [rank]) holds the actual dims at
  /// run time, `origin` names the node that made the first of them, and
  /// `dynamic` marks the dims known only at run time.
  struct RuntimeShape {
    Value shape;
    std::string origin;
    SmallVector<bool> dynamic;
  };
  llvm::DenseMap<Value, RuntimeShape> runtimeShapes;
  /// Folded DequantizeLinear outputs of integer weights: the kDequantizedAttr
  /// their constants get when materialized.
  llvm::StringMap<DictionaryAttr> dequantized;
  const RuntimeShape *runtimeShapeOf(Value value) const;
  /// Errors unless `node` can read the run-time-sized values it reads.
  LogicalResult checkRuntimeShapedInputs(const onnx::NodeProto &node);
  /// Gives `node`'s output the run-time shape its inputs imply.
  LogicalResult propagateRuntimeShapes(const onnx::NodeProto &node,
                                       int64_t nodeOpset);
  /// The module being built, and how many graph functions it holds.
  ModuleOp graphModule;
  unsigned graphCounter = 0;

  Location modelLoc() { return FileLineColLoc::get(ctx, file, 0, 0); }

  Location nodeLoc(const onnx::NodeProto &node) {
    std::string name = node.name();
    if (name.empty() && node.output_size() > 0)
      name = node.output(0);
    return FusedLoc::get(ctx,
                         {NameLoc::get(StringAttr::get(ctx, name)), modelLoc()},
                         StringAttr::get(ctx, node.op_type()));
  }

  void countUses(const onnx::GraphProto &g) {
    for (const auto &node : g.node()) {
      for (const auto &in : node.input())
        if (!in.empty())
          ++useCounts[in];
      for (const auto &a : node.attribute())
        if (a.has_g())
          countUses(a.g());
    }
    for (const auto &out : g.output())
      ++useCounts[out.name()];
  }

  /// Registers an initializer: small ones are folded on the host, large
  /// ones become dense_resource constants when first used.
  LogicalResult addInitializer(onnx::TensorProto &t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) {
      Type element = convertElementType(ctx, t.data_type());
      std::optional<int64_t> count = checkedElementCount(
          llvm::ArrayRef<int64_t>(t.dims().data(), t.dims_size()));
      if (!count)
        return emitError(modelLoc())
               << "tensor '" << t.name()
               << "' has a negative dim or too many elements";
      if (element &&
          *count * std::max(1u, element.getIntOrFloatBitWidth() / 8) <
              int64_t(options.resourceThresholdBytes)) {
        auto host = tensorToHost(t);
        if (failed(host))
          return failure();
        constants[t.name()] = std::move(*host);
        return success();
      }
    }
    lazyInitializers[t.name()] = &t;
    return success();
  }

  FailureOr<HostTensor> tensorToHost(onnx::TensorProto &t) {
    Type element = convertElementType(ctx, t.data_type());
    if (!element)
      return emitError(modelLoc())
             << "tensor '" << t.name() << "' has unsupported element type "
             << onnx::TensorProto::DataType_Name(
                    onnx::TensorProto::DataType(t.data_type()));
    llvm::SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    std::optional<int64_t> count = checkedElementCount(shape);
    if (!count)
      return emitError(modelLoc())
             << "tensor '" << t.name()
             << "' has a negative dim or too many elements";
    auto bytes = takeTensorBytes(t, dir, element, *count, modelLoc());
    if (failed(bytes))
      return failure();
    return hostFromBytes(shape, element, *bytes);
  }

  /// A large initializer as an ign.constant backed by a resource blob.
  FailureOr<Value> materializeInitializer(onnx::TensorProto &t, Location loc) {
    Type element = convertElementType(ctx, t.data_type());
    if (!element)
      return emitError(loc) << "initializer '" << t.name()
                            << "' has an unsupported element type";
    llvm::SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    std::optional<int64_t> count = checkedElementCount(shape);
    if (!count)
      return emitError(loc) << "initializer '" << t.name()
                            << "' has a negative dim or too many elements";
    if (element.isInteger(1)) {
      auto host = tensorToHost(t);
      if (failed(host))
        return failure();
      return constantValue(host->toAttr(), loc);
    }
    auto bytes = takeTensorBytes(t, dir, element, *count, loc);
    if (failed(bytes))
      return failure();
    // The blob takes ownership of the bytes: weights are copied only once.
    auto *owned = new std::string(std::move(*bytes));
    AsmResourceBlob blob(
        llvm::ArrayRef<char>(owned->data(), owned->size()), alignof(int64_t),
        [owned](void *, size_t, size_t) { delete owned; },
        /*dataIsMutable=*/false);
    auto type = RankedTensorType::get(shape, element);
    std::string blobName =
        t.name().empty() ? "weight" + std::to_string(blobCounter++) : t.name();
    auto attr = DenseResourceElementsAttr::get(type, blobName, std::move(blob));
    return constantValue(attr, loc);
  }

  Value constantValue(ElementsAttr attr, Location loc) {
    return builder.create<ConstantOp>(loc, attr.getType(), attr);
  }

  /// The SSA value named `name`, materializing known constants.
  FailureOr<Value> lookup(llvm::StringRef name, Location loc) {
    if (auto it = values.find(name); it != values.end())
      return it->second;
    if (auto it = constants.find(name); it != constants.end()) {
      Value v = constantValue(it->second.toAttr(), loc);
      values[name] = v;
      markDequantized(name, v);
      return v;
    }
    if (auto it = lazyInitializers.find(name); it != lazyInitializers.end()) {
      auto v = materializeInitializer(*it->second, loc);
      if (failed(v))
        return failure();
      values[name] = *v;
      markDequantized(name, *v);
      return *v;
    }
    return emitError(loc) << "input '" << name
                          << "' is not produced by any node, initializer or "
                             "graph input";
  }

  void markDequantized(llvm::StringRef name, Value v) {
    if (auto it = dequantized.find(name); it != dequantized.end())
      if (Operation *def = v.getDefiningOp())
        def->setAttr(kDequantizedAttr, it->second);
  }

  bool isKnown(llvm::StringRef name) {
    return values.count(name) || constants.count(name) ||
           lazyInitializers.count(name);
  }

  LogicalResult checkSupported(const onnx::ModelProto &model);
  LogicalResult importNodes(const onnx::GraphProto &g, int64_t nodeOpset);
  LogicalResult importFunction(const onnx::NodeProto &node, int64_t nodeOpset);
  FailureOr<onnx::TypeProto> typeOf(const std::string &name, Location loc);
  LogicalResult importIf(const onnx::NodeProto &node);
  LogicalResult importRuntimeIf(const onnx::NodeProto &node);
  FailureOr<func::FuncOp> importBranch(const onnx::GraphProto &g,
                                       const Captures &captures,
                                       llvm::StringRef name, Location loc,
                                       std::string &error);
  LogicalResult importLoop(const onnx::NodeProto &node);
  LogicalResult importScan(const onnx::NodeProto &node, int64_t nodeOpset);
  LogicalResult setScanOutputs(NodeImporter &ni, LoopOp op, int states,
                               const ScanLayout &layout, bool opset8);
  Value trueCondition(Location loc);
  LogicalResult checkCarried(func::FuncOp body, size_t first, ValueRange inits,
                             llvm::StringRef op, Location loc);
  FailureOr<Captures>
  captureOuterValues(llvm::ArrayRef<const onnx::GraphProto *> graphs,
                     Location loc);
  FailureOr<func::FuncOp> importGraphFunction(const onnx::GraphProto &g,
                                              llvm::ArrayRef<GraphArg> leading,
                                              const Captures &captures,
                                              llvm::ArrayRef<Type> expected,
                                              llvm::StringRef name,
                                              Location loc);
  void crossCheck(const onnx::NodeProto &node);
  LogicalResult readOpset(const onnx::ModelProto &model);
  LogicalResult checkInputOptions(const std::set<std::string> &inputNames);
  FailureOr<llvm::SmallVector<int64_t>>
  inputShape(const onnx::ValueInfoProto &in, Location inLoc);
  FailureOr<HostTensor> readFrozenInput(const onnx::ValueInfoProto &in,
                                        const std::string &path, Type element,
                                        llvm::ArrayRef<int64_t> shape,
                                        Location inLoc);
  FailureOr<Type> importGraphInput(onnx::ValueInfoProto &in);
  void crossCheckWithOnnx(onnx::ModelProto &model);
  OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model);
};

} // namespace ign::import

#endif // IGN_LIB_IMPORT_GRAPHIMPORTER_H
