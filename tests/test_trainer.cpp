// The Trainer: the same trajectory as the session and dispatch loop it wraps, hooks called as documented, a stop
// request that saves and ends the run at a step, a resume that continues bit for bit, divergence reported and
// never saved, and evaluation and prediction with the run's own input transform.
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/program_cache.hpp>
#include <ktr/train/trainer.hpp>

#include "helpers.hpp"
#include "small_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <set>

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

std::string trainer_path(std::string const& name) { return ::testing::TempDir() + "ktr_trainer_" + name; }

using ktr::test::slurp;

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
  c.input_transform = ktr::fit_input_transform(space, data, c.normalize);
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
  std::string const path = trainer_path("stop.ckpt");
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
  std::string const whole = trainer_path("whole.ckpt"), half = trainer_path("half.ckpt"),
                    rest = trainer_path("rest.ckpt");
  for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
  auto const data = ktr::test::small_dataset(200, 5);
  ktr::ExecSpace const space;
  // Dropout too: its masks are keyed by the step, so the resumed run draws what the whole one drew.
  for (auto const& model : {config().model, std::string("in=8x8x1 flatten dense:32:silu dropout:0.25 dense:10")}) {
    SCOPED_TRACE(model);
    Trainer(space, config(model), data, {}, options(4, whole)).fit(space, 2);
    Trainer(space, config(model), data, {}, options(4, half)).fit(space, 1);
    auto resumed = Trainer::resume(space, half, data, {}, options(7, rest));
    EXPECT_EQ(resumed->steps_taken(), 12);
    resumed->fit(space, 2);
    EXPECT_EQ(slurp(whole), slurp(rest));
    EXPECT_THROW(resumed->fit(space, 1), ktr::Error);  // already past epoch 1
    for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
  }
}

TEST(Trainer, DivergenceIsReportedAndNeverSaved) {
  std::string const path = trainer_path("diverged.ckpt");
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

namespace {

using Matrix = Kokkos::View<float**, ktr::MemSpace>;

// y = 2 x0 - x1 + x2 x3 over a fixed grid of 4 features (a free function: nvcc takes extended lambdas only in
// functions whose address can be taken).
void fill_surface(Matrix const& x, Matrix const& y) {
  Kokkos::parallel_for(
      "test::surface", Kokkos::RangePolicy<ktr::ExecSpace>(0, int(x.extent(0))), KOKKOS_LAMBDA(int i) {
        for (int j = 0; j < 4; ++j) x(i, j) = float((i * 7919 + j * 104729) % 1000) / 500.0f - 1.0f;
        y(i, 0) = 2.0f * x(i, 0) - x(i, 1) + x(i, 2) * x(i, 3);
      });
  Kokkos::fence();
}

// The surface as an application's device views.
struct Surface {
  Matrix x, y;
  explicit Surface(int n) : x("x", n, 4), y("y", n, 1) { fill_surface(x, y); }
};

// A Session used directly with float features and a config that says "standard" but never had its transform
// fitted would divide the features by 255 while the checkpoint records "standard": the step refuses, saying how
// to fit it; fitted (or the identity under "none"), the same run trains.
TEST(Trainer, AnUnfittedInputTransformOnFloatFeaturesIsRefused) {
  ktr::ExecSpace const space;
  Surface const s(128);
  auto const data = ktr::dataset_from_views(space, s.x, s.y);
  RunConfig c;
  c.model = "in=4 dense:8:relu dense:1";
  c.task = ktr::Task::regression;
  c.batch = 32;
  for (auto mode : {ktr::InputTransformMode::standard, ktr::InputTransformMode::none}) {
    c.normalize = mode;
    ktr::Session unfitted(c, 1);
    std::string const error =
        ktr::test::error_of([&] { ktr::dispatch(space, unfitted.state(), unfitted.model(), data, 1); });
    EXPECT_NE(error.find("fit_input_transform"), std::string::npos) << error;
    EXPECT_EQ(unfitted.state().host_step(), 0);
    c.input_transform = ktr::fit_input_transform(space, data, mode);
    ktr::Session fitted(c, 1);
    EXPECT_EQ(ktr::test::error_of([&] { ktr::dispatch(space, fitted.state(), fitted.model(), data, 1); }),
              "(no error)");
    c.input_transform = ktr::InputTransform{};
  }
}

TEST(Trainer, OnlineStepsOnCallerBatchesLearnAndAdvanceTheRun) {
  ktr::ExecSpace const space;
  Surface const s(1024);
  RunConfig c;
  c.model = "in=4 dense:64:relu dense:1";
  c.batch = 64;
  c.optimizer.lr = 3e-3f;
  Trainer trainer(space, c, ktr::dataset_from_views(space, s.x, s.y));
  double const before = trainer.evaluate(space, ktr::dataset_from_views(space, s.x, s.y)).loss;
  float first = 0, last = 0;
  for (int i = 0; i < 600; ++i) {
    int const at = (i * 64) % 1024, b = i % 3 == 2 ? 40 : 64;  // batches of any size up to the run's
    auto const xs = Kokkos::subview(s.x, Kokkos::make_pair(at, at + b), Kokkos::ALL);
    auto const ys = Kokkos::subview(s.y, Kokkos::make_pair(at, at + b), Kokkos::ALL);
    if (i % 2) {
      trainer.enqueue_step(space, xs, ys);  // no read-back
      last = trainer.last_loss(space);
    } else {
      last = trainer.step(space, xs, ys);
    }
    if (i == 0) first = last;
    ASSERT_TRUE(std::isfinite(last)) << i;
  }
  EXPECT_EQ(trainer.steps_taken(), 600);
  double const after = trainer.evaluate(space, ktr::dataset_from_views(space, s.x, s.y)).loss;
  EXPECT_LT(after, before / 10) << "mse " << before << " -> " << after;
  EXPECT_LT(last, first / 10);
  auto const big = Kokkos::subview(s.x, Kokkos::make_pair(0, 65), Kokkos::ALL);
  EXPECT_THROW(trainer.step(space, big, Kokkos::subview(s.y, Kokkos::make_pair(0, 65), Kokkos::ALL)), ktr::Error);
  Kokkos::View<std::int32_t*, ktr::MemSpace> labels("labels", 64);
  EXPECT_THROW(trainer.step(space, Kokkos::subview(s.x, Kokkos::make_pair(0, 64), Kokkos::ALL), labels),
               ktr::Error);  // class labels for a regression
}

// L-BFGS behind fit(): full-batch steps on a fixed set, K evaluations a dispatch with the line search decided on
// the device; it fits the surface closer than Adam in the same number of steps, a smaller batch is refused by
// name, and a resumed run (the history and line search in the checkpoint) ends where the whole one does, bit for
// bit.
TEST(Trainer, LbfgsOnTheWholeSetFitsCloserThanAdamAndResumesBitForBit) {
  ktr::ExecSpace const space;
  Surface const s(256);
  auto const data = ktr::dataset_from_views(space, s.x, s.y);
  RunConfig c;
  c.model = "in=4 dense:16:tanh dense:1";
  c.task = ktr::Task::regression;
  c.batch = 256;
  c.seed = 3;
  c.optimizer.kind = ktr::OptimizerConfig::Kind::adam;
  c.optimizer.lr = 1e-2f;
  Trainer adam(space, c, data, {}, options(10));
  adam.fit(space, 200);
  double const adam_loss = adam.evaluate(space, data).loss;
  c.optimizer.kind = ktr::OptimizerConfig::Kind::lbfgs;
  c.optimizer.lr = 1;
  std::string const whole = trainer_path("lbfgs_whole.ckpt"), half = trainer_path("lbfgs_half.ckpt"),
                    rest = trainer_path("lbfgs_rest.ckpt");
  for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
  Trainer lbfgs(space, c, data, {}, options(10, whole));
  lbfgs.fit(space, 200);
  double const lbfgs_loss = lbfgs.evaluate(space, data).loss;
  std::printf("surface, 200 full-batch steps: mse adam %.3e, lbfgs %.3e\n", adam_loss, lbfgs_loss);
  EXPECT_LT(lbfgs_loss, 0.01 * adam_loss);  // measured 4.4e-7 against 6.8e-4
  Trainer(space, c, data, {}, options(10, half)).fit(space, 90);
  auto resumed = Trainer::resume(space, half, data, {}, options(7, rest));
  resumed->fit(space, 200);
  EXPECT_EQ(slurp(whole), slurp(rest));
  for (auto const& p : {whole, half, rest}) std::remove(p.c_str());
  c.batch = 128;
  std::string const error = ktr::test::error_of([&] { Trainer(space, c, data, {}, options(10)); });
  EXPECT_NE(error.find("batch"), std::string::npos) << error;
}

// A field-to-field surrogate: a model that ends in a convolution learns a stencil (each cell minus the mean of its
// four neighbours, zero outside) from (N, H, W, C) caller views of fields; its predictions are fields too, and
// class labels are refused by name.
TEST(Trainer, AModelEndingInAConvolutionLearnsAFieldFromFields) {
  ktr::ExecSpace const space;
  int const n = 256, h = 8, w = 8;
  Kokkos::View<float****, Kokkos::LayoutRight, ktr::MemSpace> x("x", n, h, w, 1), y("y", n, h, w, 1);
  auto hx = Kokkos::create_mirror_view(x);
  auto hy = Kokkos::create_mirror_view(y);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int s = 0; s < n; ++s)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j) hx(s, i, j, 0) = u(rng);
  auto at = [&](int s, int i, int j) { return i < 0 || j < 0 || i >= h || j >= w ? 0.0f : hx(s, i, j, 0); };
  for (int s = 0; s < n; ++s)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j)
        hy(s, i, j, 0) =
            at(s, i, j) - 0.25f * (at(s, i - 1, j) + at(s, i + 1, j) + at(s, i, j - 1) + at(s, i, j + 1));
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(y, hy);
  RunConfig c;
  c.model = "in=8x8x1 conv3x3:8:tanh conv3x3:1";
  c.batch = 32;
  c.optimizer.lr = 1e-2f;
  Trainer trainer(space, c, ktr::dataset_from_views(space, x, y));
  double const before = trainer.evaluate(space, ktr::dataset_from_views(space, x, y)).mse;
  for (int i = 0; i < 400; ++i) {
    int const from = (i * 32) % n;
    (void)trainer.step(
        space, Kokkos::subview(x, Kokkos::make_pair(from, from + 32), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
        Kokkos::subview(y, Kokkos::make_pair(from, from + 32), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  }
  ktr::EvalResult const after = trainer.evaluate(space, ktr::dataset_from_views(space, x, y));
  EXPECT_LT(after.mse, before / 20) << "mse " << before << " -> " << after.mse;
  Kokkos::View<float**, Kokkos::LayoutRight, ktr::MemSpace> out("out", n, h * w);
  trainer.predict(space, x, out);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  double sse = 0;
  for (int s = 0; s < n; ++s)
    for (int k = 0; k < h * w; ++k) sse += std::pow(double(ho(s, k)) - double(hy(s, k / w, k % w, 0)), 2);
  EXPECT_NEAR(sse / double(n * h * w), after.mse, 1e-6 + 1e-3 * after.mse) << "predictions are the field";
  // Into (N, H, W, C) views: in place (LayoutRight), or through a buffer (LayoutLeft): the same values.
  Kokkos::View<float****, Kokkos::LayoutRight, ktr::MemSpace> right("right", n, h, w, 1);
  Kokkos::View<float****, Kokkos::LayoutLeft, ktr::MemSpace> left("left", n, h, w, 1);
  trainer.predict(space, x, right);
  trainer.predict(space, x, left);
  auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), right);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), left);
  for (int s = 0; s < n; ++s)
    for (int k = 0; k < h * w; ++k) {
      ASSERT_EQ(hr(s, k / w, k % w, 0), ho(s, k)) << s << " " << k;
      ASSERT_EQ(hl(s, k / w, k % w, 0), ho(s, k)) << s << " " << k;
    }
  Kokkos::View<float****, ktr::MemSpace> transposed("transposed", n, w + 1, h, 1);
  EXPECT_NE(ktr::test::error_of([&] { trainer.predict(space, x, transposed); }).find("the model predicts"),
            std::string::npos);
  Kokkos::View<std::int32_t*, ktr::MemSpace> labels("labels", n);
  std::string const why = ktr::test::error_of([&] {
    RunConfig l = c;
    Trainer t(space, l, ktr::dataset_from_views(space, x, labels, 2));
  });
  EXPECT_NE(why.find("class labels need a model that ends in (B, classes)"), std::string::npos) << why;
}

// A batch with a NaN feature, or an infinite target, is refused on the device: parameters, moments and the step
// are as they were, the read-back reports it (also one deferred past steps taken without a read-back), and the run
// goes on exactly as a twin that never saw the bad batch.
TEST(Trainer, ARefusedOnlineStepChangesNothing) {
  ktr::ExecSpace const space;
  Surface const s(256);
  RunConfig c;
  c.model = "in=4 dense:16:relu dense:1";
  c.batch = 32;
  c.normalize = ktr::InputTransformMode::none;
  Trainer poisoned(space, c, ktr::dataset_from_views(space, s.x, s.y)),
      twin(space, c, ktr::dataset_from_views(space, s.x, s.y));
  auto rows = [&](int at) { return Kokkos::make_pair(at, at + 32); };
  auto const x0 = Kokkos::subview(s.x, rows(0), Kokkos::ALL);
  auto const y0 = Kokkos::subview(s.y, rows(0), Kokkos::ALL);
  EXPECT_EQ(poisoned.step(space, x0, y0), twin.step(space, x0, y0));
  std::vector<float> const before = ktr::download(space, poisoned.model().arena().params());
  Kokkos::View<float**, ktr::MemSpace> bad_x("bad_x", 32, 4), bad_y("bad_y", 32, 1);
  Kokkos::deep_copy(bad_x, Kokkos::subview(s.x, rows(32), Kokkos::ALL));
  Kokkos::deep_copy(bad_y, Kokkos::subview(s.y, rows(32), Kokkos::ALL));
  Kokkos::deep_copy(Kokkos::subview(bad_x, 5, 2), std::numeric_limits<float>::quiet_NaN());
  EXPECT_FALSE(std::isfinite(poisoned.step(space, bad_x, bad_y)));
  EXPECT_EQ(poisoned.steps_taken(), 1) << "a refused step is not counted";
  EXPECT_EQ(ktr::download(space, poisoned.model().arena().params()), before);
  // Deferred: an infinite target, then a good step before any read-back; the read-back reports the refusal.
  Kokkos::deep_copy(Kokkos::subview(bad_x, 5, 2), 0.5f);
  Kokkos::deep_copy(Kokkos::subview(bad_y, 3, 0), std::numeric_limits<float>::infinity());
  poisoned.enqueue_step(space, bad_x, bad_y);
  auto const x1 = Kokkos::subview(s.x, rows(64), Kokkos::ALL);
  auto const y1 = Kokkos::subview(s.y, rows(64), Kokkos::ALL);
  poisoned.enqueue_step(space, x1, y1);
  EXPECT_FALSE(std::isfinite(poisoned.last_loss(space))) << "the refusal before this step went unreported";
  float const twin_loss = twin.step(space, x1, y1);
  EXPECT_EQ(poisoned.steps_taken(), 2);
  EXPECT_EQ(ktr::download(space, poisoned.model().arena().params()),
            ktr::download(space, twin.model().arena().params()));
  auto const x2 = Kokkos::subview(s.x, rows(96), Kokkos::ALL);
  auto const y2 = Kokkos::subview(s.y, rows(96), Kokkos::ALL);
  EXPECT_EQ(poisoned.step(space, x2, y2), twin.step(space, x2, y2)) << twin_loss;
}

// A run resized for larger batches (TorchFort takes any batch size) carries its parameters, optimiser state and
// step over exactly: it continues as a twin that was made with the larger batch room from the start.
TEST(Trainer, ARunResizedForLargerBatchesContinuesExactly) {
  ktr::ExecSpace const space;
  Surface const s(256);
  RunConfig c;
  c.model = "in=4 dense:16:relu dense:1";
  c.batch = 16;
  c.normalize = ktr::InputTransformMode::none;
  Trainer small(space, c, ktr::dataset_from_views(space, s.x, s.y));
  c.batch = 64;
  Trainer twin(space, c, ktr::dataset_from_views(space, s.x, s.y));
  auto rows = [&](int at, int n) { return Kokkos::make_pair(at, at + n); };
  for (int i = 0; i < 3; ++i) {
    auto const x = Kokkos::subview(s.x, rows(16 * i, 16), Kokkos::ALL);
    auto const y = Kokkos::subview(s.y, rows(16 * i, 16), Kokkos::ALL);
    EXPECT_EQ(small.step(space, x, y), twin.step(space, x, y)) << i;
  }
  std::unique_ptr<Trainer> grown = small.with_batch(space, 64);
  EXPECT_EQ(grown->steps_taken(), 3);
  EXPECT_EQ(grown->model().max_batch(), 64);
  EXPECT_EQ(ktr::download(space, grown->model().arena().params()),
            ktr::download(space, small.model().arena().params()));
  auto const x = Kokkos::subview(s.x, rows(64, 64), Kokkos::ALL);
  auto const y = Kokkos::subview(s.y, rows(64, 64), Kokkos::ALL);
  EXPECT_EQ(grown->step(space, x, y), twin.step(space, x, y));
  EXPECT_EQ(ktr::download(space, grown->model().arena().params()),
            ktr::download(space, twin.model().arena().params()));
}

// accumulate N: an update spans N online calls (TorchFort's grad_accumulation_steps). Three calls of 8 change
// nothing; the fourth applies the mean gradient, as one call of the 32 samples does (up to summation order).
TEST(Trainer, AnAccumulatedUpdateOverCallsEqualsOneCallOfTheWholeBatch) {
  ktr::ExecSpace const space;
  Surface const s(256);
  RunConfig c;
  c.model = "in=4 dense:16:relu dense:1";
  c.batch = 32;
  c.accumulate = 4;
  c.normalize = ktr::InputTransformMode::none;
  c.optimizer.kind = ktr::OptimizerConfig::Kind::sgd;
  c.optimizer.lr = 0.1f;
  Trainer calls(space, c, ktr::dataset_from_views(space, s.x, s.y));
  c.accumulate = 1;
  Trainer whole(space, c, ktr::dataset_from_views(space, s.x, s.y));
  std::vector<float> const start = ktr::download(space, calls.model().arena().params());
  ASSERT_EQ(start, ktr::download(space, whole.model().arena().params()));
  auto rows = [&](int at, int n) { return Kokkos::make_pair(at, at + n); };
  float losses = 0;
  for (int j = 0; j < 4; ++j) {
    if (j == 3)
      EXPECT_EQ(ktr::download(space, calls.model().arena().params()), start) << "an update before its end";
    EXPECT_EQ(calls.steps_taken(), 0);
    losses += calls.step(space, Kokkos::subview(s.x, rows(8 * j, 8), Kokkos::ALL),
                         Kokkos::subview(s.y, rows(8 * j, 8), Kokkos::ALL));
  }
  EXPECT_EQ(calls.steps_taken(), 1);
  float const loss = whole.step(space, Kokkos::subview(s.x, rows(0, 32), Kokkos::ALL),
                                Kokkos::subview(s.y, rows(0, 32), Kokkos::ALL));
  EXPECT_NEAR(losses / 4, loss, 1e-5f * std::abs(loss)) << "each call's loss is its micro-batch's";
  std::vector<float> const a = ktr::download(space, calls.model().arena().params());
  std::vector<float> const b = ktr::download(space, whole.model().arena().params());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6f + 1e-5f * std::abs(b[i])) << i;
  EXPECT_NE(a, start);
  EXPECT_THROW(calls.step(space, Kokkos::subview(s.x, rows(0, 8), Kokkos::ALL),
                          Kokkos::subview(s.y, rows(0, 8), Kokkos::ALL));
               calls.step(space, Kokkos::subview(s.x, rows(0, 4), Kokkos::ALL),
                          Kokkos::subview(s.y, rows(0, 4), Kokkos::ALL)),
               ktr::Error)
      << "calls of one update in two sizes";
}

TEST(Trainer, PredictionFromFeaturesAloneEqualsPredictionFromADataset) {
  ktr::ExecSpace const space;
  Surface const s(300);
  RunConfig c;
  c.model = "in=4 dense:16:relu dense:1";
  c.batch = 32;
  Trainer trainer(space, c, ktr::dataset_from_views(space, s.x, s.y));
  trainer.fit(space, 2);
  Kokkos::View<float**, ktr::MemSpace> a("a", 300, 1), b("b", 300, 1);
  trainer.predict(space, s.x, a);  // features alone: no targets needed
  trainer.predict(space, ktr::dataset_from_views(space, s.x, s.y), b);
  auto const ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto const hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(ha(i, 0), hb(i, 0)) << i;
}

}  // namespace

namespace {

std::vector<std::string>& regions_seen() {
  static std::vector<std::string> seen;
  return seen;
}
void on_push_region(char const* name) { regions_seen().push_back(name); }

TEST(Trainer, EveryEntryPointOpensAProfilingRegion) {
  regions_seen().clear();
  Kokkos::Tools::Experimental::set_push_region_callback(&on_push_region);
  std::string const path = trainer_path("regions.ckpt");
  std::remove(path.c_str());
  {
    ktr::ExecSpace const space;
    auto const data = ktr::test::small_dataset(64, 8);
    Trainer trainer(space, config(), data, data, options(4, path));
    trainer.fit(space, 1);
    trainer.evaluate(space, data);
    Kokkos::View<float**, ktr::MemSpace> out("out", 64, 10);
    trainer.predict(space, data, out);
    Trainer::resume(space, path, data);
  }
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  std::remove(path.c_str());
  for (char const* name : {"ktr::Trainer::Trainer", "ktr::Trainer::fit", "ktr::Trainer::save",
                           "ktr::Session::save", "ktr::Trainer::evaluate", "ktr::Evaluator::run",
                           "ktr::Trainer::predict", "ktr::Predictor::run", "ktr::Trainer::resume"})
    EXPECT_NE(std::find(regions_seen().begin(), regions_seen().end(), name), regions_seen().end()) << name;
}

}  // namespace

namespace {

// Every kernel and profiling region ktr launches carries a `ktr::` label (Kokkos's own, for the views ktr makes
// and copies, say `Kokkos::`), so that a profile names ktr's work: an unlabelled kernel shows as its functor's
// mangled type. Models with every layer kind, trained, evaluated, predicted from, saved and resumed, under both
// optimisers' kinds of update.
TEST(Trainer, EveryKernelAndRegionIsLabelled) {
  std::string const path = trainer_path("labels.ckpt");
  std::set<std::string> kernels, regions;
  for (auto const& [model, kind] :
       {std::pair<std::string, ktr::OptimizerConfig::Kind>{
            "in=8x8x1 conv3x3:4:relu:circular save:a maxpool2 convT2x2:4 concat:a conv5x5:4:gelu:s2 layernorm "
            "avgpool2 flatten dense:16:silu layernorm dropout:0.2 dense:10",
            ktr::OptimizerConfig::Kind::adamw},
        {"in=8x8x1 flatten dense:32:tanh save:r dense:32:tanh add:r dense:10", ktr::OptimizerConfig::Kind::sgd}}) {
    std::remove(path.c_str());
    ktr::ToolsCounter counter;
    {
      ktr::ExecSpace const space;
      auto const data = ktr::test::small_dataset(64, 8);
      RunConfig c = config(model);
      c.optimizer.kind = kind;
      Trainer trainer(space, c, data, data, options(4, path));
      trainer.fit(space, 1);
      trainer.evaluate(space, data);
      Kokkos::View<float**, ktr::MemSpace> out("out", 64, 10);
      trainer.predict(space, data, out);
      Trainer::resume(space, path, data);
    }
    kernels.insert(counter.kernel_names().begin(), counter.kernel_names().end());
    regions.insert(counter.region_names().begin(), counter.region_names().end());
  }
  std::remove(path.c_str());
  EXPECT_GT(kernels.size(), 20u) << "the tool saw too few kernels to tell";
  EXPECT_GT(regions.size(), 5u) << "the tool saw too few regions to tell";
  auto labelled = [](std::string const& name) {  // ktr's own, or Kokkos's and Kokkos Kernels' (KokkosBlas::...)
    return name.rfind("ktr::", 0) == 0 || name.rfind("Kokkos::", 0) == 0 || name.rfind("KokkosBlas::", 0) == 0;
  };
  for (std::string const& k : kernels) EXPECT_TRUE(labelled(k)) << "an unlabelled kernel: " << k;
  for (std::string const& r : regions) EXPECT_TRUE(labelled(r)) << "an unlabelled region: " << r;
}

struct Fence {
  std::string name;
  std::uint32_t device = 0;
};
std::vector<Fence>& fences_seen() {
  static std::vector<Fence> seen;
  return seen;
}
void on_begin_fence(char const* name, std::uint32_t device, std::uint64_t*) {
  fences_seen().push_back(Fence{name, device});
}

TEST(Trainer, DispatchEvaluationAndSaveNeverFenceTheWholeDevice) {
  // What a global fence reports: the device id of one Kokkos::fence() (Kokkos 4.x profiles fences; 3.4 does not).
  fences_seen().clear();
  Kokkos::Tools::Experimental::set_begin_fence_callback(&on_begin_fence);
  Kokkos::fence();
  if (fences_seen().empty()) {
    Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
    GTEST_SKIP() << "Kokkos " << KOKKOS_VERSION
                 << " reports no fences to Kokkos Tools (4.x does): nothing to observe";
  }
  std::uint32_t const global = fences_seen().front().device;
  std::string const path = trainer_path("fences.ckpt");
  std::remove(path.c_str());
  auto const data = ktr::test::small_dataset(64, 9);
  ktr::ExecSpace const space;
  Trainer trainer(space, config(), data, {}, options(4));
  fences_seen().clear();
  trainer.fit(space, 1);  // dispatches and their metric read-backs
  trainer.evaluate(space, data);
  trainer.save(space, path);
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
  std::remove(path.c_str());
  EXPECT_FALSE(fences_seen().empty()) << "the read-backs wait for their instance";
  for (Fence const& f : fences_seen()) EXPECT_NE(f.device, global) << "a global fence: " << f.name;
}

}  // namespace

namespace {

TEST(Trainer, TheGemmPrecisionIsPartOfTheRunAndOfTheProgramKey) {
  ktr::Model const model("in=8x8x1 flatten dense:10", 4);
  auto const data = ktr::test::small_dataset(40, 10);
  ktr::ProgramKey const fp32(model, data, ktr::InputTransform{}, 4, ktr::MatmulPrecision::fp32),
      tf32(model, data, ktr::InputTransform{}, 4, ktr::MatmulPrecision::tf32);
  EXPECT_TRUE((fp32 < tf32) != (tf32 < fp32)) << "programs captured at two precisions share a key";
  RunConfig c = config();
  c.precision = ktr::MatmulPrecision::tf32;
  std::string const error =
      ktr::test::error_of([&] { Trainer(ktr::ExecSpace(), c, data).fit(ktr::ExecSpace(), 1); });
  if (ktr::matmul_tf32_available())
    EXPECT_EQ(error, "(no error)");
  else
    EXPECT_NE(error.find("tf32 needs a CUDA build"), std::string::npos) << error;
}

}  // namespace

namespace {

TEST(Trainer, AdvanceTrainsOnDataThatGrowsBetweenCalls) {
  ktr::ExecSpace const space;
  Surface const s(512);
  RunConfig c;
  c.model = "in=4 dense:32:relu dense:1";
  c.batch = 32;
  c.optimizer.lr = 3e-3f;
  auto rows = [&](int n) {
    return ktr::dataset_from_views(space, Kokkos::subview(s.x, Kokkos::make_pair(0, n), Kokkos::ALL),
                                   Kokkos::subview(s.y, Kokkos::make_pair(0, n), Kokkos::ALL));
  };
  Trainer trainer(space, c, rows(128), {}, options(16));
  double const first = trainer.advance(space, 40);  // dispatches of 16, 16, 8
  EXPECT_EQ(trainer.steps_taken(), 40);
  for (int n : {256, 384, 512}) {
    trainer.set_data(rows(n));
    trainer.advance(space, 200);
  }
  EXPECT_EQ(trainer.steps_taken(), 640);
  EXPECT_LT(trainer.evaluate(space, rows(512)).loss, first / 5);
  Kokkos::View<float**, ktr::MemSpace> wide("wide", 64, 5);
  EXPECT_THROW(trainer.set_data(ktr::dataset_from_views(
                   space, wide, Kokkos::subview(s.y, Kokkos::make_pair(0, 64), Kokkos::ALL))),
               ktr::Error);
  EXPECT_THROW(trainer.set_data(rows(16)), ktr::Error);  // fewer samples than the batch
}

}  // namespace
