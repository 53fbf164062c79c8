// IDX reading: a sequential byte source (stdio, or zlib's gz* for gzip streams) under one parser that checks the
// header, reads exactly the payload the header announces and then drains the source, so that a gzip stream is
// always read to its end and its CRC and length trailer verified before anything is returned.
#include "idx.hpp"

#include "../core/error.hpp"
#include "../core/file.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

namespace ktr {
namespace {

constexpr std::int64_t kMaxRowsCols = 4096;
// The most payload bytes a header may announce: far beyond any real IDX file, and small enough for size_t.
constexpr std::int64_t kMaxPayload =
    static_cast<std::int64_t>(std::min<std::uint64_t>(std::uint64_t(1) << 40, PTRDIFF_MAX));
// The payload is read in steps of at least this many bytes (growing with what was read), so a header that lies
// about its size costs no more memory than the data actually there.
constexpr std::size_t kReadStep = std::size_t(64) << 20;
constexpr unsigned kGzBuffer = 1u << 20;
constexpr unsigned kMaxGzRead = 1u << 30;

std::string hex(std::uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, static_cast<unsigned>(value));
  return buf;
}

std::string os_error() { return std::strerror(errno); }

// A file read front to back, plainly or through zlib when it starts with the gzip magic bytes 1f 8b.
class Source {
 public:
  explicit Source(std::string const& path) : path_(path) {
    errno = 0;
    file_ = std::fopen(path.c_str(), "rb");
    KTR_REQUIRE(file_ != nullptr, path_, "cannot open (" + os_error() + ")");
    std::array<unsigned char, 2> magic{};
    std::size_t const n = std::fread(magic.data(), 1, magic.size(), file_);
    if (std::ferror(file_)) {
      std::string const why = os_error();
      std::fclose(file_);
      throw Error(path_ + ": cannot read (" + why + ")");
    }
    if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      std::fclose(file_);
      file_ = nullptr;
      errno = 0;
      gz_ = gzopen(path.c_str(), "rb");
      KTR_REQUIRE(gz_ != nullptr, path_, "cannot open (" + os_error() + ")");
      gzbuffer(gz_, kGzBuffer);
    } else {
      std::rewind(file_);
    }
  }
  Source(Source const&) = delete;
  Source& operator=(Source const&) = delete;
  ~Source() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }

  /// Reads up to `n` bytes; fewer only at the end of the data. Throws on a read error or a corrupt gzip stream.
  std::size_t read(void* buf, std::size_t n) {
    if (file_) {
      std::size_t const got = std::fread(buf, 1, n, file_);
      if (got < n && std::ferror(file_)) throw Error(path_ + ": read error (" + os_error() + ")");
      return got;
    }
    auto* out = static_cast<unsigned char*>(buf);
    std::size_t total = 0;
    while (total < n) {
      unsigned const want = static_cast<unsigned>(std::min<std::size_t>(n - total, kMaxGzRead));
      int const got = gzread(gz_, out + total, want);
      if (got < 0) gz_fail();
      total += static_cast<std::size_t>(got);
      if (static_cast<unsigned>(got) < want) {
        int err = Z_OK;
        gzerror(gz_, &err);
        if (err != Z_OK) gz_fail();  // Z_BUF_ERROR: the compressed stream ends early
        break;
      }
    }
    return total;
  }

  /// Closes the file; for gzip, fails if zlib reports any error at close.
  void finish() {
    if (file_) {
      std::fclose(file_);
      file_ = nullptr;
    }
    if (gz_) {
      int const rc = gzclose(gz_);
      gz_ = nullptr;
      KTR_REQUIRE(rc == Z_OK, path_, "corrupt gzip stream (gzclose returned " + std::to_string(rc) + ")");
    }
  }

 private:
  [[noreturn]] void gz_fail() {
    int err = Z_OK;
    std::string msg = gzerror(gz_, &err);
    if (msg.rfind(path_ + ": ", 0) == 0) msg.erase(0, path_.size() + 2);  // zlib prefixes the path
    if (err == Z_ERRNO) throw Error(path_ + ": read error (" + os_error() + ")");
    throw Error(path_ + ": corrupt gzip stream (" + msg + ")");
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
};

std::uint32_t big_endian(unsigned char const* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

std::string describe(std::vector<std::int64_t> const& extents) {
  std::string s;
  for (std::size_t i = 0; i < extents.size(); ++i) s += (i ? " x " : "") + std::to_string(extents[i]);
  return s;
}

struct RawIdx {
  std::vector<std::int64_t> extents;
  std::vector<std::uint8_t> data;
};

// Reads a whole uint8 IDX file of the given rank, checking the header against the payload length.
RawIdx read_idx(std::string const& path, unsigned rank) {
  std::uint32_t const expected = 0x0800u | rank;
  Source src(path);

  std::array<unsigned char, 4 + 4 * 3> header{};
  std::size_t const header_bytes = 4 + 4 * std::size_t(rank);
  std::size_t const header_got = src.read(header.data(), header_bytes);
  std::string const too_short = "file too short for its header (" + std::to_string(header_got) + " bytes, need " +
                                std::to_string(header_bytes) + ")";
  KTR_REQUIRE(header_got >= 4, path, too_short);
  std::uint32_t const magic = big_endian(header.data());
  KTR_REQUIRE((magic >> 16) == 0, path,
              "wrong magic " + hex(magic, 8) + ", expected " + hex(expected, 8) + " (not an IDX file)");
  KTR_REQUIRE(
      ((magic >> 8) & 0xff) == 0x08, path,
      "wrong type code " + hex((magic >> 8) & 0xff, 2) + " in magic " + hex(magic, 8) + ", expected 0x08 (uint8)");
  KTR_REQUIRE((magic & 0xff) == rank, path,
              "wrong number of dimensions " + std::to_string(magic & 0xff) + " in magic " + hex(magic, 8) +
                  ", expected " + std::to_string(rank) + " (magic " + hex(expected, 8) + ")");
  KTR_REQUIRE(header_got == header_bytes, path, too_short);

  RawIdx raw;
  for (unsigned i = 0; i < rank; ++i) raw.extents.push_back(big_endian(header.data() + 4 + 4 * i));
  for (auto e : raw.extents) KTR_REQUIRE(e > 0, path, "zero dimension (" + describe(raw.extents) + ")");
  for (unsigned i = 1; i < rank; ++i)
    KTR_REQUIRE(raw.extents[i] <= kMaxRowsCols, path,
                "absurd dimensions (" + describe(raw.extents) + "): rows and cols must be at most " +
                    std::to_string(kMaxRowsCols));
  // Extents are below 2^32 and rows, cols at most 2^12: the product fits in 64 bits.
  std::int64_t total = 1;
  for (auto e : raw.extents) total *= e;
  KTR_REQUIRE(total <= kMaxPayload, path,
              "absurd dimensions (" + describe(raw.extents) + "): " + std::to_string(total) +
                  " bytes of data, limit " + std::to_string(kMaxPayload));

  std::size_t const want = static_cast<std::size_t>(total);
  std::size_t got = 0;
  while (got < want) {
    std::size_t const step = std::min(want - got, std::max(kReadStep, got));
    raw.data.resize(got + step);
    std::size_t const n = src.read(raw.data.data() + got, step);
    got += n;
    if (n < step) break;
  }
  // Drain the rest: counts trailing bytes and, for gzip, runs zlib's CRC and length checks at the stream's end.
  std::uint64_t extra = 0;
  std::vector<unsigned char> scratch(std::size_t(1) << 16);
  for (;;) {
    std::size_t const n = src.read(scratch.data(), scratch.size());
    extra += n;
    if (n < scratch.size()) break;
  }
  src.finish();
  KTR_REQUIRE(
      got == want, path,
      "truncated: header says " + std::to_string(want) + " bytes of data, file has " + std::to_string(got));
  KTR_REQUIRE(extra == 0, path,
              "trailing bytes: header says " + std::to_string(want) + " bytes of data, file has " +
                  std::to_string(got + extra));
  return raw;
}

// `<dir>/<name>` if it exists, else `<dir>/<name>.gz`, else an error naming what was looked for.
std::string find_idx_file(std::string const& dir, std::string const& name) {
  std::string const base = (std::filesystem::path(dir) / name).string();
  std::error_code ec;
  for (std::string const& candidate : {base, base + ".gz"})
    if (std::filesystem::exists(candidate, ec)) return candidate;
  bool const is_dir = std::filesystem::is_directory(dir, ec);
  throw Error(dir + ": no " + name + "[.gz]" + (is_dir ? "" : " (not a directory)"));
}

}  // namespace

IdxImages read_idx_images(std::string const& path) {
  RawIdx raw = read_idx(path, 3);
  IdxImages images;
  images.count = raw.extents[0];
  images.rows = raw.extents[1];
  images.cols = raw.extents[2];
  images.pixels = std::move(raw.data);
  return images;
}

IdxLabels read_idx_labels(std::string const& path, int num_classes) {
  KTR_REQUIRE(num_classes > 0, path, "num_classes must be positive, got " + std::to_string(num_classes));
  RawIdx raw = read_idx(path, 1);
  for (std::size_t i = 0; i < raw.data.size(); ++i)
    if (raw.data[i] >= num_classes)
      throw Error(path + ": label " + std::to_string(raw.data[i]) + " at index " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(num_classes) + ")");
  IdxLabels labels;
  labels.count = raw.extents[0];
  labels.labels = std::move(raw.data);
  return labels;
}

IdxSplit read_idx_split(std::string const& dir, std::string const& prefix, int num_classes) {
  KTR_REQUIRE(!prefix.empty(), dir, "empty split prefix (expected e.g. \"train\" or \"t10k\")");
  IdxSplit split;
  split.images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  split.labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  split.images = read_idx_images(split.images_path);
  split.labels = read_idx_labels(split.labels_path, num_classes);
  KTR_REQUIRE(split.images.count == split.labels.count, split.images_path,
              std::to_string(split.images.count) + " images but " + split.labels_path + " has " +
                  std::to_string(split.labels.count) + " labels");
  return split;
}

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xFF));
}

// `data` in the gzip format (level 6), in memory.
std::string gzip_bytes(std::string const& data, std::string const& path) {
  z_stream z{};
  KTR_REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, path,
              "cannot start gzip compression");
  std::string out(deflateBound(&z, uLong(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = uInt(out.size());
  int const status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  KTR_REQUIRE(status == Z_STREAM_END, path, "gzip compression failed");
  return out;
}

void write_idx(std::string const& path, std::uint32_t magic, std::vector<std::uint32_t> const& dims,
               std::vector<std::uint8_t> const& payload) {
  std::string data;
  put_be32(data, magic);
  for (auto d : dims) put_be32(data, d);
  data.append(reinterpret_cast<char const*>(payload.data()), payload.size());
  bool const gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  // Written whole through an exclusive temporary of an unpredictable name (write_atomically); gzip in memory.
  write_atomically(path, gz ? gzip_bytes(data, path) : data);
}

}  // namespace

void write_idx_images(std::string const& path, IdxImages const& images) {
  KTR_REQUIRE(std::int64_t(images.pixels.size()) == images.count * images.rows * images.cols, path,
              "pixel count does not match the dimensions");
  write_idx(path, 0x00000803u,
            {std::uint32_t(images.count), std::uint32_t(images.rows), std::uint32_t(images.cols)}, images.pixels);
}

void write_idx_labels(std::string const& path, IdxLabels const& labels) {
  KTR_REQUIRE(std::int64_t(labels.labels.size()) == labels.count, path, "label count does not match");
  write_idx(path, 0x00000801u, {std::uint32_t(labels.count)}, labels.labels);
}

}  // namespace ktr
