// Reading a whole regular file for the file-format parsers (.npy, safetensors): the file must be a regular file
// (not a device or a pipe, which could be endless), and nothing is allocated beyond its size. No Kokkos here.
#pragma once

#include "error.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace ktr {

/// The bytes of the regular file at `path`; throws ktr::Error("<path>: <reason>") otherwise.
inline std::string read_regular_file(std::string const& path) {
  struct stat st {};
  KTR_REQUIRE(::stat(path.c_str(), &st) == 0, path, std::string("cannot open (") + std::strerror(errno) + ")");
  KTR_REQUIRE(S_ISREG(st.st_mode), path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  KTR_REQUIRE(in.good(), path, std::string("cannot open (") + std::strerror(errno) + ")");
  std::string bytes(std::size_t(st.st_size), '\0');
  in.read(&bytes[0], std::streamsize(bytes.size()));
  bytes.resize(std::size_t(in.gcount()));
  return bytes;
}

}  // namespace ktr
