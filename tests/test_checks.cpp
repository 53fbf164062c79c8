// Hostile and absurd input: sizes that would overflow, models that do not fit the data or the device, checkpoints
// that lie about their sizes or come from other versions, non-finite state that must never reach a file.
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/session.hpp>

#include "helpers.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace {

using ktr::Checkpoint;
using ktr::Model;
using ktr::RunConfig;
using ktr::Session;

std::string checks_path(std::string const& name) { return ::testing::TempDir() + "ktr_checks_" + name; }

using ktr::test::slurp;

void spit(std::string const& path, std::string const& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Replaces the CRC trailer so that an edited file passes the checksum and reaches the checks behind it.
std::string with_crc(std::string bytes) {
  bytes.resize(bytes.size() - 4);
  std::uint32_t const crc =
      std::uint32_t(crc32(0L, reinterpret_cast<Bytef const*>(bytes.data()), uInt(bytes.size())));
  bytes.append(reinterpret_cast<char const*>(&crc), 4);
  return bytes;
}

using ktr::test::error_of;

TEST(Checks, ShapeSizeOverflowThrowsInsteadOfWrapping) {
  std::int64_t const big = std::int64_t(1) << 32;
  EXPECT_EQ(ktr::Shape({1, big, 4}).size(), 4 * big);
  EXPECT_NE(error_of([&] { (void)ktr::Shape({big, big, big}).size(); }).find("overflows"), std::string::npos);
}

TEST(Checks, ModelPlanAllocatesNothingAndMatchesTheModel) {
  std::string const cnn = Model::simple_cnn();
  ktr::ModelPlan plan;
  {
    ktr::ToolsCounter counter;
    plan = Model::plan(cnn, 64);
    EXPECT_EQ(counter.allocations(), 0) << (counter.events().empty() ? "" : counter.events().front());
  }
  Model const model(cnn, 64);
  EXPECT_EQ(plan.output_width, 10);
  EXPECT_EQ(plan.input, model.input_shape(1));
  EXPECT_EQ(plan.parameters, model.arena().num_parameters());
  EXPECT_EQ(plan.arena_floats, model.arena().size());
  EXPECT_EQ(plan.description, model.description());
}

TEST(Checks, AbsurdModelDescriptionsAreRefusedWithoutAllocating) {
  ktr::ToolsCounter counter;
  EXPECT_NE(error_of([] { Model::plan("in=16000000x16000000x16000000 flatten dense:10", 1); }).find("overflows"),
            std::string::npos);
  EXPECT_NE(error_of([] { Model::plan("in=28x28x1 flatten dense:99999999999", 1); }).find("bad feature count"),
            std::string::npos);
  EXPECT_NE(error_of([] { Model::plan("in=28x28x1 flatten", 1); }).find("has no layer with parameters"),
            std::string::npos);
  EXPECT_EQ(error_of([] { Model::plan("in=8x8x1 conv3x3:4", 1); }), "(no error)")
      << "a convolution's field is an output";
  EXPECT_NE(error_of([] { Model::plan("in=1x1x1 avgpool2 flatten dense:10", 1); }).find("leaves nothing"),
            std::string::npos);
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(Checks, RunDeviceBytesCoversWhatASessionAllocates) {
  for (auto const& model : {Model::mlp(), Model::simple_cnn()}) {
    RunConfig c;
    c.model = model;
    c.batch = 128;
    std::int64_t allocated = 0;
    {
      ktr::ToolsCounter counter;
      Session s(c, 16);
      ktr::Evaluator e(s.model(), 1000, c.input_transform);
      allocated = counter.allocated_bytes();
    }
    std::int64_t const estimate = ktr::run_device_bytes(c, Model::plan(model, c.batch));
    SCOPED_TRACE(model);
    EXPECT_GE(estimate, allocated * 95 / 100);  // the few small buffers (metrics, scalars) are not counted
    EXPECT_LE(estimate, allocated * 105 / 100);
  }
}

TEST(Checks, SchedulesRoundTripExactly) {
  ktr::Schedule s = ktr::Schedule::parse("cosine:1000:10:0.1");
  s.alpha = 0.123456789f;
  EXPECT_EQ(ktr::Schedule::parse(s.str()).alpha, s.alpha) << s.str();
  ktr::Schedule t = ktr::Schedule::parse("step:7");
  t.factor = 1.0f / 3.0f;
  EXPECT_EQ(ktr::Schedule::parse(t.str()).factor, t.factor) << t.str();
  EXPECT_THROW(ktr::Schedule::parse("step:7:inf"), ktr::Error);
  EXPECT_THROW(ktr::Schedule::parse("step:7:nan"), ktr::Error);
}

TEST(Checks, NonFiniteParametersAreNeverSaved) {
  std::string const path = checks_path("nan.ckpt");
  std::remove(path.c_str());
  RunConfig c;
  c.model = "in=4x4x1 flatten dense:10";
  c.batch = 4;
  Session s(c, 1);
  s.save(ktr::ExecSpace(), path);
  std::string const good = slurp(path);
  ktr::fill(ktr::ExecSpace(), s.model().arena().params(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_THROW(s.save(ktr::ExecSpace(), path), ktr::DivergenceError);
  EXPECT_EQ(slurp(path), good) << "the last finite checkpoint was replaced";
  std::remove(path.c_str());
}

TEST(Checks, CheckpointsNeverReplaceForeignFiles) {
  std::string const path = checks_path("notes.txt");
  spit(path, "a file that is not a checkpoint");
  Checkpoint c;
  c.header["model"] = "x";
  EXPECT_NE(error_of([&] { ktr::write_checkpoint(path, c); }).find("is not a ktr checkpoint; refusing"),
            std::string::npos);
  EXPECT_EQ(slurp(path), "a file that is not a checkpoint");
  EXPECT_THROW(ktr::check_checkpoint_target(path, "--checkpoint"), ktr::Error);
  std::remove(path.c_str());
  EXPECT_NO_THROW(ktr::check_checkpoint_target(path, "--checkpoint"));  // absent: fine
}

TEST(Checks, CheckpointReaderNeverAllocatesBeyondTheFile) {
  Checkpoint c;
  c.header["model"] = "m";
  c.buffers.push_back({1.0f, 2.0f, 3.0f});
  std::string const path = checks_path("sizes.ckpt");
  std::remove(path.c_str());
  ktr::write_checkpoint(path, c);
  std::string const bytes = slurp(path);
  std::size_t const header_at = 12, count_at = 16 + (bytes.size() - 16 - 8 - 8 - 12 - 4);
  // A buffer that claims 2^61 floats (with a valid CRC: the reader must not trust sizes for allocation).
  std::string lying = bytes;
  std::uint64_t const huge = std::uint64_t(1) << 61;
  std::memcpy(&lying[count_at + 8], &huge, 8);
  EXPECT_NE(error_of([&] { ktr::parse_checkpoint("f", with_crc(lying)); }).find("truncated"), std::string::npos);
  // A header size beyond the file.
  std::string long_header = bytes;
  std::uint32_t const big = 1u << 30;
  std::memcpy(&long_header[header_at], &big, 4);
  EXPECT_NE(error_of([&] { ktr::parse_checkpoint("f", with_crc(long_header)); }).find("header size"),
            std::string::npos);
  EXPECT_EQ(ktr::parse_checkpoint("f", bytes).buffers.at(0).at(2), 3.0f);
  std::remove(path.c_str());
}

TEST(Checks, CheckpointVersionsOlderLoadNewerAreRefusedByNumber) {
  std::string const path = checks_path("version.ckpt");
  std::remove(path.c_str());
  RunConfig c;
  c.model = "in=4x4x1 flatten dense:10";
  c.batch = 4;
  c.normalize = ktr::InputTransformMode::unit;
  Session s(c, 1);
  s.save(ktr::ExecSpace(), path);
  std::string bytes = slurp(path);
  EXPECT_EQ(Session::restore(path, 1)->config().normalize, ktr::InputTransformMode::unit);
  // Version 1 files (no normalisation mode recorded) still load; their scale and shift are what counts.
  Checkpoint v1 = ktr::read_checkpoint(path);
  v1.header.erase("normalize");
  std::string v1_bytes = bytes;
  std::uint32_t version = 1;
  std::memcpy(&v1_bytes[8], &version, 4);
  spit(path, with_crc(v1_bytes));
  EXPECT_EQ(ktr::read_checkpoint(path).version, 1u);
  EXPECT_NO_THROW(Session::restore(path, 1));
  version = 99;
  std::memcpy(&v1_bytes[8], &version, 4);
  spit(path, with_crc(v1_bytes));
  EXPECT_NE(error_of([&] { Session::restore(path, 1); }).find("format version 99, this ktr reads versions 1 to 2"),
            std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
