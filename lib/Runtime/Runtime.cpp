//===- Runtime.cpp - libignrt: bundle loading, validation and execution ---===//
//
// No LLVM or MLIR here: the runtime ships with users' applications.
//
//===----------------------------------------------------------------------===//

#include "ign/Bundle/BundleFormat.h"
#include "ign/Runtime/ignrt.h"

#include "Residency.h"
#include "ScratchCache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <mutex>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

using nlohmann::json;
using namespace ign::bundle;

namespace {

thread_local std::string lastError;

/// An integer of the manifest. nlohmann converts a float to an integer
/// type with a plain cast, undefined out of range (a damaged manifest's
/// 5e23): anything but a JSON integer is a format error (thrown as
/// std::runtime_error; the loader reports it).
int64_t manifestInt(const json &j) {
  if (!j.is_number_integer())
    throw std::runtime_error("expected an integer, got " +
                             j.dump().substr(0, 40));
  return j.get<int64_t>();
}

/// A size, offset or index of the manifest: a non-negative integer.
uint64_t manifestCount(const json &j) {
  if (!j.is_number_unsigned() &&
      !(j.is_number_integer() && j.get<int64_t>() >= 0))
    throw std::runtime_error("expected a non-negative integer, got " +
                             j.dump().substr(0, 40));
  return j.get<uint64_t>();
}

/// The registered device drivers (process-wide).
struct DeviceDriver {
  ignrt_device_fn fn = nullptr;
  void *user = nullptr;
};
std::mutex deviceMutex;
std::map<std::string, DeviceDriver> &deviceDrivers() {
  static std::map<std::string, DeviceDriver> drivers;
  return drivers;
}
bool findDevice(const std::string &name, DeviceDriver &out) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  auto it = deviceDrivers().find(name);
  if (it == deviceDrivers().end())
    return false;
  out = it->second;
  return true;
}

ignrt_status fail(ignrt_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

struct Tensor {
  std::string name;
  ignrt_dtype dtype;
  std::vector<int64_t> dims;
  size_t bytes = 0;
  /// An output: the output whose actual shape it holds ("shape_of"), or the
  /// index of the output holding its own (-1: its dims are exact).
  std::string shapeOf;
  int64_t shapeTensor = -1;
};

const struct {
  const char *name;
  ignrt_dtype dtype;
  size_t size;
} kDtypes[] = {
    {"f32", IGNRT_F32, 4},   {"f64", IGNRT_F64, 8}, {"f16", IGNRT_F16, 2},
    {"bf16", IGNRT_BF16, 2}, {"i8", IGNRT_I8, 1},   {"i16", IGNRT_I16, 2},
    {"i32", IGNRT_I32, 4},   {"i64", IGNRT_I64, 8}, {"u8", IGNRT_U8, 1},
    {"u16", IGNRT_U16, 2},   {"u32", IGNRT_U32, 4}, {"u64", IGNRT_U64, 8},
    {"bool", IGNRT_BOOL, 1}};

bool parseTensor(const json &j, Tensor &t, std::string &error) {
  if (!j.is_object() || !j.contains("name") || !j.contains("dtype") ||
      !j.contains("shape") || !j["shape"].is_array()) {
    error = "tensor entry lacks name, dtype or shape";
    return false;
  }
  t.name = j["name"].get<std::string>();
  std::string dtype = j["dtype"].get<std::string>();
  size_t elem = 0;
  for (auto &d : kDtypes)
    if (dtype == d.name) {
      t.dtype = d.dtype;
      elem = d.size;
    }
  if (!elem) {
    error = "tensor '" + t.name + "' has unknown dtype '" + dtype + "'";
    return false;
  }
  size_t count = 1;
  for (const json &d : j["shape"]) {
    int64_t v = manifestInt(d);
    if (v < 0 || (v > 0 && count > (size_t(1) << 48) / size_t(v))) {
      error = "tensor '" + t.name + "' has a negative dim or too many elements";
      return false;
    }
    t.dims.push_back(v);
    count *= size_t(v);
  }
  if (t.dims.size() > IGNRT_MAX_RANK) {
    error = "tensor '" + t.name + "' has rank above " +
            std::to_string(IGNRT_MAX_RANK);
    return false;
  }
  t.bytes = count * elem;
  return true;
}

/// LLVM feature names (as recorded at compile time) this CPU must have.
/// Features the runtime cannot query are not checked.
bool hostHasFeature(const std::string &feature, bool &known) {
  known = true;
#if defined(__x86_64__)
  __builtin_cpu_init();
#define IGN_FEATURE(NAME)                                                      \
  if (feature == NAME)                                                         \
    return __builtin_cpu_supports(NAME);
  IGN_FEATURE("sse4.1")
  IGN_FEATURE("sse4.2")
  IGN_FEATURE("avx")
  IGN_FEATURE("avx2")
  IGN_FEATURE("fma")
  IGN_FEATURE("bmi")
  IGN_FEATURE("bmi2")
  IGN_FEATURE("popcnt")
  IGN_FEATURE("f16c")
  IGN_FEATURE("avx512f")
  IGN_FEATURE("avx512bw")
  IGN_FEATURE("avx512dq")
  IGN_FEATURE("avx512vl")
  IGN_FEATURE("avx512cd")
  IGN_FEATURE("avx512vnni")
  IGN_FEATURE("avx512bf16")
#undef IGN_FEATURE
#endif
  known = false;
  return true;
}

/// Asks Linux for the AMX tile registers' state (ARCH_REQ_XCOMP_PERM for
/// XTILEDATA), which a process must hold before its first tile instruction
/// (a bundle built for a CPU with amx-tile may use them); false, with the
/// reason in `error`, when the kernel refuses.
bool requestTileData(std::string &error) {
#if defined(__x86_64__) && defined(__linux__)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) != 0) {
    error = std::strerror(errno);
    return false;
  }
#endif
  return true;
}

const char *processArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

/// A ranked memref descriptor as MLIR's C interface expects it:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Descriptor {
  std::vector<int64_t> words;
  Descriptor(void *data, const std::vector<int64_t> &dims) {
    size_t rank = dims.size();
    words.assign(3 + 2 * rank, 0);
    std::memcpy(&words[0], &data, sizeof(void *));
    std::memcpy(&words[1], &data, sizeof(void *));
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      words[3 + d] = dims[d];
      words[3 + rank + d] = stride;
      stride *= dims[d];
    }
  }
};

/// `void kernel(void **descriptors, int64_t wg_begin, int64_t wg_end)`:
/// computes workgroups [wg_begin, wg_end) of the kernel.
using KernelFn = void (*)(void **, int64_t, int64_t);

/// More threads than this are not started, whatever the caller asks.
constexpr int kMaxThreads = 256;

/// A spin-wait step: tells the core the thread is waiting (an SMT sibling
/// or the hypervisor gets the cycles).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Moves the calling thread onto the `index`-th CPU after `home` among
/// those it may run on, then lets it run on all of them again (it stays
/// where it is until the kernel balances it). Linux starts a new thread on
/// its creator's CPU, and a worker that yield-spins there stays runnable
/// and cache-hot, so the load balancer may leave it sharing the caller's
/// CPU for the life of a short process (3 of 20 2-thread `ignc bench`
/// processes of 20 runs ran no faster than one thread).
void leaveHomeCpu(int home, int index) {
#ifdef __linux__
  cpu_set_t allowed;
  if (home < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0 ||
      !CPU_ISSET(home, &allowed) || CPU_COUNT(&allowed) < 2)
    return;
  int target = home;
  for (int step = 0; step < index;) {
    target = (target + 1) % CPU_SETSIZE;
    if (CPU_ISSET(target, &allowed))
      ++step;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(target, &one);
  if (target != home && sched_setaffinity(0, sizeof one, &one) == 0)
    sched_setaffinity(0, sizeof allowed, &allowed);
#else
  (void)home;
  (void)index;
#endif
}

/// A fixed set of worker threads that split a kernel's workgroups with the
/// calling thread. Workers spin briefly between launches (kernels come in
/// quick succession), then sleep; each starts on a CPU of its own
/// (leaveHomeCpu).
///
/// A launch is cut into one contiguous chunk per thread; thread i runs
/// chunk i when it gets there first (each thread reads the same part of
/// the data launch after launch: a recurrent layer's steps keep their part
/// of R in that core's cache), then any chunk nobody has claimed. The
/// caller waits only for chunks that were claimed: a worker that has not
/// woken (a core taken by another process) leaves its chunk to the others
/// instead of holding every launch up by a scheduler tick.
class ThreadPool {
public:
  /// Throws std::system_error, with no thread left running, when the
  /// threads cannot be started.
  explicit ThreadPool(int threads) : claims(threads) {
#ifdef __linux__
    int home = sched_getcpu();
#else
    int home = -1;
#endif
    try {
      for (int i = 1; i < threads; ++i)
        workers.emplace_back([this, i, home] {
          leaveHomeCpu(home, i);
          work(i);
        });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~ThreadPool() { stop(); }
  int size() const { return int(workers.size()) + 1; }

  /// Calls fn(begin, end) on contiguous chunks covering [0, n), at most one
  /// chunk per thread, and returns when all are done.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
    int64_t parts = std::min<int64_t>(n, size());
    if (parts <= 1) {
      fn(0, n);
      return;
    }
    job = &fn;
    jobSize = n;
    done.store(0, std::memory_order_relaxed);
    uint64_t g = (launch.load(std::memory_order_relaxed) >> kPartBits) + 1;
    {
      std::lock_guard<std::mutex> lock(mutex);
      launch.store(g << kPartBits | uint64_t(parts), std::memory_order_release);
    }
    wake.notify_all();
    runChunks(0, g, parts);
    waitForChunks(parts);
  }

private:
  /// The low bits of `launch` hold the launch's chunk count, the rest its
  /// number (0: none yet; all ones: stop).
  static constexpr unsigned kPartBits = 16;
  static constexpr uint64_t kStop = ~uint64_t(0);

  /// How long the caller spins for the others' chunks before it sleeps:
  /// a worker's chunk ends a few microseconds after the caller's, and
  /// waking a sleeping thread costs tens of them on a VM (4096 spins, about
  /// 2 us, slept on most launches in 4 of 20 processes; a 0.34 ms model
  /// took 0.47).
  static constexpr std::chrono::microseconds kCallerSpin{200};

  void waitForChunks(int64_t parts) {
    auto until = std::chrono::steady_clock::now() + kCallerSpin;
    for (int spin = 1; done.load(std::memory_order_acquire) != parts; ++spin) {
      cpuRelax();
      if (spin % 64 == 0 && std::chrono::steady_clock::now() > until) {
        std::unique_lock<std::mutex> lock(mutex);
        finished.wait(lock, [&] { return done.load() == parts; });
        return;
      }
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      launch.store(kStop, std::memory_order_release);
    }
    wake.notify_all();
    for (auto &t : workers)
      t.join();
    workers.clear();
  }
  /// Runs chunk `first` of launch g, then every other unclaimed one. A
  /// chunk claimed for launch g belongs to it: that launch is not done
  /// before the chunk is, so the job is still g's while it runs.
  void runChunks(int64_t first, uint64_t g, int64_t parts) {
    for (int64_t k = 0; k < parts; ++k) {
      int64_t chunk = (first + k) % parts;
      uint64_t seen = claims[chunk].load(std::memory_order_relaxed);
      if (seen >= g || !claims[chunk].compare_exchange_strong(
                           seen, g, std::memory_order_acquire))
        continue;
      (*job)(jobSize * chunk / parts, jobSize * (chunk + 1) / parts);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == parts) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_one();
      }
    }
  }
  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t l = launch.load(std::memory_order_acquire);
      for (int spin = 0; l == seen && spin < 20000; ++spin) {
        std::this_thread::yield();
        l = launch.load(std::memory_order_acquire);
      }
      if (l == seen) {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return launch.load() != seen; });
        l = launch.load();
      }
      seen = l;
      if (l == kStop)
        return;
      int64_t parts = int64_t(l & ((uint64_t(1) << kPartBits) - 1));
      if (index < parts)
        runChunks(index, l >> kPartBits, parts);
    }
  }

  std::vector<std::thread> workers;
  /// Per chunk, the last launch that claimed it.
  std::vector<std::atomic<uint64_t>> claims;
  std::mutex mutex;
  std::condition_variable wake, finished;
  std::atomic<uint64_t> launch{0};
  std::atomic<int64_t> done{0};
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobSize = 0;
};

/// A process-wide count, so that no two bundles share an epoch.
uint64_t nextWeightsEpoch() {
  static std::atomic<uint64_t> epoch{0};
  return ++epoch;
}

} // namespace

struct ignrt_bundle {
  /// Keys drivers' copies of the weights (ignrt_device_call).
  uint64_t weightsEpoch = nextWeightsEpoch();
  int fd = -1;
  void *map = MAP_FAILED;
  size_t size = 0;
  std::string manifestText;
  json manifest;
  std::vector<Tensor> inputs, outputs, weights;
  /// The outputs a caller sees (those that hold no other output's shape).
  std::vector<size_t> visible;
  std::vector<const char *> weightData;
  /// The weights section (in the mapped file).
  const char *weightsSection = nullptr;
  size_t weightsSectionBytes = 0;
  struct Kernel {
    std::string name, symbol;
    int64_t workgroups = 1;
    /// The workgroups run in this many steps, one after the other.
    int64_t steps = 1;
    KernelFn fn = nullptr;
    // A device kernel: its driver, descriptor and program bytes.
    ignrt_device_fn deviceFn = nullptr;
    void *deviceUser = nullptr;
    std::string deviceJson;
    const char *blob = nullptr;
    size_t blobBytes = 0, results = 1;
  };
  std::vector<Kernel> kernels;
  struct Arg {
    enum Kind { Input, Weight, Output, Arena } kind;
    size_t index;    // Input, Weight, Output
    uint64_t offset; // Arena
    std::vector<int64_t> dims;
    size_t bytes;
    ignrt_dtype dtype = IGNRT_F32;
  };
  struct Launch {
    /// Copy: args[0] into args[1] (`at` To/From: into/from the slice
    /// args[2] indexes). Branch: go on at `to` when args[0]'s element is
    /// zero. Jump: go on at `to`. Loop: the iteration args[0] (zeroed when
    /// not come back to from its Next) against `maxTrips`, the trip count
    /// args[2] and the condition args[1]; past the loop (`to`) when done.
    /// Next: counts the iteration, goes back to its Loop (`to`).
    /// Fail: ends the run with `message`; a Loop with a `message` (its
    /// node) fails the run when it stops before `maxTrips`.
    enum Kind { Kernel, Copy, Branch, Jump, Loop, Next, Fail } kind = Kernel;
    enum At { Whole, To, From } at = Whole;
    size_t kernel = 0;
    size_t to = 0;
    int64_t maxTrips = -1;
    std::string message;
    std::vector<Arg> args;
  };
  std::vector<Launch> launches;
  /// Per launch and argument: where it stays between device launches
  /// (Residency.h, ignrt_device_call::resident).
  std::vector<std::vector<unsigned char>> resident;
  uint64_t arenaBytes = 0;
  void *library = nullptr;
  int libraryFd = -1;

  ~ignrt_bundle() {
    if (library)
      dlclose(library);
    if (libraryFd >= 0)
      close(libraryFd);
    if (map != MAP_FAILED)
      munmap(map, size);
    if (fd >= 0)
      close(fd);
  }
};

/// Heap memory aligned for vector loads (the kernels assume 64 bytes).
struct AlignedBuffer {
  char *data = nullptr;
  size_t size = 0;
  explicit AlignedBuffer(size_t bytes) : size(bytes) {
    data = static_cast<char *>(
        std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
    if (data)
      std::memset(data, 0, size);
  }
  AlignedBuffer(AlignedBuffer &&o) noexcept : data(o.data), size(o.size) {
    o.data = nullptr;
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(AlignedBuffer &&o) noexcept {
    std::swap(data, o.data);
    std::swap(size, o.size);
    return *this;
  }
  ~AlignedBuffer() { std::free(data); }
};

struct ignrt_session {
  ignrt_bundle *bundle;
  std::vector<AlignedBuffer> inputs, outputs;
  /// Per output: its shape and bytes in the last run (a data-dependent
  /// output's are at most the bundle's; finishOutputs).
  std::vector<std::vector<int64_t>> outputDims;
  std::vector<size_t> outputBytes;
  AlignedBuffer arena{0};
  std::vector<bool> inputSet;
  std::vector<double> timings;
  /// Per launch: device statistics (cycles < 0: a host launch).
  std::vector<ignrt_device_stats> deviceStats;
  /// Per launch: the argument descriptors and the pointer array passed to
  /// the kernel; every buffer is fixed for the session's life.
  std::vector<std::vector<Descriptor>> descriptors;
  std::vector<std::vector<void *>> pointers;
  std::unique_ptr<ThreadPool> pool;
  /// The drivers holding launches of this run they deferred
  /// (ignrt_device_call::may_defer): the run ends with their finishing call.
  std::vector<std::pair<ignrt_device_fn, void *>> deferring;
};

namespace {

/// Where the bundle's sections lie in the mapped file.
struct Sections {
  const char *manifest = nullptr, *weights = nullptr, *artifact = nullptr;
  size_t manifestSize = 0, weightsSize = 0, artifactSize = 0;
  const char *device = nullptr;
  size_t deviceSize = 0;
};

/// Opens and maps the file and checks its header.
ignrt_status mapBundle(ignrt_bundle &b, const char *path, Header &h) {
  b.fd = open(path, O_RDONLY | O_CLOEXEC);
  if (b.fd < 0)
    return fail(IGNRT_ERROR_IO, std::string("cannot open '") + path +
                                    "': " + std::strerror(errno));
  struct stat st;
  if (fstat(b.fd, &st) != 0 || !S_ISREG(st.st_mode))
    return fail(IGNRT_ERROR_IO, std::string("'") + path + "' is not a file");
  b.size = size_t(st.st_size);
  if (b.size < sizeof(Header))
    return fail(IGNRT_ERROR_FORMAT,
                std::string("'") + path + "' is too small to be a bundle");
  b.map = mmap(nullptr, b.size, PROT_READ, MAP_PRIVATE, b.fd, 0);
  if (b.map == MAP_FAILED)
    return fail(IGNRT_ERROR_IO, std::string("cannot map '") + path + "'");
  const char *base = static_cast<const char *>(b.map);
  std::memcpy(&h, base, sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0)
    return fail(IGNRT_ERROR_FORMAT,
                std::string("'") + path + "' is not an ignc bundle");
  if (h.headerChecksum != fnv1a(&h, offsetof(Header, headerChecksum)))
    return fail(IGNRT_ERROR_CHECKSUM, "the bundle header is corrupted");
  if (h.version < kOldestFormatVersion || h.version > kFormatVersion)
    return fail(IGNRT_ERROR_FORMAT,
                "bundle format version " + std::to_string(h.version) +
                    " is not supported (this runtime reads versions " +
                    std::to_string(kOldestFormatVersion) + " to " +
                    std::to_string(kFormatVersion) + ")");
  if (h.fileSize != b.size)
    return fail(IGNRT_ERROR_FORMAT,
                "the bundle is truncated or has trailing bytes (" +
                    std::to_string(b.size) + " bytes, header says " +
                    std::to_string(h.fileSize) + ")");
  if (h.sectionTableOffset + uint64_t(h.sectionCount) * sizeof(SectionEntry) >
      b.size)
    return fail(IGNRT_ERROR_FORMAT, "the section table lies outside the file");
  return IGNRT_OK;
}

/// Finds the sections in the table, checking each one's bounds and checksum.
ignrt_status findSections(const ignrt_bundle &b, const Header &h, Sections &s) {
  const char *base = static_cast<const char *>(b.map);
  for (uint32_t i = 0; i < h.sectionCount; ++i) {
    SectionEntry e;
    std::memcpy(&e, base + h.sectionTableOffset + i * sizeof(SectionEntry),
                sizeof(e));
    if (e.offset > b.size || e.size > b.size - e.offset)
      return fail(IGNRT_ERROR_FORMAT,
                  "section " + std::to_string(i) + " lies outside the file");
    if (fnv1a(base + e.offset, e.size) != e.checksum)
      return fail(IGNRT_ERROR_CHECKSUM,
                  "section '" + std::string(e.name, strnlen(e.name, 32)) +
                      "' does not match its checksum (corrupted bundle)");
    const char *data = base + e.offset;
    switch (SectionKind(e.kind)) {
    case SectionKind::Manifest:
      s.manifest = data, s.manifestSize = e.size;
      break;
    case SectionKind::Weights:
      s.weights = data, s.weightsSize = e.size;
      break;
    case SectionKind::Artifact:
      s.artifact = data, s.artifactSize = e.size;
      break;
    case SectionKind::Device:
      s.device = data, s.deviceSize = e.size;
      break;
    }
  }
  return IGNRT_OK;
}

/// Checks that the bundle's target runs here: a driver for a device target,
/// and the host's architecture and CPU features.
ignrt_status checkTarget(const json &target, const std::string &triple,
                         const std::string &name, DeviceDriver &driver) {
  if (name != "host" && !findDevice(name, driver))
    return fail(IGNRT_ERROR_TARGET,
                "the bundle was built for target '" + name +
                    "' and no driver for it is registered "
                    "(ignrt_register_device; `ignc run` and `ignc bench` "
                    "register ignc's simulators)");
  if (triple.rfind(processArch(), 0) != 0)
    return fail(IGNRT_ERROR_TARGET, "the bundle was built for " + triple +
                                        ", this machine is " + processArch());
  for (const json &f : target.at("features")) {
    std::string feature = f.get<std::string>();
    if (feature.empty() || feature[0] != '+')
      continue;
    bool known;
    if (!hostHasFeature(feature.substr(1), known))
      return fail(IGNRT_ERROR_TARGET,
                  "the bundle needs CPU feature '" + feature.substr(1) +
                      "', which this CPU lacks (compiled for cpu '" +
                      target.at("cpu").get<std::string>() + "')");
    std::string error;
    if (feature == "+amx-tile" && !requestTileData(error))
      return fail(IGNRT_ERROR_TARGET,
                  "the bundle may use AMX tiles, which the operating system "
                  "did not grant this process (arch_prctl: " +
                      error + ")");
  }
  return IGNRT_OK;
}

/// Pairs each output whose size depends on the data with the i64 [rank]
/// output that holds its actual shape ("shape_of"), and lists the outputs a
/// caller sees.
ignrt_status linkOutputShapes(ignrt_bundle &b) {
  for (size_t i = 0; i < b.outputs.size(); ++i) {
    Tensor &shape = b.outputs[i];
    if (shape.shapeOf.empty()) {
      b.visible.push_back(i);
      continue;
    }
    auto of = std::find_if(b.outputs.begin(), b.outputs.end(), [&](auto &t) {
      return t.shapeOf.empty() && t.name == shape.shapeOf;
    });
    if (of == b.outputs.end() || of->shapeTensor >= 0 ||
        shape.dtype != IGNRT_I64 ||
        shape.dims != std::vector<int64_t>{int64_t(of->dims.size())})
      return fail(IGNRT_ERROR_FORMAT,
                  "manifest: output '" + shape.name +
                      "' is no i64 [rank] "
                      "shape of exactly one output named '" +
                      shape.shapeOf + "'");
    of->shapeTensor = int64_t(i);
  }
  return IGNRT_OK;
}

/// The manifest's inputs, outputs and weights (those point into the weights
/// section).
ignrt_status parseTensors(ignrt_bundle &b, const json &m, const Sections &s) {
  std::string error;
  for (const char *key : {"inputs", "outputs", "weights"})
    for (const json &t : m.at(key)) {
      Tensor tensor;
      if (!parseTensor(t, tensor, error))
        return fail(IGNRT_ERROR_FORMAT, "manifest: " + error);
      if (std::string(key) == "weights") {
        uint64_t offset = manifestCount(t.at("offset"));
        if (!s.weights || offset > s.weightsSize ||
            tensor.bytes > s.weightsSize - offset)
          return fail(IGNRT_ERROR_FORMAT,
                      "weight '" + tensor.name + "' lies outside the weights");
        b.weightData.push_back(s.weights + offset);
        b.weights.push_back(tensor);
      } else if (std::string(key) == "inputs") {
        b.inputs.push_back(tensor);
      } else {
        if (t.contains("shape_of"))
          tensor.shapeOf = t.at("shape_of").get<std::string>();
        b.outputs.push_back(tensor);
      }
    }
  return linkOutputShapes(b);
}

/// The manifest's kernels; a device kernel needs the target's driver and its
/// program inside the device section.
ignrt_status parseKernels(ignrt_bundle &b, const json &m,
                          const std::string &name, const DeviceDriver &driver,
                          const Sections &s) {
  for (const json &k : m.at("kernels")) {
    ignrt_bundle::Kernel kernel;
    kernel.name = k.at("name").get<std::string>();
    kernel.symbol = k.at("symbol").get<std::string>();
    kernel.workgroups = manifestInt(k.at("workgroups"));
    if (kernel.workgroups < 1)
      return fail(IGNRT_ERROR_FORMAT,
                  "kernel '" + kernel.name + "' has no workgroups");
    if (k.contains("steps")) {
      kernel.steps = manifestInt(k.at("steps"));
      if (kernel.steps < 1 || kernel.workgroups % kernel.steps != 0)
        return fail(IGNRT_ERROR_FORMAT,
                    "kernel '" + kernel.name + "' has " +
                        std::to_string(kernel.workgroups) +
                        " workgroups, not a multiple of its " +
                        std::to_string(kernel.steps) + " steps");
    }
    if (k.contains("device")) {
      const json &d = k.at("device");
      std::string dev = d.at("name").get<std::string>();
      if (dev != name || !driver.fn)
        return fail(IGNRT_ERROR_TARGET, "kernel '" + kernel.name +
                                            "' runs on device '" + dev +
                                            "', which has no driver");
      uint64_t off = manifestCount(d.at("blob_offset"));
      uint64_t bytes = manifestCount(d.at("blob_bytes"));
      if (!s.device || off > s.deviceSize || bytes > s.deviceSize - off)
        return fail(IGNRT_ERROR_FORMAT,
                    "kernel '" + kernel.name +
                        "': its program lies outside the device section");
      kernel.deviceFn = driver.fn;
      kernel.deviceUser = driver.user;
      kernel.deviceJson = d.dump();
      kernel.blob = s.device + off;
      kernel.blobBytes = bytes;
    }
    if (k.contains("results"))
      kernel.results = manifestCount(k.at("results"));
    b.kernels.push_back(kernel);
  }
  return IGNRT_OK;
}

/// One launch argument: a view of an input, weight, output or arena range,
/// which must lie inside its buffer.
ignrt_status parseArg(const ignrt_bundle &b, const json &a,
                      ignrt_bundle::Arg &arg) {
  std::string error;
  Tensor view;
  if (!parseTensor({{"name", "argument"},
                    {"dtype", a.at("dtype")},
                    {"shape", a.at("shape")}},
                   view, error))
    return fail(IGNRT_ERROR_FORMAT, "manifest: launch " + error);
  std::string argKind = a.at("kind").get<std::string>();
  arg = ignrt_bundle::Arg{
      ignrt_bundle::Arg::Arena, 0, 0, view.dims, view.bytes, view.dtype};
  // The bytes the argument may touch must lie inside its buffer.
  uint64_t limit = 0;
  if (argKind == "arena") {
    arg.offset = manifestCount(a.at("offset"));
    limit = arg.offset > b.arenaBytes ? 0 : b.arenaBytes - arg.offset;
  } else {
    arg.index = manifestCount(a.at("index"));
    const std::vector<Tensor> *table = argKind == "input"    ? &b.inputs
                                       : argKind == "weight" ? &b.weights
                                       : argKind == "output" ? &b.outputs
                                                             : nullptr;
    if (!table || arg.index >= table->size())
      return fail(IGNRT_ERROR_FORMAT, "a launch argument is invalid");
    arg.kind = argKind == "input"    ? ignrt_bundle::Arg::Input
               : argKind == "weight" ? ignrt_bundle::Arg::Weight
                                     : ignrt_bundle::Arg::Output;
    limit = (*table)[arg.index].bytes;
  }
  if (arg.bytes > limit)
    return fail(IGNRT_ERROR_FORMAT,
                "a launch argument lies outside its buffer");
  return IGNRT_OK;
}

/// A launch's kind and, per kind, its kernel or the launch it goes on at.
ignrt_status parseLaunchKind(const ignrt_bundle &b, const json &l, size_t index,
                             size_t count, ignrt_bundle::Launch &launch) {
  using Launch = ignrt_bundle::Launch;
  std::string kind = l.at("kind").get<std::string>();
  const std::pair<const char *, Launch::Kind> kinds[] = {
      {"kernel", Launch::Kernel}, {"copy", Launch::Copy},
      {"branch", Launch::Branch}, {"jump", Launch::Jump},
      {"loop", Launch::Loop},     {"next", Launch::Next},
      {"fail", Launch::Fail}};
  auto it = std::find_if(std::begin(kinds), std::end(kinds),
                         [&](const auto &k) { return kind == k.first; });
  if (it == std::end(kinds))
    return fail(IGNRT_ERROR_FORMAT, "unknown launch kind '" + kind + "'");
  launch.kind = it->second;
  if (launch.kind == Launch::Kernel) {
    launch.kernel = manifestCount(l.at("kernel"));
    if (launch.kernel >= b.kernels.size())
      return fail(IGNRT_ERROR_FORMAT, "a launch names a missing kernel");
  }
  if (launch.kind == Launch::Fail) {
    launch.message = l.at("message").get<std::string>();
    return IGNRT_OK;
  }
  if (launch.kind == Launch::Kernel || launch.kind == Launch::Copy) {
    std::string at = l.value("at", std::string());
    if (launch.kind == Launch::Kernel
            ? !at.empty()
            : !at.empty() && at != "to" && at != "from")
      return fail(IGNRT_ERROR_FORMAT,
                  "launch " + std::to_string(index) + " has an invalid 'at'");
    launch.at = at == "to"     ? Launch::To
                : at == "from" ? Launch::From
                               : Launch::Whole;
    return IGNRT_OK;
  }
  // Only a Next goes back, to its own Loop (checkLoop): anything else goes
  // forward, so a run ends unless a loop's condition never stops it.
  launch.to = manifestCount(l.at("to"));
  if (launch.kind != Launch::Next && (launch.to <= index || launch.to > count))
    return fail(IGNRT_ERROR_FORMAT, "launch " + std::to_string(index) + " (" +
                                        kind +
                                        ") must go on at a later launch, not " +
                                        std::to_string(launch.to));
  if (launch.kind == Launch::Loop && l.contains("max_trips"))
    launch.maxTrips = manifestInt(l.at("max_trips"));
  if (launch.kind == Launch::Loop && l.contains("must_run_all")) {
    launch.message = l.at("must_run_all").get<std::string>();
    if (launch.maxTrips < 0)
      return fail(IGNRT_ERROR_FORMAT, "launch " + std::to_string(index) +
                                          ": must_run_all needs max_trips");
  }
  return IGNRT_OK;
}

/// Whether `a` and `b` view the same bytes.
bool sameBuffer(const ignrt_bundle::Arg &a, const ignrt_bundle::Arg &b) {
  return a.kind == b.kind && a.index == b.index && a.offset == b.offset;
}

/// The arguments of a control launch: a copy's sizes, a branch's condition,
/// a loop's counter (one i64), condition and trip count, a next's loop.
ignrt_status checkControl(const ignrt_bundle &b, size_t index,
                          const ignrt_bundle::Launch &launch) {
  using Launch = ignrt_bundle::Launch;
  const auto &a = launch.args;
  auto bad = [&](const std::string &what) {
    return fail(IGNRT_ERROR_FORMAT,
                "launch " + std::to_string(index) + ": " + what);
  };
  auto isCounter = [](const ignrt_bundle::Arg &c) {
    return c.dtype == IGNRT_I64 && c.bytes == 8;
  };
  auto isScalar = [](const ignrt_bundle::Arg &c) {
    return c.bytes > 0 && c.bytes <= 8;
  };
  switch (launch.kind) {
  case Launch::Kernel:
    return IGNRT_OK;
  case Launch::Copy:
    if (launch.at == Launch::Whole)
      return a.size() == 2 && a[0].bytes == a[1].bytes
                 ? IGNRT_OK
                 : bad("a copy launch is malformed");
    if (a.size() != 3 || !isCounter(a[2]))
      return bad("a slice copy needs a source, a destination and an index");
    if (launch.at == Launch::To ? a[0].bytes == 0 || a[1].bytes % a[0].bytes
                                : a[1].bytes == 0 || a[0].bytes % a[1].bytes)
      return bad("a slice copy's sizes do not divide");
    return IGNRT_OK;
  case Launch::Branch:
    return a.size() == 1 && isScalar(a[0])
               ? IGNRT_OK
               : bad("a branch launch must read one condition element");
  case Launch::Jump:
  case Launch::Fail:
    return a.empty() ? IGNRT_OK
                     : bad("a jump or fail launch takes no arguments");
  case Launch::Loop:
    if ((a.size() != 2 && a.size() != 3) || !isCounter(a[0]) ||
        !isScalar(a[1]) || (a.size() == 3 && !isCounter(a[2])))
      return bad("a loop launch needs an i64 counter, a condition and "
                 "maybe an i64 trip count");
    return IGNRT_OK;
  case Launch::Next: {
    const Launch *loop = launch.to < index ? &b.launches[launch.to] : nullptr;
    if (a.size() != 1 || !loop || loop->kind != Launch::Loop ||
        loop->to != index + 1 || !sameBuffer(a[0], loop->args[0]))
      return bad("a next launch must end the loop it goes back to");
    return IGNRT_OK;
  }
  }
  return IGNRT_OK;
}

/// The manifest's launches, in order.
ignrt_status parseLaunches(ignrt_bundle &b, const json &m) {
  const json &launches = m.at("launches");
  for (size_t index = 0; index < launches.size(); ++index) {
    const json &l = launches.at(index);
    ignrt_bundle::Launch launch;
    if (ignrt_status st = parseLaunchKind(b, l, index, launches.size(), launch);
        st != IGNRT_OK)
      return st;
    for (const json &a : l.at("args")) {
      ignrt_bundle::Arg arg;
      if (ignrt_status st = parseArg(b, a, arg); st != IGNRT_OK)
        return st;
      launch.args.push_back(std::move(arg));
    }
    if (ignrt_status st = checkControl(b, index, launch); st != IGNRT_OK)
      return st;
    b.launches.push_back(std::move(launch));
  }
  return IGNRT_OK;
}

/// Loads the kernel library from the artifact section and resolves the host
/// kernels' symbols; nothing to do when every kernel runs on the device.
ignrt_status loadKernels(ignrt_bundle &b, const Sections &s) {
  bool hostKernels = false;
  for (const auto &k : b.kernels)
    hostKernels |= !k.deviceFn;
  if (!hostKernels)
    return IGNRT_OK; // every kernel runs on the device
  if (!s.artifact)
    return fail(IGNRT_ERROR_FORMAT, "the bundle has no kernel artifact");
  // dlopen needs a file: an anonymous memory file holds the shared object.
  b.libraryFd = memfd_create("ignc-kernels", MFD_CLOEXEC);
  if (b.libraryFd < 0 ||
      write(b.libraryFd, s.artifact, s.artifactSize) != ssize_t(s.artifactSize))
    return fail(IGNRT_ERROR_RUNTIME, "cannot stage the kernel library");
  std::string fdPath = "/proc/self/fd/" + std::to_string(b.libraryFd);
  b.library = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!b.library)
    return fail(IGNRT_ERROR_RUNTIME,
                std::string("cannot load the kernels: ") + dlerror());
  // Kernel temporaries from the thread's cache, not fresh pages per call
  // (an artifact from before the table allocates with malloc; so does
  // every artifact with IGNRT_MALLOC_TEMPORARIES set, to compare).
  struct Allocator {
    void *(*alloc)(size_t);
    void (*free)(void *);
  };
  const char *malloced = std::getenv("IGNRT_MALLOC_TEMPORARIES");
  bool cached = !malloced || !*malloced || std::string(malloced) == "0";
  if (auto *allocator = static_cast<Allocator *>(
          dlsym(b.library, ign::bundle::kKernelAllocatorSymbol));
      allocator && cached)
    *allocator = {ignrt_detail::scratchAlloc, ignrt_detail::scratchFree};
  for (auto &k : b.kernels) {
    if (k.deviceFn)
      continue;
    k.fn = reinterpret_cast<KernelFn>(dlsym(b.library, k.symbol.c_str()));
    if (!k.fn)
      return fail(IGNRT_ERROR_FORMAT, "kernel symbol '" + k.symbol +
                                          "' is missing from the artifact");
  }
  return IGNRT_OK;
}

/// Which intermediates stay on their device between its launches; none
/// with IGNRT_NO_RESIDENCY set (every one through the host, as before the
/// plan: to compare, or to rule it out).
void planResidency(ignrt_bundle &b) {
  std::vector<ignrt_detail::ResidencyLaunch> plan;
  const char *off = std::getenv("IGNRT_NO_RESIDENCY");
  bool disabled = off && *off && std::string(off) != "0";
  std::vector<std::pair<ignrt_device_fn, void *>> drivers;
  for (const ignrt_bundle::Launch &l : b.launches) {
    ignrt_detail::ResidencyLaunch &r = plan.emplace_back();
    r.kernel = l.kind == ignrt_bundle::Launch::Kernel && !disabled;
    if (!r.kernel)
      continue;
    const ignrt_bundle::Kernel &k = b.kernels[l.kernel];
    if (k.deviceFn) {
      std::pair<ignrt_device_fn, void *> d{k.deviceFn, k.deviceUser};
      auto it = std::find(drivers.begin(), drivers.end(), d);
      r.driver = int(it - drivers.begin());
      if (it == drivers.end())
        drivers.push_back(d);
    }
    r.inputs = l.args.size() - std::min(l.args.size(), k.results);
    for (const ignrt_bundle::Arg &a : l.args)
      r.args.push_back({a.kind == ignrt_bundle::Arg::Arena, a.offset, a.bytes});
  }
  b.resident = ignrt_detail::planResidency(plan);
}

ignrt_status loadBundle(ignrt_bundle &b, const char *path) {
  Header h;
  if (ignrt_status st = mapBundle(b, path, h); st != IGNRT_OK)
    return st;
  Sections s;
  if (ignrt_status st = findSections(b, h, s); st != IGNRT_OK)
    return st;
  if (!s.manifest)
    return fail(IGNRT_ERROR_FORMAT, "the bundle has no manifest");
  b.manifestText.assign(s.manifest, s.manifestSize);
  try {
    b.manifest = json::parse(b.manifestText);
    const json &m = b.manifest;
    const json &target = m.at("target");
    std::string triple = target.at("triple").get<std::string>();
    std::string name = target.at("name").get<std::string>();
    DeviceDriver driver;
    if (ignrt_status st = checkTarget(target, triple, name, driver);
        st != IGNRT_OK)
      return st;
    b.weightsSection = s.weights;
    b.weightsSectionBytes = s.weights ? s.weightsSize : 0;
    if (ignrt_status st = parseTensors(b, m, s); st != IGNRT_OK)
      return st;
    b.arenaBytes = manifestCount(m.at("memory").at("arena_bytes"));
    if (ignrt_status st = parseKernels(b, m, name, driver, s); st != IGNRT_OK)
      return st;
    if (ignrt_status st = parseLaunches(b, m); st != IGNRT_OK)
      return st;
  } catch (const std::exception &e) {
    return fail(IGNRT_ERROR_FORMAT, std::string("bad manifest: ") + e.what());
  }
  if (ignrt_status st = loadKernels(b, s); st != IGNRT_OK)
    return st;
  planResidency(b);
  return IGNRT_OK;
}

void fillInfo(const Tensor &t, ignrt_tensor_info *info) {
  info->name = t.name.c_str();
  info->dtype = t.dtype;
  info->rank = t.dims.size();
  for (size_t d = 0; d < t.dims.size(); ++d)
    info->dims[d] = t.dims[d];
  info->bytes = t.bytes;
}

} // namespace

namespace {

/// The data pointer of launch argument `arg`.
char *argData(void *arg) {
  char *data;
  std::memcpy(&data, arg, sizeof(char *));
  return data;
}

/// A one-element condition's truth (any nonzero byte).
bool truth(void *arg, size_t bytes) {
  uint64_t bits = 0;
  std::memcpy(&bits, argData(arg), bytes);
  return bits != 0;
}

/// Runs a launch that is not a kernel: copies, branches and loops; sets
/// `next` where control goes elsewhere.
ignrt_status runControl(const ignrt_bundle::Launch &launch, void **args,
                        size_t &next, bool &resumed) {
  using Launch = ignrt_bundle::Launch;
  const auto &a = launch.args;
  switch (launch.kind) {
  case Launch::Copy: {
    if (launch.at == Launch::Whole) {
      std::memmove(argData(args[1]), argData(args[0]), a[0].bytes);
      return IGNRT_OK;
    }
    int64_t i;
    std::memcpy(&i, argData(args[2]), sizeof i);
    bool into = launch.at == Launch::To;
    size_t slice = into ? a[0].bytes : a[1].bytes;
    size_t whole = into ? a[1].bytes : a[0].bytes;
    if (i < 0 || uint64_t(i) >= whole / slice)
      return fail(IGNRT_ERROR_RUNTIME,
                  "a loop's iteration " + std::to_string(i) +
                      " lies outside its scan tensor of " +
                      std::to_string(whole / slice) + " slices");
    char *to = argData(args[1]) + (into ? size_t(i) * slice : 0);
    char *from = argData(args[0]) + (into ? 0 : size_t(i) * slice);
    std::memmove(to, from, slice);
    return IGNRT_OK;
  }
  case Launch::Branch:
    if (!truth(args[0], a[0].bytes))
      next = launch.to;
    return IGNRT_OK;
  case Launch::Jump:
    next = launch.to;
    return IGNRT_OK;
  case Launch::Loop: {
    int64_t i = 0;
    if (resumed)
      std::memcpy(&i, argData(args[0]), sizeof i);
    else
      std::memcpy(argData(args[0]), &i, sizeof i);
    resumed = false;
    int64_t trips = INT64_MAX;
    if (a.size() == 3)
      std::memcpy(&trips, argData(args[2]), sizeof trips);
    if (launch.maxTrips >= 0)
      trips = std::min(trips, launch.maxTrips);
    if (i < trips && truth(args[1], a[1].bytes))
      return IGNRT_OK;
    next = launch.to;
    if (!launch.message.empty() && i < launch.maxTrips)
      return fail(IGNRT_ERROR_RUNTIME,
                  launch.message + " stopped after " + std::to_string(i) +
                      " of its " + std::to_string(launch.maxTrips) +
                      " iterations: its scan outputs are compiled for all "
                      "of them");
    return IGNRT_OK;
  }
  case Launch::Next: {
    int64_t i;
    std::memcpy(&i, argData(args[0]), sizeof i);
    ++i;
    std::memcpy(argData(args[0]), &i, sizeof i);
    next = launch.to;
    resumed = true;
    return IGNRT_OK;
  }
  case Launch::Fail:
    return fail(IGNRT_ERROR_RUNTIME, launch.message);
  case Launch::Kernel:
    break;
  }
  return IGNRT_OK;
}

} // namespace

extern "C" {

const char *ignrt_last_error(void) { return lastError.c_str(); }

size_t ignrt_dtype_size(ignrt_dtype dtype) {
  for (auto &d : kDtypes)
    if (d.dtype == dtype)
      return d.size;
  return 0;
}

const char *ignrt_dtype_name(ignrt_dtype dtype) {
  for (auto &d : kDtypes)
    if (d.dtype == dtype)
      return d.name;
  return "unknown";
}

ignrt_status ignrt_bundle_open(const char *path, ignrt_bundle **bundle) {
  if (!path || !bundle)
    return fail(IGNRT_ERROR_ARGUMENT, "null argument");
  *bundle = nullptr;
  auto b = std::make_unique<ignrt_bundle>();
  ignrt_status s = loadBundle(*b, path);
  if (s != IGNRT_OK)
    return s;
  *bundle = b.release();
  lastError.clear();
  return IGNRT_OK;
}

void ignrt_bundle_close(ignrt_bundle *bundle) { delete bundle; }

const char *ignrt_bundle_manifest(const ignrt_bundle *bundle) {
  return bundle ? bundle->manifestText.c_str() : "";
}

ignrt_status ignrt_bundle_weights(const ignrt_bundle *b, const void **data,
                                  size_t *bytes) {
  if (!b || !data || !bytes)
    return fail(IGNRT_ERROR_ARGUMENT, "ignrt_bundle_weights: null argument");
  *data = b->weightsSection;
  *bytes = b->weightsSectionBytes;
  return IGNRT_OK;
}

size_t ignrt_bundle_num_inputs(const ignrt_bundle *b) {
  return b ? b->inputs.size() : 0;
}
size_t ignrt_bundle_num_outputs(const ignrt_bundle *b) {
  return b ? b->visible.size() : 0;
}

ignrt_status ignrt_bundle_input(const ignrt_bundle *b, size_t index,
                                ignrt_tensor_info *info) {
  if (!b || !info || index >= b->inputs.size())
    return fail(IGNRT_ERROR_ARGUMENT, "input index out of range");
  fillInfo(b->inputs[index], info);
  return IGNRT_OK;
}

ignrt_status ignrt_bundle_output(const ignrt_bundle *b, size_t index,
                                 ignrt_tensor_info *info) {
  if (!b || !info || index >= b->visible.size())
    return fail(IGNRT_ERROR_ARGUMENT, "output index out of range");
  fillInfo(b->outputs[b->visible[index]], info);
  return IGNRT_OK;
}

ignrt_status ignrt_session_create(ignrt_bundle *bundle, int threads,
                                  ignrt_session **session) {
  if (!bundle || !session)
    return fail(IGNRT_ERROR_ARGUMENT, "null argument");
  if (threads <= 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  auto s = std::make_unique<ignrt_session>();
  s->bundle = bundle;
  for (const Tensor &t : bundle->inputs)
    s->inputs.emplace_back(t.bytes);
  for (const Tensor &t : bundle->outputs) {
    s->outputs.emplace_back(t.bytes);
    s->outputDims.push_back(t.dims);
    s->outputBytes.push_back(t.bytes);
  }
  s->arena = AlignedBuffer(bundle->arenaBytes);
  bool allocated = s->arena.data != nullptr;
  for (auto *list : {&s->inputs, &s->outputs})
    for (const AlignedBuffer &buf : *list)
      allocated &= buf.data != nullptr;
  if (!allocated)
    return fail(IGNRT_ERROR_RUNTIME,
                "cannot allocate the session's buffers (arena of " +
                    std::to_string(bundle->arenaBytes) + " bytes)");
  s->inputSet.assign(bundle->inputs.size(), false);
  s->timings.assign(bundle->launches.size(), 0.0);
  s->deviceStats.assign(bundle->launches.size(), ignrt_device_stats{-1, 0, 0});
  for (const auto &launch : bundle->launches) {
    std::vector<Descriptor> descriptors;
    for (const auto &arg : launch.args) {
      char *data = nullptr;
      switch (arg.kind) {
      case ignrt_bundle::Arg::Input:
        data = s->inputs[arg.index].data;
        break;
      case ignrt_bundle::Arg::Weight:
        data = const_cast<char *>(bundle->weightData[arg.index]);
        break;
      case ignrt_bundle::Arg::Output:
        data = s->outputs[arg.index].data;
        break;
      case ignrt_bundle::Arg::Arena:
        data = s->arena.data + arg.offset;
        break;
      }
      descriptors.emplace_back(data, arg.dims);
    }
    std::vector<void *> pointers;
    for (auto &d : descriptors)
      pointers.push_back(d.words.data());
    s->descriptors.push_back(std::move(descriptors));
    s->pointers.push_back(std::move(pointers));
  }
  try {
    s->pool = std::make_unique<ThreadPool>(std::min(threads, kMaxThreads));
  } catch (const std::system_error &e) {
    return fail(IGNRT_ERROR_RUNTIME,
                std::string("cannot start worker threads: ") + e.what());
  }
  *session = s.release();
  return IGNRT_OK;
}

void ignrt_session_destroy(ignrt_session *session) { delete session; }

ignrt_status ignrt_session_set_input(ignrt_session *s, const char *name,
                                     ignrt_dtype dtype, const int64_t *dims,
                                     size_t rank, const void *data,
                                     size_t bytes) {
  if (!s || !name || (!data && bytes))
    return fail(IGNRT_ERROR_ARGUMENT, "null argument");
  const auto &inputs = s->bundle->inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    if (t.name != name)
      continue;
    if (dtype != t.dtype)
      return fail(IGNRT_ERROR_ARGUMENT, "input '" + t.name + "' is " +
                                            ignrt_dtype_name(t.dtype) +
                                            ", got " + ignrt_dtype_name(dtype));
    std::vector<int64_t> given(dims, dims + rank);
    if (given != t.dims) {
      auto str = [](const std::vector<int64_t> &v) {
        std::string s = "[";
        for (size_t k = 0; k < v.size(); ++k)
          s += (k ? "x" : "") + std::to_string(v[k]);
        return s + "]";
      };
      return fail(IGNRT_ERROR_ARGUMENT, "input '" + t.name + "' has shape " +
                                            str(t.dims) + ", got " +
                                            str(given));
    }
    if (bytes != t.bytes)
      return fail(IGNRT_ERROR_ARGUMENT,
                  "input '" + t.name + "' needs " + std::to_string(t.bytes) +
                      " bytes, got " + std::to_string(bytes));
    std::memcpy(s->inputs[i].data, data, bytes);
    s->inputSet[i] = true;
    return IGNRT_OK;
  }
  std::string names;
  for (const Tensor &t : inputs)
    names += (names.empty() ? "'" : ", '") + t.name + "'";
  return fail(IGNRT_ERROR_ARGUMENT, std::string("the bundle has no input '") +
                                        name + "'; inputs are: " + names);
}

ignrt_status ignrt_session_fill_outputs(ignrt_session *s, int byte) {
  if (!s)
    return fail(IGNRT_ERROR_ARGUMENT, "null session");
  if (byte < 0 || byte > 255)
    return fail(IGNRT_ERROR_ARGUMENT, "fill byte out of range");
  for (size_t i = 0; i < s->outputs.size(); ++i)
    std::memset(s->outputs[i].data, byte, s->bundle->outputs[i].bytes);
  return IGNRT_OK;
}

namespace {
/// Moves the elements of the row-major sub-box `actual` of a tensor of
/// `bound` dims to the front, row-major for `actual`. No element moves to a
/// higher offset, so one forward pass works in place.
void compactInPlace(char *data, const std::vector<int64_t> &bound,
                    const std::vector<int64_t> &actual, size_t elem) {
  size_t rank = bound.size();
  if (rank == 0 || std::find(actual.begin(), actual.end(), 0) != actual.end())
    return;
  std::vector<int64_t> stride(rank, 1), index(rank, 0);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * bound[d];
  size_t run = size_t(actual[rank - 1]) * elem;
  for (char *to = data;; to += run) {
    int64_t from = 0;
    for (size_t d = 0; d + 1 < rank; ++d)
      from += index[d] * stride[d];
    std::memmove(to, data + size_t(from) * elem, run);
    size_t d = rank - 1;
    while (d > 0 && ++index[d - 1] == actual[d - 1])
      index[--d] = 0;
    if (d == 0)
      return;
  }
}

/// After a run: reads each data-dependent output's actual shape from its
/// shape output, checks it against the bound and compacts the data.
ignrt_status finishOutputs(ignrt_session *s) {
  const ignrt_bundle &b = *s->bundle;
  for (size_t i = 0; i < b.outputs.size(); ++i) {
    const Tensor &t = b.outputs[i];
    if (t.shapeTensor < 0)
      continue;
    const auto *dims = reinterpret_cast<const int64_t *>(
        s->outputs[size_t(t.shapeTensor)].data);
    std::vector<int64_t> actual(dims, dims + t.dims.size());
    size_t count = 1;
    for (size_t d = 0; d < actual.size(); ++d) {
      if (actual[d] < 0 || actual[d] > t.dims[d]) {
        std::string text;
        for (size_t k = 0; k < actual.size(); ++k)
          text += (k ? "x" : "") + std::to_string(actual[k]);
        return fail(IGNRT_ERROR_RUNTIME, "output '" + t.name +
                                             "': the kernels report shape [" +
                                             text + "], outside its bound");
      }
      count *= size_t(actual[d]);
    }
    size_t elem = ignrt_dtype_size(t.dtype);
    compactInPlace(static_cast<char *>(s->outputs[i].data), t.dims, actual,
                   elem);
    s->outputDims[i] = std::move(actual);
    s->outputBytes[i] = count * elem;
  }
  return IGNRT_OK;
}

/// One launch of a device kernel through its driver.
ignrt_status runDeviceLaunch(ignrt_session *s, size_t l,
                             const ignrt_bundle::Kernel &kernel) {
  const auto &launch = s->bundle->launches[l];
  std::vector<void *> data;
  std::vector<ignrt_tensor_info> infos(launch.args.size());
  std::vector<unsigned char> weights(launch.args.size(), 0);
  for (size_t i = 0; i < launch.args.size(); ++i) {
    const auto &arg = launch.args[i];
    weights[i] = arg.kind == ignrt_bundle::Arg::Weight;
    void *p;
    std::memcpy(&p, s->pointers[l][i], sizeof(void *)); // the allocated word
    data.push_back(p);
    ignrt_tensor_info &info = infos[i];
    info.name = "argument";
    info.dtype = arg.dtype;
    info.rank = arg.dims.size();
    for (size_t d = 0; d < arg.dims.size() && d < IGNRT_MAX_RANK; ++d)
      info.dims[d] = arg.dims[d];
    info.bytes = arg.bytes;
  }
  const std::vector<unsigned char> &resident = s->bundle->resident[l];
  // Every output stays on the device: nothing of it is needed on the host
  // before this driver's next launch, which reads it.
  bool mayDefer = kernel.results > 0 && kernel.results <= resident.size();
  for (size_t i = resident.size() - kernel.results;
       mayDefer && i < resident.size(); ++i)
    mayDefer = resident[i] != IGNRT_RESIDENT_HOST;
  int deferred = 0;
  ignrt_device_call call{kernel.name.c_str(),
                         kernel.deviceJson.c_str(),
                         kernel.blob,
                         kernel.blobBytes,
                         launch.args.size(),
                         kernel.results,
                         data.data(),
                         infos.data(),
                         weights.data(),
                         s->bundle->weightsEpoch,
                         resident.data(),
                         mayDefer ? 1 : 0,
                         &deferred};
  // A deferred launch's stats are filled later: they live in the session.
  ignrt_device_stats &stats = s->deviceStats[l];
  stats = ignrt_device_stats{0, 0, 0};
  char error[1024] = {0};
  std::pair<ignrt_device_fn, void *> driver{kernel.deviceFn, kernel.deviceUser};
  auto held = std::find(s->deferring.begin(), s->deferring.end(), driver);
  if (kernel.deviceFn(kernel.deviceUser, &call, &stats, error, sizeof error))
    return fail(IGNRT_ERROR_RUNTIME,
                "device kernel '" + kernel.name + "' failed: " +
                    std::string(error, strnlen(error, sizeof error)));
  // A launch the driver ran has run everything it deferred before it.
  if (deferred && held == s->deferring.end())
    s->deferring.push_back(driver);
  else if (!deferred && held != s->deferring.end())
    s->deferring.erase(held);
  return IGNRT_OK;
}

/// Ends the run for every driver still holding deferred launches (a run
/// that stopped early): the first failure (reported when \p report), or
/// IGNRT_OK.
ignrt_status finishDeferred(ignrt_session *s, bool report) {
  ignrt_status status = IGNRT_OK;
  for (auto [fn, user] : s->deferring) {
    ignrt_device_call call{};
    ignrt_device_stats stats{0, 0, 0};
    char error[1024] = {0};
    if (fn(user, &call, &stats, error, sizeof error) && report &&
        status == IGNRT_OK)
      status = fail(IGNRT_ERROR_RUNTIME,
                    "finishing deferred device launches failed: " +
                        std::string(error, strnlen(error, sizeof error)));
  }
  s->deferring.clear();
  return status;
}
} // namespace

ignrt_status ignrt_register_device(const char *target, ignrt_device_fn fn,
                                   void *user) {
  if (!target || !*target || std::string(target) == "host")
    return fail(IGNRT_ERROR_ARGUMENT, "a device needs a name other than host");
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (fn)
    deviceDrivers()[target] = DeviceDriver{fn, user};
  else
    deviceDrivers().erase(target);
  return IGNRT_OK;
}

ignrt_status ignrt_session_kernel_device(const ignrt_session *s, size_t index,
                                         ignrt_device_stats *stats) {
  if (!s || !stats || index >= s->deviceStats.size() ||
      s->deviceStats[index].cycles < 0)
    return fail(IGNRT_ERROR_ARGUMENT, "no device launch at this index");
  *stats = s->deviceStats[index];
  return IGNRT_OK;
}

/// Runs a host kernel's workgroups on the pool: all at once, or step after
/// step (each step's workgroups at once; one thread runs them in order).
static void runHostKernel(ThreadPool &pool, const ignrt_bundle::Kernel &kernel,
                          void **args) {
  if (kernel.workgroups == 1 || pool.size() == 1) {
    kernel.fn(args, 0, kernel.workgroups);
    return;
  }
  int64_t perStep = kernel.workgroups / kernel.steps;
  for (int64_t first = 0; first < kernel.workgroups; first += perStep)
    pool.parallelFor(perStep, [&](int64_t begin, int64_t end) {
      kernel.fn(args, first + begin, first + end);
    });
}

static ignrt_status runLaunches(ignrt_session *s);

ignrt_status ignrt_session_run(ignrt_session *s) {
  if (!s)
    return fail(IGNRT_ERROR_ARGUMENT, "null session");
  ignrt_status st = runLaunches(s);
  // A stopped run leaves its deferred launches' stats unread: they go.
  if (!s->deferring.empty()) {
    ignrt_status finished = finishDeferred(s, /*report=*/st == IGNRT_OK);
    if (st == IGNRT_OK)
      st = finished;
  }
  return st == IGNRT_OK ? finishOutputs(s) : st;
}

/// The run's launches in order: control flow, device and host kernels.
static ignrt_status runLaunches(ignrt_session *s) {
  ignrt_bundle &b = *s->bundle;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    if (!s->inputSet[i])
      return fail(IGNRT_ERROR_ARGUMENT,
                  "input '" + b.inputs[i].name + "' was not set");
  // A launch's time is summed over a run's loop iterations; launches a
  // branch skips keep none from an earlier run.
  std::fill(s->timings.begin(), s->timings.end(), 0.0);
  bool resumed = false; // the next Loop launch was come back to by its Next
  for (size_t l = 0, next = 1; l < b.launches.size(); l = next, ++next) {
    const auto &launch = b.launches[l];
    void **args = s->pointers[l].data();
    auto start = std::chrono::steady_clock::now();
    if (launch.kind != ignrt_bundle::Launch::Kernel) {
      if (ignrt_status st = runControl(launch, args, next, resumed);
          st != IGNRT_OK)
        return st;
    } else if (const auto &kernel = b.kernels[launch.kernel]; kernel.deviceFn) {
      if (ignrt_status st = runDeviceLaunch(s, l, kernel); st != IGNRT_OK)
        return st;
    } else {
      runHostKernel(*s->pool, kernel, args);
    }
    auto end = std::chrono::steady_clock::now();
    s->timings[l] +=
        std::chrono::duration<double, std::nano>(end - start).count();
  }
  return IGNRT_OK;
}

ignrt_status ignrt_session_output(ignrt_session *s, const char *name,
                                  const void **data, size_t *bytes) {
  if (!s || !name || !data || !bytes)
    return fail(IGNRT_ERROR_ARGUMENT, "null argument");
  for (size_t i : s->bundle->visible)
    if (s->bundle->outputs[i].name == name) {
      *data = s->outputs[i].data;
      *bytes = s->outputBytes[i];
      return IGNRT_OK;
    }
  return fail(IGNRT_ERROR_ARGUMENT,
              std::string("the bundle has no output '") + name + "'");
}

ignrt_status ignrt_session_output_at(ignrt_session *s, size_t index,
                                     ignrt_tensor_info *info,
                                     const void **data) {
  if (!s || !info || !data)
    return fail(IGNRT_ERROR_ARGUMENT, "null argument");
  if (index >= s->bundle->visible.size())
    return fail(IGNRT_ERROR_ARGUMENT, "output index out of range");
  size_t i = s->bundle->visible[index];
  fillInfo(s->bundle->outputs[i], info);
  info->rank = s->outputDims[i].size();
  std::copy(s->outputDims[i].begin(), s->outputDims[i].end(), info->dims);
  info->bytes = s->outputBytes[i];
  *data = s->outputs[i].data;
  return IGNRT_OK;
}

size_t ignrt_session_num_kernels(const ignrt_session *s) {
  return s ? s->timings.size() : 0;
}

ignrt_status ignrt_session_kernel_timing(const ignrt_session *s, size_t index,
                                         const char **name,
                                         double *nanoseconds) {
  if (!s || index >= s->timings.size() || !name || !nanoseconds)
    return fail(IGNRT_ERROR_ARGUMENT, "kernel index out of range");
  const auto &launch = s->bundle->launches[index];
  static const char *const kindNames[] = {"kernel", "copy", "branch", "jump",
                                          "loop",   "next", "fail"};
  *name = launch.kind == ignrt_bundle::Launch::Kernel
              ? s->bundle->kernels[launch.kernel].name.c_str()
              : kindNames[launch.kind];
  *nanoseconds = s->timings[index];
  return IGNRT_OK;
}

} // extern "C"
