// Host-side reader for NumPy .npy files (format versions 1.0, 2.0 and 3.0): the magic, a Python-literal header
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, D)} and the raw little-endian array.
//
// Everything is validated (magic, version, header syntax, dtype, C order, extents, payload length against the
// file) and any problem throws ktr::Error("<path>: <reason>"); nothing partial is returned, and nothing is
// allocated beyond what the file holds. No Kokkos here: the fuzzer builds it alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

/// A .npy array as read: its shape and its elements converted to double (exact for every dtype accepted up to
/// 2^53), with what the dtype was.
struct NpyArray {
  std::vector<std::int64_t> shape;  ///< C order, outermost first; () for a scalar
  char kind = 'f';                  ///< 'f' float, 'i' signed integer, 'u' unsigned integer, 'b' bool
  int itemsize = 4;                 ///< bytes per element in the file
  std::string descr;                ///< as written, e.g. "<f4"
  std::vector<double> values;       ///< the elements, row-major

  std::int64_t count() const { return shape.empty() ? 1 : shape[0]; }
  bool is_integer() const { return kind == 'i' || kind == 'u' || kind == 'b'; }
};

/// Reads and validates a .npy file. Accepted dtypes: float16/32/64, int8..int64, uint8..uint64, bool,
/// little-endian (or byte-order-free single bytes). Fortran order, big-endian data, object arrays and structured
/// dtypes are refused with the reason.
NpyArray read_npy(std::string const& path);
/// The same validation on bytes already in memory (`name` stands for the file in messages).
NpyArray parse_npy(std::string const& name, std::string const& bytes);

/// Writes a float32 (C order) .npy file atomically (temporary name, then rename). For tests and tools.
void write_npy(std::string const& path, std::vector<std::int64_t> const& shape, std::vector<float> const& values);
/// Writes an int32 .npy file the same way.
void write_npy(std::string const& path, std::vector<std::int64_t> const& shape,
               std::vector<std::int32_t> const& values);

}  // namespace ktr
