//===- ScratchCache.h - kernel temporaries kept between calls ---*- C++ -*-===//
//
// A host kernel allocates its temporaries (an attention kernel's scores,
// packed panels, padded copies) once per call and frees them when it
// returns. Through malloc, buffers above glibc's mmap threshold, and heap
// tops above its trim threshold, went back to the operating system on every
// free and came back as fresh pages on the next call: DINOv2-S/14's
// attention kernel, 1.5 MB of temporaries per call, ran 89,000 page faults
// per 20 runs of the model (5,000 with glibc's thresholds raised) and the
// model 15% slower. The kernel library calls its allocator through a table
// the runtime fills after loading it (`ign_kernel_allocator`, HostCompiler's
// defineKernelAllocator); libignrt's allocator keeps each thread's freed
// blocks, up to kScratchCacheBytes, and hands the most recently freed one
// that fits (at most twice the size asked) out again. Plain C++ (libignrt
// links no LLVM); the unit tests call it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_RUNTIME_SCRATCHCACHE_H
#define IGN_LIB_RUNTIME_SCRATCHCACHE_H

#include <cstddef>

namespace ignrt_detail {

/// The freed bytes one thread keeps at most; past them a free goes back to
/// malloc's free (the oldest kept block first).
constexpr size_t kScratchCacheBytes = size_t(64) << 20;

/// A block of at least `bytes` (malloc's alignment): the one of at most
/// twice that size the calling thread freed last, else a new one. Null
/// when out of memory.
void *scratchAlloc(size_t bytes);

/// Returns a block of scratchAlloc (any thread's) to the calling thread's
/// cache; null does nothing.
void scratchFree(void *block);

/// The bytes the calling thread's cache holds (for tests).
size_t scratchCachedBytes();

/// Frees every block the calling thread's cache holds.
void scratchRelease();

} // namespace ignrt_detail

#endif // IGN_LIB_RUNTIME_SCRATCHCACHE_H
