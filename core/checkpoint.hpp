// Checkpoints: parameters, optimiser moments, step, seed and the model description in one file.
//
//   "KTRCKPT1" | u32 version | u32 header bytes | header (key=value lines) | u64 buffers |
//   per buffer: u64 floats, floats (little-endian) | u32 CRC-32 of everything before it
//
// Written to "<path>.tmp.<pid>", flushed and fsync'ed, then renamed over <path>: a crash or a full disk never
// leaves a half-written checkpoint under the real name. Reading checks magic, version, sizes and the CRC before
// anything is used, and reports the file and the reason otherwise.
#pragma once

#include "core/types.hpp"

#include <map>
#include <string>
#include <vector>

namespace ktr {

struct Checkpoint {
  std::map<std::string, std::string> header;  ///< model, optimizer, lr, schedule, seed, step, batch, ...
  std::vector<std::vector<float>> buffers;    ///< params, then the optimiser's state buffers

  std::string const& get(std::string const& key) const;  ///< throws ktr::Error if missing
};

/// Writes atomically (temporary name, fsync, rename).
void write_checkpoint(std::string const& path, Checkpoint const& ckpt);
/// Reads and validates; throws ktr::Error("<path>: <reason>") on any problem.
Checkpoint read_checkpoint(std::string const& path);

/// Device buffer <-> host vector helpers for checkpointing (blocking).
std::vector<float> download(DeviceView<float*> const& v);
void upload(DeviceView<float*> const& v, std::vector<float> const& values, std::string const& what);

}  // namespace ktr
