// .npy parsing: the header is a small Python dict literal; only the three keys NumPy writes are accepted.
#include "npy.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/file.hpp"
#include "../core/parse.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace ktr {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMaxHeader = 1 << 20;

// A cursor over the header text with the few token kinds a NumPy header uses.
class HeaderParser {
 public:
  HeaderParser(std::string const& name, std::string text) : name_(name), s_(std::move(text)) {}

  void expect(char c) {
    skip();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool accept(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::string quoted() {
    skip();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a quoted string");
    char const q = s_[pos_++];
    std::size_t const end = s_.find(q, pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return v;
  }
  bool boolean() {
    skip();
    if (s_.compare(pos_, 4, "True") == 0) return pos_ += 4, true;
    if (s_.compare(pos_, 5, "False") == 0) return pos_ += 5, false;
    fail("expected True or False");
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> dims;
    while (!accept(')')) {
      skip();
      std::size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_ || pos_ - start > 18) fail("bad extent in the shape");
      std::int64_t extent = 0;
      if (!parse_integer(s_.substr(start, pos_ - start), 0, INT64_MAX, extent)) fail("bad extent in the shape");
      dims.push_back(extent);
      if (dims.size() > 32) fail("too many dimensions");
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  void end() {
    skip();
    if (pos_ != s_.size()) fail("unexpected text after the header dictionary");
  }
  [[noreturn]] void fail(std::string const& why) const {
    throw Error(name_ + ": malformed .npy header (" + why + ")");
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::string const& name_;
  std::string s_;
  std::size_t pos_ = 0;
};

double load(char kind, int size, char const* p) {
  auto get = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (kind) {
    case 'f':
      if (size == 4) return get(float{});
      if (size == 8) return get(double{});
      {  // IEEE half
        std::uint16_t const h = get(std::uint16_t{});
        int const e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double const v = e == 0    ? std::ldexp(m, -24)
                         : e == 31 ? (m ? NAN : INFINITY)
                                   : std::ldexp(m + 1024, e - 25);
        return (h & 0x8000) ? -v : v;
      }
    case 'i':
      if (size == 1) return get(std::int8_t{});
      if (size == 2) return get(std::int16_t{});
      if (size == 4) return get(std::int32_t{});
      return double(get(std::int64_t{}));
    case 'u':
      if (size == 1) return get(std::uint8_t{});
      if (size == 2) return get(std::uint16_t{});
      if (size == 4) return get(std::uint32_t{});
      return double(get(std::uint64_t{}));
    default:
      return get(std::uint8_t{}) ? 1.0 : 0.0;
  }
}

template <class T>
void write_array(std::string const& path, std::vector<std::int64_t> const& shape, std::vector<T> const& values,
                 char const* descr) {
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.erase(dims.size() - 1);  // (N,) for one dimension, (N, D) otherwise
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  std::size_t const total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::uint16_t const len = std::uint16_t(header.size());
  std::string bytes(kMagic, 6);
  bytes += char(1), bytes += char(0);
  bytes.append(reinterpret_cast<char const*>(&len), 2);
  bytes += header;
  bytes.append(reinterpret_cast<char const*>(values.data()), values.size() * sizeof(T));
  write_atomically(path, bytes);  // an exclusive temporary of an unpredictable name, renamed into place
}

}  // namespace

NpyArray parse_npy(std::string const& name, std::string const& bytes) {
  KTR_REQUIRE(bytes.size() >= 10 && bytes.compare(0, 6, kMagic, 6) == 0, name, "not a .npy file (bad magic)");
  int const major = static_cast<unsigned char>(bytes[6]);
  KTR_REQUIRE(major >= 1 && major <= 3, name,
              ".npy format version " + std::to_string(major) + "." + std::to_string(int(std::uint8_t(bytes[7]))) +
                  " (this reader knows 1.0, 2.0 and 3.0)");
  std::size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = std::size_t(std::uint8_t(bytes[8])) | std::size_t(std::uint8_t(bytes[9])) << 8;
    at = 10;
  } else {
    KTR_REQUIRE(bytes.size() >= 12, name, "truncated .npy header");
    for (int i = 0; i < 4; ++i) header_len |= std::size_t(std::uint8_t(bytes[8 + i])) << (8 * i);
    at = 12;
  }
  KTR_REQUIRE(header_len <= kMaxHeader && header_len <= bytes.size() - at, name,
              "truncated .npy header (" + std::to_string(header_len) + " bytes announced)");
  HeaderParser p(name, bytes.substr(at, header_len));
  at += header_len;
  NpyArray a;
  bool seen_descr = false, seen_order = false, seen_shape = false, fortran = false;
  p.expect('{');
  while (!p.accept('}')) {
    std::string const key = p.quoted();
    p.expect(':');
    if (key == "descr" && !seen_descr) {
      a.descr = p.quoted(), seen_descr = true;
    } else if (key == "fortran_order" && !seen_order) {
      fortran = p.boolean(), seen_order = true;
    } else if (key == "shape" && !seen_shape) {
      a.shape = p.tuple(), seen_shape = true;
    } else {
      p.fail("unexpected or repeated key '" + escaped(key) + "'");
    }
    if (!p.accept(',')) {
      p.expect('}');
      break;
    }
  }
  p.end();
  KTR_REQUIRE(seen_descr && seen_order && seen_shape, name, "the header lacks descr, fortran_order or shape");
  KTR_REQUIRE(!fortran, name, "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  std::string const& d = a.descr;
  KTR_REQUIRE(d.size() >= 3 && (d[0] == '<' || d[0] == '|' || d[0] == '='), name,
              "dtype '" + escaped(d) + "' is not supported" + (d.size() && d[0] == '>' ? " (big-endian)" : ""));
  a.kind = d[1];
  std::string const size_text = d.substr(2);
  KTR_REQUIRE(size_text == "1" || size_text == "2" || size_text == "4" || size_text == "8", name,
              "dtype '" + escaped(d) + "' is not supported");
  a.itemsize = size_text[0] - '0';  // one digit, checked above
  bool const ok =
      (a.kind == 'f' && a.itemsize >= 2) || a.kind == 'i' || a.kind == 'u' || (a.kind == 'b' && a.itemsize == 1);
  KTR_REQUIRE(ok, name, "dtype '" + escaped(d) + "' is not supported (numbers only: float, int, uint, bool)");
  KTR_REQUIRE(a.itemsize == 1 || d[0] != '|', name, "dtype '" + escaped(d) + "' has no byte order");
  std::int64_t n = 1;
  for (auto e : a.shape) n = checked_mul(n, e, name.c_str());
  std::int64_t const payload = checked_mul(n, a.itemsize, name.c_str());
  std::size_t const have = bytes.size() - at;
  KTR_REQUIRE(std::uint64_t(payload) <= have, name,
              "truncated .npy data: the header announces " + std::to_string(payload) + " bytes, the file has " +
                  std::to_string(have));
  KTR_REQUIRE(std::uint64_t(payload) == have, name,
              std::to_string(have - std::size_t(payload)) + " bytes after the .npy data");
  a.values.resize(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i)
    a.values[std::size_t(i)] = load(a.kind, a.itemsize, &bytes[at + std::size_t(i * a.itemsize)]);
  return a;
}

NpyArray read_npy(std::string const& path) { return parse_npy(path, read_regular_file(path)); }

void write_npy(std::string const& path, std::vector<std::int64_t> const& shape, std::vector<float> const& values) {
  write_array(path, shape, values, "<f4");
}

void write_npy(std::string const& path, std::vector<std::int64_t> const& shape,
               std::vector<std::int32_t> const& values) {
  write_array(path, shape, values, "<i4");
}

}  // namespace ktr
