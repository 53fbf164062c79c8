// libFuzzer target: the safetensors reader on arbitrary bytes (header size, JSON, dtypes, shapes, offsets). It
// must refuse bad input with ktr::Error and never allocate beyond what the bytes hold.
#include "../core/error.hpp"
#include "../train/safetensors.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  try {
    ktr::parse_safetensors("fuzz", std::string(reinterpret_cast<char const*>(data), size));
  } catch (ktr::Error const&) {
  }
  return 0;
}
