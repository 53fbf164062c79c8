// A run saved as a directory: what the C and Fortran API's ktr_save_checkpoint writes and ktr_load_checkpoint
// reads.
//
//   model.ckpt    the run (parameters, optimiser state, step, configuration), as Trainer::save writes it
//   state.bin     the replay buffer and the counters the API keeps, in the checkpoint container (strict header,
//                 every size checked against the file's bytes, CRC-32)
//   config.yaml   the configuration text the model was created from
//   ktr-manifest  written last: every file's name, size and CRC-32
//
// A directory cannot be replaced atomically, so: ktr writes only into a folder that does not exist (it is made,
// and removed again if the save fails), is empty, or holds a ktr manifest (a previous save), and never replaces a
// file of its names that such a manifest does not list. The old manifest goes first, each file is written under a
// temporary name and renamed, and the new manifest is renamed in last: a save cut short leaves no manifest, or one
// whose files do not match, and a load accepts only a directory whose manifest lists exactly the files it holds,
// byte for byte.
#pragma once

#include "replay_buffer.hpp"
#include "trainer.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ktr {

/// What a directory holds besides the run itself.
struct RunDirectoryState {
  std::string config_text;  ///< the configuration the model was created from
  std::int64_t inference_calls = 0;
  bool has_buffer = false;  ///< a replay buffer was saved (its rows below)
  std::int64_t buffer_capacity = 0;
  Task buffer_task = Task::classification;
  std::int64_t buffer_sample = 0, buffer_width = 0;
  ReplayBuffer::Rows buffer;
};

/// Saves `trainer`'s run, `buffer` (may be null) and `state`'s text and counters into `dir` (see above). Throws
/// ktr::Error naming the directory or file and the reason; a refused save leaves no folder it made.
void save_run_directory(ExecSpace const& space, std::string const& dir, Trainer const& trainer,
                        ReplayBuffer const* buffer, RunDirectoryState const& state);

/// A saved directory, every file checked against its manifest; `checkpoint` is the run as read_checkpoint reads it
/// (from `checkpoint_path`), for the caller to check against its model before anything is allocated.
struct RunDirectory {
  Checkpoint checkpoint;
  std::string checkpoint_path;
  RunDirectoryState state;
};
RunDirectory read_run_directory(std::string const& dir);

}  // namespace ktr
