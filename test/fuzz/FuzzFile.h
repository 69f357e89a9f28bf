//===- FuzzFile.h - a fuzz input as a file for readers that take paths ----===//

#ifndef IGN_TEST_FUZZ_FUZZFILE_H
#define IGN_TEST_FUZZ_FUZZFILE_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace ign::fuzz {

/// Writes the input to a per-process file ending in `suffix` (the readers
/// choose their format by it) and removes it when done.
class FuzzFile {
public:
  FuzzFile(const uint8_t *data, size_t size, const std::string &suffix)
      : path("/tmp/ign-fuzz-" + std::to_string(getpid()) + suffix) {
    if (FILE *f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    }
  }
  ~FuzzFile() { std::remove(path.c_str()); }
  const std::string path;
};

} // namespace ign::fuzz

#endif // IGN_TEST_FUZZ_FUZZFILE_H
