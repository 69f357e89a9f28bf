//===- Digest.h - SHA-256 of files and bytes, as hex ------------*- C++ -*-===//
//
// Bundles record their model's digest; `ignc report` records the bundle's
// and each weight's, so that `--verify` names what changed.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_DIGEST_H
#define IGN_DRIVER_DIGEST_H

#include <string>
#include <string_view>

namespace ign {

/// SHA-256 of `bytes`, 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);
/// SHA-256 of a file's bytes; "" when it cannot be read.
std::string sha256OfFile(const std::string &path);

} // namespace ign

#endif // IGN_DRIVER_DIGEST_H
