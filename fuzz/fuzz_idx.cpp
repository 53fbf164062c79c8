// libFuzzer target: the IDX reader (images and labels, plain or gzip) on arbitrary bytes. It must refuse bad
// input with ktr::Error and never crash, hang or allocate beyond what the bytes justify.
#include "../core/error.hpp"
#include "../data/idx.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  // The reader takes a path: one scratch file per fuzzing process.
  static std::string const path = "/tmp/ktr-fuzz-idx." + std::to_string(getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    ktr::read_idx_images(path);
  } catch (ktr::Error const&) {
  }
  try {
    ktr::read_idx_labels(path, 10);
  } catch (ktr::Error const&) {
  }
  return 0;
}
