// libFuzzer target: the checkpoint reader on arbitrary bytes (the same validation read_checkpoint runs on a
// file's contents). It must refuse bad input with ktr::Error and never allocate beyond the input's size.
#include "../core/error.hpp"
#include "../train/checkpoint.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  try {
    ktr::parse_checkpoint("fuzz", std::string(reinterpret_cast<char const*>(data), size));
  } catch (ktr::Error const&) {
  }
  return 0;
}
