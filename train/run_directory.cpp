// The run directory's files and manifest: see run_directory.hpp.
#include "run_directory.hpp"

#include "../core/file.hpp"
#include "../core/parse.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace ktr {

namespace {

char const* const kManifest = "ktr-manifest";
// Version 1 listed files beside the manifest; version 2 (written since) lists a generation's folder's.
char const* const kManifestMagic1 = "ktr-run-directory 1";
char const* const kManifestMagic2 = "ktr-run-directory 2";
char const* const kGeneration = "ktr-gen-";
// Every name a generation may hold: a run's three files (all a version-1 directory held), an RL system's two, or
// a ktr::Pinn's one, and over several ranks rank-<r>.ckpt for each rank r > 0 (generation_file).
char const* const kFiles[] = {"model.ckpt", "state.bin", "config.yaml", "system.ckpt", "pinn.ckpt"};
char const* const kRunFiles[] = {"model.ckpt", "state.bin", "config.yaml"};

// rank-<r>.ckpt, r from 1 to 9,999,999 without leading zeros.
bool rank_file(std::string const& name) {
  std::size_t const fixed = std::strlen("rank-.ckpt");
  if (name.size() <= fixed || name.size() > fixed + 7 || name.compare(0, 5, "rank-") != 0 ||
      name.compare(name.size() - 5, 5, ".ckpt") != 0 || name[5] == '0')
    return false;
  return std::all_of(name.begin() + 5, name.end() - 5, [](char c) { return c >= '0' && c <= '9'; });
}

bool generation_file(std::string const& name) {
  return std::count(std::begin(kFiles), std::end(kFiles), name) == 1 || rank_file(name);
}

struct Listed {
  std::int64_t size;
  std::uint32_t crc;
};

struct Manifest {
  std::int64_t generation = 0;  ///< 0: a version-1 manifest, whose files lie beside it
  std::map<std::string, Listed> files;
};

std::uint32_t crc_of(std::string const& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < bytes.size();) {
    uInt const piece = uInt(std::min<std::size_t>(bytes.size() - at, std::size_t(1) << 30));
    crc = crc32(crc, reinterpret_cast<Bytef const*>(bytes.data() + at), piece);
    at += piece;
  }
  return std::uint32_t(crc);
}

// The manifest's entries; throws naming the file unless it is exactly one of ktr's.
Manifest parse_manifest(std::string const& path, std::string const& text) {
  std::istringstream in(text);
  std::string line;
  KTR_REQUIRE(std::getline(in, line) && (line == kManifestMagic1 || line == kManifestMagic2), path,
              "is not a ktr manifest");
  Manifest m;
  if (line == kManifestMagic2) {
    std::string key, value, extra;
    KTR_REQUIRE(std::getline(in, line), path, "has no generation line");
    std::istringstream g(line);
    KTR_REQUIRE(g >> key >> value && !(g >> extra) && key == "generation" &&
                    parse_integer(value, 1, std::int64_t(1) << 62, m.generation),
                path, "has a malformed generation line");
  }
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string name, size, crc, extra;
    KTR_REQUIRE(f >> name >> size >> crc && !(f >> extra), path, "has a malformed line");
    KTR_REQUIRE(generation_file(name) && m.files.count(name) == 0, path, "lists an unexpected or repeated file");
    std::int64_t sz = 0, c = 0;
    KTR_REQUIRE(parse_integer(size, 0, std::int64_t(1) << 50, sz) && parse_integer(crc, 0, 0xffffffffll, c), path,
                "has a malformed size or checksum");
    m.files[name] = Listed{sz, std::uint32_t(c)};
  }
  bool const run = m.files.size() == 3 && m.files.count("model.ckpt") && m.files.count("state.bin") &&
                   m.files.count("config.yaml");
  // An RL system: system.ckpt and config.yaml; a Pinn: pinn.ckpt; over R ranks, rank-1.ckpt to rank-<R-1>.ckpt.
  bool system = m.files.size() >= 2 && m.files.count("system.ckpt") && m.files.count("config.yaml");
  for (std::size_t r = 1; system && r + 2 <= m.files.size(); ++r)
    system = m.files.count("rank-" + std::to_string(r) + ".ckpt") == 1;
  bool pinn = m.files.count("pinn.ckpt") == 1;
  for (std::size_t r = 1; pinn && r + 1 <= m.files.size(); ++r)
    pinn = m.files.count("rank-" + std::to_string(r) + ".ckpt") == 1;
  KTR_REQUIRE(run || ((system || pinn) && m.generation > 0), path,
              "does not list every file of a run, an RL system or a pinn");
  return m;
}

// The folder that holds a manifest's files.
std::string files_of(std::string const& dir, std::int64_t generation) {
  return generation == 0 ? dir : dir + "/" + kGeneration + std::to_string(generation);
}

bool exists(std::string const& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The generation a folder's entry names ("ktr-gen-<N>"), or 0.
std::int64_t generation_of(std::string const& entry) {
  std::string const prefix = kGeneration;
  std::int64_t n = 0;
  if (entry.compare(0, prefix.size(), prefix) != 0 ||
      !parse_integer(entry.substr(prefix.size()), 1, std::int64_t(1) << 62, n))
    return 0;
  return n;
}

// True for a name a save writes into a generation's folder: one of its files or their temporaries.
bool ours(std::string const& name) {
  std::size_t const tmp = name.find(".tmp.");
  return generation_file(name.substr(0, tmp));
}

// Removes a generation's folder: its files and temporaries, then the folder if nothing else is left in it (another
// program's file stays, and so does the folder). Never throws: a leftover is ignored by every load.
void remove_generation(std::string const& folder) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;  // never through a link
  if (DIR* d = ::opendir(folder.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d))
      if (ours(e->d_name)) names.emplace_back(e->d_name);
    ::closedir(d);
    for (std::string const& n : names) ::unlink((folder + "/" + n).c_str());
  }
  ::rmdir(folder.c_str());
}

// Removes what killed saves left in `dir`: every generation's folder but `keep`'s (a save killed before or after
// its manifest was renamed into place) and the manifest's temporaries (one killed while writing it).
void remove_leftovers(std::string const& dir, std::int64_t keep) {
  std::string const manifest_tmp = std::string(kManifest) + ".tmp.";
  std::vector<std::string> folders, files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::int64_t const g = generation_of(e->d_name);
      if (g != 0 && g != keep) folders.push_back(dir + "/" + e->d_name);
      if (std::string(e->d_name).compare(0, manifest_tmp.size(), manifest_tmp) == 0)
        files.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  for (std::string const& f : folders) remove_generation(f);
  for (std::string const& f : files) ::unlink(f.c_str());
}

// Where a save may write: makes `dir` if it does not exist (`made` is set then) and returns its current manifest,
// if any (a previous save's, checked as one). Accepts a new or empty folder, one that holds a ktr manifest, or one
// where none of ktr's file names is taken by another program's file; throws otherwise.
std::optional<Manifest> prepare(std::string const& dir, bool& made) {
  made = false;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    KTR_REQUIRE(errno == ENOENT, dir, std::string("cannot use the checkpoint directory: ") + std::strerror(errno));
    KTR_REQUIRE(::mkdir(dir.c_str(), 0777) == 0, dir,
                std::string("cannot create the checkpoint directory: ") + std::strerror(errno));
    made = true;
    return std::nullopt;
  }
  KTR_REQUIRE(S_ISDIR(st.st_mode), dir, "exists and is not a directory");
  std::string const manifest = dir + "/" + kManifest;
  if (exists(manifest)) return parse_manifest(manifest, read_regular_file(manifest));
  for (char const* name : kFiles)
    KTR_REQUIRE(!exists(dir + "/" + name), dir,
                std::string("holds a ") + name + " that is not ktr's (no ktr manifest): refusing to replace it");
  return std::nullopt;
}

Checkpoint state_checkpoint(ReplayBuffer const* buffer, ReplayBuffer::Rows const& rows,
                            RunDirectoryState const& s) {
  Checkpoint c;
  c.header = {{"kind", "ktr-api-state"},
              {"inference_calls", std::to_string(s.inference_calls)},
              {"buffer", buffer ? "1" : "0"}};
  if (buffer) {
    c.header["capacity"] = std::to_string(buffer->capacity());
    c.header["sample"] = std::to_string(buffer->sample_size());
    c.header["width"] = std::to_string(buffer->width());
    c.header["task"] = buffer->task() == Task::regression ? "regression" : "classification";
    c.header["head"] = std::to_string(rows.head);
    c.header["filled"] = std::to_string(rows.filled);
    c.buffers.push_back(rows.features);
    if (buffer->task() == Task::regression)
      c.buffers.push_back(rows.values);
    else
      c.buffers.emplace_back(rows.labels.begin(), rows.labels.end());  // class labels < 2^24: exact as floats
  }
  return c;
}

RunDirectoryState parse_state(std::string const& path, Checkpoint const& c) {
  KTR_REQUIRE(c.has("kind") && c.get("kind") == "ktr-api-state", path, "is not a ktr API state file");
  RunDirectoryState s;
  std::int64_t constexpr big = std::int64_t(1) << 40;
  s.inference_calls = header_integer(c, path, "inference_calls", 0, big);
  s.has_buffer = header_integer(c, path, "buffer", 0, 1) == 1;
  if (!s.has_buffer) {
    KTR_REQUIRE(c.buffers.empty(), path, "holds buffers it does not describe");
    return s;
  }
  s.buffer_capacity = header_integer(c, path, "capacity", 1, big);
  s.buffer_sample = header_integer(c, path, "sample", 1, big);
  s.buffer_width = header_integer(c, path, "width", 1, big);
  KTR_REQUIRE(c.has("task") && (c.get("task") == "regression" || c.get("task") == "classification"), path,
              "field 'task' is missing or unknown");
  s.buffer_task = c.get("task") == "regression" ? Task::regression : Task::classification;
  s.buffer.head = header_integer(c, path, "head", 0, s.buffer_capacity - 1);
  s.buffer.filled = header_integer(c, path, "filled", 0, s.buffer_capacity);
  KTR_REQUIRE(c.buffers.size() == 2, path, "holds " + std::to_string(c.buffers.size()) + " buffers, not 2");
  s.buffer.features = c.buffers[0];
  if (s.buffer_task == Task::regression) {
    s.buffer.values = c.buffers[1];
  } else {
    for (float v : c.buffers[1])
      KTR_REQUIRE(v >= 0 && v < float(s.buffer_width) && v == float(std::int32_t(v)), path,
                  "holds a class label that is not one");
    s.buffer.labels.assign(c.buffers[1].begin(), c.buffers[1].end());
  }
  return s;
}

}  // namespace

void save_generation(std::string const& dir, std::vector<GenerationFile> const& files) {
  KTR_REQUIRE(!dir.empty(), "checkpoint directory", "is empty");
  for (auto const& f : files)
    KTR_REQUIRE(generation_file(f.name), "save_generation", "'" + f.name + "' is not a name a generation holds");
  bool made = false;
  std::optional<Manifest> const current = prepare(dir, made);
  std::int64_t const was = current ? current->generation : 0;
  remove_leftovers(dir, was);  // a killed save's folder is never loaded, and never stands in this one's way
  std::int64_t const generation = was + 1;
  std::string const folder = files_of(dir, generation);
  std::string const manifest = dir + "/" + kManifest;
  try {
    int const made_folder = impl::write_step_fails() ? (errno = ENOSPC, -1) : ::mkdir(folder.c_str(), 0777);
    KTR_REQUIRE(made_folder == 0, folder,
                std::string("cannot create the checkpoint's folder: ") + std::strerror(errno));
    for (auto const& f : files) f.write(folder + "/" + f.name);
    std::string text = std::string(kManifestMagic2) + "\ngeneration " + std::to_string(generation) + "\n";
    for (auto const& f : files) {
      std::string const bytes = read_regular_file(folder + "/" + f.name);
      text += f.name + " " + std::to_string(bytes.size()) + " " + std::to_string(crc_of(bytes)) + "\n";
    }
    // Each write flushed its file and the generation's folder; the manifest's flushes `dir` (and so the new
    // folder's entry) after the one step that makes the new generation current.
    write_atomically(manifest, text);
  } catch (...) {
    remove_generation(folder);       // the previous generation, if any, is untouched and still current
    if (made) ::rmdir(dir.c_str());  // only if nothing else is in it
    throw;
  }
  // Only now the previous generation goes (a kill before this leaves it to the next save's clean-up).
  if (current && was == 0)
    for (char const* name : kRunFiles) ::unlink((dir + "/" + name).c_str());  // a version-1 save's files
  else if (current)
    remove_generation(files_of(dir, was));
}

void save_generation_over_ranks(Communicator const& comm, std::string const& dir, std::string const& name,
                                std::string bytes, std::vector<GenerationFile> extra, std::string const& what) {
  std::vector<std::string> const parts = comm.gather(std::move(bytes));
  std::string refused;
  if (comm.rank() == 0) try {
      std::vector<GenerationFile> files = {
          {name, [&](std::string const& path) { write_atomically(path, parts[0]); }}};
      for (auto& f : extra) files.push_back(std::move(f));
      for (std::size_t r = 1; r < parts.size(); ++r)
        files.push_back({"rank-" + std::to_string(r) + ".ckpt",
                         [&, r](std::string const& path) { write_atomically(path, parts[r]); }});
      save_generation(dir, files);
    } catch (std::exception const& e) {
      refused = e.what();
    }
  if (comm.any(!refused.empty()))
    throw Error(comm.rank() == 0 ? refused
                                 : dir + ": rank 0 could not save the " + what + " (its error names the reason)");
}

void save_run_directory(ExecSpace const& space, std::string const& dir, Trainer const& trainer,
                        ReplayBuffer const* buffer, RunDirectoryState const& state) {
  save_generation(dir,
                  {{"model.ckpt", [&](std::string const& path) { trainer.save(space, path); }},
                   {"state.bin",
                    [&](std::string const& path) {
                      ReplayBuffer::Rows const rows = buffer ? buffer->download(space) : ReplayBuffer::Rows{};
                      write_checkpoint(path, state_checkpoint(buffer, rows, state));
                    }},
                   {"config.yaml", [&](std::string const& path) { write_atomically(path, state.config_text); }}});
}

RunConfig RunDirectory::restorable_into(std::string const& model, std::int64_t buffer_capacity,
                                        std::string const& whose) const {
  RunConfig const config = run_config(checkpoint, checkpoint_path);
  ModelPlan const plan = Model::plan(config.model, 1);
  KTR_REQUIRE(plan.description == Model::plan(model, 1).description, checkpoint_path,
              "holds the model '" + config.model + "', " + whose + " says '" + model + "'");
  RunDirectoryState const& st = state;
  if (st.has_buffer)
    KTR_REQUIRE(st.buffer_capacity == buffer_capacity && st.buffer_task == config.task &&
                    st.buffer_sample == plan.input.size() && st.buffer_width == plan.output_width,
                state_path,
                "holds a replay buffer of " + std::to_string(st.buffer_capacity) + " samples of " +
                    std::to_string(st.buffer_sample) + " values and " + std::to_string(st.buffer_width) +
                    " targets; the model needs " + std::to_string(buffer_capacity) + " of " +
                    std::to_string(plan.input.size()) + " and " + std::to_string(plan.output_width));
  return config;
}

Generation read_generation(std::string const& dir, std::vector<std::string> const& only) {
  std::string const manifest = dir + "/" + kManifest;
  KTR_REQUIRE(exists(manifest), dir,
              "is not a ktr checkpoint directory (no ktr-manifest: not one, or its first save was cut short)");
  Manifest const m = parse_manifest(manifest, read_regular_file(manifest));
  Generation g;
  g.folder = files_of(dir, m.generation);
  for (auto const& [name, entry] : m.files) {
    std::string const path = g.folder + "/" + name;
    struct stat st {};
    KTR_REQUIRE(::lstat(path.c_str(), &st) == 0 && std::int64_t(st.st_size) == entry.size, path,
                "is missing or not the size the manifest lists: refusing the directory");
    g.names.insert(name);
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    std::string& bytes = g.files[name] = read_regular_file(path);  // at most the host memory available
    KTR_REQUIRE(std::int64_t(bytes.size()) == entry.size && crc_of(bytes) == entry.crc, path,
                "does not match the manifest (the file changed after the save): refusing the directory");
  }
  return g;
}

RunDirectory read_run_directory(std::string const& dir) {
  Generation g = read_generation(dir);
  KTR_REQUIRE(
      g.files.count("model.ckpt") == 1, dir,
      "holds a reinforcement-learning system, not a model's run (torchfort_rl_*_load_checkpoint reads it)");
  RunDirectory r;
  r.checkpoint_path = g.folder + "/model.ckpt";
  r.checkpoint = parse_checkpoint(r.checkpoint_path, g.files["model.ckpt"]);
  r.state_path = g.folder + "/state.bin";
  r.state = parse_state(r.state_path, parse_checkpoint(r.state_path, g.files["state.bin"]));
  r.state.config_text = g.files["config.yaml"];
  return r;
}

}  // namespace ktr
