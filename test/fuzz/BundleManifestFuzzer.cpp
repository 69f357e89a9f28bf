//===- BundleManifestFuzzer.cpp - libignrt on damaged manifests -----------===//
//
// A bundle's header, section table and checksums are checked before its
// manifest is read, so raw bytes would stop at the first checksum. This
// harness takes a real bundle (test/fuzz/seeds/template.bundle: a small
// model compiled for the baseline x86-64 CPU) and puts the fuzz input in
// place of its manifest, laying the sections out again with valid offsets
// and checksums: the runtime's manifest validation is what runs. Opening
// must succeed or fail with an error; so must creating a session (which
// allocates what the manifest asks). Kernels are not run: a manifest can
// describe buffers the compiled code does not expect, which no loader can
// tell from the code.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"
#include "ign/Bundle/BundleFormat.h"
#include "ign/Runtime/ignrt.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace ign::bundle;

namespace {

struct Section {
  SectionEntry entry;
  std::string bytes;
};

/// The template's sections (the process aborts if it cannot be read: the
/// harness is misconfigured, not the runtime wrong).
const std::vector<Section> &templateSections() {
  static std::vector<Section> sections = [] {
    const char *path = std::getenv("IGN_FUZZ_BUNDLE_TEMPLATE");
    std::ifstream in(path ? path : IGN_FUZZ_BUNDLE_TEMPLATE, std::ios::binary);
    std::string file((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    Header h;
    if (file.size() < sizeof h)
      std::abort();
    std::memcpy(&h, file.data(), sizeof h);
    std::vector<Section> out(h.sectionCount);
    for (uint32_t i = 0; i < h.sectionCount; ++i) {
      std::memcpy(&out[i].entry,
                  file.data() + h.sectionTableOffset + i * sizeof(SectionEntry),
                  sizeof(SectionEntry));
      out[i].bytes = file.substr(out[i].entry.offset, out[i].entry.size);
    }
    return out;
  }();
  return sections;
}

/// A bundle of the template's sections with `manifest` in place of its own.
std::string withManifest(const uint8_t *data, size_t size) {
  std::vector<Section> sections = templateSections();
  for (Section &s : sections)
    if (s.entry.kind == uint32_t(SectionKind::Manifest))
      s.bytes.assign(reinterpret_cast<const char *>(data), size);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.sectionCount = uint32_t(sections.size());
  h.sectionTableOffset = sizeof(Header);
  uint64_t offset = alignUp(sizeof(Header) + sections.size() * sizeof(SectionEntry),
                            kSectionAlignment);
  for (Section &s : sections) {
    s.entry.offset = offset;
    s.entry.size = s.bytes.size();
    s.entry.checksum = fnv1a(s.bytes.data(), s.bytes.size());
    offset = alignUp(offset + s.bytes.size(), kSectionAlignment);
  }
  h.fileSize = offset;
  h.headerChecksum = fnv1a(&h, offsetof(Header, headerChecksum));
  std::string file(offset, '\0');
  std::memcpy(file.data(), &h, sizeof h);
  for (size_t i = 0; i < sections.size(); ++i) {
    std::memcpy(file.data() + sizeof(Header) + i * sizeof(SectionEntry),
                &sections[i].entry, sizeof(SectionEntry));
    std::memcpy(file.data() + sections[i].entry.offset,
                sections[i].bytes.data(), sections[i].bytes.size());
  }
  return file;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bundle = withManifest(data, size);
  ign::fuzz::FuzzFile file(reinterpret_cast<const uint8_t *>(bundle.data()),
                           bundle.size(), ".ignb");
  ignrt_bundle *b = nullptr;
  if (ignrt_bundle_open(file.path.c_str(), &b) != IGNRT_OK)
    return 0;
  ignrt_session *s = nullptr;
  if (ignrt_session_create(b, 1, &s) == IGNRT_OK)
    ignrt_session_destroy(s);
  ignrt_bundle_close(b);
  return 0;
}
