//===- CudaCompiler.cpp - one kernel -> PTX and cubin ---------------------===//
//
// A kernel through the GPU layer's shared half, PTX and ptxas; its
// descriptor, image and schedule JSON (CudaCompiler.h).
//
//===----------------------------------------------------------------------===//

#include "CudaCompiler.h"

#include "PtxLowering.h"
#include "Ptxas.h"
#include "TensorCoreGemm.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::cuda {

namespace {

bool storable(Type t) {
  if (isa<FloatType>(t))
    return llvm::is_contained({16u, 32u, 64u}, t.getIntOrFloatBitWidth());
  auto i = dyn_cast<IntegerType>(t);
  return i && llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
}

/// The module image: a fatbin or cubin from ptxas, else the PTX text
/// (NUL-terminated, as cuModuleLoadData reads it).
struct Image {
  std::string bytes, kind; // "fatbin", "cubin" or "ptx"
  std::map<std::string, KernelResources> resources;
};

std::optional<Image> buildImage(const PtxKernel &ptx, const CudaChip &chip,
                                bool assemble, std::string &why) {
  const std::optional<CudaToolkit> &toolkit = cudaToolkit();
  if (!assemble || !toolkit)
    return Image{ptx.ptx + '\0', "ptx", {}};
  std::optional<Assembled> a = assemblePtx(*toolkit, ptx.ptx, chip.arch(), why);
  if (!a)
    return std::nullopt;
  return Image{std::move(a->image), a->fatbin ? "fatbin" : "cubin",
               std::move(a->resources)};
}

/// Threads of a block an SM keeps resident under its register file, thread
/// and block limits (registers are allocated per warp, in units of 256).
int64_t residentThreads(const CudaChip &chip, int64_t registers,
                        int64_t blockThreads) {
  int64_t warps = (blockThreads + 31) / 32;
  int64_t perWarp = (std::max<int64_t>(registers, 1) * 32 + 255) / 256 * 256;
  int64_t blocks =
      std::min({chip.registersPerSM / (perWarp * warps),
                chip.maxThreadsPerSM / std::max<int64_t>(blockThreads, 1),
                chip.maxBlocksPerSM});
  return std::max<int64_t>(blocks, 0) * blockThreads;
}

/// ptxas's registers in the model: a dispatch whose blocks an SM cannot
/// keep kLatencyHiding threads per lane of (or the grid's share of an SM,
/// when that is fewer) takes longer in proportion.
void applyOccupancy(const CudaChip &chip, const gpu::Launch &launch,
                    const KernelResources &r, gpu::DispatchNote &note) {
  if (!note.predictedMs || r.registers == 0)
    return;
  const gpu::ChipNumbers &n = chip.gpu.numbers;
  int64_t block = launch.local[0] * launch.local[1] * launch.local[2];
  double gridThreads =
      double(block) * launch.groups[0] * launch.groups[1] * launch.groups[2];
  double needed = std::min(gpu::kLatencyHiding * n.lanesPerUnit(),
                           gridThreads / double(n.computeUnits));
  double resident = double(residentThreads(chip, r.registers, block));
  if (resident >= needed)
    return;
  double launchMs = gpu::kLaunchMicroseconds / 1e3;
  double work = std::max(0.0, *note.predictedMs - launchMs);
  note.predictedMs =
      launchMs + work * needed / std::max(resident, double(block));
  note.bound = resident == 0 ? "registers" : "occupancy";
}

std::string descriptorJson(const PtxKernel &ptx, const Image &image,
                           const CudaChip &chip, std::string &blob) {
  static const char *kKeys[] = {"arg", "scratch", "const"};
  nlohmann::json dispatches = nlohmann::json::array();
  for (const gpu::Launch &l : ptx.launches.launches) {
    nlohmann::json args = nlohmann::json::array();
    for (const gpu::Binding &b : l.bindings)
      args.push_back({{kKeys[b.kind], b.index}});
    dispatches.push_back({{"entry", l.entry},
                          {"groups", l.groups},
                          {"local", l.local},
                          {"args", args}});
  }
  nlohmann::json imageJson = {{"kind", image.kind},
                              {"offset", blob.size()},
                              {"bytes", image.bytes.size()}};
  blob += image.bytes;
  nlohmann::json constants = nlohmann::json::array();
  for (const std::string &c : ptx.launches.constants) {
    constants.push_back({{"offset", blob.size()}, {"bytes", c.size()}});
    blob += c;
  }
  return nlohmann::json{
      {"format", "cuda"},       {"arch", chip.arch()},
      {"image", imageJson},     {"scratch", ptx.launches.scratchBytes},
      {"constants", constants}, {"dispatches", dispatches}}
      .dump();
}

std::string summaryOf(const PtxKernel &ptx, const Image &image) {
  const gpu::Launch &d = ptx.launches.launches.front();
  return llvm::formatv("cuda {0}, {1} launch{2}, first {3}x{4}x{5} blocks of "
                       "{6}x{7}x{8}",
                       image.kind, ptx.launches.launches.size(),
                       ptx.launches.launches.size() == 1 ? "" : "es",
                       d.groups[0], d.groups[1], d.groups[2], d.local[0],
                       d.local[1], d.local[2])
      .str();
}

} // namespace

bool hasCudaTypes(func::FuncOp kernel, std::string &why) {
  for (Type t : llvm::concat<const Type>(kernel.getArgumentTypes(),
                                         kernel.getResultTypes())) {
    auto shaped = dyn_cast<ShapedType>(t);
    Type element = shaped ? shaped.getElementType() : t;
    if (!storable(element)) {
      llvm::raw_string_ostream os(why);
      os << "element type " << element << " (not stored by the CUDA kernels)";
      return false;
    }
  }
  return true;
}

search::Schedule defaultCudaKnobs(func::FuncOp kernel, const CudaChip &chip,
                                  const std::string &precision) {
  return gpu::defaultKnobs(kernel, gpuChipAt(chip, precision));
}

std::string checkCudaPrecision(const std::string &precision) {
  return precision == "fp32" || mmaPrecisionFor(precision)
             ? ""
             : "the CUDA target computes in fp32, or fp16, bf16 or tf32 on "
               "the tensor cores";
}

gpu::GpuChip gpuChipAt(const CudaChip &chip, const std::string &precision) {
  gpu::GpuChip gpuChip = chip.gpu;
  if (std::optional<MmaPrecision> mma = mmaPrecisionFor(precision))
    gpuChip.ownLaunches = [chip, mma = *mma](func::FuncOp bufferized) {
      bufferized->getContext()
          ->loadDialect<nvgpu::NVGPUDialect, vector::VectorDialect,
                        LLVM::LLVMDialect>();
      return emitTensorCoreGemms(bufferized, chip, mma);
    };
  // fp32 (and what the tensor cores leave): the layer's staged launch on
  // the CUDA cores.
  gpuChip.stagedGemms = gpuChip.stagedGemmsBefore = true;
  gpuChip.groupReductions = true;
  gpuChip.subgroupReductions = true; // shuffles (PtxLowering.cpp)
  return gpuChip;
}

FailureOr<CompiledKernel>
compileCudaKernel(func::FuncOp kernel, const search::Schedule *tuned,
                  const CudaChip &chip, const std::string &precision,
                  std::string &why, std::string *ptxText, bool assemble) {
  FailureOr<gpu::MappedKernel> mapped =
      gpu::mapKernelCopy(kernel, tuned, gpuChipAt(chip, precision), why);
  if (failed(mapped))
    return failure();
  FailureOr<PtxKernel> ptx =
      lowerToPtx(*mapped->module, mapped->kernel, chip, why);
  if (failed(ptx))
    return failure();
  if (ptxText)
    *ptxText += "// kernel " + kernel.getName().str() + "\n" + ptx->ptx;
  std::optional<Image> image = buildImage(*ptx, chip, assemble, why);
  if (!image)
    return failure();
  CompiledKernel out;
  std::vector<gpu::LaunchShape> shapes;
  std::vector<gpu::DispatchFields> fields;
  bool noted = mapped->notes.size() == ptx->launches.launches.size();
  for (auto [i, l] : llvm::enumerate(ptx->launches.launches)) {
    shapes.push_back({l.groups, l.local});
    auto r = image->resources.find(l.entry);
    if (r == image->resources.end()) {
      fields.push_back({});
      continue;
    }
    fields.push_back({{"registers", r->second.registers},
                      {"stack_bytes", r->second.stackBytes},
                      {"spill_store_bytes", r->second.spillStoreBytes},
                      {"static_shared_bytes", r->second.sharedBytes}});
    out.spillBytes += r->second.spillStoreBytes;
    int64_t block = l.local[0] * l.local[1] * l.local[2];
    if (residentThreads(chip, r->second.registers, block) == 0) {
      why = llvm::formatv("a block of {0} threads at {1} registers each is "
                          "more than an SM's {2} registers",
                          block, r->second.registers, chip.registersPerSM);
      return failure();
    }
    if (noted)
      applyOccupancy(chip, l, r->second, mapped->notes[i]);
  }
  out.deviceJson = descriptorJson(*ptx, *image, chip, out.blob);
  out.scheduleJson =
      gpu::scheduleJson(mapped->schedule, shapes, mapped->notes,
                        /*sharedBytes=*/0, out.predictedMs, fields);
  out.summary = summaryOf(*ptx, *image);
  if (out.predictedMs) // a prediction, never a measurement
    out.summary += llvm::formatv(", predicted {0:f3} ms", *out.predictedMs);
  return out;
}

} // namespace ign::cuda
