// Small helpers the test files share: the message of the ktr::Error a call throws, and a file's bytes.
#pragma once

#include <ktr/core/error.hpp>

#include <fstream>
#include <iterator>
#include <string>

namespace ktr::test {

/// What `f()` throws as ktr::Error, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (ktr::Error const& e) {
    return e.what();
  }
  return "(no error)";
}

/// The bytes of the file at `path` ("" if it cannot be read).
inline std::string slurp(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace ktr::test
