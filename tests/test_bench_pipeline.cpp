// `ktr bench pipeline` measures what it names: every variant's session runs the requested matmul precision (its
// gemm calls are counted per precision), a build that cannot run tf32 refuses it in the sessions, and the JSON
// file holds every variant's median, precision and number of rounds.
#include <ktr/backends/gemm.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>

#include "bench/bench.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace {

ktr::bench::PipelineOptions quick(std::string const& precision, std::string const& json) {
  ktr::bench::PipelineOptions o;
  o.models = "mlp";
  o.mlp_batch = 32;
  o.steps = 4;
  o.rounds = 2;
  o.ks = "2,4";
  o.samples = 256;
  o.sgemm_n = 64;
  o.precision = precision;
  o.json = json;
  return o;
}

nlohmann::json run(std::string const& precision) {
  std::string const path = ::testing::TempDir() + "ktr_bench_pipeline_" + precision + ".json";
  std::remove(path.c_str());
  EXPECT_EQ(ktr::bench::run_pipeline(ktr::ExecSpace(), quick(precision, path)), 0);
  auto const j = nlohmann::json::parse(ktr::read_regular_file(path));
  std::remove(path.c_str());
  return j;
}

// Every measured variant made gemm calls, all of them in `precision`; naive, resident and each multistep-K are
// there.
void expect_all_ran(nlohmann::json const& j, std::string const& precision) {
  EXPECT_EQ(j.at("precision"), precision);
  EXPECT_EQ(j.at("complete"), true);
  std::set<std::string> measured;
  for (auto const& r : j.at("results")) {
    if (!r.at("available").get<bool>()) continue;
    std::string const name = r.at("variant");
    measured.insert(name);
    EXPECT_EQ(r.at("precision"), precision) << name;
    EXPECT_GT(r.at("gemm_calls_" + precision).get<long long>(), 0) << name;
    for (std::string const other : {"fp32", "tf32", "bf16"})
      if (other != precision)
        EXPECT_EQ(r.at("gemm_calls_" + other).get<long long>(), 0) << name << " ran gemm calls in " << other;
    EXPECT_EQ(r.at("rounds").get<int>(), 2) << name;
    EXPECT_GT(r.at("samples_per_s").get<double>(), 0) << name;
  }
  for (std::string const v : {"naive", "resident", "multistep-2", "multistep-4"})
    EXPECT_EQ(measured.count(v), 1u) << v;
}

TEST(PipelineBench, EveryVariantRunsTheRequestedPrecision) {
  expect_all_ran(run("fp32"), "fp32");
  if (!ktr::matmul_tf32_available()) {
    // Passed on to the sessions, which refuse it by name (nothing is measured in another precision).
    std::string const path = ::testing::TempDir() + "ktr_bench_pipeline_refused.json";
    std::remove(path.c_str());
    try {
      ktr::bench::run_pipeline(ktr::ExecSpace(), quick("tf32", path));
      ADD_FAILURE() << "a tf32 request ran on a build without TF32";
    } catch (ktr::Error const& e) {
      EXPECT_NE(std::string(e.what()).find("ktr::Session"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tf32"), std::string::npos) << e.what();
    }
    std::ifstream written(path);
    EXPECT_FALSE(written.good()) << "a refused run wrote " << path;
    GTEST_SKIP() << "TF32 needs a CUDA build (its refusal by the sessions checked); this build runs on "
                 << ktr::ExecSpace::name();
  }
  expect_all_ran(run("tf32"), "tf32");
}

TEST(PipelineBench, Bf16VariantsRunEveryGemmInBf16) {
  if (!ktr::matmul_bf16_available())
    GTEST_SKIP() << "bf16 cannot run here: " << ktr::matmul_unavailable(ktr::MatmulPrecision::bf16);
  expect_all_ran(run("bf16"), "bf16");
}

TEST(PipelineBench, RefusesAPrecisionItDoesNotKnowNamingTheFlag) {
  try {
    ktr::bench::run_pipeline(ktr::ExecSpace(), quick("bf8", ""));
    ADD_FAILURE() << "bf8 accepted";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("--precision"), std::string::npos) << e.what();
  }
}

}  // namespace
