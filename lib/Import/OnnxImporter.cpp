//===- OnnxImporter.cpp - loading an ONNX model and walking its graph -----===//

#include "GraphImporter.h"

#include "llvm/ADT/StringSet.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/parser.h>
#include <onnx/shape_inference/implementation.h>

#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

namespace ign {

std::optional<std::vector<int64_t>> parseShape(llvm::StringRef text) {
  std::vector<int64_t> shape;
  text = text.trim();
  if (text.empty() || text == "scalar")
    return shape;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, 'x');
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d) || d < 0)
      return std::nullopt;
    shape.push_back(d);
  }
  return shape;
}

namespace import {

namespace {
std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(shape, os, "x");
  os << "]";
  return s;
}
} // namespace

/// Reads a TensorProto's data as little-endian bytes, whatever field or
/// external file holds it. Moves raw_data out of the proto (no second copy).
FailureOr<std::string> takeTensorBytes(onnx::TensorProto &t,
                                       llvm::StringRef modelDir, Type element,
                                       int64_t count, Location loc) {
  using TP = onnx::TensorProto;
  unsigned width = element.getIntOrFloatBitWidth();
  size_t elemBytes = width == 1 ? 1 : width / 8;
  size_t expected = size_t(count) * elemBytes;
  std::string bytes;
  if (t.data_location() == TP::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        llvm::StringRef(kv.value()).getAsInteger(10, offset);
      else if (kv.key() == "length")
        llvm::StringRef(kv.value()).getAsInteger(10, length);
    }
    if (location.empty() || llvm::sys::path::is_absolute(location) ||
        llvm::StringRef(location).contains(".."))
      return emitError(loc)
             << "tensor '" << t.name()
             << "' has an invalid external data location '" << location << "'";
    llvm::SmallString<256> path(modelDir);
    llvm::sys::path::append(path, location);
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return emitError(loc)
             << "cannot read external data of tensor '" << t.name()
             << "' from '" << path << "': " << buffer.getError().message();
    size_t size = (*buffer)->getBufferSize();
    if (length < 0 && offset >= 0)
      length = size > size_t(offset) ? size - offset : 0;
    if (offset < 0 || length < 0 || size_t(offset) > size ||
        size_t(length) > size - size_t(offset))
      return emitError(loc)
             << "external data of tensor '" << t.name() << "' lies outside '"
             << path << "' (" << size << " bytes)";
    bytes.assign((*buffer)->getBufferStart() + offset, length);
  } else if (t.has_raw_data()) {
    bytes = std::move(*t.mutable_raw_data());
    t.clear_raw_data();
  } else if (count == 0) {
    // No elements: the typed fields hold nothing to copy.
  } else {
    bytes.resize(expected);
    char *out = bytes.data();
    auto put = [&](size_t i, uint64_t bits) {
      std::memcpy(out + i * elemBytes, &bits, elemBytes);
    };
    size_t n = 0;
    switch (t.data_type()) {
    case TP::FLOAT:
      n = t.float_data_size();
      if (n == size_t(count))
        std::memcpy(out, t.float_data().data(), expected);
      break;
    case TP::DOUBLE:
      n = t.double_data_size();
      if (n == size_t(count))
        std::memcpy(out, t.double_data().data(), expected);
      break;
    case TP::INT64:
      n = t.int64_data_size();
      if (n == size_t(count))
        std::memcpy(out, t.int64_data().data(), expected);
      break;
    case TP::UINT64:
    case TP::UINT32:
      n = t.uint64_data_size();
      if (n == size_t(count))
        for (size_t i = 0; i < n; ++i)
          put(i, t.uint64_data(i));
      break;
    default: // int32_data holds every narrower type, f16/bf16 as bits
      n = t.int32_data_size();
      if (n == size_t(count))
        for (size_t i = 0; i < n; ++i)
          put(i, uint64_t(uint32_t(t.int32_data(i))));
      break;
    }
    if (n != size_t(count))
      return emitError(loc) << "tensor '" << t.name() << "' holds " << n
                            << " values for shape of " << count << " elements";
  }
  if (bytes.size() != expected)
    return emitError(loc) << "tensor '" << t.name() << "' holds "
                          << bytes.size() << " bytes, its shape needs "
                          << expected;
  return bytes;
}

HostTensor hostFromBytes(llvm::ArrayRef<int64_t> shape, Type element,
                         llvm::StringRef bytes) {
  HostTensor h;
  h.shape.assign(shape.begin(), shape.end());
  h.elementType = element;
  h.allocate();
  unsigned width = element.getIntOrFloatBitWidth();
  size_t eb = width == 1 ? 1 : width / 8;
  int64_t n = h.numElements();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes.data() + i * eb, eb);
    if (auto ft = dyn_cast<FloatType>(element)) {
      APFloat v(ft.getFloatSemantics(), APInt(width, bits));
      h.floats[i] = v.convertToDouble();
    } else {
      h.ints[i] = h.wrapInt(int64_t(bits));
    }
  }
  return h;
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
                           Location loc, int64_t opset)
    : graph_(graph), node_(node), loc_(loc), opset_(opset) {}

OpBuilder &NodeImporter::builder() { return graph_.builder; }
MLIRContext *NodeImporter::ctx() { return graph_.ctx; }

const onnx::AttributeProto *NodeImporter::attr(llvm::StringRef name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool NodeImporter::hasAttr(llvm::StringRef name) const {
  return attr(name) != nullptr;
}

namespace {
const char *attrKind(onnx::AttributeProto::AttributeType t) {
  using AP = onnx::AttributeProto;
  switch (t) {
  case AP::INT:
    return "an int";
  case AP::FLOAT:
    return "a float";
  case AP::STRING:
    return "a string";
  case AP::INTS:
    return "a list of ints";
  case AP::FLOATS:
    return "a list of floats";
  case AP::STRINGS:
    return "a list of strings";
  case AP::TENSOR:
    return "a tensor";
  case AP::GRAPH:
    return "a graph";
  default:
    return "another kind";
  }
}
} // namespace

#define IGN_ATTR_CHECK(KIND)                                                   \
  const onnx::AttributeProto *a = attr(name);                                  \
  if (a && a->type() != onnx::AttributeProto::KIND &&                          \
      a->type() != onnx::AttributeProto::UNDEFINED) {                          \
    error() << "attribute '" << name << "' must be "                           \
            << attrKind(onnx::AttributeProto::KIND) << ", got "                \
            << attrKind(a->type());                                            \
    return failure();                                                          \
  }

FailureOr<int64_t> NodeImporter::attrInt(llvm::StringRef name, int64_t dflt) {
  IGN_ATTR_CHECK(INT)
  return a ? a->i() : dflt;
}

FailureOr<float> NodeImporter::attrFloat(llvm::StringRef name, float dflt) {
  IGN_ATTR_CHECK(FLOAT)
  return a ? a->f() : dflt;
}

FailureOr<std::string> NodeImporter::attrString(llvm::StringRef name,
                                                llvm::StringRef dflt) {
  IGN_ATTR_CHECK(STRING)
  return a ? a->s() : dflt.str();
}

FailureOr<llvm::SmallVector<int64_t>>
NodeImporter::attrInts(llvm::StringRef name, llvm::ArrayRef<int64_t> dflt) {
  IGN_ATTR_CHECK(INTS)
  if (!a)
    return llvm::SmallVector<int64_t>(dflt);
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<llvm::SmallVector<float>>
NodeImporter::attrFloats(llvm::StringRef name, llvm::ArrayRef<float> dflt) {
  IGN_ATTR_CHECK(FLOATS)
  if (!a)
    return llvm::SmallVector<float>(dflt);
  return llvm::SmallVector<float>(a->floats().begin(), a->floats().end());
}

FailureOr<llvm::SmallVector<std::string>>
NodeImporter::attrStrings(llvm::StringRef name) {
  IGN_ATTR_CHECK(STRINGS)
  llvm::SmallVector<std::string> out;
  if (a)
    out.assign(a->strings().begin(), a->strings().end());
  return out;
}

bool NodeImporter::hasInput(size_t i) const {
  return i < size_t(node_.input_size()) && !node_.input(i).empty();
}

FailureOr<Value> NodeImporter::input(size_t i) {
  if (!hasInput(i))
    return error() << "missing required input " << i;
  return graph_.lookup(node_.input(i), loc_);
}

FailureOr<RankedTensorType> NodeImporter::inputType(size_t i) {
  if (!hasInput(i))
    return error() << "missing required input " << i;
  const std::string &name = node_.input(i);
  if (auto it = graph_.constants.find(name); it != graph_.constants.end())
    return it->second.type();
  if (auto it = graph_.lazyInitializers.find(name);
      it != graph_.lazyInitializers.end()) {
    Type element = convertElementType(ctx(), it->second->data_type());
    if (!element)
      return error() << "initializer '" << name
                     << "' has an unsupported element type";
    llvm::SmallVector<int64_t> shape(it->second->dims().begin(),
                                     it->second->dims().end());
    return RankedTensorType::get(shape, element);
  }
  auto v = input(i);
  if (failed(v))
    return failure();
  auto type = dyn_cast<RankedTensorType>(v->getType());
  if (!type)
    return error() << "input '" << name << "' is not a ranked tensor";
  return type;
}

const HostTensor *NodeImporter::constInput(size_t i, int64_t initializerLimit,
                                           bool floatsToo) {
  if (!hasInput(i))
    return nullptr;
  const std::string &name = node_.input(i);
  auto it = graph_.constants.find(name);
  if (it != graph_.constants.end())
    return &it->second;
  // Integer initializers above the inline-size threshold (index tables,
  // long shape vectors) are still read on the host so they fold; float
  // weights stay in their blobs.
  auto lazy = graph_.lazyInitializers.find(name);
  if (lazy == graph_.lazyInitializers.end() || graph_.values.count(name))
    return nullptr;
  onnx::TensorProto &t = *lazy->second;
  Type element = convertElementType(ctx(), t.data_type());
  std::optional<int64_t> count = checkedElementCount(
      llvm::ArrayRef<int64_t>(t.dims().data(), t.dims_size()));
  if (!element || !count || (!isa<IntegerType>(element) && !floatsToo) ||
      *count > initializerLimit)
    return nullptr;
  auto host = graph_.tensorToHost(t);
  if (failed(host))
    return nullptr;
  graph_.lazyInitializers.erase(lazy);
  return &(graph_.constants[name] = std::move(*host));
}

FailureOr<const HostTensor *>
NodeImporter::requireConstInput(size_t i, llvm::StringRef what) {
  if (!hasInput(i))
    return error() << "missing input '" << what << "'";
  if (const HostTensor *t = constInput(i))
    return t;
  // A large initializer can still be read on the host when needed.
  const std::string &name = node_.input(i);
  if (auto it = graph_.lazyInitializers.find(name);
      it != graph_.lazyInitializers.end()) {
    auto host = graph_.tensorToHost(*it->second);
    if (failed(host))
      return failure();
    graph_.lazyInitializers.erase(it);
    return &(graph_.constants[name] = std::move(*host));
  }
  return error() << "input '" << what << "' ('" << name
                 << "') must be known at compile time, but it is computed "
                    "at run time (bind symbolic dims with --input-shape, or "
                    "freeze the input with --freeze-input)";
}

FailureOr<llvm::SmallVector<int64_t>>
NodeImporter::constInts(size_t i, llvm::StringRef what) {
  auto t = requireConstInput(i, what);
  if (failed(t))
    return failure();
  llvm::SmallVector<int64_t> out;
  for (int64_t k = 0; k < (*t)->numElements(); ++k)
    out.push_back((*t)->getInt(k));
  return out;
}

bool NodeImporter::allInputsConstant() {
  for (int i = 0; i < node_.input_size(); ++i)
    if (hasInput(i) && !constInput(i))
      return false;
  return true;
}

bool NodeImporter::outputUsed(size_t i) const {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return false;
  auto it = graph_.useCounts.find(node_.output(i));
  return it != graph_.useCounts.end() && it->second > 0;
}

LogicalResult NodeImporter::setOutput(size_t i, Value value) {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return success();
  graph_.values[node_.output(i)] = value;
  return success();
}

LogicalResult NodeImporter::setOutput(size_t i, HostTensor value) {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return success();
  graph_.constants[node_.output(i)] = std::move(value);
  return success();
}

void NodeImporter::markDequantized(size_t i, DictionaryAttr quantization) {
  if (i < size_t(node_.output_size()) && !node_.output(i).empty())
    graph_.dequantized[node_.output(i)] = quantization;
}

LogicalResult NodeImporter::setOutputTensor(size_t i, onnx::TensorProto &t) {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return success();
  t.set_name(node_.output(i));
  return graph_.addInitializer(t);
}

LogicalResult NodeImporter::setOutputTensor(size_t i, onnx::TensorProto &&t) {
  return setOutputTensor(i, graph_.madeTensors.emplace_back(std::move(t)));
}

FailureOr<HostTensor> NodeImporter::decodeTensor(const onnx::TensorProto &t) {
  onnx::TensorProto copy = t;
  return graph_.tensorToHost(copy);
}

LogicalResult NodeImporter::requireUnusedOutputsFrom(size_t first,
                                                     llvm::StringRef why) {
  for (size_t i = first; i < numOutputs(); ++i)
    if (outputUsed(i))
      return error() << "output " << i << " ('" << node_.output(i)
                     << "') is not supported: " << why;
  return success();
}

NamedAttribute NodeImporter::named(llvm::StringRef name, Attribute value) {
  return NamedAttribute(StringAttr::get(ctx(), name), value);
}
ArrayAttr NodeImporter::i64Array(llvm::ArrayRef<int64_t> values) {
  return builder().getI64ArrayAttr(values);
}
NamedAttribute NodeImporter::namedI64(llvm::StringRef name, int64_t value) {
  return named(name, builder().getI64IntegerAttr(value));
}
NamedAttribute NodeImporter::namedF32(llvm::StringRef name, float value) {
  return named(name, builder().getF32FloatAttr(value));
}
NamedAttribute NodeImporter::namedBool(llvm::StringRef name, bool value) {
  return named(name, builder().getBoolAttr(value));
}
NamedAttribute NodeImporter::namedStr(llvm::StringRef name,
                                      llvm::StringRef value) {
  return named(name, builder().getStringAttr(value));
}

Value NodeImporter::scalarConstant(Type elementType, double value) {
  HostTensor t;
  t.elementType = elementType;
  t.allocate();
  t.set(0, value, t.wrapInt(saturatingInt(value)));
  return graph_.constantValue(t.toAttr(), loc_);
}

Value NodeImporter::constant(const HostTensor &t) {
  return graph_.constantValue(t.toAttr(), loc_);
}

FailureOr<Value> NodeImporter::reshape(Value v, llvm::ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return createValue<ReshapeOp>(v, {named("shape", i64Array(shape))});
}

FailureOr<int64_t> normalizeAxis(NodeImporter &node, int64_t axis, int64_t rank,
                                 llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return node.error() << what << " " << axis << " is out of range for rank "
                        << rank;
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

const HandlerMap &allHandlers() {
  static HandlerMap map = [] {
    HandlerMap m;
    registerElementwiseHandlers(m);
    registerNNHandlers(m);
    registerTensorHandlers(m);
    registerQuantizationHandlers(m);
    registerIntegerOpHandlers(m);
    registerSignalHandlers(m);
    registerSamplingHandlers(m);
    registerLinearAlgebraHandlers(m);
    registerDataDependentHandlers(m);
    return m;
  }();
  return map;
}

/// Whether `opType` is control flow, which GraphImporter imports itself
/// (ImportControlFlow.cpp).
static bool isControlFlow(const std::string &opType) {
  return opType == "If" || opType == "Loop" || opType == "Scan";
}

/// Whether the importer takes a default-domain operator at `opset`: it has
/// a handler, is control flow, or ONNX defines a function body for it.
static bool importable(const std::string &opType, int64_t opset) {
  return isControlFlow(opType) || allHandlers().count(opType) ||
         hasFunctionBody(opType, opset);
}

LogicalResult GraphImporter::checkSupported(const onnx::ModelProto &model) {
  // op type -> node names, for every op the importer cannot take.
  std::map<std::string, std::vector<std::string>> unsupported;
  std::function<void(const onnx::GraphProto &)> scan =
      [&](const onnx::GraphProto &g) {
        for (const auto &node : g.node()) {
          bool standard = node.domain().empty() || node.domain() == "ai.onnx";
          std::string key =
              standard ? node.op_type() : node.domain() + "." + node.op_type();
          if (!standard || !importable(node.op_type(), opset))
            unsupported[key].push_back(
                node.name().empty()
                    ? (node.output_size() ? "->" + node.output(0) : "?")
                    : node.name());
          for (const auto &a : node.attribute())
            if (a.has_g())
              scan(a.g());
        }
      };
  scan(model.graph());
  if (unsupported.empty())
    return success();
  auto diag = emitError(modelLoc())
              << "unsupported operators (" << unsupported.size() << "): ";
  bool first = true;
  for (auto &[op, nodes] : unsupported) {
    if (!first)
      diag << "; ";
    first = false;
    diag << op << " (node" << (nodes.size() > 1 ? "s" : "") << " ";
    for (size_t i = 0; i < nodes.size() && i < 8; ++i)
      diag << (i ? ", " : "") << "'" << nodes[i] << "'";
    if (nodes.size() > 8)
      diag << ", and " << nodes.size() - 8 << " more";
    diag << ")";
  }
  return failure();
}

void GraphImporter::crossCheck(const onnx::NodeProto &node) {
  for (const auto &out : node.output()) {
    auto hint = onnxShapes.find(out);
    if (hint == onnxShapes.end())
      continue;
    llvm::SmallVector<int64_t> ours;
    if (auto it = values.find(out); it != values.end()) {
      if (auto t = dyn_cast<RankedTensorType>(it->second.getType()))
        ours.assign(t.getShape().begin(), t.getShape().end());
    } else if (auto it = constants.find(out); it != constants.end()) {
      ours = it->second.shape;
    } else {
      continue;
    }
    if (llvm::ArrayRef<int64_t>(ours) != llvm::ArrayRef<int64_t>(hint->second))
      emitWarning(nodeLoc(node))
          << "ONNX shape inference says output '" << out << "' is "
          << shapeString(hint->second) << ", ign infers " << shapeString(ours)
          << " (ign's shape is used)";
  }
}

/// The ONNX type of a known value (for function bodies built per node).
FailureOr<onnx::TypeProto> GraphImporter::typeOf(const std::string &name,
                                                 Location loc) {
  if (auto it = lazyInitializers.find(name); it != lazyInitializers.end()) {
    onnx::TypeProto proto;
    auto &tensor = *proto.mutable_tensor_type();
    tensor.set_elem_type(it->second->data_type());
    for (int64_t d : it->second->dims())
      tensor.mutable_shape()->add_dim()->set_dim_value(d);
    return proto;
  }
  if (auto it = constants.find(name); it != constants.end())
    return tensorTypeProto(ctx, it->second.type());
  auto v = lookup(name, loc);
  if (failed(v))
    return failure();
  auto type = dyn_cast<RankedTensorType>(v->getType());
  if (!type)
    return emitError(loc) << "input '" << name << "' is not a ranked tensor";
  return tensorTypeProto(ctx, type);
}

/// Imports a node whose operator ONNX defines as a function of others by
/// importing that function's body in its place.
LogicalResult GraphImporter::importFunction(const onnx::NodeProto &node,
                                            int64_t nodeOpset) {
  Location loc = nodeLoc(node);
  if (functionDepth >= 8)
    return emitError(loc) << "function bodies of " << node.op_type()
                          << " nest more than 8 deep";
  std::vector<onnx::TypeProto> types(node.input_size());
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      continue;
    auto type = typeOf(node.input(i), loc);
    if (failed(type))
      return failure();
    types[i] = std::move(*type);
  }
  std::string prefix = (node.name().empty() ? node.op_type() : node.name()) +
                       "/body" + std::to_string(functionCounter++) + "/";
  auto body = expandFunction(node, nodeOpset, types, prefix, loc);
  if (failed(body))
    return failure();
  // What the body uses and ign cannot import, named at once (its location
  // is the calling node's).
  for (const auto &inner : body->graph.node())
    if (!importable(inner.op_type(), body->opset))
      return emitError(loc)
             << "unsupported operators (1): " << inner.op_type()
             << " (in the function body of " << node.op_type() << ")";
  countUses(body->graph);
  ++functionDepth;
  LogicalResult result = importNodes(body->graph, body->opset);
  --functionDepth;
  return result;
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &g,
                                         int64_t nodeOpset) {
  llvm::StringSet<> produced;
  for (const auto &node : g.node()) {
    // ONNX graphs are in SSA form: a second producer of a name would
    // silently replace the first (and crashes ONNX's own shape inference).
    for (const auto &out : node.output())
      if (!out.empty() && (values.count(out) || !produced.insert(out).second))
        return emitError(nodeLoc(node))
               << "output '" << out
               << "' is already produced by an earlier node or is a graph "
                  "input (ONNX graphs assign each name once)";
    for (const auto &in : node.input())
      if (!in.empty() && !isKnown(in))
        return emitError(nodeLoc(node))
               << "input '" << in
               << "' is not produced by any earlier node, initializer or "
                  "graph input (dangling input, or nodes out of order)";
    if (failed(checkRuntimeShapedInputs(node)))
      return failure();
    if (isControlFlow(node.op_type())) {
      LogicalResult imported = node.op_type() == "If" ? importIf(node)
                               : node.op_type() == "Loop"
                                   ? importLoop(node)
                                   : importScan(node, nodeOpset);
      if (failed(imported))
        return failure();
      continue;
    }
    auto handler = allHandlers().find(node.op_type());
    if (handler == allHandlers().end()) {
      if (failed(importFunction(node, nodeOpset)))
        return failure();
      continue;
    }
    NodeImporter ni(*this, node, nodeLoc(node), nodeOpset);
    if (failed(handler->second(ni)) ||
        failed(propagateRuntimeShapes(node, nodeOpset)))
      return failure();
    for (const auto &out : node.output())
      if (!out.empty() && !isKnown(out) && useCounts.lookup(out))
        return emitError(nodeLoc(node))
               << "output '" << out << "' was not produced by the importer";
  }
  return success();
}

/// Reads the model's default-domain opset; an error if it imports none or one
/// ignc does not support.
LogicalResult GraphImporter::readOpset(const onnx::ModelProto &model) {
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  if (opset == 0)
    return emitError(modelLoc()) << "the model imports no default-domain opset";
  if (opset < 1 || opset > 21)
    return emitError(modelLoc())
           << "opset " << opset << " is not supported (ignc supports 1 to 21)";
  return success();
}

/// Errors unless every input --input-shape and --freeze-input name is one of
/// the graph's inputs.
LogicalResult
GraphImporter::checkInputOptions(const std::set<std::string> &inputNames) {
  for (const auto &[name, shape] : options.inputShapes)
    if (!inputNames.count(name)) {
      auto diag = emitError(modelLoc())
                  << "--input-shape names '" << name
                  << "', which is not a graph input; inputs are: ";
      llvm::interleaveComma(inputNames, diag, [&](const std::string &s) {
        diag << "'" << s << "'";
      });
      return failure();
    }
  for (const auto &[name, path] : options.frozenInputs)
    if (!inputNames.count(name))
      return emitError(modelLoc()) << "--freeze-input names '" << name
                                   << "', which is not a graph input";
  return success();
}

/// Graph input `in`'s shape: the one --input-shape binds, checked against the
/// model's declaration, or else the declared one, which must be static.
FailureOr<llvm::SmallVector<int64_t>>
GraphImporter::inputShape(const onnx::ValueInfoProto &in, Location inLoc) {
  const auto *tensorType = &in.type().tensor_type();
  llvm::SmallVector<int64_t> shape;
  auto bound = options.inputShapes.find(in.name());
  if (!tensorType->has_shape() && bound == options.inputShapes.end())
    return emitError(inLoc) << "graph input '" << in.name()
                            << "' has no declared shape; give one with "
                               "--input-shape "
                            << in.name() << "=DIMS";
  if (bound != options.inputShapes.end()) {
    const auto &dims = tensorType->shape().dim();
    if (tensorType->has_shape() &&
        size_t(dims.size()) != bound->second.size()) {
      emitError(inLoc) << "--input-shape " << in.name() << "="
                       << shapeString(bound->second) << " has rank "
                       << bound->second.size()
                       << ", but the model declares rank " << dims.size();
      return failure();
    }
    for (size_t i = 0; tensorType->has_shape() && i < bound->second.size(); ++i)
      if (dims[i].has_dim_value() && dims[i].dim_value() > 0 &&
          dims[i].dim_value() != bound->second[i]) {
        emitError(inLoc) << "--input-shape " << in.name() << "="
                         << shapeString(bound->second) << " sets dim " << i
                         << " to " << bound->second[i]
                         << ", but the model fixes it to "
                         << dims[i].dim_value();
        return failure();
      }
    shape.assign(bound->second.begin(), bound->second.end());
  } else {
    for (auto [i, d] : llvm::enumerate(tensorType->shape().dim())) {
      if (!d.has_dim_value() || d.dim_value() < 0) {
        emitError(inLoc) << "graph input '" << in.name() << "' dim " << i
                         << " is symbolic"
                         << (d.has_dim_param() ? " ('" + d.dim_param() + "')"
                                               : std::string())
                         << "; bind it with --input-shape " << in.name()
                         << "=DIMS";
        return failure();
      }
      shape.push_back(d.dim_value());
    }
  }
  return shape;
}

/// The tensor --freeze-input gives for graph input `in`, which must have the
/// input's type.
FailureOr<HostTensor>
GraphImporter::readFrozenInput(const onnx::ValueInfoProto &in,
                               const std::string &path, Type element,
                               llvm::ArrayRef<int64_t> shape, Location inLoc) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  onnx::TensorProto t;
  if (!buffer || !t.ParseFromArray((*buffer)->getBufferStart(),
                                   (*buffer)->getBufferSize())) {
    emitError(inLoc) << "--freeze-input " << in.name() << ": cannot read a "
                     << "TensorProto from '" << path << "'";
    return failure();
  }
  auto host = tensorToHost(t);
  if (failed(host))
    return failure();
  if (host->elementType != element ||
      llvm::ArrayRef<int64_t>(host->shape) != shape) {
    emitError(inLoc) << "--freeze-input " << in.name() << ": the tensor is "
                     << host->type() << ", the input is "
                     << RankedTensorType::get(shape, element);
    return failure();
  }
  return host;
}

/// Binds graph input `in`'s shape and writes it back into the model: the type
/// of main's argument, or a null type when --freeze-input made the input a
/// constant.
FailureOr<Type> GraphImporter::importGraphInput(onnx::ValueInfoProto &in) {
  Location inLoc = NameLoc::get(StringAttr::get(ctx, in.name()), modelLoc());
  if (!in.type().has_tensor_type())
    return emitError(inLoc) << "graph input '" << in.name()
                            << "' is not a tensor (sequences, maps and "
                               "optionals are not supported)";
  auto *tensorType = in.mutable_type()->mutable_tensor_type();
  Type element = convertElementType(ctx, tensorType->elem_type());
  if (!element)
    return emitError(inLoc)
           << "graph input '" << in.name() << "' has unsupported element type "
           << onnx::TensorProto::DataType_Name(
                  onnx::TensorProto::DataType(tensorType->elem_type()));
  auto shape = inputShape(in, inLoc);
  if (failed(shape))
    return failure();
  // Write the bound shape back so ONNX's shape inference sees it too.
  auto *protoShape = tensorType->mutable_shape();
  protoShape->clear_dim();
  for (int64_t d : *shape)
    protoShape->add_dim()->set_dim_value(d);

  if (auto frozen = options.frozenInputs.find(in.name());
      frozen != options.frozenInputs.end()) {
    auto host = readFrozenInput(in, frozen->second, element, *shape, inLoc);
    if (failed(host))
      return failure();
    constants[in.name()] = std::move(*host);
    return Type();
  }
  return Type(RankedTensorType::get(*shape, element));
}

namespace {
/// The static shapes ONNX's shape inference gives the graph's values, by
/// name, serialized as (u32 name length, name, u32 rank, i64 dims) records
/// (in the child: it adds the inferred value_info to `model`).
std::string inferredShapes(onnx::ModelProto &model) {
  onnx::ShapeInferenceOptions siOptions(/*check_type=*/false,
                                        /*error_mode=*/0);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                     siOptions);
  std::string out;
  auto put = [&](const void *p, size_t n) {
    out.append(static_cast<const char *>(p), n);
  };
  for (const auto &vi : model.graph().value_info()) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
      continue;
    std::vector<int64_t> dims;
    bool isStatic = true;
    for (const auto &d : vi.type().tensor_type().shape().dim()) {
      isStatic &= d.has_dim_value();
      dims.push_back(d.dim_value());
    }
    if (!isStatic)
      continue;
    uint32_t len = uint32_t(vi.name().size()), rank = uint32_t(dims.size());
    put(&len, 4);
    put(vi.name().data(), len);
    put(&rank, 4);
    if (!dims.empty())
      put(dims.data(), dims.size() * 8);
  }
  return out;
}

/// Runs inferredShapes in a child process: Debian's libonnx (1.12) crashes
/// on some models ign accepts (an Einsum whose equation mixes letter cases,
/// found by fuzz-onnx-text-import), and a cross-check must not take ignc
/// down. False when the child failed (crashed, threw or could not start).
bool inferShapesInChild(onnx::ModelProto &model,
                        llvm::StringMap<std::vector<int64_t>> &shapes) {
  int fds[2];
  if (::pipe(fds) != 0)
    return false;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  if (pid == 0) {
    ::close(fds[0]);
    // libonnx's crash reports are not ignc's: the parent says what failed.
    if (int null = ::open("/dev/null", O_WRONLY); null >= 0)
      ::dup2(null, 2);
    int code = 0;
    try {
      std::string out = inferredShapes(model);
      for (size_t at = 0; at < out.size();) {
        ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
        if (n <= 0)
          ::_exit(1);
        at += size_t(n);
      }
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string data;
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;)
    if (n > 0)
      data.append(buf, size_t(n));
    else if (errno != EINTR)
      break;
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return false;
  for (size_t at = 0; at + 4 <= data.size();) {
    uint32_t len, rank;
    std::memcpy(&len, data.data() + at, 4);
    if (data.size() - at - 4 < len + 4ull)
      return false;
    std::string name = data.substr(at + 4, len);
    std::memcpy(&rank, data.data() + at + 4 + len, 4);
    at += 8 + size_t(len);
    if ((data.size() - at) / 8 < rank)
      return false;
    std::vector<int64_t> dims(rank);
    if (rank)
      std::memcpy(dims.data(), data.data() + at, size_t(rank) * 8);
    at += size_t(rank) * 8;
    shapes[name] = std::move(dims);
  }
  return true;
}
} // namespace

/// ONNX's own shape inference, as a cross-check only (its schemas stop at
/// opset 17 in Debian's ONNX; ign's inference is the source of truth), in a
/// child process (inferShapesInChild).
void GraphImporter::crossCheckWithOnnx(onnx::ModelProto &model) {
  if (!inferShapesInChild(model, onnxShapes)) {
    emitRemark(modelLoc()) << "ONNX shape inference failed on this model "
                              "(cross-check skipped)";
    return;
  }
  for (const auto &node : model.graph().node())
    crossCheck(node);
  emitRemark(modelLoc()) << "ONNX shape inference cross-checked "
                         << onnxShapes.size() << " static shapes";
}

OwningOpRef<ModuleOp> GraphImporter::importModel(onnx::ModelProto &model) {
  if (failed(readOpset(model)))
    return nullptr;
  onnx::GraphProto &graph = *model.mutable_graph();
  if (failed(checkSupported(model)))
    return nullptr;
  countUses(graph);

  // Bind input shapes, validating --input-shape against the model.
  std::set<std::string> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  std::set<std::string> inputNames;
  for (const auto &in : graph.input())
    if (!initializerNames.count(in.name()) &&
        !inputNames.insert(in.name()).second) {
      emitError(modelLoc())
          << "graph input '" << in.name() << "' is declared twice";
      return nullptr;
    }
  if (failed(checkInputOptions(inputNames)))
    return nullptr;

  llvm::SmallVector<Type> argTypes;
  llvm::SmallVector<std::string> argNames;
  for (auto &in : *graph.mutable_input()) {
    if (initializerNames.count(in.name()))
      continue;
    auto type = importGraphInput(in);
    if (failed(type))
      return nullptr;
    if (!*type)
      continue; // frozen: a constant now
    argTypes.push_back(*type);
    argNames.push_back(in.name());
  }

  for (auto &init : *graph.mutable_initializer())
    if (failed(addInitializer(init)))
      return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(modelLoc());
  graphModule = *module;
  builder.setInsertionPointToEnd(module->getBody());
  auto funcType = builder.getFunctionType(argTypes, {});
  auto func = builder.create<func::FuncOp>(modelLoc(), "main", funcType);
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    values[name] = entry->getArgument(i);
    func.setArgAttr(i, "ign.name", builder.getStringAttr(name));
  }
  builder.setInsertionPointToEnd(entry);

  if (failed(importNodes(graph, opset)))
    return nullptr;

  // The cross-check runs after ign accepted the model: ONNX 1.12's inference
  // crashes on some invalid attributes that ign rejects with a diagnostic.
  if (options.crossCheckShapes)
    crossCheckWithOnnx(model);

  llvm::SmallVector<Value> results;
  llvm::SmallVector<Attribute> outputNames;
  for (const auto &out : graph.output()) {
    auto v = lookup(out.name(),
                    NameLoc::get(StringAttr::get(ctx, out.name()), modelLoc()));
    if (failed(v))
      return nullptr;
    results.push_back(*v);
    outputNames.push_back(builder.getStringAttr(out.name()));
  }
  // An output of run-time size returns its shape too, as a result that
  // names it (kShapeOfAttr).
  llvm::SmallVector<std::string> shapeOf(results.size());
  for (size_t i = 0, e = results.size(); i < e; ++i)
    if (const RuntimeShape *s = runtimeShapeOf(results[i])) {
      results.push_back(s->shape);
      std::string name = cast<StringAttr>(outputNames[i]).str();
      outputNames.push_back(builder.getStringAttr(name + ":shape"));
      shapeOf.push_back(name);
    }
  builder.create<func::ReturnOp>(modelLoc(), results);
  func.setType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, name] : llvm::enumerate(outputNames)) {
    func.setResultAttr(i, "ign.name", name);
    if (!shapeOf[i].empty())
      func.setResultAttr(i, kShapeOfAttr, builder.getStringAttr(shapeOf[i]));
  }
  module->getOperation()->setAttr("ign.opset",
                                  builder.getI64IntegerAttr(opset));
  if (!model.producer_name().empty())
    module->getOperation()->setAttr(
        "ign.producer",
        builder.getStringAttr(model.producer_name() +
                              (model.producer_version().empty()
                                   ? ""
                                   : " " + model.producer_version())));
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

} // namespace import

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

bool readTensorProtoFile(const std::string &path, std::string &name,
                         std::string &dtype, std::vector<int64_t> &shape,
                         std::string &bytes, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot open '" + path + "': " + buffer.getError().message();
    return false;
  }
  onnx::TensorProto t;
  if (!t.ParseFromArray((*buffer)->getBufferStart(),
                        int((*buffer)->getBufferSize()))) {
    error = "'" + path + "' is not an ONNX TensorProto";
    return false;
  }
  MLIRContext ctx;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    error = "'" + path + "': " + d.str();
    return success();
  });
  Type element = import::convertElementType(&ctx, t.data_type());
  if (!element) {
    error = "'" + path + "' holds an unsupported element type";
    return false;
  }
  std::optional<int64_t> count = import::checkedElementCount(
      llvm::ArrayRef<int64_t>(t.dims().data(), t.dims_size()));
  if (!count) {
    error = "'" + path + "' has a negative dim or too many elements";
    return false;
  }
  llvm::SmallString<128> dir(path);
  llvm::sys::path::remove_filename(dir);
  auto data =
      import::takeTensorBytes(t, dir, element, *count, UnknownLoc::get(&ctx));
  if (failed(data))
    return false;
  name = t.name();
  shape.assign(t.dims().begin(), t.dims().end());
  bytes = std::move(*data);
  // Booleans are one byte each, as the runtime expects.
  if (element.isF32())
    dtype = "f32";
  else if (element.isF64())
    dtype = "f64";
  else if (element.isF16())
    dtype = "f16";
  else if (element.isBF16())
    dtype = "bf16";
  else if (element.isInteger(1))
    dtype = "bool";
  else
    dtype = (element.isUnsignedInteger() ? "u" : "i") +
            std::to_string(element.getIntOrFloatBitWidth());
  return true;
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, llvm::StringRef path,
                                     const ImportOptions &options) {
  context.loadDialect<IgnDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  if (llvm::sys::fs::is_directory(path)) {
    emitError(fileLoc) << "is a directory, not an ONNX model";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer) {
    emitError(fileLoc) << "cannot open: " << buffer.getError().message();
    return nullptr;
  }
  onnx::ModelProto model;
  llvm::StringRef data = (*buffer)->getBuffer();
  if (path.ends_with(".onnxtxt")) {
    try {
      onnx::OnnxParser parser(data.data());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        emitError(fileLoc) << "not valid ONNX text syntax: "
                           << status.ErrorMessage();
        return nullptr;
      }
    } catch (const std::exception &e) {
      emitError(fileLoc) << "not valid ONNX text syntax: " << e.what();
      return nullptr;
    }
  } else {
    google::protobuf::io::CodedInputStream stream(
        reinterpret_cast<const uint8_t *>(data.data()), int(data.size()));
    stream.SetTotalBytesLimit(INT32_MAX);
    if (data.size() >= size_t(INT32_MAX)) {
      emitError(fileLoc) << "models of 2 GiB or more must keep their weights "
                            "as external data";
      return nullptr;
    }
    if (!model.ParseFromCodedStream(&stream) ||
        !stream.ConsumedEntireMessage()) {
      emitError(fileLoc) << "not an ONNX model (the protobuf does not parse; "
                            "is the file truncated or of another format?)";
      return nullptr;
    }
  }
  if (!model.has_graph() || model.ir_version() <= 0 ||
      model.opset_import_size() == 0) {
    emitError(fileLoc) << "not an ONNX model (no graph, IR version or opset "
                          "import; is the file truncated or of another "
                          "format?)";
    return nullptr;
  }
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  import::GraphImporter importer(context, options, path.str(), dir.str().str());
  return importer.importModel(model);
}

} // namespace ign
