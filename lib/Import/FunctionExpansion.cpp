//===- FunctionExpansion.cpp - operators ONNX defines as functions --------===//
//
// ONNX defines some operators as functions of others: the losses
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: LogSoftmax,
// GatherElements, Where and reductions, built per node from its attributes
// and input types), the windows (HannWindow, HammingWindow, BlackmanWindow:
// Range and Cos), Shrink, MeanVarianceNormalization and others. An operator
// the importer has no handler for is imported as the body ONNX gives it:
// the body's nodes, renamed into the graph, go through the ordinary
// handlers (and are folded on the host where their inputs are known).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <onnx/defs/schema.h>

using namespace mlir;

namespace ign::import {
namespace {

const onnx::OpSchema *functionSchema(llvm::StringRef opType, int64_t opset) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(opType.str(), int(opset), "");
  if (!schema || schema->Deprecated() ||
      (!schema->HasFunction() && !schema->HasContextDependentFunction()))
    return nullptr;
  return schema;
}

/// The default-domain opset the body's nodes are written against.
int64_t bodyOpset(const onnx::FunctionProto &body,
                  const onnx::OpSchema &schema) {
  for (const auto &imp : body.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      return imp.version();
  return schema.SinceVersion();
}

/// Renames the body's values: formal inputs and outputs become the node's
/// (an input the node omits becomes absent, an output it omits internal),
/// every other name gets `prefix`.
class BodyNames {
public:
  BodyNames(const onnx::NodeProto &node, const onnx::FunctionProto &body,
            llvm::StringRef prefix)
      : prefix(prefix.str()) {
    for (int i = 0; i < body.input_size(); ++i)
      names[body.input(i)] = i < node.input_size() ? node.input(i) : "";
    for (int i = 0; i < body.output_size(); ++i)
      if (i < node.output_size() && !node.output(i).empty())
        names[body.output(i)] = node.output(i);
  }
  std::string operator()(const std::string &name) const {
    if (name.empty())
      return name;
    auto it = names.find(name);
    return it != names.end() ? it->second : prefix + name;
  }

private:
  std::string prefix;
  std::map<std::string, std::string> names;
};

/// The attribute `name` of the calling node, or its default in the schema
/// (nullptr when neither exists).
const onnx::AttributeProto *callerAttribute(const onnx::NodeProto &caller,
                                            const onnx::OpSchema &schema,
                                            const std::string &name) {
  for (const auto &given : caller.attribute())
    if (given.name() == name)
      return &given;
  auto it = schema.attributes().find(name);
  if (it == schema.attributes().end() ||
      it->second.default_value.type() == onnx::AttributeProto::UNDEFINED)
    return nullptr;
  return &it->second.default_value;
}

/// Copies the body's node into `graph`, renaming values and resolving
/// attribute references against the calling node's attributes or their
/// defaults (a reference to neither is dropped, as ONNX does).
LogicalResult copyBodyNode(const onnx::NodeProto &from,
                           const onnx::NodeProto &caller,
                           const onnx::OpSchema &schema,
                           const BodyNames &rename, onnx::GraphProto &graph,
                           Location loc) {
  if (!from.domain().empty() && from.domain() != "ai.onnx")
    return emitError(loc) << "the function body of " << caller.op_type()
                          << " uses " << from.domain() << "." << from.op_type()
                          << ", which is not supported";
  onnx::NodeProto &to = *graph.add_node();
  to.set_op_type(from.op_type());
  to.set_domain(from.domain());
  to.set_name(rename(from.name().empty() && from.output_size() ? from.output(0)
                                                               : from.name()));
  for (const auto &in : from.input())
    to.add_input(rename(in));
  for (const auto &out : from.output())
    to.add_output(rename(out));
  for (const auto &attr : from.attribute()) {
    if (attr.has_g() || attr.graphs_size())
      return emitError(loc) << "the function body of " << caller.op_type()
                            << " has a subgraph (" << from.op_type()
                            << "), which is not supported";
    if (attr.ref_attr_name().empty()) {
      *to.add_attribute() = attr;
      continue;
    }
    if (const onnx::AttributeProto *given =
            callerAttribute(caller, schema, attr.ref_attr_name())) {
      onnx::AttributeProto &copy = *to.add_attribute();
      copy = *given;
      copy.set_name(attr.name());
    }
  }
  return success();
}

} // namespace

bool hasFunctionBody(llvm::StringRef opType, int64_t opset) {
  return functionSchema(opType, opset) != nullptr;
}

FailureOr<ExpandedFunction>
expandFunction(const onnx::NodeProto &node, int64_t opset,
               const std::vector<onnx::TypeProto> &inputTypes,
               llvm::StringRef prefix, Location loc) {
  const onnx::OpSchema *schema = functionSchema(node.op_type(), opset);
  if (!schema)
    return emitError(loc) << "unsupported operators (1): " << node.op_type()
                          << " (ONNX defines no function body for it at opset "
                          << opset << ")";
  onnx::FunctionProto body;
  try {
    if (schema->HasContextDependentFunction()) {
      onnx::FunctionBodyBuildContextImpl context(node, inputTypes);
      if (!schema->BuildContextDependentFunction(context, body))
        return emitError(loc) << "ONNX cannot build the function body of "
                              << node.op_type() << " for this node's "
                              << "attributes and input types";
    } else {
      body = *schema->GetFunction();
    }
  } catch (const std::exception &e) {
    return emitError(loc) << "building the function body of " << node.op_type()
                          << " failed: " << e.what();
  }
  if (node.input_size() > body.input_size() ||
      node.output_size() > body.output_size())
    return emitError(loc) << node.op_type() << " has " << node.input_size()
                          << " inputs and " << node.output_size()
                          << " outputs; its function body takes at most "
                          << body.input_size() << " and " << body.output_size();
  ExpandedFunction expanded;
  expanded.opset = bodyOpset(body, *schema);
  BodyNames rename(node, body, prefix);
  for (const auto &bodyNode : body.node())
    if (failed(
            copyBodyNode(bodyNode, node, *schema, rename, expanded.graph, loc)))
      return failure();
  return expanded;
}

onnx::TypeProto tensorTypeProto(MLIRContext *ctx, RankedTensorType type) {
  onnx::TypeProto proto;
  auto &tensor = *proto.mutable_tensor_type();
  for (int32_t t = 1; t <= onnx::TensorProto::DataType_MAX; ++t)
    if (Type element = convertElementType(ctx, t);
        element && element == type.getElementType()) {
      tensor.set_elem_type(t);
      break;
    }
  auto &shape = *tensor.mutable_shape();
  for (int64_t d : type.getShape())
    shape.add_dim()->set_dim_value(d);
  return proto;
}

} // namespace ign::import
