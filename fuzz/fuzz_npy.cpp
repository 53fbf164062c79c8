// libFuzzer target: the .npy reader on arbitrary bytes. It must refuse bad input with ktr::Error and never
// allocate beyond what the bytes hold.
#include "../core/error.hpp"
#include "../data/npy.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  try {
    ktr::parse_npy("fuzz", std::string(reinterpret_cast<char const*>(data), size));
  } catch (ktr::Error const&) {
  }
  return 0;
}
