// IDX reading: small plain and gzip files written here into a temporary directory, every rejection with its
// message (file and reason), and the real Fashion-MNIST when the machine has it.
#include <ktr/core/error.hpp>
#include <ktr/data/idx.hpp>

#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint32_t kImagesMagic = 0x00000803;
constexpr std::uint32_t kLabelsMagic = 0x00000801;
char const* const kFashionMnist = "/usr/share/datasets/fashion-mnist";

void put_be32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}

// An IDX file's bytes: magic, extents, payload, exactly as given (consistent or not).
Bytes idx_bytes(std::uint32_t magic, std::vector<std::uint32_t> const& extents, Bytes const& payload) {
  Bytes b;
  put_be32(b, magic);
  for (auto e : extents) put_be32(b, e);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Compressible bytes (deflate codes them with Huffman blocks).
Bytes pattern(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((i * i / 7 + i / 13) % 251);
  return b;
}

// Incompressible bytes (deflate stores them; corruption there is caught only by the CRC).
Bytes noise(std::size_t n) {
  Bytes b(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& v : b) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<std::uint8_t>(x >> 56);
  }
  return b;
}

Bytes labels_mod(std::size_t n, int num_classes) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((i * 7 + 3) % num_classes);
  return b;
}

void write_plain(std::string const& path, Bytes const& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void write_gz(std::string const& path, Bytes const& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr) << path;
  if (!bytes.empty()) {
    EXPECT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(gz), Z_OK) << path;
}

Bytes read_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Passes when `f` throws ktr::Error whose message starts with "<what>: " and contains `reason`.
template <class F>
::testing::AssertionResult fails_with(F&& f, std::string const& what, std::string const& reason) {
  try {
    f();
  } catch (ktr::Error const& e) {
    std::string const msg = e.what();
    if (msg.rfind(what + ": ", 0) == 0 && msg.find(reason) != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "message \"" << msg << "\" does not start with \"" << what << ": \" or lacks \"" << reason << "\"";
  }
  return ::testing::AssertionFailure() << "no ktr::Error thrown (expected \"" << reason << "\")";
}

class Idx : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "ktr_idx_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(std::string const& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

auto images_of(std::string const& p) {
  return [p] { ktr::read_idx_images(p); };
}
auto labels_of(std::string const& p, int num_classes = 10) {
  return [p, num_classes] { ktr::read_idx_labels(p, num_classes); };
}

TEST_F(Idx, ReadsPlainImagesAndLabels) {
  Bytes const pixels = pattern(3 * 2 * 4);
  write_plain(path("images"), idx_bytes(kImagesMagic, {3, 2, 4}, pixels));
  auto images = ktr::read_idx_images(path("images"));
  EXPECT_EQ(images.count, 3);
  EXPECT_EQ(images.rows, 2);
  EXPECT_EQ(images.cols, 4);
  EXPECT_EQ(images.pixels, pixels);

  Bytes const labels = {0, 9, 3, 3, 7};
  write_plain(path("labels"), idx_bytes(kLabelsMagic, {5}, labels));
  auto read = ktr::read_idx_labels(path("labels"), 10);
  EXPECT_EQ(read.count, 5);
  EXPECT_EQ(read.labels, labels);
}

TEST_F(Idx, DetectsGzipByContentNotName) {
  Bytes const pixels = pattern(4 * 5 * 6);
  write_gz(path("images.bin"), idx_bytes(kImagesMagic, {4, 5, 6}, pixels));
  write_plain(path("images.gz"), idx_bytes(kImagesMagic, {4, 5, 6}, pixels));
  EXPECT_EQ(read_file(path("images.bin"))[0], 0x1f);
  for (auto const* name : {"images.bin", "images.gz"}) {
    auto images = ktr::read_idx_images(path(name));
    EXPECT_EQ(images.count, 4) << name;
    EXPECT_EQ(images.rows, 5) << name;
    EXPECT_EQ(images.cols, 6) << name;
    EXPECT_EQ(images.pixels, pixels) << name;
  }
  Bytes const labels = labels_mod(1000, 10);
  write_gz(path("labels.gz"), idx_bytes(kLabelsMagic, {1000}, labels));
  EXPECT_EQ(ktr::read_idx_labels(path("labels.gz"), 10).labels, labels);
}

TEST_F(Idx, ReadsLargerGzipAndExtremeButValidExtents) {
  Bytes pixels = noise(2000 * 28 * 28 / 2);
  Bytes const more = pattern(2000 * 28 * 28 / 2);
  pixels.insert(pixels.end(), more.begin(), more.end());
  write_gz(path("big.gz"), idx_bytes(kImagesMagic, {2000, 28, 28}, pixels));
  EXPECT_EQ(ktr::read_idx_images(path("big.gz")).pixels, pixels);

  write_plain(path("wide"), idx_bytes(kImagesMagic, {1, 1, 4096}, pattern(4096)));
  EXPECT_EQ(ktr::read_idx_images(path("wide")).cols, 4096);
}

TEST_F(Idx, ReadsSplitFromDirectory) {
  Bytes const pixels = pattern(6 * 3 * 3);
  Bytes const labels = labels_mod(6, 4);
  write_gz(path("train-images-idx3-ubyte.gz"), idx_bytes(kImagesMagic, {6, 3, 3}, pixels));
  write_plain(path("train-labels-idx1-ubyte"), idx_bytes(kLabelsMagic, {6}, labels));
  auto split = ktr::read_idx_split(dir_, "train", 4);
  EXPECT_EQ(split.images_path, path("train-images-idx3-ubyte.gz"));
  EXPECT_EQ(split.labels_path, path("train-labels-idx1-ubyte"));
  EXPECT_EQ(split.images.count, 6);
  EXPECT_EQ(split.images.pixels, pixels);
  EXPECT_EQ(split.labels.labels, labels);

  // Both forms present: the uncompressed file is read.
  write_plain(path("train-images-idx3-ubyte"), idx_bytes(kImagesMagic, {6, 1, 2}, pattern(12)));
  split = ktr::read_idx_split(dir_, "train", 4);
  EXPECT_EQ(split.images_path, path("train-images-idx3-ubyte"));
  EXPECT_EQ(split.images.rows, 1);
}

TEST_F(Idx, RejectsMissingOrUnreadableFile) {
  EXPECT_TRUE(fails_with(images_of(path("nope")), path("nope"), "cannot open"));
  EXPECT_TRUE(fails_with(labels_of(path("nope")), path("nope"), "cannot open"));
  EXPECT_TRUE(fails_with(images_of(dir_), dir_, "cannot read"));
}

TEST_F(Idx, RejectsFileTooShortForHeader) {
  write_plain(path("empty"), {});
  EXPECT_TRUE(
      fails_with(images_of(path("empty")), path("empty"), "file too short for its header (0 bytes, need 16)"));
  write_plain(path("three"), {0, 0, 8});
  EXPECT_TRUE(
      fails_with(labels_of(path("three")), path("three"), "file too short for its header (3 bytes, need 8)"));
  Bytes const header = idx_bytes(kImagesMagic, {10, 28}, {});
  write_plain(path("short"), header);
  EXPECT_TRUE(
      fails_with(images_of(path("short")), path("short"), "file too short for its header (12 bytes, need 16)"));
  write_gz(path("short.gz"), header);
  EXPECT_TRUE(fails_with(images_of(path("short.gz")), path("short.gz"),
                         "file too short for its header (12 bytes, need 16)"));
}

TEST_F(Idx, RejectsWrongMagic) {
  write_plain(path("png"), idx_bytes(0x89504e47, {1, 2, 3}, pattern(6)));
  EXPECT_TRUE(fails_with(images_of(path("png")), path("png"), "wrong magic 0x89504e47, expected 0x00000803"));
  EXPECT_TRUE(fails_with(labels_of(path("png")), path("png"), "wrong magic 0x89504e47, expected 0x00000801"));
  // A gzip file that holds another gzip stream: decompressed once, what is left is not IDX.
  write_gz(path("inner.gz"), idx_bytes(kImagesMagic, {1, 2, 3}, pattern(6)));
  write_gz(path("double.gz"), read_file(path("inner.gz")));
  EXPECT_TRUE(fails_with(images_of(path("double.gz")), path("double.gz"), "wrong magic 0x1f8b"));
}

TEST_F(Idx, RejectsWrongTypeCode) {
  write_plain(path("float"), idx_bytes(0x00000d03, {1, 2, 2}, Bytes(16)));
  EXPECT_TRUE(fails_with(images_of(path("float")), path("float"),
                         "wrong type code 0x0d in magic 0x00000d03, expected 0x08 (uint8)"));
  write_gz(path("int8.gz"), idx_bytes(0x00000901, {4}, Bytes(4)));
  EXPECT_TRUE(fails_with(labels_of(path("int8.gz")), path("int8.gz"), "wrong type code 0x09"));
}

TEST_F(Idx, RejectsWrongNumberOfDimensions) {
  write_plain(path("labels"), idx_bytes(kLabelsMagic, {4}, labels_mod(4, 10)));
  EXPECT_TRUE(fails_with(images_of(path("labels")), path("labels"),
                         "wrong number of dimensions 1 in magic 0x00000801, expected 3 (magic 0x00000803)"));
  write_plain(path("images"), idx_bytes(kImagesMagic, {1, 2, 2}, Bytes(4)));
  EXPECT_TRUE(fails_with(labels_of(path("images")), path("images"),
                         "wrong number of dimensions 3 in magic 0x00000803, expected 1 (magic 0x00000801)"));
}

TEST_F(Idx, RejectsZeroDimensions) {
  struct Case {
    char const* name;
    std::vector<std::uint32_t> extents;
    char const* reason;
  };
  for (auto const& c : {Case{"no_images", {0, 28, 28}, "zero dimension (0 x 28 x 28)"},
                        Case{"no_rows", {5, 0, 28}, "zero dimension (5 x 0 x 28)"},
                        Case{"no_cols", {5, 28, 0}, "zero dimension (5 x 28 x 0)"}}) {
    write_plain(path(c.name), idx_bytes(kImagesMagic, c.extents, {}));
    EXPECT_TRUE(fails_with(images_of(path(c.name)), path(c.name), c.reason));
  }
  write_plain(path("no_labels"), idx_bytes(kLabelsMagic, {0}, {}));
  EXPECT_TRUE(fails_with(labels_of(path("no_labels")), path("no_labels"), "zero dimension (0)"));
}

TEST_F(Idx, RejectsAbsurdDimensions) {
  write_plain(path("tall"), idx_bytes(kImagesMagic, {1, 4097, 1}, pattern(4097)));
  EXPECT_TRUE(fails_with(images_of(path("tall")), path("tall"),
                         "absurd dimensions (1 x 4097 x 1): rows and cols must be at most 4096"));
  write_plain(path("wide"), idx_bytes(kImagesMagic, {1, 28, 0xffffffff}, {}));
  EXPECT_TRUE(fails_with(images_of(path("wide")), path("wide"), "absurd dimensions (1 x 28 x 4294967295)"));
  // Each extent allowed, the product (7.2e16 bytes) not.
  write_gz(path("huge.gz"), idx_bytes(kImagesMagic, {0xffffffff, 4096, 4096}, pattern(100)));
  EXPECT_TRUE(fails_with(images_of(path("huge.gz")), path("huge.gz"),
                         "absurd dimensions (4294967295 x 4096 x 4096): 72057594021150720 bytes of data, limit"));
}

TEST_F(Idx, RejectsTruncatedPayload) {
  Bytes const truncated = idx_bytes(kImagesMagic, {3, 2, 2}, pattern(10));
  write_plain(path("images"), truncated);
  write_gz(path("images.gz"), truncated);
  for (auto const* name : {"images", "images.gz"})
    EXPECT_TRUE(
        fails_with(images_of(path(name)), path(name), "truncated: header says 12 bytes of data, file has 10"));
  // A header claiming far more than is there (1e9 images) allocates nothing like that and says what was found.
  write_gz(path("liar.gz"), idx_bytes(kImagesMagic, {1000000000, 28, 28}, pattern(784 * 3)));
  EXPECT_TRUE(fails_with(images_of(path("liar.gz")), path("liar.gz"),
                         "truncated: header says 784000000000 bytes of data, file has 2352"));
  write_plain(path("labels"), idx_bytes(kLabelsMagic, {100}, labels_mod(99, 10)));
  EXPECT_TRUE(fails_with(labels_of(path("labels")), path("labels"),
                         "truncated: header says 100 bytes of data, file has 99"));
}

TEST_F(Idx, RejectsTrailingBytes) {
  Bytes const oversized = idx_bytes(kImagesMagic, {3, 2, 2}, pattern(13));
  write_plain(path("images"), oversized);
  write_gz(path("images.gz"), oversized);
  for (auto const* name : {"images", "images.gz"})
    EXPECT_TRUE(fails_with(images_of(path(name)), path(name),
                           "trailing bytes: header says 12 bytes of data, file has 13"));
  write_plain(path("labels"), idx_bytes(kLabelsMagic, {100}, labels_mod(150, 10)));
  EXPECT_TRUE(fails_with(labels_of(path("labels")), path("labels"),
                         "trailing bytes: header says 100 bytes of data, file has 150"));
}

TEST_F(Idx, RejectsGzipCorruptedInTheMiddle) {
  // Huffman-coded data (corruption breaks the code or the CRC) and stored data (only the CRC catches it).
  for (bool compressible : {true, false}) {
    Bytes const pixels = compressible ? pattern(200 * 28 * 28) : noise(200 * 28 * 28);
    std::string const good = path(compressible ? "pattern.gz" : "noise.gz");
    write_gz(good, idx_bytes(kImagesMagic, {200, 28, 28}, pixels));
    ASSERT_EQ(ktr::read_idx_images(good).pixels, pixels);
    Bytes const gz = read_file(good);
    for (double where : {0.3, 0.5, 0.7}) {
      Bytes bad = gz;
      std::size_t const at = static_cast<std::size_t>(where * static_cast<double>(bad.size()));
      for (std::size_t i = at; i < at + 4; ++i) bad[i] ^= 0x5a;
      std::string const name = path("bad" + std::to_string(at) + ".gz");
      write_plain(name, bad);
      EXPECT_TRUE(fails_with(images_of(name), name, "corrupt gzip stream")) << "flipped at " << at;
    }
  }
}

TEST_F(Idx, RejectsTruncatedGzip) {
  Bytes const pixels = pattern(50 * 28 * 28);
  write_gz(path("good.gz"), idx_bytes(kImagesMagic, {50, 28, 28}, pixels));
  Bytes const gz = read_file(path("good.gz"));
  // Cut in the middle of the deflate data, inside the CRC/length trailer, and just its last byte.
  for (std::size_t keep : {gz.size() / 2, gz.size() - 6, gz.size() - 1}) {
    std::string const name = path("cut" + std::to_string(keep) + ".gz");
    write_plain(name, Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(keep)));
    EXPECT_TRUE(fails_with(images_of(name), name, "corrupt gzip stream")) << "kept " << keep << " bytes";
  }
  write_gz(path("labels.gz"), idx_bytes(kLabelsMagic, {1000}, labels_mod(1000, 10)));
  Bytes const labels_gz = read_file(path("labels.gz"));
  write_plain(path("labels_cut.gz"), Bytes(labels_gz.begin(), labels_gz.end() - 3));
  EXPECT_TRUE(fails_with(labels_of(path("labels_cut.gz")), path("labels_cut.gz"), "corrupt gzip stream"));
}

TEST_F(Idx, RejectsLabelOutOfRange) {
  write_plain(path("labels"), idx_bytes(kLabelsMagic, {5}, {0, 9, 3, 10, 2}));
  EXPECT_TRUE(
      fails_with(labels_of(path("labels"), 10), path("labels"), "label 10 at index 3 is out of range [0, 10)"));
  EXPECT_TRUE(
      fails_with(labels_of(path("labels"), 9), path("labels"), "label 9 at index 1 is out of range [0, 9)"));
  EXPECT_EQ(ktr::read_idx_labels(path("labels"), 11).count, 5);
  EXPECT_TRUE(fails_with(labels_of(path("labels"), 0), path("labels"), "num_classes must be positive"));
}

TEST_F(Idx, SplitNamesMissingFiles) {
  EXPECT_TRUE(
      fails_with([&] { ktr::read_idx_split(dir_, "train", 10); }, dir_, "no train-images-idx3-ubyte[.gz]"));
  write_plain(path("t10k-images-idx3-ubyte"), idx_bytes(kImagesMagic, {2, 1, 1}, {1, 2}));
  EXPECT_TRUE(fails_with([&] { ktr::read_idx_split(dir_, "t10k", 10); }, dir_, "no t10k-labels-idx1-ubyte[.gz]"));
  std::string const missing = path("missing");
  EXPECT_TRUE(fails_with([&] { ktr::read_idx_split(missing, "train", 10); }, missing,
                         "no train-images-idx3-ubyte[.gz] (not a directory)"));
}

TEST_F(Idx, SplitRejectsCountMismatchAndBadFiles) {
  std::string const images = path("train-images-idx3-ubyte.gz");
  std::string const labels = path("train-labels-idx1-ubyte.gz");
  write_gz(images, idx_bytes(kImagesMagic, {3, 2, 2}, pattern(12)));
  write_gz(labels, idx_bytes(kLabelsMagic, {2}, {1, 1}));
  EXPECT_TRUE(fails_with([&] { ktr::read_idx_split(dir_, "train", 10); }, images,
                         "3 images but " + labels + " has 2 labels"));
  write_gz(labels, idx_bytes(kLabelsMagic, {3}, {1, 12, 1}));
  EXPECT_TRUE(fails_with([&] { ktr::read_idx_split(dir_, "train", 10); }, labels, "label 12 at index 1"));
}

TEST(IdxFashionMnist, ReadsRealTrainAndTestSplits) {
  std::error_code ec;
  if (!std::filesystem::is_directory(kFashionMnist, ec)) GTEST_SKIP() << kFashionMnist << " not present";
  auto const start = std::chrono::steady_clock::now();
  auto const train = ktr::read_idx_split(kFashionMnist, "train", 10);
  double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ IdxFashionMnist ] train split (" << train.images_path << ", " << train.labels_path
            << ") read in " << seconds * 1e3 << " ms\n";
  EXPECT_EQ(train.images.count, 60000);
  EXPECT_EQ(train.images.rows, 28);
  EXPECT_EQ(train.images.cols, 28);
  EXPECT_EQ(train.images.pixels.size(), 60000u * 28 * 28);
  EXPECT_EQ(train.labels.count, 60000);
  std::array<int, 10> per_class{};
  for (auto label : train.labels.labels) {
    ASSERT_LT(label, 10);
    ++per_class[label];
  }
  for (int c = 0; c < 10; ++c) EXPECT_GT(per_class[static_cast<std::size_t>(c)], 0) << "class " << c;

  auto const test = ktr::read_idx_split(kFashionMnist, "t10k", 10);
  EXPECT_EQ(test.images.count, 10000);
  EXPECT_EQ(test.labels.count, 10000);
  EXPECT_EQ(test.images.rows, 28);
  EXPECT_EQ(test.images.cols, 28);
}

}  // namespace
