//===- Ptxas.cpp - the CUDA toolkit's assembler, when it is here ----------===//

#include "Ptxas.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace ign::cuda {

namespace {

std::optional<CudaToolkit> findToolkit() {
  std::vector<std::string> roots;
  if (const char *root = std::getenv("IGN_CUDA_PATH")) {
    if (llvm::StringRef(root) == "none")
      return std::nullopt;
    roots.push_back(root);
  } else {
    if (auto onPath = llvm::sys::findProgramByName("ptxas"))
      roots.push_back(
          llvm::sys::path::parent_path(llvm::sys::path::parent_path(*onPath))
              .str());
    for (const char *var : {"CUDA_PATH", "CUDA_HOME"})
      if (const char *root = std::getenv(var))
        roots.push_back(root);
    roots.push_back("/usr/local/cuda");
  }
  for (const std::string &root : roots) {
    llvm::SmallString<256> ptxas(root), fatbinary(root);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    llvm::sys::path::append(fatbinary, "bin", "fatbinary");
    if (!llvm::sys::fs::can_execute(ptxas))
      continue;
    CudaToolkit t;
    t.ptxas = ptxas.str().str();
    if (llvm::sys::fs::can_execute(fatbinary))
      t.fatbinary = fatbinary.str().str();
    return t;
  }
  return std::nullopt;
}

/// A temporary file that removes itself.
struct TempFile {
  llvm::SmallString<128> path;
  explicit TempFile(llvm::StringRef suffix) {
    if (llvm::sys::fs::createTemporaryFile("ignc-cuda", suffix, path))
      path.clear();
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  bool write(llvm::StringRef bytes) const {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return false;
    os << bytes;
    return !os.has_error();
  }
  std::optional<std::string> read() const {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      return std::nullopt;
    return (*buffer)->getBuffer().str();
  }
};

/// Runs `argv`, its output into `log`; its exit status (-1: did not run).
int run(llvm::ArrayRef<std::string> argv, const TempFile &log) {
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                llvm::StringRef(log.path),
                                                llvm::StringRef(log.path)};
  std::string error;
  return llvm::sys::ExecuteAndWait(args.front(), args, std::nullopt, redirects,
                                   /*SecondsToWait=*/300,
                                   /*MemoryLimit=*/0, &error);
}

int64_t number(llvm::StringRef text) {
  int64_t v = 0;
  return text.getAsInteger(10, v) ? 0 : v;
}

} // namespace

const std::optional<CudaToolkit> &cudaToolkit() {
  static const std::optional<CudaToolkit> toolkit = findToolkit();
  return toolkit;
}

std::map<std::string, KernelResources> parsePtxasInfo(llvm::StringRef log) {
  std::map<std::string, KernelResources> out;
  llvm::Regex function("Function properties for ([A-Za-z0-9_$.]+)");
  llvm::Regex compiling("Compiling entry function '([^']+)'");
  llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill "
                    "stores, ([0-9]+) bytes spill loads");
  llvm::Regex used("Used ([0-9]+) registers");
  llvm::Regex shared("([0-9]+) bytes smem");
  std::string current;
  llvm::SmallVector<llvm::StringRef> m;
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (compiling.match(line, &m) || function.match(line, &m)) {
      current = m[1].str();
      continue;
    }
    if (current.empty())
      continue;
    KernelResources &r = out[current];
    if (frame.match(line, &m)) {
      r.stackBytes = number(m[1]);
      r.spillStoreBytes = number(m[2]);
      r.spillLoadBytes = number(m[3]);
    }
    if (used.match(line, &m))
      r.registers = number(m[1]);
    if (shared.match(line, &m))
      r.sharedBytes = number(m[1]);
  }
  return out;
}

std::optional<Assembled> assemblePtx(const CudaToolkit &toolkit,
                                     llvm::StringRef ptx, llvm::StringRef arch,
                                     std::string &why) {
  TempFile in(".ptx"), cubin(".cubin"), log(".log"), fatbin(".fatbin");
  if (in.path.empty() || cubin.path.empty() || log.path.empty() ||
      !in.write(ptx)) {
    why = "cannot write a temporary file for ptxas";
    return std::nullopt;
  }
  int status = run({toolkit.ptxas, "-arch=" + arch.str(), "-O3", "-v",
                    in.path.str().str(), "-o", cubin.path.str().str()},
                   log);
  std::string output = log.read().value_or("");
  std::optional<std::string> image = cubin.read();
  if (status != 0 || !image || image->empty()) {
    llvm::StringRef first = llvm::StringRef(output).trim().split('\n').first;
    why =
        "ptxas failed for " + arch.str() + ": " +
        (first.empty() ? "exit status " + std::to_string(status) : first.str());
    return std::nullopt;
  }
  Assembled out;
  out.resources = parsePtxasInfo(output);
  out.image = std::move(*image);
  if (toolkit.fatbinary.empty())
    return out;
  std::string sm = arch.drop_front(3).str(); // "80" of "sm_80"
  status =
      run({toolkit.fatbinary, "-64", "--create=" + fatbin.path.str().str(),
           "--image3=kind=elf,sm=" + sm + ",file=" + cubin.path.str().str(),
           "--image3=kind=ptx,sm=" + sm + ",file=" + in.path.str().str()},
          log);
  std::optional<std::string> packed = fatbin.read();
  if (status == 0 && packed && !packed->empty()) {
    out.image = std::move(*packed);
    out.fatbin = true;
  }
  return out;
}

} // namespace ign::cuda
