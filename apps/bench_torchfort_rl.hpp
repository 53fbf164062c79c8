// `ktr bench rl`'s TorchFort-layer table (builds with the C API): bench_torchfort_rl.cpp.
#pragma once

namespace ktr::cli {

/// Times TorchFort's per-step off-policy calls beside the same system's own calls, `rounds` interleaved rounds,
/// and prints the table. Throws ktr::Error if a call fails.
void run_torchfort_rl_layer(int rounds);

}  // namespace ktr::cli
