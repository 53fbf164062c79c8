// safetensors reading and writing, the JSON header through nlohmann::json.
#include "safetensors.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/file.hpp"
#include "../core/parse.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace ktr {

namespace {

constexpr std::uint64_t kSafetensorsMaxHeader = std::uint64_t(100) << 20;  // the format's own limit is 100 MB

int dtype_size(std::string const& dtype) {
  static std::map<std::string, int> const sizes{
      {"F64", 8}, {"F32", 4},  {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},  {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// A safetensors file by its whole header: the 8-byte size fits the file, the header is a JSON object whose every
// tensor names a known dtype, a shape and data offsets within the file's data (a YAML file beginning "params: {"
// is not one). Reads the header alone.
bool is_safetensors(std::string const& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  std::uint64_t const size = std::uint64_t(in.tellg());
  unsigned char head[8] = {};
  in.seekg(0);
  if (size < 10 || !in.read(reinterpret_cast<char*>(head), 8)) return false;
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(head[i]) << (8 * i);
  if (n < 2 || n > kSafetensorsMaxHeader || n > size - 8) return false;
  std::string text(std::size_t(n), '\0');
  if (!in.read(&text[0], std::streamsize(n))) return false;
  nlohmann::json const header = nlohmann::json::parse(text, nullptr, false);
  if (header.is_discarded() || !header.is_object()) return false;
  std::uint64_t const data_size = size - 8 - n;
  for (auto const& [key, value] : header.items()) {
    if (key == "__metadata__") continue;
    if (!value.is_object() || !value.contains("dtype") || !value["dtype"].is_string() ||
        dtype_size(value["dtype"].get<std::string>()) == 0 || !value.contains("shape") ||
        !value["shape"].is_array() || !value.contains("data_offsets") || !value["data_offsets"].is_array() ||
        value["data_offsets"].size() != 2)
      return false;
    auto const& o = value["data_offsets"];
    if (!o[0].is_number_unsigned() || !o[1].is_number_unsigned() ||
        o[0].get<std::uint64_t>() > o[1].get<std::uint64_t>() || o[1].get<std::uint64_t>() > data_size)
      return false;
  }
  return true;
}

}  // namespace

SafeTensors parse_safetensors(std::string const& name, std::string const& bytes) {
  KTR_REQUIRE(bytes.size() >= 8, name, "not a safetensors file (shorter than its 8-byte header size)");
  std::uint64_t header_bytes = 0;
  for (int i = 0; i < 8; ++i) header_bytes |= std::uint64_t(std::uint8_t(bytes[std::size_t(i)])) << (8 * i);
  KTR_REQUIRE(header_bytes >= 2 && header_bytes <= kSafetensorsMaxHeader && header_bytes <= bytes.size() - 8, name,
              "not a safetensors file (header size " + std::to_string(header_bytes) + " does not fit the file)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(header_bytes));
  } catch (nlohmann::json::exception const& e) {
    throw Error(name + ": malformed safetensors header (" + e.what() + ")");
  }
  KTR_REQUIRE(header.is_object(), name, "malformed safetensors header (not a JSON object)");
  std::size_t const data_at = 8 + std::size_t(header_bytes), data_size = bytes.size() - data_at;
  SafeTensors st;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto const& [key, value] : header.items()) {
    if (key == "__metadata__") {
      KTR_REQUIRE(value.is_object(), name, "__metadata__ must be an object of strings");
      for (auto const& [k, v] : value.items()) {
        KTR_REQUIRE(v.is_string(), name, "metadata '" + escaped(k) + "' is not a string");
        st.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    std::string const what = name + ": tensor '" + escaped(key) + "'";
    KTR_REQUIRE(
        value.is_object() && value.contains("dtype") && value.contains("shape") && value.contains("data_offsets"),
        what, "needs dtype, shape and data_offsets");
    auto const& dtype = value["dtype"];
    auto const& shape = value["shape"];
    auto const& offsets = value["data_offsets"];
    KTR_REQUIRE(dtype.is_string() && dtype_size(dtype.get<std::string>()) > 0, what, "unknown dtype");
    KTR_REQUIRE(shape.is_array() && shape.size() <= 16, what, "malformed shape");
    KTR_REQUIRE(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                    offsets[1].is_number_unsigned(),
                what, "malformed data_offsets");
    SafeTensor t;
    t.dtype = dtype.get<std::string>();
    std::int64_t n = 1;
    for (auto const& e : shape) {
      KTR_REQUIRE(e.is_number_unsigned() && e.get<std::uint64_t>() < (std::uint64_t(1) << 40), what,
                  "malformed shape");
      t.shape.push_back(e.get<std::int64_t>());
      n = checked_mul(n, t.shape.back(), what.c_str());
    }
    std::uint64_t const begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    KTR_REQUIRE(begin <= end && end <= data_size, what,
                "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") exceed the " +
                    std::to_string(data_size) + " data bytes (truncated file?)");
    KTR_REQUIRE(end - begin == std::uint64_t(checked_mul(n, dtype_size(t.dtype), what.c_str())), what,
                "holds " + std::to_string(end - begin) + " bytes, its dtype and shape need " +
                    std::to_string(n * dtype_size(t.dtype)));
    ranges.emplace_back(begin, end);
    if (t.dtype == "F32") {
      t.values.resize(std::size_t(n));
      if (n > 0) std::memcpy(t.values.data(), bytes.data() + data_at + begin, std::size_t(end - begin));
    }
    st.tensors.emplace(key, std::move(t));
  }
  // The tensors tile the data exactly: no overlap, no hole, nothing after the last one.
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t at = 0;
  for (auto const& [b, e] : ranges) {
    KTR_REQUIRE(b == at, name, "tensor data overlaps or leaves a hole at byte " + std::to_string(at));
    at = e;
  }
  KTR_REQUIRE(at == data_size, name, std::to_string(data_size - at) + " bytes after the last tensor");
  return st;
}

SafeTensors read_safetensors(std::string const& path) { return parse_safetensors(path, read_regular_file(path)); }

void check_safetensors_target(std::string const& path, std::string const& what) {
  check_output_path(path, what);
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0)
    KTR_REQUIRE(S_ISREG(existing.st_mode) && is_safetensors(path), (what.empty() ? "" : what + " ") + path,
                "exists and is not a safetensors file; refusing to replace it");
}

void write_safetensors(std::string const& path, SafeTensors const& st) {
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0)
    KTR_REQUIRE(S_ISREG(existing.st_mode) && is_safetensors(path), path,
                "exists and is not a safetensors file; refusing to replace it");
  nlohmann::json header = nlohmann::json::object();
  if (!st.metadata.empty()) header["__metadata__"] = st.metadata;
  std::uint64_t offset = 0;
  for (auto const& [name, t] : st.tensors) {
    KTR_REQUIRE(t.dtype == "F32", path, "tensor '" + name + "': only F32 is written");
    std::int64_t n = 1;
    for (auto e : t.shape) n = checked_mul(n, e, path.c_str());
    KTR_REQUIRE(std::size_t(n) == t.values.size(), path, "tensor '" + name + "': values do not match its shape");
    header[name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * t.values.size()}}};
    offset += 4 * t.values.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes, as the reference writer does
  std::uint64_t const n = text.size();
  std::string bytes(reinterpret_cast<char const*>(&n), 8);
  bytes.reserve(8 + text.size() + offset);
  bytes += text;
  for (auto const& [name, t] : st.tensors)
    bytes.append(reinterpret_cast<char const*>(t.values.data()), 4 * t.values.size());
  write_atomically(path, bytes);  // an exclusive temporary of an unpredictable name, renamed into place
}

}  // namespace ktr
