//===- TensorFiles.h - tensors in .npy and ONNX .pb files -------*- C++ -*-===//

#ifndef IGN_DRIVER_TENSORFILES_H
#define IGN_DRIVER_TENSORFILES_H

#include <cstdint>
#include <string>
#include <vector>

namespace ign {

/// A tensor read from or written to a file; `dtype` uses the bundle's names
/// ("f32", "i64", "bool", ...), `bytes` is little-endian, row-major.
struct TensorData {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Reads `.npy` (NumPy format 1.0-3.0, C order) or `.pb` (ONNX TensorProto).
bool readTensorFile(const std::string &path, TensorData &tensor,
                    std::string &error);
/// Writes a `.npy` file.
bool writeNpy(const std::string &path, const TensorData &tensor,
              std::string &error);

} // namespace ign

#endif // IGN_DRIVER_TENSORFILES_H
