//===- BundleFormat.h - the on-disk layout of a kernel bundle (.ignb) -----===//
//
// Shared by the writer (lib/Bundle, in the compiler) and the reader
// (lib/Runtime, libignrt), so it depends on nothing but the C++ library.
// docs/bundle-format.md describes the format in prose.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_BUNDLE_BUNDLEFORMAT_H
#define IGN_BUNDLE_BUNDLEFORMAT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ign::bundle {

constexpr char kMagic[8] = {'I', 'G', 'N', 'B', 'N', 'D', 'L', '\0'};
/// The newest format version; ignc writes it only for a bundle that needs
/// it (version 4: kernels run in steps; 3: outputs of run-time size), else
/// the oldest that reads it right, and libignrt reads every version from
/// kOldestFormatVersion on (docs/bundle-format.md, Versioning).
constexpr uint32_t kFormatVersion = 4;
constexpr uint32_t kShapeOfFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;
/// Sections start at multiples of this, so weights can be used in place
/// from an mmapped bundle with any element alignment.
constexpr uint64_t kSectionAlignment = 64;

/// The host artifact's allocator table (a global of two pointers: void
/// *(*)(size_t), void (*)(void *)), through which its kernels allocate and
/// free their temporaries; malloc and free while null. libignrt fills it
/// after loading the artifact (lib/Runtime/ScratchCache.h).
constexpr char kKernelAllocatorSymbol[] = "ign_kernel_allocator";

enum class SectionKind : uint32_t {
  Manifest = 1, // JSON, UTF-8
  Weights = 2,  // raw little-endian tensors, each 64-byte aligned
  Artifact = 3, // target code (host: an ELF shared object)
  Device = 4,   // device kernels' programs, at offsets the manifest gives
};

/// Fixed header at offset 0 (little-endian).
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t sectionCount;
  uint64_t sectionTableOffset;
  uint64_t fileSize;
  uint64_t reserved[2];
  uint64_t headerChecksum; // FNV-1a of the bytes before this field
};
static_assert(sizeof(Header) == 56, "header layout");

/// One entry of the section table that follows the header.
struct SectionEntry {
  uint32_t kind;
  uint32_t reserved;
  uint64_t offset;
  uint64_t size;
  uint64_t checksum; // FNV-1a 64 of the section's bytes
  char name[32];     // NUL-padded
};
static_assert(sizeof(SectionEntry) == 64, "section entry layout");

/// FNV-1a, 64-bit: a fast checksum that catches truncation and corruption
/// (not an integrity guarantee against tampering).
inline uint64_t fnv1a(const void *data, size_t size,
                      uint64_t hash = 0xcbf29ce484222325ull) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

} // namespace ign::bundle

#endif // IGN_BUNDLE_BUNDLEFORMAT_H
