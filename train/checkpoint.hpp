// Checkpoints: parameters, optimiser moments, step, seed and every setting that shapes a run, in one file.
//
//   "KTRCKPT1" | u32 version | u32 header bytes | header (key=value lines) | u64 buffers |
//   per buffer: u64 floats, floats (little-endian) | u32 CRC-32 of everything before it
//
// Versions: 1 (ktr 0.1: schedules with 6 significant digits, no normalisation mode) and 2 (exact values of every
// setting). A version adds header keys; a reader fills the keys an older version lacks with that version's
// behaviour and refuses versions newer than it knows, naming them. This file has no Kokkos in it (the fuzzer
// builds it alone); the device side of a checkpoint is in core/session.
//
// Writing: to "<path>.tmp.<pid>", fsync'ed, renamed over <path>, then the directory fsync'ed: a crash or a full
// disk never leaves a half-written checkpoint under the real name. An existing file at <path> is replaced only if
// it is itself a ktr checkpoint. Reading: the magic is checked first, then every size against the bytes the file
// really has (nothing is allocated beyond the file's size), then the CRC, before anything is used; any problem
// throws ktr::Error("<path>: <reason>").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ktr {

struct Checkpoint {
  static constexpr std::uint32_t current_version = 2;

  std::uint32_t version = current_version;    ///< the format version the file was written with
  std::map<std::string, std::string> header;  ///< model, optimizer, lr, schedule, seed, step, batch, ...
  std::vector<std::vector<float>> buffers;    ///< params, then the optimiser's state buffers

  std::string const& get(std::string const& key) const;  ///< throws ktr::Error if missing
  bool has(std::string const& key) const { return header.count(key) > 0; }
};

/// The header field `key` as an integer in [lo, hi] (decimal digits only); throws ktr::Error("<path>: field 'key'
/// is missing or out of range") otherwise.
std::int64_t header_integer(Checkpoint const& c, std::string const& path, std::string const& key,
                            std::int64_t lo = 0, std::int64_t hi = std::int64_t(1) << 62);

/// Writes atomically (temporary name, fsync, rename, directory fsync). Throws if `path` exists and is not a ktr
/// checkpoint.
void write_checkpoint(std::string const& path, Checkpoint const& ckpt);
/// The bytes write_checkpoint writes (for a file written elsewhere: another rank's, a generation's); errors name
/// `name`.
std::string checkpoint_bytes(std::string const& name, Checkpoint const& ckpt);
/// Reads and validates; throws ktr::Error("<path>: <reason>") on any problem.
Checkpoint read_checkpoint(std::string const& path);
/// Validates the same bytes read_checkpoint reads from a file (for the fuzzer and tests).
Checkpoint parse_checkpoint(std::string const& name, std::string const& bytes);

/// Throws ktr::Error("<what> <path>: ...") unless `path` may receive a checkpoint: it does not exist, or it is a
/// ktr checkpoint (which a run may replace). Called before training, so a run never ends in a refused save.
void check_checkpoint_target(std::string const& path, std::string const& what);
/// check_checkpoint_target, and a file can be written at `path` (its folder exists and is writable): what a
/// command checks before any work, so that a run never trains for an epoch to fail on its first save.
void check_checkpoint_output(std::string const& path, std::string const& what);

}  // namespace ktr
