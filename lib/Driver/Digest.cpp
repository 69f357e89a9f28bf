//===- Digest.cpp - SHA-256 of files and bytes, as hex --------------------===//

#include "Digest.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"

namespace ign {

std::string sha256Hex(std::string_view bytes) {
  llvm::SHA256 hasher;
  hasher.update(llvm::StringRef(bytes.data(), bytes.size()));
  std::array<uint8_t, 32> digest = hasher.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string sha256OfFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return "";
  return sha256Hex((*buffer)->getBuffer());
}

} // namespace ign
