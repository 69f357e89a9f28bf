//===- TuningRecordsFuzzer.cpp - `ignc db import`'s JSON reader ----------===//
//
// Arbitrary bytes as a tuning-records export: the reader returns records or
// an error; records it returns write back to JSON that reads again to the
// same number of records.
//
//===----------------------------------------------------------------------===//

#include "ign/Search/TuningDatabase.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size), error;
  auto records = ign::search::recordsFromJson(text, error);
  if (!records)
    return 0;
  auto again =
      ign::search::recordsFromJson(ign::search::recordsToJson(*records), error);
  if (!again || again->size() != records->size())
    std::abort(); // a round trip lost records
  return 0;
}
