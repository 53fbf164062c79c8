// The Trainer: the same trajectory as the session and dispatch loop it wraps, hooks called as documented, a stop
// request that saves and ends the run at a step, a resume that continues bit for bit, divergence reported and
// never saved, and evaluation and prediction with the run's own input transform.
#include <ktr/core/error.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/trainer.hpp>

#include "small_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace {

using ktr::RunConfig;
using ktr::Trainer;

RunConfig config(std::string model = "in=8x8x1 flatten dense:32:relu dense:10") {
  RunConfig c;
  c.model = std::move(model);
  c.batch = 16;
  c.seed = 7;
  c.optimizer.lr = 3e-3f;
  return c;
}

ktr::TrainerOptions options(int k, std::string checkpoint = "") {
  ktr::TrainerOptions o;
  o.steps_per_dispatch = k;
  o.checkpoint = std::move(checkpoint);
  return o;
}

std::string temp_path(std::string const& name) { return ::testing::TempDir() + "ktr_trainer_" + name; }

std::string slurp(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Counting : ktr::TrainerHooks {
  int dispatches = 0, epochs = 0, divergences = 0, stop_after = -1;
  std::int64_t last_step = 0;
  bool all_evaluated = true;
  void on_dispatch(ktr::DispatchRecord const& r) override {
    ++dispatches, last_step = r.step;
    EXPECT_TRUE(std::isfinite(r.loss));
    EXPECT_GE(r.quality, 0.0);
  }
  void on_epoch(ktr::EpochRecord const& e) override { ++epochs, all_evaluated = all_evaluated && e.evaluated; }
  void on_divergence(std::int64_t, float) override { ++divergences; }
  bool stop_requested() override { return stop_after >= 0 && dispatches >= stop_after; }
};

TEST(Trainer, FitFollowsTheSessionAndDispatchLoopBitForBit) {
  auto const data = ktr::test::small_dataset(200, 1);  // 12 steps per epoch at batch 16
  ktr::ExecSpace const space;
  Trainer trainer(space, config(), data, {}, options(5));
  Counting hooks;
  ktr::RunSummary const s = trainer.fit(space, 2, hooks);
  EXPECT_EQ(s.first_step, 0);
  EXPECT_EQ(s.last_step, 24);
  EXPECT_EQ(hooks.dispatches, 6);  // 5 + 5 + 2 per epoch: a dispatch never straddles an epoch's end
  EXPECT_EQ(hooks.epochs, 2);
  EXPECT_FALSE(s.evaluated);  // no held-out data
  // The same run by hand: the transform fitted on the data, K = 5, 5, 2 per epoch.
  RunConfig c = config();
  c.task = data.task();
  c.norm = ktr::fit_normalization(space, data, c.normalize);
  ktr::Session session(c, 5);
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int k : {5, 5, 2}) ktr::dispatch(space, session.state(), session.model(), data, k);
  EXPECT_EQ(ktr::download(trainer.model().arena().params()), ktr::download(session.model().arena().params()));
}

TEST(Trainer, EvaluatesHeldOutDataEveryEpochWithItsOwnTransform) {
  auto const train = ktr::test::small_dataset(160, 2), test = ktr::test::small_dataset(60, 3);
  ktr::ExecSpace const space;
  Trainer trainer(space, config(), train, test, options(4));
  Counting hooks;
  ktr::RunSummary const s = trainer.fit(space, 3, hooks);
  EXPECT_EQ(hooks.epochs, 3);
  EXPECT_TRUE(hooks.all_evaluated);
  ASSERT_TRUE(s.evaluated);
  EXPECT_EQ(s.test.count, 60);
  ktr::EvalResult const again = trainer.evaluate(space, test);
  EXPECT_EQ(again.loss, s.test.loss);
  EXPECT_EQ(again.accuracy, s.test.accuracy);
  // predict: logits whose arg-max gives the evaluation's accuracy.
  Kokkos::View<float**, ktr::MemSpace> out("out", 60, 10);
  trainer.predict(space, test, out);
  auto const logits = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto const labels = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), test.labels);
  int correct = 0;
  for (int i = 0; i < 60; ++i) {
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (logits(i, c) > logits(i, best)) best = c;
    correct += best == labels(i);
  }
  EXPECT_NEAR(double(correct) / 60, s.test.accuracy, 1e-12);
}

TEST(Trainer, AStopRequestEndsTheRunAtAStepAndSavesIt) {
  std::string const path = temp_path("stop.ckpt");
  std::remove(path.c_str());
  auto const data = ktr::test::small_dataset(200, 4);
  ktr::ExecSpace const space;
  Trainer trainer(space, config(), data, {}, options(4, path));
  Counting hooks;
  hooks.stop_after = 2;
  ktr::RunSummary const s = trainer.fit(space, 5, hooks);
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.last_step, 8);
  EXPECT_EQ(hooks.dispatches, 2);
  EXPECT_EQ(ktr::read_checkpoint(path).get("step"), "8");
  std::remove(path.c_str());
}

TEST(Trainer, AResumedRunEndsWhereTheUninterruptedOneDoesBitForBit) {
  std::string const whole = temp_path("whole.ckpt"), half = temp_path("half.ckpt"), rest = temp_path("rest.ckpt");
  for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
  auto const data = ktr::test::small_dataset(200, 5);
  ktr::ExecSpace const space;
  Trainer(space, config(), data, {}, options(4, whole)).fit(space, 2);
  Trainer(space, config(), data, {}, options(4, half)).fit(space, 1);
  auto resumed = Trainer::resume(space, half, data, {}, options(7, rest));
  EXPECT_EQ(resumed->step(), 12);
  resumed->fit(space, 2);
  EXPECT_EQ(slurp(whole), slurp(rest));
  EXPECT_THROW(resumed->fit(space, 1), ktr::Error);  // already past epoch 1
  for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
}

TEST(Trainer, DivergenceIsReportedAndNeverSaved) {
  std::string const path = temp_path("diverged.ckpt");
  std::remove(path.c_str());
  auto const data = ktr::test::small_dataset(160, 6);  // 10 steps per epoch
  RunConfig c = config();
  c.optimizer.kind = ktr::OptimizerConfig::Kind::sgd;
  c.optimizer.lr = 1e-3f;
  c.optimizer.schedule = ktr::Schedule::parse("step:10:1000000000");  // epoch 2 runs at lr 1e6
  ktr::ExecSpace const space;
  Trainer trainer(space, c, data, {}, options(4, path));
  Counting hooks;
  EXPECT_THROW(trainer.fit(space, 5, hooks), ktr::DivergenceError);
  EXPECT_EQ(hooks.divergences, 1);
  EXPECT_EQ(hooks.epochs, 1);
  EXPECT_EQ(ktr::read_checkpoint(path).get("step"), "10");  // epoch 1's finite state
  std::remove(path.c_str());
}

TEST(Trainer, ANamelessModelIsRefused) {
  RunConfig c = config("");
  ktr::ExecSpace const space;
  EXPECT_THROW(Trainer(space, c, ktr::test::small_dataset(40, 7)), ktr::Error);
}

}  // namespace
