// Small helpers the test files share: the message of the ktr::Error a call throws, a temporary file, a file's
// bytes.
#pragma once

#include <ktr/core/error.hpp>

#include <gtest/gtest.h>

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

/// Writes `text` to `name` in GoogleTest's temporary folder and returns the file's path.
inline std::string write_file(std::string const& name, std::string const& text) {
  std::string const path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

/// The bytes of the file at `path` ("" if it cannot be read).
inline std::string slurp(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace ktr::test
