// The .npy reader: every dtype and version NumPy writes for numbers reads back exactly; every malformed file is
// refused with the file and the reason.
#include <ktr/core/error.hpp>
#include <ktr/data/npy.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

// A .npy image: magic, version, header (padded as NumPy pads it), payload.
std::string npy(std::string const& header_dict, std::string const& payload, int major = 1) {
  std::size_t const pre = major == 1 ? 10 : 12;
  std::string h = header_dict;
  h.append((64 - (pre + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(major), out += char(0);
  std::uint32_t const len = std::uint32_t(h.size());
  out.append(reinterpret_cast<char const*>(&len), major == 1 ? 2 : 4);
  return out + h + payload;
}

template <class T>
std::string raw(std::vector<T> const& v) {
  return std::string(reinterpret_cast<char const*>(v.data()), v.size() * sizeof(T));
}

std::string error_of(std::string const& bytes) {
  try {
    ktr::parse_npy("f.npy", bytes);
  } catch (ktr::Error const& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Npy, ReadsEveryNumericDtypeAndVersion) {
  auto a = ktr::parse_npy("f.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                       raw(std::vector<float>{0, 1.5f, -2, 3, 4, 5})));
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.kind, 'f');
  EXPECT_EQ(a.values[1], 1.5);
  auto b = ktr::parse_npy("f.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                                       raw(std::vector<std::int64_t>{7, -1, 9}), 2));
  EXPECT_TRUE(b.is_integer());
  EXPECT_EQ(b.values, (std::vector<double>{7, -1, 9}));
  auto c = ktr::parse_npy("f.npy", npy("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"|u1\"}",
                                       std::string("\x05\xff", 2), 3));
  EXPECT_EQ(c.values, (std::vector<double>{5, 255}));
  auto h = ktr::parse_npy("f.npy", npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }",
                                       raw(std::vector<std::uint16_t>{0x3c00, 0xc000})));  // 1.0, -2.0
  EXPECT_EQ(h.values, (std::vector<double>{1.0, -2.0}));
  auto d = ktr::parse_npy(
      "f.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", raw(std::vector<double>{2.25})));
  EXPECT_TRUE(d.shape.empty());
  EXPECT_EQ(d.values.at(0), 2.25);
}

TEST(Npy, WrittenFilesReadBack) {
  std::string const path = ::testing::TempDir() + "ktr_npy_roundtrip.npy";
  ktr::write_npy(path, {2, 2}, std::vector<float>{1, 2, 3, 4.5f});
  auto a = ktr::read_npy(path);
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a.values[3], 4.5);
  ktr::write_npy(path, {3}, std::vector<std::int32_t>{0, 2, 1});
  auto b = ktr::read_npy(path);
  EXPECT_EQ(b.descr, "<i4");
  EXPECT_EQ(b.values, (std::vector<double>{0, 2, 1}));
  std::remove(path.c_str());
}

TEST(Npy, MalformedFilesAreRefusedWithTheReason) {
  std::string const ok_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string const two = raw(std::vector<float>{1, 2});
  EXPECT_NE(error_of("NUMPY not really").find("bad magic"), std::string::npos);
  EXPECT_NE(error_of(npy(ok_header, two, 4)).find("version 4.0"), std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two)).find("Fortran"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two)).find("big-endian"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", two)).find("not supported"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", two)).find("not supported"),
            std::string::npos);
  EXPECT_NE(error_of(npy(ok_header, two.substr(0, 5))).find("truncated .npy data"), std::string::npos);
  EXPECT_NE(error_of(npy(ok_header, two + "xx")).find("2 bytes after the .npy data"), std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'shape': (2,), }", two)).find("lacks"), std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two)).find("key 'x'"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", two)).find("extent"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", two))
                .find("overflows"),
            std::string::npos);
  std::string cut = npy(ok_header, two);
  EXPECT_NE(error_of(cut.substr(0, 30)).find("truncated .npy header"), std::string::npos);
  EXPECT_NE(error_of(npy(ok_header, two)).find("(no error)"), std::string::npos);
  EXPECT_NE(error_of("\x93NUMPY").find("f.npy"), std::string::npos);
}

TEST(Npy, MissingFilesNameThePath) {
  try {
    ktr::read_npy("/nonexistent/x.npy");
    ADD_FAILURE();
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.npy: cannot open"), std::string::npos) << e.what();
  }
}

}  // namespace
