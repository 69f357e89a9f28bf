//===- ScaleSimFuzzer.cpp - SCALE-Sim topology and config readers ---------===//
//
// The first byte chooses the reader (topology in conv or GEMM form, or a
// .cfg config); the rest is the file. Each returns a value or an error.
//
//===----------------------------------------------------------------------===//

#include "Config.h"
#include "FuzzFile.h"
#include "ScaleSim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0] % 3;
  ign::fuzz::FuzzFile file(data + 1, size - 1, mode == 2 ? ".cfg" : ".csv");
  if (mode == 2) {
    (void)ign::systolic::parseScaleSimConfig(file.path);
  } else {
    auto layers = ign::systolic::parseTopology(file.path, mode == 1);
    if (layers)
      for (const auto &layer : *layers)
        (void)layer.macs();
  }
  return 0;
}
