//===- import_conformance.cpp - import every ONNX backend test model ------===//
//
// Usage: ign-import-conformance DATA_DIR [--expect FILE] [--write FILE] [-v]
//
// Imports each `<suite>/<test>/model.onnx` under DATA_DIR (Debian's
// libonnx-testdata) and verifies the result. A model whose shape operands
// are graph inputs (e.g. Reshape's shape in test_reshape_*) is retried with
// its integer inputs frozen to test_data_set_0's values, as a user would
// with --freeze-input. Prints a pass / unsupported / fail table; with
// --expect, exits 1 when a listed test no longer passes.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Import/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace {

enum class Status { Pass, Unsupported, Fail };

struct Result {
  Status status;
  std::string message;
};

Result importOnce(const fs::path &model, const ign::ImportOptions &options) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      messages += d.str() + "; ";
    return mlir::success();
  });
  auto module = ign::importOnnxFile(context, model.string(), options);
  if (module)
    return {Status::Pass, ""};
  bool unsupported = messages.find("unsupported operators") != std::string::npos;
  return {unsupported ? Status::Unsupported : Status::Fail, messages};
}

/// Names of the graph inputs that are not initializers, in order.
std::vector<std::pair<std::string, bool>> graphInputs(const fs::path &model) {
  std::vector<std::pair<std::string, bool>> inputs;
  onnx::ModelProto proto;
  std::ifstream in(model, std::ios::binary);
  if (!proto.ParseFromIstream(&in))
    return inputs;
  std::set<std::string> inits;
  for (const auto &t : proto.graph().initializer())
    inits.insert(t.name());
  for (const auto &i : proto.graph().input()) {
    if (inits.count(i.name()))
      continue;
    int t = i.type().tensor_type().elem_type();
    bool integer =
        t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32;
    inputs.push_back({i.name(), integer});
  }
  return inputs;
}

Result importTest(const fs::path &dir) {
  fs::path model = dir / "model.onnx";
  ign::ImportOptions options;
  options.crossCheckShapes = false;
  Result r = importOnce(model, options);
  if (r.status != Status::Fail ||
      r.message.find("must be known at compile time") == std::string::npos)
    return r;
  // Freeze the graph inputs the errors name ("... ('name') must be known"),
  // until the import passes or names nothing new.
  auto inputs = graphInputs(model);
  // Freeze the inputs the errors name; when they name none (the value was
  // derived from inputs), freeze every input once as a last resort.
  for (int round = 0; round < 4; ++round) {
    bool freezeAll = round == 3, added = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      fs::path pb =
          dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
      std::string quoted = "('" + inputs[i].first + "') must be known";
      bool named = r.message.find(quoted) != std::string::npos;
      if ((freezeAll || named) && fs::exists(pb) &&
          !options.frozenInputs.count(inputs[i].first)) {
        options.frozenInputs[inputs[i].first] = pb.string();
        added = true;
      }
    }
    if (!added) {
      if (freezeAll)
        return r;
      round = 2;
      continue;
    }
    r = importOnce(model, options);
    if (r.status == Status::Pass)
      return r;
  }
  return r;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: ign-import-conformance DATA_DIR [--expect FILE] "
                 "[--write FILE] [-v]\n";
    return 2;
  }
  fs::path dataDir = argv[1];
  std::string expectPath, writePath;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc)
      expectPath = argv[++i];
    else if (a == "--write" && i + 1 < argc)
      writePath = argv[++i];
    else if (a == "-v")
      verbose = true;
    else {
      std::cerr << "unknown argument '" << a << "'\n";
      return 2;
    }
  }
  if (!fs::is_directory(dataDir)) {
    std::cerr << "ign-import-conformance: '" << dataDir.string()
              << "' is not a directory (install libonnx-testdata)\n";
    return 2;
  }
  std::map<std::string, Result> results;
  for (const char *suite : {"node", "simple", "pytorch-converted",
                            "pytorch-operator"}) {
    fs::path suiteDir = dataDir / suite;
    if (!fs::is_directory(suiteDir))
      continue;
    std::vector<fs::path> tests;
    for (const auto &entry : fs::directory_iterator(suiteDir))
      if (fs::exists(entry.path() / "model.onnx"))
        tests.push_back(entry.path());
    std::sort(tests.begin(), tests.end());
    for (const fs::path &t : tests)
      results[std::string(suite) + "/" + t.filename().string()] = importTest(t);
  }
  std::set<std::string> expected;
  if (!expectPath.empty()) {
    std::ifstream in(expectPath);
    if (!in) {
      std::cerr << "cannot read expectation list '" << expectPath << "'\n";
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      line = line.substr(0, line.find('#'));
      while (!line.empty() && isspace(line.back()))
        line.pop_back();
      if (!line.empty())
        expected.insert(line);
    }
  }
  int pass = 0, unsupported = 0, fail = 0;
  std::vector<std::string> regressions, newPasses;
  for (const auto &[name, r] : results) {
    const char *tag = r.status == Status::Pass          ? "PASS"
                      : r.status == Status::Unsupported ? "UNSUPPORTED"
                                                        : "FAIL";
    (r.status == Status::Pass ? pass
     : r.status == Status::Unsupported ? unsupported
                                       : fail)++;
    if (verbose || (r.status == Status::Fail))
      std::cout << tag << " " << name
                << (r.message.empty() ? "" : ": " + r.message) << "\n";
    if (expected.count(name) && r.status != Status::Pass)
      regressions.push_back(name);
    if (!expectPath.empty() && !expected.count(name) && r.status == Status::Pass)
      newPasses.push_back(name);
  }
  for (const std::string &name : expected)
    if (!results.count(name))
      regressions.push_back(name + " (test not found)");
  if (!writePath.empty()) {
    std::ofstream out(writePath);
    out << "# ONNX backend tests whose models ignc imports and verifies.\n"
           "# Generated by ign-import-conformance --write; a line leaves this\n"
           "# list only with a reason written beside it in the commit.\n";
    for (const auto &[name, r] : results)
      if (r.status == Status::Pass)
        out << name << "\n";
  }
  std::cout << "\nimport conformance: " << pass << " pass, " << unsupported
            << " unsupported operator, " << fail << " fail, of "
            << results.size() << " models\n";
  for (const std::string &n : newPasses)
    std::cout << "newly passing (add to the list): " << n << "\n";
  for (const std::string &n : regressions)
    std::cout << "REGRESSION: " << n << "\n";
  return regressions.empty() ? 0 : 1;
}
