//===- conformance.cpp - ONNX backend test data: import and end to end ----===//
//
// Usage: ign-conformance import|run DATA_DIR [--expect FILE] [--write FILE]
//                        [--filter TEXT] [--jobs N] [--timeout SECONDS]
//                        [--target T [--chip C]] [-v]
//
// `import` imports each `<suite>/<test>/model.onnx` under DATA_DIR (Debian's
// libonnx-testdata) and verifies the module. `run` also compiles it for the
// host (or --target, whose declined kernels run on the host), runs every
// test_data_set_* through libignrt and compares the outputs with output_*.pb
// (per-dtype tolerances, NaN must match NaN, integers exact); each model runs
// in a child process with a time limit, so a crash or hang is recorded, not
// fatal. A model whose shape operands are graph inputs (e.g. Reshape's shape in
// test_reshape_*) is retried with those inputs frozen to test_data_set_0's
// values, as a user would with --freeze-input. Prints the failures and
// totals; with --expect, exits 1 when a listed test no longer passes, and 77
// (skipped) when --target's kernels cannot run on this machine.
//
//===----------------------------------------------------------------------===//

#include "ign/Bundle/BundleWriter.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Driver/TensorFiles.h"
#include "ign/Import/OnnxImporter.h"
#include "ign/Runtime/ignrt.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <poll.h>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

enum class Status { Pass, Unsupported, Fail };

struct Result {
  Status status;
  std::string message;
};

struct Imported {
  Result result;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::set<std::string> frozen;
};

/// Imports once, collecting error messages.
Imported importOnce(mlir::MLIRContext &context, const fs::path &model,
                    const ign::ImportOptions &options) {
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      messages += d.str() + "; ";
    return mlir::success();
  });
  Imported out;
  out.module = ign::importOnnxFile(context, model.string(), options);
  if (out.module) {
    out.result = {Status::Pass, ""};
    return out;
  }
  bool unsupported =
      messages.find("unsupported operators") != std::string::npos;
  out.result = {unsupported ? Status::Unsupported : Status::Fail, messages};
  return out;
}

/// Names of the graph inputs that are not initializers, in order.
std::vector<std::string> graphInputs(const fs::path &model) {
  std::vector<std::string> inputs;
  onnx::ModelProto proto;
  std::ifstream in(model, std::ios::binary);
  if (!proto.ParseFromIstream(&in))
    return inputs;
  std::set<std::string> inits;
  for (const auto &t : proto.graph().initializer())
    inits.insert(t.name());
  for (const auto &i : proto.graph().input())
    if (!inits.count(i.name()))
      inputs.push_back(i.name());
  return inputs;
}

Imported importTest(mlir::MLIRContext &context, const fs::path &dir) {
  fs::path model = dir / "model.onnx";
  ign::ImportOptions options;
  options.crossCheckShapes = false;
  Imported r = importOnce(context, model, options);
  if (r.result.status != Status::Fail ||
      r.result.message.find("must be known at compile time") ==
          std::string::npos)
    return r;
  // Freeze the inputs the errors name; when they name none (the value was
  // derived from inputs), freeze every input once as a last resort.
  auto inputs = graphInputs(model);
  for (int round = 0; round < 4; ++round) {
    bool freezeAll = round == 3, added = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      fs::path pb =
          dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
      std::string quoted = "('" + inputs[i] + "') must be known";
      bool named = r.result.message.find(quoted) != std::string::npos;
      if ((freezeAll || named) && fs::exists(pb) &&
          !options.frozenInputs.count(inputs[i])) {
        options.frozenInputs[inputs[i]] = pb.string();
        added = true;
      }
    }
    if (!added) {
      if (freezeAll)
        return r;
      round = 2;
      continue;
    }
    r = importOnce(context, model, options);
    if (r.result.status == Status::Pass)
      break;
  }
  for (const auto &[name, path] : options.frozenInputs)
    r.frozen.insert(name);
  return r;
}

/// |a - b| <= atol + rtol * |b| per element; NaN must match NaN; integers
/// and booleans exactly.
bool compareOutput(const ign::TensorData &expected, const void *data,
                   size_t bytes, const std::string &name, std::string &why) {
  if (bytes != expected.bytes.size()) {
    why = "output '" + name + "' has " + std::to_string(bytes) +
          " bytes, expected " + std::to_string(expected.bytes.size());
    return false;
  }
  auto check = [&](auto type, double rtol, double atol) {
    using T = decltype(type);
    size_t n = bytes / sizeof(T);
    const T *got = static_cast<const T *>(data);
    const T *want = reinterpret_cast<const T *>(expected.bytes.data());
    for (size_t i = 0; i < n; ++i) {
      double g = double(got[i]), w = double(want[i]);
      bool ok =
          std::isnan(w)
              ? std::isnan(g)
              : (g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w));
      if (!ok) {
        why = "output '" + name + "' element " + std::to_string(i) + ": got " +
              std::to_string(g) + ", expected " + std::to_string(w);
        return false;
      }
    }
    return true;
  };
  const std::string &dt = expected.dtype;
  if (dt == "f32")
    return check(float(), 1e-3, 1e-5);
  if (dt == "f64")
    return check(double(), 1e-6, 1e-9);
  if (dt == "i64")
    return check(int64_t(), 0, 0);
  if (dt == "i32")
    return check(int32_t(), 0, 0);
  if (dt == "i16")
    return check(int16_t(), 0, 0);
  if (dt == "i8")
    return check(int8_t(), 0, 0);
  if (dt == "bool" || dt == "u8")
    return check(uint8_t(), 0, 0);
  if (std::memcmp(data, expected.bytes.data(), bytes) != 0) {
    why = "output '" + name + "' differs (" + dt + ", compared bytewise)";
    return false;
  }
  return true;
}

/// The target the models compile for (--target, --chip): the host unless
/// asked otherwise; a device target's declined kernels run on the host.
struct Placement {
  std::string target = "host", chip;
};
Placement placement;

/// "k of n kernels on T" for a device target's bundle.
std::string deviceShare(const ign::bundle::BundleContents &c) {
  if (placement.target == "host")
    return "";
  size_t onDevice = 0;
  for (const ign::bundle::KernelSpec &k : c.kernels)
    onDevice += k.device == placement.target;
  return std::to_string(onDevice) + " of " + std::to_string(c.kernels.size()) +
         " kernels on " + placement.target;
}

/// Compiles, runs every data set and compares (inside the child process).
Result runTest(const fs::path &dir) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  Imported imported = importTest(context, dir);
  if (imported.result.status != Status::Pass)
    return imported.result;
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      messages += d.str() + "; ";
    return mlir::success();
  });
  ign::target::registerBuiltinTargets();
  const ign::target::Target &target =
      *ign::target::findTarget(placement.target);
  target.registerRuntimeDriver();
  ign::target::PipelineOptions pipeline;
  pipeline.compile.config.chip =
      placement.chip.empty() ? target.defaultChip() : placement.chip;
  auto compiled =
      ign::target::compileModule(*imported.module, target, pipeline);
  if (mlir::failed(compiled)) {
    bool lowering = messages.find("failed to legalize") != std::string::npos ||
                    messages.find("not lowered yet") != std::string::npos;
    return {lowering ? Status::Unsupported : Status::Fail,
            "compile: " + messages};
  }
  ign::bundle::BundleContents &c = *compiled;
  std::string share = deviceShare(c);
  std::string path = (fs::temp_directory_path() /
                      ("ign-conformance-" + std::to_string(getpid()) + ".ignb"))
                         .string();
  std::string error = ign::bundle::writeBundle(path, c);
  if (!error.empty())
    return {Status::Fail, error};
  ignrt_bundle *bundle = nullptr;
  ignrt_status st = ignrt_bundle_open(path.c_str(), &bundle);
  if (st != IGNRT_OK) {
    // Keep the refused bundle for `ignc inspect`.
    std::string kept =
        (fs::temp_directory_path() /
         ("ign-conformance-refused-" + dir.filename().string() + ".ignb"))
            .string();
    std::string message = std::string("open: ") + ignrt_last_error() +
                          " (bundle kept as " + kept + ")";
    fs::rename(path, kept);
    return {Status::Fail, message};
  }
  fs::remove(path);
  ignrt_session *session = nullptr;
  ignrt_session_create(bundle, 1, &session);
  auto inputs = graphInputs(dir / "model.onnx");
  int sets = 0;
  for (const auto &entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("test_data_set_", 0) != 0)
      continue;
    ++sets;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (imported.frozen.count(inputs[i]))
        continue;
      ign::TensorData t;
      std::string err;
      fs::path pb = entry.path() / ("input_" + std::to_string(i) + ".pb");
      if (!ign::readTensorFile(pb.string(), t, err))
        return {Status::Fail, err};
      ignrt_tensor_info info;
      size_t k = 0;
      for (; k < ignrt_bundle_num_inputs(bundle); ++k) {
        ignrt_bundle_input(bundle, k, &info);
        if (inputs[i] == info.name)
          break;
      }
      if (ignrt_session_set_input(session, inputs[i].c_str(), info.dtype,
                                  t.shape.data(), t.shape.size(),
                                  t.bytes.data(), t.bytes.size()) != IGNRT_OK)
        return {Status::Fail, std::string("input: ") + ignrt_last_error()};
    }
    if (ignrt_session_run(session) != IGNRT_OK)
      return {Status::Fail, std::string("run: ") + ignrt_last_error()};
    for (size_t o = 0; o < ignrt_bundle_num_outputs(bundle); ++o) {
      ign::TensorData want;
      std::string err;
      fs::path pb = entry.path() / ("output_" + std::to_string(o) + ".pb");
      if (!ign::readTensorFile(pb.string(), want, err))
        return {Status::Fail, err};
      ignrt_tensor_info info;
      const void *data;
      ignrt_session_output_at(session, o, &info, &data);
      std::vector<int64_t> dims(info.dims, info.dims + info.rank);
      auto shapeText = [](const std::vector<int64_t> &v) {
        std::string t = "[";
        for (size_t k = 0; k < v.size(); ++k)
          t += (k ? "x" : "") + std::to_string(v[k]);
        return t + "]";
      };
      if (dims != want.shape)
        return {Status::Fail, entry.path().filename().string() + ": output '" +
                                  info.name + "' has shape " + shapeText(dims) +
                                  ", expected " + shapeText(want.shape)};
      std::string why;
      if (!compareOutput(want, data, info.bytes, info.name, why))
        return {Status::Fail, entry.path().filename().string() + ": " + why};
    }
  }
  ignrt_session_destroy(session);
  ignrt_bundle_close(bundle);
  if (sets == 0)
    return {Status::Fail, "no test_data_set_*"};
  return {Status::Pass, share};
}

/// Why `target` cannot run its kernels for `config` on this machine ("" when
/// it can): "C<why>" for an unknown chip, "R<why>" for a refusal (no
/// device). Asked in a child process: a device opened in this process
/// (lavapipe's threads) would not survive the fork of every test's child.
std::string refusalInChild(const ign::target::Target &target,
                           const ign::target::TargetConfig &config) {
  int fds[2];
  if (pipe(fds) != 0)
    return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = target.checkChip(config.chip);
    if (!why.empty())
      why = "C" + why;
    else if (std::string refusal = target.tuningRefusal(config);
             !refusal.empty())
      why = "R" + refusal;
    ssize_t ignored = write(fds[1], why.data(), why.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string why;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    why.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status))
    return "the device check crashed";
  return why;
}

/// Runs `runTest` in a child process with a time limit.
Result runIsolated(const fs::path &dir, int timeoutSeconds) {
  int fds[2];
  if (pipe(fds) != 0)
    return {Status::Fail, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Result r = runTest(dir);
    std::string line = std::to_string(int(r.status)) + " " + r.message;
    ssize_t ignored = write(fds[1], line.data(), line.size());
    (void)ignored;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  struct pollfd p {
    fds[0], POLLIN, 0
  };
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  bool timedOut = false;
  while (true) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now())
                       .count());
    if (left <= 0) {
      timedOut = true;
      break;
    }
    if (poll(&p, 1, left) <= 0)
      continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0)
      break;
    out.append(buf, size_t(n));
  }
  close(fds[0]);
  if (timedOut)
    kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timedOut)
    return {Status::Fail,
            "timed out after " + std::to_string(timeoutSeconds) + " s"};
  if (WIFSIGNALED(status))
    return {Status::Fail,
            std::string("crashed: ") + strsignal(WTERMSIG(status))};
  if (out.empty())
    return {Status::Fail, "no result"};
  Result r;
  r.status = Status(out[0] - '0');
  r.message = out.size() > 2 ? out.substr(2) : "";
  return r;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3 ||
      (std::string(argv[1]) != "import" && std::string(argv[1]) != "run")) {
    std::cerr << "usage: ign-conformance import|run DATA_DIR [--expect FILE] "
                 "[--write FILE] [--filter TEXT] [--timeout SECONDS] [--target "
                 "T [--chip C]] "
                 "[-v]\n";
    return 2;
  }
  bool runMode = std::string(argv[1]) == "run";
  fs::path dataDir = argv[2];
  std::string expectPath, writePath, filter;
  int timeout = 120;
  bool verbose = false;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc)
      expectPath = argv[++i];
    else if (a == "--write" && i + 1 < argc)
      writePath = argv[++i];
    else if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--timeout" && i + 1 < argc)
      timeout = std::atoi(argv[++i]);
    else if (a == "--target" && i + 1 < argc)
      placement.target = argv[++i];
    else if (a == "--chip" && i + 1 < argc)
      placement.chip = argv[++i];
    else if (a == "-v")
      verbose = true;
    else {
      std::cerr << "unknown argument '" << a << "'\n";
      return 2;
    }
  }
  ign::target::registerBuiltinTargets();
  const ign::target::Target *target = ign::target::findTarget(placement.target);
  if (!target) {
    std::cerr << "ign-conformance: unknown target '" << placement.target
              << "'\n";
    return 2;
  }
  // A device target whose kernels cannot run here (no Vulkan device, say)
  // is skipped, not failed: its tuning refusal says why.
  ign::target::TargetConfig config;
  config.chip = placement.chip.empty() ? target->defaultChip() : placement.chip;
  std::string why =
      placement.target != "host" ? refusalInChild(*target, config) : "";
  if (!why.empty() && why[0] != 'R') {
    std::cerr << "ign-conformance: " << why.substr(1) << "\n";
    return 2;
  }
  if (!why.empty() && runMode) {
    std::cout << "skipped: " << why.substr(1) << "\n";
    return 77;
  }
  if (!fs::is_directory(dataDir)) {
    std::cerr << "ign-conformance: '" << dataDir.string()
              << "' is not a directory (install libonnx-testdata)\n";
    return 2;
  }
  std::map<std::string, Result> results;
  for (const char *suite :
       {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    fs::path suiteDir = dataDir / suite;
    if (!fs::is_directory(suiteDir))
      continue;
    std::vector<fs::path> tests;
    for (const auto &entry : fs::directory_iterator(suiteDir))
      if (fs::exists(entry.path() / "model.onnx"))
        tests.push_back(entry.path());
    std::sort(tests.begin(), tests.end());
    for (const fs::path &t : tests) {
      std::string name = std::string(suite) + "/" + t.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos)
        continue;
      if (runMode) {
        results[name] = runIsolated(t, timeout);
      } else {
        mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
        results[name] = importTest(context, t).result;
      }
    }
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
    (r.status == Status::Pass          ? pass
     : r.status == Status::Unsupported ? unsupported
                                       : fail)++;
    if (verbose || (r.status == Status::Fail))
      std::cout << tag << " " << name
                << (r.message.empty() ? "" : ": " + r.message) << "\n";
    if (expected.count(name) && r.status != Status::Pass)
      regressions.push_back(name);
    if (!expectPath.empty() && !expected.count(name) &&
        r.status == Status::Pass)
      newPasses.push_back(name);
  }
  for (const std::string &name : expected)
    if (!results.count(name))
      regressions.push_back(name + " (test not found)");
  if (!writePath.empty()) {
    std::ofstream out(writePath);
    out << (runMode ? "# ONNX backend tests that ignc compiles for the host, "
                      "runs and\n"
                      "# matches with the expected outputs.\n"
                    : "# ONNX backend tests whose models ignc imports and "
                      "verifies.\n")
        << "# Generated by ign-conformance --write; a line leaves this list\n"
           "# only with a reason written in docs/conformance.md.\n";
    for (const auto &[name, r] : results)
      if (r.status == Status::Pass)
        out << name << "\n";
  }
  std::cout << "\n"
            << (runMode ? "end-to-end" : "import") << " conformance: " << pass
            << " pass, " << unsupported << " unsupported, " << fail
            << " fail, of " << results.size() << " models\n";
  for (const std::string &n : newPasses)
    std::cout << "newly passing (add to the list): " << n << "\n";
  for (const std::string &n : regressions)
    std::cout << "REGRESSION: " << n << "\n";
  return regressions.empty() ? 0 : 1;
}
