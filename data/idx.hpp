// Host-side reader for IDX files, the format of MNIST and Fashion-MNIST: big-endian magic and extents, then
// uint8 data. Files may be gzip-compressed (recognised by their first two bytes, not by their name).
//
// Everything is validated (magic, type code, rank, extents, payload length, gzip integrity, label range) and any
// problem throws ktr::Error("<path>: <reason>"); nothing partial is ever returned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

/// An IDX image file: `count` images of `rows` x `cols` uint8 pixels, row-major, image after image.
struct IdxImages {
  std::int64_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols bytes
};

/// An IDX label file: `count` uint8 class indices.
struct IdxLabels {
  std::int64_t count = 0;
  std::vector<std::uint8_t> labels;
};

/// Reads an IDX image file (magic 0x00000803: type code 0x08 = uint8, 3 dims), gzip-compressed or not
/// (detected by the gzip magic bytes 1f 8b, not by the name). Rows and cols must be in [1, 4096] and the count
/// at least 1. Throws ktr::Error naming the file and the reason.
IdxImages read_idx_images(std::string const& path);

/// Reads an IDX label file (magic 0x00000801, uint8, 1 dim), gzip-compressed or not; every label must be
/// < num_classes (which must be positive). Throws ktr::Error naming the file and the reason.
IdxLabels read_idx_labels(std::string const& path, int num_classes);

/// One split of a dataset directory, with the paths the two files were read from.
struct IdxSplit {
  IdxImages images;
  IdxLabels labels;
  std::string images_path, labels_path;
};

/// Reads a split of a dataset directory: `<dir>/<prefix>-images-idx3-ubyte[.gz]` and
/// `<dir>/<prefix>-labels-idx1-ubyte[.gz]` (prefix "train" or "t10k"; the uncompressed file wins when both
/// exist), and checks that the image and label counts agree.
IdxSplit read_idx_split(std::string const& dir, std::string const& prefix, int num_classes);

/// Writes an IDX image / label file, gzip-compressed when the path ends in ".gz", to a temporary name that is
/// renamed over `path` once complete. Throws ktr::Error naming the file on failure.
void write_idx_images(std::string const& path, IdxImages const& images);
void write_idx_labels(std::string const& path, IdxLabels const& labels);

}  // namespace ktr
