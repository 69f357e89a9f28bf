//===- ImporterImpl.h - internals shared by the ONNX importer files -------===//
//
// GraphImporter walks an ONNX graph in order; each node goes through a
// NodeImporter, which validates attributes and inputs and builds ign ops.
// Small tensors known at import time (initializers, Constant nodes, shape
// arithmetic) are kept as HostTensors and folded on the host, so the
// shape sub-graphs of exported models disappear and every shape is static.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_IMPORT_IMPORTERIMPL_H
#define IGN_LIB_IMPORT_IMPORTERIMPL_H

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Import/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace ign::import {

/// Known results larger than this many elements stay in the IR instead of
/// being folded on the host.
constexpr int64_t kHostFoldLimit = 1 << 16;
/// Integer initializers up to this many elements are read on the host when a
/// node folds them.
constexpr int64_t kHostIntegerLimit = 1 << 16;

/// `v` as an int64: truncated toward zero, saturated at the type's ends, NaN
/// as 0 (a plain cast of a double out of range is undefined behaviour).
inline int64_t saturatingInt(double v) {
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// A small tensor whose values are known at import time. Integer and bool
/// elements live in `ints`, floating-point ones in `floats`.
struct HostTensor {
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const { return mlir::isa<mlir::FloatType>(elementType); }
  int64_t numElements() const;
  double getDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  int64_t getInt(int64_t i) const {
    return isFloat() ? saturatingInt(floats[i]) : ints[i];
  }
  /// Resizes storage for `shape` (values zeroed).
  void allocate();
  void set(int64_t i, double f, int64_t v) {
    if (isFloat())
      floats[i] = f;
    else
      ints[i] = v;
  }
  mlir::RankedTensorType type() const {
    return mlir::RankedTensorType::get(shape, elementType);
  }
  mlir::DenseElementsAttr toAttr() const;
  static std::optional<HostTensor> fromAttr(mlir::DenseElementsAttr attr);
  /// Rounds/wraps a value into this tensor's element type.
  int64_t wrapInt(int64_t v) const;
};

/// Elements of a tensor of `dims`: nullopt when a dim is negative or the
/// count passes 2^40 (no tensor a model can mean; the product would
/// overflow soon after).
std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims);

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// A TensorProto's data as little-endian bytes, whatever field or external
/// file (relative to `modelDir`) holds it; moves raw_data out of the proto.
mlir::FailureOr<std::string> takeTensorBytes(onnx::TensorProto &t,
                                             llvm::StringRef modelDir,
                                             mlir::Type element, int64_t count,
                                             mlir::Location loc);

/// Maps an ONNX element type to MLIR (nullptr when it has no tensor form).
mlir::Type convertElementType(mlir::MLIRContext *ctx, int32_t onnxType);

/// Holder of the import of one model: values by name, known constants, the
/// builder, and the diagnostics location scheme.
class GraphImporter;

/// The view of one ONNX node while it is imported.
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
               mlir::Location loc, int64_t opset);

  const onnx::NodeProto &node() const { return node_; }
  mlir::Location loc() const { return loc_; }
  int64_t opset() const { return opset_; }
  mlir::OpBuilder &builder();
  mlir::MLIRContext *ctx();

  /// An error at this node.
  mlir::InFlightDiagnostic error() { return mlir::emitError(loc_); }

  // Attributes. Absent attributes give the default; an attribute of the
  // wrong kind is an error (the accessors return failure or nullopt and
  // have reported it).
  bool hasAttr(llvm::StringRef name) const;
  mlir::FailureOr<int64_t> attrInt(llvm::StringRef name, int64_t dflt);
  mlir::FailureOr<float> attrFloat(llvm::StringRef name, float dflt);
  mlir::FailureOr<std::string> attrString(llvm::StringRef name,
                                          llvm::StringRef dflt);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  attrInts(llvm::StringRef name, llvm::ArrayRef<int64_t> dflt = {});
  mlir::FailureOr<llvm::SmallVector<float>>
  attrFloats(llvm::StringRef name, llvm::ArrayRef<float> dflt = {});
  mlir::FailureOr<llvm::SmallVector<std::string>>
  attrStrings(llvm::StringRef name);
  const onnx::AttributeProto *attr(llvm::StringRef name) const;

  // Inputs. An ONNX optional input is absent when its name is empty.
  size_t numInputs() const { return node_.input_size(); }
  bool hasInput(size_t i) const;
  /// The SSA value of input i (materializing a known constant).
  mlir::FailureOr<mlir::Value> input(size_t i);
  /// The static tensor type of input i.
  mlir::FailureOr<mlir::RankedTensorType> inputType(size_t i);
  /// Input i's known value, or nullptr if it is computed at run time.
  /// Initializers are read on the host when they are integers of at most
  /// `initializerLimit` elements (float weights stay in their blobs unless
  /// `floatsToo`).
  const HostTensor *constInput(size_t i,
                               int64_t initializerLimit = kHostIntegerLimit,
                               bool floatsToo = false);
  /// Input i's known value; an error naming `what` if it is not known.
  mlir::FailureOr<const HostTensor *> requireConstInput(size_t i,
                                                        llvm::StringRef what);
  /// Input i as int64 values (must be known).
  mlir::FailureOr<llvm::SmallVector<int64_t>> constInts(size_t i,
                                                        llvm::StringRef what);
  /// True when every present input is a known constant.
  bool allInputsConstant();

  // Outputs.
  size_t numOutputs() const { return node_.output_size(); }
  /// True if output i exists and something reads it.
  bool outputUsed(size_t i) const;
  mlir::LogicalResult setOutput(size_t i, mlir::Value value);
  mlir::LogicalResult setOutput(size_t i, HostTensor value);
  /// Output i is `value`, whose size depends on the data: its type is an
  /// upper bound, the i64 [rank] `shape` holds its dims at run time, and
  /// `dims` are those whose size is known only then.
  mlir::LogicalResult setBoundedOutput(size_t i, mlir::Value value,
                                       mlir::Value shape,
                                       llvm::ArrayRef<int64_t> dims);
  /// Output i is the tensor `t` (a Constant node's value); large tensors
  /// become resource-backed constants.
  /// Marks output i, a folded DequantizeLinear of an integer weight, with
  /// its quantization (kDequantizedAttr) for when it is materialized.
  void markDequantized(size_t i, mlir::DictionaryAttr quantization);
  mlir::LogicalResult setOutputTensor(size_t i, onnx::TensorProto &t);
  /// The same for a tensor the importer made, which the import keeps.
  mlir::LogicalResult setOutputTensor(size_t i, onnx::TensorProto &&t);
  /// Decodes a (small) tensor attribute on the host.
  mlir::FailureOr<HostTensor> decodeTensor(const onnx::TensorProto &t);
  /// Errors unless outputs from `first` on are unused.
  mlir::LogicalResult requireUnusedOutputsFrom(size_t first,
                                               llvm::StringRef why);

  /// Builds `OpT` after checking that its types infer; on failure the
  /// inference diagnostic has been reported at this node.
  template <typename OpT>
  mlir::FailureOr<OpT> create(mlir::ValueRange operands,
                              llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  template <typename OpT>
  mlir::FailureOr<mlir::Value>
  createValue(mlir::ValueRange operands,
              llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    auto op = create<OpT>(operands, attrs);
    if (mlir::failed(op))
      return mlir::failure();
    return op->getOperation()->getResult(0);
  }

  // Attribute helpers.
  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value);
  mlir::ArrayAttr i64Array(llvm::ArrayRef<int64_t> values);
  mlir::NamedAttribute namedI64(llvm::StringRef name, int64_t value);
  mlir::NamedAttribute namedF32(llvm::StringRef name, float value);
  mlir::NamedAttribute namedBool(llvm::StringRef name, bool value);
  mlir::NamedAttribute namedStr(llvm::StringRef name, llvm::StringRef value);

  /// A scalar constant of `elementType` (materialized in the IR).
  mlir::Value scalarConstant(mlir::Type elementType, double value);
  /// `t` as a constant in the IR.
  mlir::Value constant(const HostTensor &t);
  /// Reshape helper (no-op when the shape already matches).
  mlir::FailureOr<mlir::Value> reshape(mlir::Value v,
                                       llvm::ArrayRef<int64_t> shape);

private:
  GraphImporter &graph_;
  const onnx::NodeProto &node_;
  mlir::Location loc_;
  int64_t opset_;
};

template <typename OpT>
mlir::FailureOr<OpT>
NodeImporter::create(mlir::ValueRange operands,
                     llvm::ArrayRef<mlir::NamedAttribute> attrs) {
  mlir::OperationState state(loc_, OpT::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  // Attributes with defaults the caller left out get them: an op's type
  // inference and lowering read them (a missing one was a null attribute,
  // and a crash).
  state.name.populateDefaultAttrs(state.attributes);
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpT::inferReturnTypes(
          ctx(), loc_, state.operands, state.attributes.getDictionary(ctx()),
          state.getRawProperties(), state.regions, types)))
    return mlir::failure();
  state.addTypes(types);
  mlir::Operation *op = builder().create(state);
  return mlir::cast<OpT>(op);
}

/// Sets output `out` to `v` unless building it failed (already reported).
inline mlir::LogicalResult done(NodeImporter &n, mlir::FailureOr<mlir::Value> v,
                                size_t out = 0) {
  if (mlir::failed(v))
    return mlir::failure();
  return n.setOutput(out, *v);
}

/// Imports one node; returns failure after reporting an error.
using NodeHandler = std::function<mlir::LogicalResult(NodeImporter &)>;
using HandlerMap = llvm::StringMap<NodeHandler>;

void registerElementwiseHandlers(HandlerMap &map);
void registerNNHandlers(HandlerMap &map);
void registerTensorHandlers(HandlerMap &map);
void registerQuantizationHandlers(HandlerMap &map);
void registerIntegerOpHandlers(HandlerMap &map);
void registerSignalHandlers(HandlerMap &map);
void registerSamplingHandlers(HandlerMap &map);
void registerLinearAlgebraHandlers(HandlerMap &map);
void registerDataDependentHandlers(HandlerMap &map);
/// Every op type the importer handles (the union of the above).
const HandlerMap &allHandlers();

/// Float values `v` (already rounded) clipped to `integer`'s range and cast
/// to it, as QuantizeLinear and the QLinear operators saturate.
mlir::FailureOr<mlir::Value> saturateToInteger(NodeImporter &n, mlir::Value v,
                                               mlir::Type integer);

/// An ign.conv of `input` and `weight` (and `bias`) with the window
/// attributes (strides, pads or auto_pad, dilations, group, kernel_shape)
/// of the node `n`, as ONNX's Conv reads them.
mlir::FailureOr<mlir::Value> buildConv(NodeImporter &n, mlir::Value input,
                                       mlir::Value weight,
                                       std::optional<mlir::Value> bias);

/// An operator ONNX defines as a function of other operators, expanded for
/// one node: the body's nodes (renamed into the graph) and the opset they
/// are written against.
struct ExpandedFunction {
  onnx::GraphProto graph;
  int64_t opset = 0;
};
/// True when ONNX defines `opType` at `opset` by a function body (fixed, or
/// built per node from its attributes and input types).
bool hasFunctionBody(llvm::StringRef opType, int64_t opset);
/// `node`'s function body: its formal inputs and outputs renamed to the
/// node's, its other values prefixed with `prefix`. `inputTypes[i]` is input
/// i's type (context-dependent bodies, like the losses', depend on them).
mlir::FailureOr<ExpandedFunction>
expandFunction(const onnx::NodeProto &node, int64_t opset,
               const std::vector<onnx::TypeProto> &inputTypes,
               llvm::StringRef prefix, mlir::Location loc);
/// An ONNX tensor type for `type` (element type and static shape).
onnx::TypeProto tensorTypeProto(mlir::MLIRContext *ctx,
                                mlir::RankedTensorType type);

/// Normalizes `axis` against `rank`, reporting an error at `node` if out of
/// range.
mlir::FailureOr<int64_t> normalizeAxis(NodeImporter &node, int64_t axis,
                                       int64_t rank,
                                       llvm::StringRef what = "axis");

} // namespace ign::import

#endif // IGN_LIB_IMPORT_IMPORTERIMPL_H
