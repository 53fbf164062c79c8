// libFuzzer target: the model-description parser on arbitrary text. It must refuse bad descriptions with
// ktr::Error, never overflow a size, and give back a description that parses to itself.
#include "../core/error.hpp"
#include "../models/description.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  try {
    ktr::Description const d = ktr::parse_description(std::string(reinterpret_cast<char const*>(data), size));
    if (ktr::parse_description(d.text()).text() != d.text()) std::abort();  // normalisation is a fixed point
  } catch (ktr::Error const&) {
  }
  return 0;
}
