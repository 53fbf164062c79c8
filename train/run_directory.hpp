// A run saved as a directory: what the C and Fortran API's ktr_save_checkpoint writes and ktr_load_checkpoint
// reads.
//
//   ktr-manifest    which generation is current, and every file's name, size and CRC-32
//   ktr-gen-<N>/    generation N, the run as one save wrote it:
//     model.ckpt    the run (parameters, optimiser state, step, configuration), as Trainer::save writes it
//     state.bin     the replay buffer and the counters the API keeps, in the checkpoint container (strict header,
//                   every size checked against the file's bytes, CRC-32)
//     config.yaml   the configuration text the model was created from
//
// A save writes generation N + 1 into a new folder beside the current one (each file to a temporary name, flushed
// to the disk, renamed), then renames its manifest over the old one: that one step makes it current. Only then is
// generation N removed. So at every instant the directory loads as the previous save or as the new one, never as
// neither and never as a mix: a save that fails (a full disk, a quota, an I/O error) removes its folder and leaves
// the previous one current; a save killed midway (SIGKILL, a power cut) leaves a folder that no manifest names,
// which no load reads and the next save removes. ktr writes only into a folder that is new (made, and removed
// again if its first save fails), empty, holds a ktr manifest, or holds none of ktr's file names; it removes only
// its own files; a directory written by an earlier ktr (its files beside a version-1 manifest) still loads, and
// the next save replaces those files by a generation.
#pragma once

#include "../backends/collective.hpp"
#include "replay_buffer.hpp"
#include "trainer.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

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
  std::string state_path;  ///< where `state` was read from (the current generation's state.bin)
  RunDirectoryState state;

  /// The saved run's configuration, once it is checked to restore into a model of `model` (a description) with a
  /// replay buffer of `buffer_capacity` samples (0: none): the same model, and a saved buffer of that capacity and
  /// of the model's sample and target sizes. Throws ktr::Error naming the file and `whose` ("the configuration
  /// of 'm'") otherwise. Allocates nothing but the checkpoint's per-feature transform.
  RunConfig restorable_into(std::string const& model, std::int64_t buffer_capacity,
                            std::string const& whose) const;
};
RunDirectory read_run_directory(std::string const& dir);

/// One file of a generation: its name (a run's model.ckpt, state.bin, config.yaml; an RL system's system.ckpt and
/// config.yaml; a ktr::Pinn's pinn.ckpt; another rank's rank-<r>.ckpt) and what writes it, atomically, at the path
/// it is handed.
struct GenerationFile {
  std::string name;
  std::function<void(std::string const& path)> write;
};
/// Saves `files` as the directory's next generation, with every guarantee above (save_run_directory is this with
/// a run's three files). Throws ktr::Error naming the directory or file and the reason.
void save_generation(std::string const& dir, std::vector<GenerationFile> const& files);
/// Saves a generation over the ranks of `comm`, collectively: every rank's `bytes` travel to rank 0, which writes
/// them as `name` (its own) and rank-<r>.ckpt (rank r's), beside `extra` (rank 0's own further files), with
/// save_generation's guarantees. A refused save throws on every rank: rank 0 with the reason, the others naming
/// `dir` and `what` was being saved.
void save_generation_over_ranks(Communicator const& comm, std::string const& dir, std::string const& name,
                                std::string bytes, std::vector<GenerationFile> extra, std::string const& what);
/// The current generation's files (name -> bytes), each checked against the manifest, and their folder.
struct Generation {
  std::string folder;
  std::map<std::string, std::string> files;
  std::set<std::string> names;  ///< every file the manifest lists (read or not)
};
/// `only` not empty: just those of the listed files are read and checked against their CRC (a rank of a
/// distributed RL system reads its own file, not every rank's); every file is still checked to be there at its
/// manifest size.
Generation read_generation(std::string const& dir, std::vector<std::string> const& only = {});

}  // namespace ktr
