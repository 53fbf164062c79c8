// Hostile input, round 2: numbers read from files are parsed strictly and must be finite and in range (naming the
// key, never a flag the user did not give), strings from files are printed escaped, a per-feature input transform
// exports, and outputs are checked before any work.
#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>
#include <ktr/core/parse.hpp>
#include <ktr/data/idx.hpp>
#include <ktr/data/npy.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/interop.hpp>
#include <ktr/train/run_directory.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/safetensors.hpp>
#include <ktr/train/session.hpp>

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>

#include <zlib.h>

namespace {

using ktr::Checkpoint;
using ktr::RunConfig;
using ktr::Session;

using ktr::test::error_of;

std::string hostile_path(std::string const& name) { return ::testing::TempDir() + "ktr_hostile_" + name; }

std::string slurp_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool exists(std::string const& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(Hostile, NumbersFromFilesAreParsedWholeAndFinite) {
  double d = 0;
  std::int64_t i = 0;
  EXPECT_TRUE(ktr::parse_number("0.001", 0, 1, d));
  EXPECT_EQ(d, 0.001);
  EXPECT_TRUE(ktr::parse_number("-2.5e-3", -1, 1, d));
  for (char const* bad : {"", "nan", "NaN", "-nan", "inf", "-inf", "1e999", "0.5x", " 1", "1 ", "0x10", "2"})
    EXPECT_FALSE(ktr::parse_number(bad, 0, 1, d)) << "'" << bad << "'";
  EXPECT_FALSE(ktr::parse_number(std::string("1\0"
                                             "5",
                                             3),
                                 0, 10, d))
      << "an embedded NUL";
  EXPECT_TRUE(ktr::parse_integer("-12", -100, 100, i));
  EXPECT_EQ(i, -12);
  for (char const* bad : {"", "-", "1.0", "1e3", "+1", " 1", "99999999999999999999", "101", "0x1"})
    EXPECT_FALSE(ktr::parse_integer(bad, -100, 100, i)) << "'" << bad << "'";
}

TEST(Hostile, StringsFromFilesArePrintedEscaped) {
  EXPECT_EQ(ktr::escaped(std::string("<f\0"
                                     "4",
                                     4)),
            "<f\\04");
  EXPECT_EQ(ktr::escaped("a\nb\t\x01\xff\\"), "a\\nb\\t\\x01\\xff\\\\");
  EXPECT_EQ(ktr::escaped("Dense_0.kernel"), "Dense_0.kernel");
}

// A small run's checkpoint at `path`, as read back (to forge and write again, with a valid CRC: the lie then
// reaches the checks behind the checksum).
Checkpoint small_checkpoint(std::string const& path) {
  std::remove(path.c_str());
  RunConfig c;
  c.model = "in=4 dense:3";
  c.batch = 4;
  Session(c, 1).save(ktr::ExecSpace(), path);
  return ktr::read_checkpoint(path);
}

// The error restoring a checkpoint with one header field replaced.
std::string forged_error(std::string const& key, std::string const& value) {
  std::string const path = hostile_path("forged.ckpt");
  Checkpoint ckpt = small_checkpoint(path);
  ckpt.header[key] = value;
  ktr::write_checkpoint(path, ckpt);
  std::string const error = error_of([&] { Session::restore(path, 1); });
  std::remove(path.c_str());
  return error;
}

TEST(Hostile, ForgedCheckpointFieldsAreRefusedNamingTheFieldNotAFlag) {
  for (auto const& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"lr", "nan"},
                                                        {"lr", "-0.1"},
                                                        {"lr", "1e999"},
                                                        {"lr", "0.001x"},
                                                        {"momentum", "1"},
                                                        {"b2", "inf"},
                                                        {"eps", "0"},
                                                        {"weight_decay", "-1"},
                                                        {"clip_norm", "nan"},
                                                        {"norm_scale", "nan"},
                                                        {"norm_scale", "0"},
                                                        {"norm_shift", "-inf"},
                                                        {"batch", "1.5"},
                                                        {"batch", "0"},
                                                        {"accumulate", "5"},
                                                        {"seed", "-1"},
                                                        {"seed", "18446744073709551616"},
                                                        {"step", "nan"},
                                                        {"step", "-3"}}) {
    std::string const error = forged_error(key, value);
    EXPECT_NE(error.find("header field '" + key + "'"), std::string::npos) << key << "=" << value << ": " << error;
    EXPECT_EQ(error.find("--"), std::string::npos) << "blames a flag: " << error;
  }
  EXPECT_NE(forged_error("task", std::string("regr\0ssion", 10)).find("unknown task 'regr\\0ssion'"),
            std::string::npos);
  // Issue 40, defects 7 and 8: the header's model is the file's: a bad description is refused naming the file
  // and the field, and a forged size (a petabyte of parameters) against the parameters the file holds, before
  // anything is allocated for it.
  std::string const path = hostile_path("forged.ckpt");
  for (auto const& [model, says] : std::vector<std::pair<std::string, std::string>>{
           {"in=4 save:a dense:3", "header field 'model': "},
           {"in=16777216 dense:16777216 dense:1", "header field 'model' describes 281475010265089 parameters"}}) {
    std::string const error = forged_error("model", model);
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << model << ": " << error;
    EXPECT_NE(error.find(says), std::string::npos) << model << ": " << error;
    Checkpoint ckpt = small_checkpoint(path);
    ckpt.header["model"] = model;
    ktr::write_checkpoint(path, ckpt);
    std::string const loaded = error_of([&] { ktr::load_trained_model(path, 1); });  // what ktr export reads
    EXPECT_NE(loaded.find(says), std::string::npos) << model << ": " << loaded;
  }
  std::remove(path.c_str());
}

// Issue 40, defect 9: a malformed header line is quoted escaped: a checkpoint's bytes never reach the terminal as
// control sequences (the line is forged behind a valid checksum).
TEST(Hostile, AMalformedCheckpointHeaderLineIsQuotedEscaped) {
  std::string const path = hostile_path("escape.ckpt");
  (void)small_checkpoint(path);
  std::string bytes = slurp_file(path);
  std::size_t const at = bytes.find("accumulate=1\n");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 12, "\x1b[31mred!!");  // as long as the line it replaces: the header size stands
  std::uint32_t const crc = std::uint32_t(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<Bytef const*>(bytes.data()), uInt(bytes.size() - 4)));
  std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
  std::string const error = error_of([&] { ktr::parse_checkpoint(path, bytes); });
  EXPECT_NE(error.find("malformed header line '\\x1b[31mred!!'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << "a raw escape byte: " << ktr::escaped(error);
  std::remove(path.c_str());
}

TEST(Hostile, NonFiniteCheckpointBuffersAreNeverLoaded) {
  std::string const path = hostile_path("nanparams.ckpt");
  Checkpoint ckpt = small_checkpoint(path);
  ckpt.buffers[0][1] = std::numeric_limits<float>::quiet_NaN();
  ktr::write_checkpoint(path, ckpt);
  EXPECT_NE(error_of([&] { Session::restore(path, 1); }).find("non-finite"), std::string::npos);
  EXPECT_NE(error_of([&] { ktr::load_trained_model(path, 1); }).find("non-finite"), std::string::npos);
  std::remove(path.c_str());
}

// The tensors and metadata of a small model as ktr exports them.
ktr::SafeTensors exported(ktr::Model const& model) {
  RunConfig cfg;
  cfg.model = model.description();
  cfg.input_transform = ktr::InputTransform::standardized(0.25f, 0.5f);
  return ktr::export_weights(model, ktr::download(model.arena().params()), cfg);
}

TEST(Hostile, ImportedMetadataMustBeFiniteNumbersNamingTheKey) {
  ktr::Model const model("in=3 dense:2", 1);
  model.init(ktr::ExecSpace(), 1);
  ktr::SafeTensors const good = exported(model);
  EXPECT_EQ(error_of([&] { ktr::import_weights(model, good, "w.safetensors"); }), "(no error)");
  for (char const* key : {"ktr.normalize_scale", "ktr.normalize_shift"})
    for (char const* value : {"nan", "inf", "-1e999", "0.5x", "", " 2"}) {
      ktr::SafeTensors bad = good;
      bad.metadata[key] = value;
      if (std::string(value).empty()) continue;  // an empty value means "not recorded"
      std::string const error = error_of([&] { ktr::import_weights(model, bad, "w.safetensors"); });
      EXPECT_NE(error.find(std::string("w.safetensors: metadata ") + key), std::string::npos)
          << key << "=" << value << ": " << error;
    }
  ktr::SafeTensors bad = good;
  bad.metadata["ktr.normalize_scale"] = "0";
  EXPECT_NE(error_of([&] { ktr::import_weights(model, bad, "w"); }).find("ktr.normalize_scale is 0"),
            std::string::npos);
  bad = good;
  bad.metadata["ktr.task"] = "regression\x01";
  EXPECT_NE(error_of([&] { ktr::import_weights(model, bad, "w"); }).find("ktr.task is 'regression\\x01'"),
            std::string::npos);
  bad = good;
  bad.tensors["Dense_0.bias"].values[1] = std::numeric_limits<float>::infinity();
  EXPECT_NE(
      error_of([&] { ktr::import_weights(model, bad, "w"); }).find("tensor 'Dense_0.bias' holds a non-finite"),
      std::string::npos);
  bad = good;
  bad.tensors[std::string("Dense_0.k\0ernel", 15)] = good.tensors.at("Dense_0.kernel");
  EXPECT_NE(error_of([&] { ktr::import_weights(model, bad, "w"); }).find("tensor 'Dense_0.k\\0ernel' is not"),
            std::string::npos);
}

TEST(Hostile, APerFeatureInputTransformExportsAndImportsExactly) {
  // Export of a per-feature transform built its sample shape from two temporaries (undefined behaviour).
  ktr::Model const model("in=2x3x1 flatten dense:2", 1);
  model.init(ktr::ExecSpace(), 2);
  std::vector<float> const scale{1, 2, 3, 4, 5, 6}, shift{-1, -2, -3, 0.5f, 0.25f, 0.125f};
  RunConfig cfg;
  cfg.model = model.description();
  cfg.input_transform = ktr::InputTransform::identity();
  cfg.input_transform.feature_scale = ktr::DeviceView<float*>("scale", 6);
  cfg.input_transform.feature_shift = ktr::DeviceView<float*>("shift", 6);
  Kokkos::deep_copy(cfg.input_transform.feature_scale, ktr::HostView<const float*>(scale.data(), 6));
  Kokkos::deep_copy(cfg.input_transform.feature_shift, ktr::HostView<const float*>(shift.data(), 6));
  ktr::SafeTensors const st = ktr::export_weights(model, ktr::download(model.arena().params()), cfg);
  ASSERT_EQ(st.tensors.count("ktr.input_scale"), 1u);
  EXPECT_EQ(st.tensors.at("ktr.input_scale").shape, (std::vector<std::int64_t>{2, 3, 1}));
  EXPECT_EQ(st.tensors.at("ktr.input_scale").values, scale);
  EXPECT_EQ(st.tensors.at("ktr.input_shift").values, shift);
  ktr::ImportedWeights const w = ktr::import_weights(model, st, "w");
  ASSERT_TRUE(w.input_transform.per_feature());
  EXPECT_EQ(ktr::download(w.input_transform.feature_scale), scale);
  EXPECT_EQ(ktr::download(w.input_transform.feature_shift), shift);
  EXPECT_EQ(w.model, model.description());
}

TEST(Hostile, OutputPathsAreCheckedBeforeAnyWork) {
  std::string const folder = hostile_path("no-such-folder");
  EXPECT_NE(error_of([&] {
              ktr::check_output_path(folder + "/x.ckpt", "--checkpoint");
            }).find("--checkpoint " + folder + "/x.ckpt: cannot write a file there"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ktr::check_checkpoint_output(folder + "/x.ckpt", "--out"); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { ktr::check_safetensors_target(folder + "/w.safetensors", "--out"); }).find("does not exist"),
      std::string::npos);
  EXPECT_NE(error_of([&] { ktr::check_output_path(::testing::TempDir(), "--metrics"); }).find("folder"),
            std::string::npos);
  std::string const fine = hostile_path("fine.ckpt");
  std::remove(fine.c_str());
  EXPECT_EQ(error_of([&] { ktr::check_checkpoint_output(fine, "--checkpoint"); }), "(no error)");
  EXPECT_FALSE(exists(fine)) << "the check left a file behind";
}

// Issue 40, defect 2: a file is a safetensors file by its whole header, not by its ninth byte: a YAML file that
// begins "params: {" is never replaced by a weights write (ktr export, ktr_save_model, torchfort_save_model).
TEST(Hostile, ASafetensorsFileIsKnownByItsWholeHeaderAndForeignFilesAreKept) {
  ktr::SafeTensors st;
  st.tensors["w"] = ktr::SafeTensor{"F32", {2}, {1.0f, 2.0f}};
  std::string const yaml = hostile_path("params.yaml"), text = "params: {lr: 0.1}\nmore: [1, 2, 3]\n";
  std::ofstream(yaml, std::ios::binary) << text;
  EXPECT_NE(error_of([&] { ktr::write_safetensors(yaml, st); }).find("is not a safetensors file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ktr::check_safetensors_target(yaml, "--out"); }).find("is not a safetensors file"),
            std::string::npos);
  EXPECT_EQ(slurp_file(yaml), text) << "a foreign file was replaced";
  // Eight bytes that happen to give a small size, then a JSON object whose offsets leave the file: not ours
  // either.
  std::string forged(8, '\0');
  forged[0] = 40;
  forged += R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4096]}})";
  forged.resize(8 + 40, ' ');
  std::ofstream(hostile_path("forged.safetensors"), std::ios::binary) << forged;
  EXPECT_NE(error_of([&] {
              ktr::write_safetensors(hostile_path("forged.safetensors"), st);
            }).find("is not a safetensors"),
            std::string::npos);
  std::string const ours = hostile_path("ours.safetensors");
  std::remove(ours.c_str());
  ktr::write_safetensors(ours, st);
  st.tensors["w"].values = {3.0f, 4.0f};
  EXPECT_EQ(error_of([&] { ktr::write_safetensors(ours, st); }), "(no error)") << "ktr's own file is replaced";
  EXPECT_EQ(ktr::read_safetensors(ours).tensors.at("w").values, (std::vector<float>{3.0f, 4.0f}));
  for (auto const& f : {yaml, hostile_path("forged.safetensors"), ours}) std::remove(f.c_str());
}

// Issue 40, defect 3: no writer opens a predictable temporary or a log through a link planted beside its target:
// .npy, IDX (plain and gzip), safetensors and checkpoint writes leave a victim behind a planted "<path>.tmp" or
// "<path>.tmp.<pid>" link untouched, and logs (the metrics file, torchfort.log) refuse to write through a link.
TEST(Hostile, WritersNeverFollowALinkPlantedBesideTheirTarget) {
  std::string const victim = hostile_path("victim.txt"), text = "the victim's own bytes\n";
  auto plant = [&](std::string const& path) {
    std::ofstream(victim, std::ios::binary) << text;
    for (std::string const& tmp : {path + ".tmp", path + ".tmp." + std::to_string(::getpid())}) {
      std::remove(tmp.c_str());
      ASSERT_EQ(::symlink(victim.c_str(), tmp.c_str()), 0) << tmp;
    }
    std::remove(path.c_str());
  };
  auto unplant = [&](std::string const& path) {
    EXPECT_EQ(slurp_file(victim), text) << "written through a link beside " << path;
    for (std::string const& tmp : {path + ".tmp", path + ".tmp." + std::to_string(::getpid())})
      std::remove(tmp.c_str());
    std::remove(path.c_str());
  };
  std::string const npy = hostile_path("w.npy");
  plant(npy);
  ktr::write_npy(npy, {2}, std::vector<float>{1.0f, 2.0f});
  EXPECT_EQ(ktr::read_npy(npy).shape, (std::vector<std::int64_t>{2}));
  unplant(npy);
  for (std::string const idx : {hostile_path("i.idx"), hostile_path("i.idx.gz")}) {
    plant(idx);
    ktr::IdxImages images;
    images.count = 1, images.rows = 2, images.cols = 2, images.pixels = {1, 2, 3, 4};
    ktr::write_idx_images(idx, images);
    EXPECT_EQ(ktr::read_idx_images(idx).pixels, images.pixels) << idx;
    unplant(idx);
  }
  std::string const weights = hostile_path("w.safetensors");
  plant(weights);
  ktr::SafeTensors st;
  st.tensors["w"] = ktr::SafeTensor{"F32", {1}, {1.0f}};
  ktr::write_safetensors(weights, st);
  EXPECT_EQ(ktr::read_safetensors(weights).tensors.at("w").values, std::vector<float>{1.0f});
  unplant(weights);
  std::string const log = hostile_path("metrics.jsonl");
  std::remove(log.c_str());
  std::ofstream(victim, std::ios::binary) << text;
  ASSERT_EQ(::symlink(victim.c_str(), log.c_str()), 0);
  EXPECT_NE(error_of([&] { ktr::append_line(log, "{}"); }).find("a symbolic link"), std::string::npos);
  EXPECT_NE(error_of([&] { ::close(ktr::open_log(log, true, "--metrics")); }).find("--metrics " + log),
            std::string::npos);
  EXPECT_EQ(slurp_file(victim), text) << "a log was written through a link";
  std::remove(log.c_str());
  std::remove(victim.c_str());
}

// A sparse file of 2 TiB, written as `head` and then a hole; false where the file system cannot hold one.
bool sparse_file(std::string const& path, std::string const& head) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  std::fwrite(head.data(), 1, head.size(), f);
  std::fclose(f);
  return ::truncate(path.c_str(), std::int64_t(1) << 41) == 0;
}

// Files of terabytes (sparse: nothing on disk) are refused by name, before a byte is allocated: an .npy, a
// safetensors, a checkpoint with ktr's magic, a config file, and a run directory whose manifest lists one.
TEST(Hostile, FilesLargerThanTheMemoryAreRefusedBeforeAllocating) {
  std::string const big = hostile_path("sparse.bin");
  if (!sparse_file(big, "KTRCKPT1")) GTEST_SKIP() << "this file system holds no sparse file of 2 TiB";
  for (auto const& [what, read] : std::vector<std::pair<char const*, std::function<void()>>>{
           {"npy", [&] { ktr::read_npy(big); }},
           {"safetensors", [&] { ktr::read_safetensors(big); }},
           {"checkpoint", [&] { ktr::read_checkpoint(big); }}}) {
    std::string const error = error_of(read);
    EXPECT_NE(error.find(big + ": 2199023255552 bytes, more than the host memory available"), std::string::npos)
        << what << ": " << error;
  }
  std::string const dir = hostile_path("sparse_dir");
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir '" + dir + "'").c_str()), 0);
  std::string const yaml = "model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n";
  std::FILE* f = std::fopen((dir + "/config.yaml").c_str(), "wb");
  std::fwrite(yaml.data(), 1, yaml.size(), f);
  std::fclose(f);
  ASSERT_TRUE(sparse_file(dir + "/model.ckpt", "KTRCKPT1"));
  ASSERT_TRUE(sparse_file(dir + "/state.bin", "KTRCKPT1"));
  unsigned long const crc = ::crc32(0L, reinterpret_cast<Bytef const*>(yaml.data()), uInt(yaml.size()));
  f = std::fopen((dir + "/ktr-manifest").c_str(), "wb");
  std::fprintf(f,
               "ktr-run-directory 1\nconfig.yaml %zu %lu\nmodel.ckpt 2199023255552 0\nstate.bin 2199023255552 0\n",
               yaml.size(), crc);
  std::fclose(f);
  std::string const error = error_of([&] { ktr::read_run_directory(dir); });
  EXPECT_NE(error.find(dir + "/model.ckpt: 2199023255552 bytes, more than the host memory available"),
            std::string::npos)
      << error;
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  std::remove(big.c_str());
}

TEST(Hostile, HostThreadLimitIsKokkossOwn) {
#if defined(KOKKOS_ENABLE_OPENMP)
  EXPECT_EQ(ktr::max_host_threads(), 512);  // Kokkos::Impl::OpenMPExec::MAX_THREAD_COUNT
  EXPECT_LE(Kokkos::DefaultHostExecutionSpace().concurrency(), ktr::max_host_threads());
#else
  GTEST_SKIP() << "the host backend is " << Kokkos::DefaultHostExecutionSpace::name() << ", not OpenMP";
#endif
}

}  // namespace
