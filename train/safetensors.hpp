// The safetensors format, the one the JAX and PyTorch worlds share for weights:
//
//   u64 (little-endian) header bytes | JSON header | raw little-endian tensor bytes
//   header: {"__metadata__": {"key": "value", ...}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b,
//   e]}}
//
// Reading checks the header size against the file, the JSON, every dtype, shape and offset range (offsets must
// tile the data exactly, as the format requires), and throws ktr::Error("<path>: <reason>") otherwise; nothing is
// allocated beyond what the file holds. Writing goes to a temporary name renamed into place, and never replaces a
// file that is not a safetensors file. No Kokkos here: the fuzzer builds it alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ktr {

struct SafeTensor {
  std::string dtype = "F32";  ///< as stored: F32 (read into values), or another dtype (values empty)
  std::vector<std::int64_t> shape;
  std::vector<float> values;  ///< row-major
};

struct SafeTensors {
  std::map<std::string, std::string> metadata;
  std::map<std::string, SafeTensor> tensors;
};

/// Parses safetensors bytes (`name` stands for the file in messages).
SafeTensors parse_safetensors(std::string const& name, std::string const& bytes);
SafeTensors read_safetensors(std::string const& path);
/// Throws ktr::Error("<what> <path>: ...") unless `path` may receive a safetensors file: a file can be written
/// there, and an existing file is itself safetensors. Called before any work, so a command never ends in a refused
/// write.
void check_safetensors_target(std::string const& path, std::string const& what);
/// Writes F32 tensors (in name order) and string metadata atomically.
void write_safetensors(std::string const& path, SafeTensors const& st);

}  // namespace ktr
