//===- TensorFiles.cpp - .npy and ONNX .pb tensor files -------------------===//

#include "ign/Driver/TensorFiles.h"
#include "ign/Import/OnnxImporter.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace ign {
namespace {

const struct {
  const char *descr; // numpy descr without byte order
  const char *dtype;
} kNpyTypes[] = {{"f4", "f32"},
                 {"f8", "f64"},
                 {"f2", "f16"},
                 {"i1", "i8"},
                 {"i2", "i16"},
                 {"i4", "i32"},
                 {"i8", "i64"},
                 {"u1", "u8"},
                 {"u2", "u16"},
                 {"u4", "u32"},
                 {"u8", "u64"},
                 {"b1", "bool"},
                 // bfloat16 as ml_dtypes' arrays save it: two raw bytes per
                 // element (np.load(f).view(ml_dtypes.bfloat16)).
                 {"V2", "bf16"}};

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

size_t elementSize(const std::string &dtype) {
  if (dtype == "bool" || dtype == "i8" || dtype == "u8")
    return 1;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16" || dtype == "u16")
    return 2;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32")
    return 4;
  return 8;
}

bool readNpy(const std::string &path, TensorData &t, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  int major = uint8_t(data[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = uint8_t(data[8]) | (uint8_t(data[9]) << 8);
    offset = 10;
  } else {
    if (data.size() < 12) {
      error = "'" + path + "' is truncated";
      return false;
    }
    headerLen = uint32_t(uint8_t(data[8])) | uint32_t(uint8_t(data[9])) << 8 |
                uint32_t(uint8_t(data[10])) << 16 |
                uint32_t(uint8_t(data[11])) << 24;
    offset = 12;
  }
  if (offset + headerLen > data.size()) {
    error = "'" + path + "' is truncated";
    return false;
  }
  std::string header = data.substr(offset, headerLen);
  std::smatch m;
  if (!std::regex_search(
          header, m, std::regex("'descr':\\s*'([<>|=])([a-zA-Z][0-9]+)'"))) {
    error = "'" + path + "': no dtype in the .npy header";
    return false;
  }
  if (m[1] == ">") {
    error = "'" + path + "': big-endian .npy files are not supported";
    return false;
  }
  std::string descr = m[2];
  t.dtype.clear();
  for (auto &k : kNpyTypes)
    if (descr == k.descr)
      t.dtype = k.dtype;
  if (t.dtype.empty()) {
    error = "'" + path + "': unsupported .npy dtype '" + descr + "'";
    return false;
  }
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) {
    error = "'" + path + "': Fortran-order .npy files are not supported";
    return false;
  }
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    error = "'" + path + "': no shape in the .npy header";
    return false;
  }
  t.shape.clear();
  std::string dims = m[1];
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it)
    t.shape.push_back(std::stoll(it->str()));
  size_t count = 1;
  for (int64_t d : t.shape)
    count *= size_t(d);
  size_t bytes = count * elementSize(t.dtype);
  size_t start = offset + headerLen;
  if (data.size() - start != bytes) {
    error = "'" + path + "' holds " + std::to_string(data.size() - start) +
            " data bytes, its shape needs " + std::to_string(bytes);
    return false;
  }
  t.bytes = data.substr(start);
  return true;
}

} // namespace

bool readTensorFile(const std::string &path, TensorData &t,
                    std::string &error) {
  if (endsWith(path, ".npy"))
    return readNpy(path, t, error);
  if (endsWith(path, ".pb"))
    return readTensorProtoFile(path, t.name, t.dtype, t.shape, t.bytes, error);
  error = "'" + path + "': tensor files must be .npy or .pb";
  return false;
}

bool writeNpy(const std::string &path, const TensorData &t,
              std::string &error) {
  const char *descr = nullptr;
  for (auto &k : kNpyTypes)
    if (t.dtype == k.dtype)
      descr = k.descr;
  if (!descr) {
    error = "cannot write dtype '" + t.dtype + "' as .npy";
    return false;
  }
  std::ostringstream dict;
  dict << "{'descr': '"
       << (std::string(descr) == "b1" || descr[1] == '1' || descr[0] == 'V'
               ? "|"
               : "<")
       << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i)
    dict << t.shape[i]
         << (t.shape.size() == 1 || i + 1 < t.shape.size() ? ", " : "");
  dict << "), }";
  std::string header = dict.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  out.put(char(len & 0xff));
  out.put(char(len >> 8));
  out << header;
  out.write(t.bytes.data(), std::streamsize(t.bytes.size()));
  if (!out) {
    error = "writing '" + path + "' failed";
    return false;
  }
  return true;
}

} // namespace ign
