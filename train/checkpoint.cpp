// Checkpoint file format: write to a temporary name and rename; validate everything on read.
#include "checkpoint.hpp"

#include "../core/error.hpp"
#include "../core/file.hpp"
#include "../core/parse.hpp"

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace ktr {

namespace {

constexpr char kCheckpointMagic[8] = {'K', 'T', 'R', 'C', 'K', 'P', 'T', '1'};
constexpr std::uint32_t kCheckpointMaxHeader = 1u << 20;
constexpr std::uint64_t kMaxBuffers = 64;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<char const*>(&value), sizeof(T));
}

// CRC-32 of any number of bytes (zlib's crc32 takes a uInt length: feed it in pieces).
std::uint32_t crc_of(char const* data, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt const piece = uInt(std::min<std::size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<Bytef const*>(data), piece);
    data += piece, n -= piece;
  }
  return std::uint32_t(crc);
}

class Reader {
 public:
  Reader(std::string const& name, std::string const& data) : name_(name), data_(data) {}
  template <class T>
  T get(char const* what) {
    T value;
    need(sizeof(T), what);
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string bytes(std::size_t n, char const* what) {
    need(n, what);
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::size_t pos() const { return pos_; }
  std::size_t left() const { return data_.size() - pos_; }

 private:
  void need(std::size_t n, char const* what) {
    if (left() < n) throw Error(name_ + ": truncated checkpoint (while reading " + what + ")");
  }
  std::string const& name_;
  std::string const& data_;
  std::size_t pos_ = 0;
};

// Closes a file descriptor on every path out of a scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// True if the file at `path` starts with the checkpoint magic.
bool has_magic(std::string const& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) return false;
  char head[sizeof kCheckpointMagic];
  return ::read(f.fd, head, sizeof head) == ssize_t(sizeof head) &&
         std::memcmp(head, kCheckpointMagic, sizeof kCheckpointMagic) == 0;
}

}  // namespace

std::string const& Checkpoint::get(std::string const& key) const {
  auto it = header.find(key);
  if (it == header.end()) throw Error("checkpoint: missing header field '" + key + "'");
  return it->second;
}

void check_checkpoint_target(std::string const& path, std::string const& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw Error(what + " " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) || !has_magic(path))
    throw Error(what + " " + path + ": exists and is not a ktr checkpoint; refusing to replace it");
}

void check_checkpoint_output(std::string const& path, std::string const& what) {
  check_output_path(path, what);  // first: "is a folder" says more than "is not a ktr checkpoint"
  check_checkpoint_target(path, what);
}

void write_checkpoint(std::string const& path, Checkpoint const& ckpt) {
  check_checkpoint_target(path, "checkpoint");
  write_atomically(path, checkpoint_bytes(path, ckpt));  // flushed to the disk, then renamed into place
}

std::int64_t header_integer(Checkpoint const& c, std::string const& path, std::string const& key, std::int64_t lo,
                            std::int64_t hi) {
  std::int64_t v = 0;
  KTR_REQUIRE(c.has(key) && parse_integer(c.get(key), lo, hi, v), path,
              "field '" + key + "' is missing or out of range");
  return v;
}

std::string checkpoint_bytes(std::string const& path, Checkpoint const& ckpt) {
  std::string out(kCheckpointMagic, sizeof kCheckpointMagic);
  put(out, Checkpoint::current_version);
  std::string header;
  for (auto const& [k, v] : ckpt.header) {
    KTR_REQUIRE(!k.empty() && k.find_first_of("=\n") == std::string::npos && v.find('\n') == std::string::npos,
                path, "header field '" + k + "' cannot be stored");
    header += k + "=" + v + "\n";
  }
  KTR_REQUIRE(header.size() <= kCheckpointMaxHeader, path, "header too large");
  KTR_REQUIRE(ckpt.buffers.size() < kMaxBuffers, path, "too many buffers");
  put(out, static_cast<std::uint32_t>(header.size()));
  out += header;
  put(out, static_cast<std::uint64_t>(ckpt.buffers.size()));
  for (auto const& b : ckpt.buffers) {
    put(out, static_cast<std::uint64_t>(b.size()));
    out.append(reinterpret_cast<char const*>(b.data()), b.size() * sizeof(float));
  }
  put(out, crc_of(out.data(), out.size()));
  return out;
}

Checkpoint read_checkpoint(std::string const& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  KTR_REQUIRE(f.fd >= 0, path, std::string("cannot open checkpoint: ") + std::strerror(errno));
  struct stat st {};
  KTR_REQUIRE(::fstat(f.fd, &st) == 0, path, std::string("cannot stat: ") + std::strerror(errno));
  // The magic first: a device, a directory or any other file is refused before a byte more is read.
  char head[sizeof kCheckpointMagic];
  ssize_t const got = ::read(f.fd, head, sizeof head);
  KTR_REQUIRE(got == ssize_t(sizeof head) && std::memcmp(head, kCheckpointMagic, sizeof kCheckpointMagic) == 0,
              path, "not a ktr checkpoint (bad magic)");
  KTR_REQUIRE(S_ISREG(st.st_mode), path, "not a regular file");
  std::int64_t const room = host_memory_available();
  KTR_REQUIRE(room < 0 || std::int64_t(st.st_size) <= room, path,
              std::to_string(std::int64_t(st.st_size)) + " bytes, more than the host memory available (" +
                  std::to_string(room) + ")");
  // Read exactly the file's size: every later size is checked against these bytes.
  std::string data(head, sizeof head);
  data.resize(std::size_t(st.st_size) > data.size() ? std::size_t(st.st_size) : data.size());
  std::size_t have = sizeof head;
  while (have < data.size()) {
    ssize_t const n = ::read(f.fd, &data[have], data.size() - have);
    if (n < 0 && errno == EINTR) continue;
    KTR_REQUIRE(n >= 0, path, std::string("read error: ") + std::strerror(errno));
    if (n == 0) break;  // shrank while we read
    have += std::size_t(n);
  }
  data.resize(have);
  return parse_checkpoint(path, data);
}

Checkpoint parse_checkpoint(std::string const& name, std::string const& data) {
  KTR_REQUIRE(data.size() >= sizeof kCheckpointMagic &&
                  std::memcmp(data.data(), kCheckpointMagic, sizeof kCheckpointMagic) == 0,
              name, "not a ktr checkpoint (bad magic)");
  Reader r(name, data);
  r.bytes(sizeof kCheckpointMagic, "magic");
  Checkpoint ckpt;
  ckpt.version = r.get<std::uint32_t>("version");
  KTR_REQUIRE(ckpt.version >= 1 && ckpt.version <= Checkpoint::current_version, name,
              "checkpoint format version " + std::to_string(ckpt.version) + ", this ktr reads versions 1 to " +
                  std::to_string(Checkpoint::current_version));
  auto const header_bytes = r.get<std::uint32_t>("header size");
  KTR_REQUIRE(header_bytes <= kCheckpointMaxHeader && header_bytes <= r.left(), name,
              "truncated checkpoint (header size " + std::to_string(header_bytes) + " exceeds the file)");
  KTR_REQUIRE(data.size() >= r.pos() + 4, name, "truncated checkpoint (no checksum)");
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + data.size() - 4, 4);
  // Sizes can only be trusted after the CRC: check it before walking the buffers.
  KTR_REQUIRE(crc_of(data.data(), data.size() - 4) == stored_crc, name,
              "checksum mismatch: the checkpoint is corrupt or truncated");
  std::istringstream header(r.bytes(header_bytes, "header"));
  std::string line;
  while (std::getline(header, line)) {
    auto eq = line.find('=');
    KTR_REQUIRE(eq != std::string::npos && eq > 0, name, "malformed header line '" + escaped(line) + "'");
    ckpt.header[line.substr(0, eq)] = line.substr(eq + 1);
  }
  auto const count = r.get<std::uint64_t>("buffer count");
  KTR_REQUIRE(count < kMaxBuffers, name, "implausible buffer count " + std::to_string(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    auto const floats = r.get<std::uint64_t>("buffer size");
    KTR_REQUIRE(floats <= r.left() / sizeof(float), name, "truncated checkpoint (buffer data)");
    std::string const raw = r.bytes(floats * sizeof(float), "buffer data");
    ckpt.buffers.emplace_back(floats);
    if (floats > 0) std::memcpy(ckpt.buffers.back().data(), raw.data(), raw.size());
  }
  KTR_REQUIRE(r.pos() + 4 == data.size(), name, "trailing bytes after the last buffer");
  return ckpt;
}

}  // namespace ktr
