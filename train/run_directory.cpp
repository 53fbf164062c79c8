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
#include <set>
#include <sstream>

namespace ktr {

namespace {

char const* const kManifest = "ktr-manifest";
char const* const kManifestMagic = "ktr-run-directory 1";
char const* const kFiles[] = {"model.ckpt", "state.bin", "config.yaml"};

struct Listed {
  std::int64_t size;
  std::uint32_t crc;
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
std::map<std::string, Listed> parse_manifest(std::string const& path, std::string const& text) {
  std::istringstream in(text);
  std::string line;
  KTR_REQUIRE(std::getline(in, line) && line == kManifestMagic, path, "is not a ktr manifest");
  std::map<std::string, Listed> files;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string name, size, crc, extra;
    KTR_REQUIRE(f >> name >> size >> crc && !(f >> extra), path, "has a malformed line");
    KTR_REQUIRE(std::count(std::begin(kFiles), std::end(kFiles), name) == 1 && files.count(name) == 0, path,
                "lists an unexpected or repeated file");
    std::int64_t s = 0, c = 0;
    KTR_REQUIRE(parse_integer(size, 0, std::int64_t(1) << 50, s) && parse_integer(crc, 0, 0xffffffffll, c), path,
                "has a malformed size or checksum");
    files[name] = Listed{s, std::uint32_t(c)};
  }
  KTR_REQUIRE(files.count("model.ckpt") && files.count("state.bin") && files.count("config.yaml"), path,
              "does not list every file of a run");
  return files;
}

bool exists(std::string const& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Where a save may write: makes `dir` if it does not exist (returns true then), accepts an empty folder or one
// holding a ktr manifest whose names cover every ktr file present; throws otherwise.
bool prepare(std::string const& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    KTR_REQUIRE(errno == ENOENT, dir, std::string("cannot use the checkpoint directory: ") + std::strerror(errno));
    KTR_REQUIRE(::mkdir(dir.c_str(), 0777) == 0, dir,
                std::string("cannot create the checkpoint directory: ") + std::strerror(errno));
    return true;
  }
  KTR_REQUIRE(S_ISDIR(st.st_mode), dir, "exists and is not a directory");
  std::string const manifest = dir + "/" + kManifest;
  if (exists(manifest)) {  // a previous save's (checked as one): every one of ktr's names is ktr's to replace
    parse_manifest(manifest, read_regular_file(manifest));
    return false;
  }
  for (char const* name : kFiles)
    KTR_REQUIRE(!exists(dir + "/" + name), dir,
                std::string("holds a ") + name + " that is not ktr's (no ktr manifest): refusing to replace it");
  return false;
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

std::int64_t header_int(Checkpoint const& c, std::string const& path, std::string const& key, std::int64_t lo,
                        std::int64_t hi) {
  std::int64_t v = 0;
  KTR_REQUIRE(c.has(key) && parse_integer(c.get(key), lo, hi, v), path,
              "field '" + key + "' is missing or out of range");
  return v;
}

RunDirectoryState parse_state(std::string const& path, Checkpoint const& c) {
  KTR_REQUIRE(c.has("kind") && c.get("kind") == "ktr-api-state", path, "is not a ktr API state file");
  RunDirectoryState s;
  std::int64_t constexpr big = std::int64_t(1) << 40;
  s.inference_calls = header_int(c, path, "inference_calls", 0, big);
  s.has_buffer = header_int(c, path, "buffer", 0, 1) == 1;
  if (!s.has_buffer) {
    KTR_REQUIRE(c.buffers.empty(), path, "holds buffers it does not describe");
    return s;
  }
  s.buffer_capacity = header_int(c, path, "capacity", 1, big);
  s.buffer_sample = header_int(c, path, "sample", 1, big);
  s.buffer_width = header_int(c, path, "width", 1, big);
  KTR_REQUIRE(c.has("task") && (c.get("task") == "regression" || c.get("task") == "classification"), path,
              "field 'task' is missing or unknown");
  s.buffer_task = c.get("task") == "regression" ? Task::regression : Task::classification;
  s.buffer.head = header_int(c, path, "head", 0, s.buffer_capacity - 1);
  s.buffer.filled = header_int(c, path, "filled", 0, s.buffer_capacity);
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

void save_run_directory(ExecSpace const& space, std::string const& dir, Trainer const& trainer,
                        ReplayBuffer const* buffer, RunDirectoryState const& state) {
  KTR_REQUIRE(!dir.empty(), "checkpoint directory", "is empty");
  bool const made = prepare(dir);
  std::string const manifest = dir + "/" + kManifest;
  try {
    ReplayBuffer::Rows const rows = buffer ? buffer->download(space) : ReplayBuffer::Rows{};
    Checkpoint const st = state_checkpoint(buffer, rows, state);
    KTR_REQUIRE(::unlink(manifest.c_str()) == 0 || errno == ENOENT, manifest,
                std::string("cannot remove the old manifest: ") + std::strerror(errno));
    trainer.save(space, dir + "/model.ckpt");  // refuses non-finite values, replaces only a ktr checkpoint
    write_checkpoint(dir + "/state.bin", st);
    write_atomically(dir + "/config.yaml", state.config_text);
    std::string text = std::string(kManifestMagic) + "\n";
    for (char const* name : kFiles) {
      std::string const bytes = read_regular_file(dir + "/" + name);
      text += std::string(name) + " " + std::to_string(bytes.size()) + " " + std::to_string(crc_of(bytes)) + "\n";
    }
    write_atomically(manifest, text);  // last: the directory is a checkpoint from here on
  } catch (...) {
    if (made) {
      for (char const* name : kFiles) ::unlink((dir + "/" + name).c_str());
      ::rmdir(dir.c_str());  // only if nothing else is in it
    }
    throw;
  }
}

RunDirectory read_run_directory(std::string const& dir) {
  std::string const manifest = dir + "/" + kManifest;
  KTR_REQUIRE(exists(manifest), dir,
              "is not a ktr checkpoint directory (no ktr-manifest: not one, or incomplete)");
  std::map<std::string, Listed> const listed = parse_manifest(manifest, read_regular_file(manifest));
  std::map<std::string, std::string> bytes;
  for (auto const& [name, entry] : listed) {
    std::string const path = dir + "/" + name;
    struct stat st {};
    KTR_REQUIRE(::lstat(path.c_str(), &st) == 0 && std::int64_t(st.st_size) == entry.size, path,
                "is missing or not the size the manifest lists: refusing the directory");
    bytes[name] = read_regular_file(path);  // at most the host memory available
    KTR_REQUIRE(std::int64_t(bytes[name].size()) == entry.size && crc_of(bytes[name]) == entry.crc, path,
                "does not match the manifest (a save was cut short, or the file changed): refusing the directory");
  }
  RunDirectory r;
  r.checkpoint_path = dir + "/model.ckpt";
  r.checkpoint = parse_checkpoint(r.checkpoint_path, bytes["model.ckpt"]);
  r.state = parse_state(dir + "/state.bin", parse_checkpoint(dir + "/state.bin", bytes["state.bin"]));
  r.state.config_text = bytes["config.yaml"];
  return r;
}

}  // namespace ktr
