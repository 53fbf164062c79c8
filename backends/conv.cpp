// The convolution entry point where no library runs convolutions in this build (GPU builds, host builds without
// oneDNN): every convolution takes the layer's portable path. With oneDNN, conv_onednn.cpp defines these.
#include "conv.hpp"

#include "../core/error.hpp"

#if !defined(KTR_ENABLE_ONEDNN)

namespace ktr {

namespace {
char const* const kNone = device_is_host ? "this build has no convolution library (configure with oneDNN)"
                                         : "GPU builds run convolutions as im2col + the vendor BLAS";
[[noreturn]] void refuse(char const* what) { throw Error(std::string(what) + ": " + kNone); }
}  // namespace

std::string conv_library_unavailable(ConvShape const&, Precision const&) { return kNone; }
std::string conv_library() { return std::string("none: ") + kNone; }
void conv_library_forward(ExecSpace const&, Precision const&, ConvShape const&, float const*, float const*, float*,
                          ConvEpilogue const&, std::uint16_t*) {
  refuse("ktr::conv::forward");
}
void conv_library_backward(ExecSpace const&, Precision const&, ConvShape const&, float const*, float const*,
                           float const*, float*, float*, std::uint16_t const*, std::uint16_t const*) {
  refuse("ktr::conv::backward");
}

}  // namespace ktr

#endif
