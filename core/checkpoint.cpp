// Checkpoint file format: write to a temporary name and rename; validate everything on read.
#include "core/checkpoint.hpp"

#include "core/error.hpp"

#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace ktr {

namespace {

constexpr char kMagic[8] = {'K', 'T', 'R', 'C', 'K', 'P', 'T', '1'};
constexpr std::uint32_t kVersion = 1;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<char const*>(&value), sizeof(T));
}

class Reader {
 public:
  Reader(std::string const& path, std::string const& data) : path_(path), data_(data) {}
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

 private:
  void need(std::size_t n, char const* what) {
    if (data_.size() - pos_ < n) throw Error(path_ + ": truncated checkpoint (while reading " + what + ")");
  }
  std::string const& path_;
  std::string const& data_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string const& Checkpoint::get(std::string const& key) const {
  auto it = header.find(key);
  if (it == header.end()) throw Error("checkpoint: missing header field '" + key + "'");
  return it->second;
}

void write_checkpoint(std::string const& path, Checkpoint const& ckpt) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  std::string header;
  for (auto const& [k, v] : ckpt.header) {
    KTR_REQUIRE(k.find_first_of("=\n") == std::string::npos && v.find('\n') == std::string::npos, path,
                "header field '" + k + "' cannot be stored");
    header += k + "=" + v + "\n";
  }
  put(out, static_cast<std::uint32_t>(header.size()));
  out += header;
  put(out, static_cast<std::uint64_t>(ckpt.buffers.size()));
  for (auto const& b : ckpt.buffers) {
    put(out, static_cast<std::uint64_t>(b.size()));
    out.append(reinterpret_cast<char const*>(b.data()), b.size() * sizeof(float));
  }
  put(out, static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<Bytef const*>(out.data()), uInt(out.size()))));

  std::string const tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  KTR_REQUIRE(fd >= 0, path, std::string("cannot create temporary file: ") + std::strerror(errno));
  std::size_t written = 0;
  while (written < out.size()) {
    ssize_t n = ::write(fd, out.data() + written, out.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int const err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(path + ": write failed: " + std::strerror(err));
    }
    written += std::size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int const err = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": flush failed: " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int const err = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": rename failed: " + std::strerror(err));
  }
}

Checkpoint read_checkpoint(std::string const& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  KTR_REQUIRE(f != nullptr, path, std::string("cannot open checkpoint: ") + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  bool const failed = std::ferror(f);
  std::fclose(f);
  KTR_REQUIRE(!failed, path, "read error");
  KTR_REQUIRE(data.size() >= sizeof kMagic && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0, path,
              "not a ktr checkpoint (bad magic)");
  KTR_REQUIRE(data.size() >= sizeof kMagic + 8, path, "truncated checkpoint (header)");
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + data.size() - 4, 4);
  std::uint32_t const crc =
      std::uint32_t(crc32(0L, reinterpret_cast<Bytef const*>(data.data()), uInt(data.size() - 4)));

  Reader r(path, data);
  r.bytes(sizeof kMagic, "magic");
  auto const version = r.get<std::uint32_t>("version");
  KTR_REQUIRE(
      version == kVersion, path,
      "checkpoint version " + std::to_string(version) + ", this ktr reads version " + std::to_string(kVersion));
  auto const header_bytes = r.get<std::uint32_t>("header size");
  KTR_REQUIRE(header_bytes <= data.size(), path,
              "truncated checkpoint (header size " + std::to_string(header_bytes) + " exceeds the file)");
  // Sizes can only be trusted after the CRC: check it before walking the buffers.
  KTR_REQUIRE(crc == stored_crc, path, "checksum mismatch: the checkpoint is corrupt or truncated");
  Checkpoint ckpt;
  std::istringstream header(r.bytes(header_bytes, "header"));
  std::string line;
  while (std::getline(header, line)) {
    auto eq = line.find('=');
    KTR_REQUIRE(eq != std::string::npos, path, "malformed header line '" + line + "'");
    ckpt.header[line.substr(0, eq)] = line.substr(eq + 1);
  }
  auto const count = r.get<std::uint64_t>("buffer count");
  KTR_REQUIRE(count < 64, path, "implausible buffer count " + std::to_string(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    auto const floats = r.get<std::uint64_t>("buffer size");
    KTR_REQUIRE(floats <= (data.size() - r.pos()) / sizeof(float), path, "truncated checkpoint (buffer data)");
    std::string const raw = r.bytes(floats * sizeof(float), "buffer data");
    ckpt.buffers.emplace_back(floats);
    std::memcpy(ckpt.buffers.back().data(), raw.data(), raw.size());
  }
  KTR_REQUIRE(r.pos() + 4 == data.size(), path, "trailing bytes after the last buffer");
  return ckpt;
}

std::vector<float> download(DeviceView<float*> const& v) {
  std::vector<float> out(v.extent(0));
  Kokkos::deep_copy(HostView<float*>(out.data(), out.size()), v);
  return out;
}

void upload(DeviceView<float*> const& v, std::vector<float> const& values, std::string const& what) {
  KTR_REQUIRE(
      values.size() == v.extent(0), what,
      "holds " + std::to_string(values.size()) + " values, the model needs " + std::to_string(v.extent(0)));
  Kokkos::deep_copy(v, HostView<const float*>(values.data(), values.size()));
}

}  // namespace ktr
