// Data parallelism and gradient accumulation on one rank: N micro-batches of B/N equal one batch of B (the
// gradient of the mean is the mean of the micro-batches' gradients); a gather's rows of a global batch are that
// batch's rows; the single-rank and loopback communicators change nothing (on CUDA with NCCL the loopback runs
// NCCL inside captured steps); checkpoints record accumulate (absent: 1).
// The multi-rank runs are the cli.mpi-* tests (mpirun -np 2 on the command line).
#include <ktr/backends/collective.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/session.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

namespace {

using ktr::RunConfig;
using ktr::Session;

ktr::DeviceDataset noisy_dataset(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(n * 64)), lb(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    int const c = int(rng() % 10);
    lb[std::size_t(i)] = std::uint8_t(c);
    for (int p = 0; p < 64; ++p)
      px[std::size_t(i * 64 + p)] = std::uint8_t(std::min(int(rng() % 80) + (p % 8 == c % 8 ? 150 : 0), 255));
  }
  return ktr::make_device_dataset(px, lb, n, 8, 8, 1, 10, "noisy");
}

RunConfig config(int accumulate, std::string model = "in=8x8x1 flatten dense:32:relu dense:10") {
  RunConfig c;
  c.model = std::move(model);
  c.batch = 32;
  c.seed = 11;
  c.optimizer.lr = 3e-3f;
  c.accumulate = accumulate;
  return c;
}

// Largest |a - b| / (1 + |a|) over the parameters.
double max_relative_difference(Session& a, Session& b) {
  auto pa = ktr::download(a.model().arena().params()), pb = ktr::download(b.model().arena().params());
  EXPECT_EQ(pa.size(), pb.size());
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, std::abs(double(pa[i]) - double(pb[i])) / (1 + std::abs(double(pa[i]))));
  return worst;
}

// optax.MultiSteps: 4 micro-batches of 8 per update follow the trajectory of batches of 32, for SGD with
// momentum and for Adam, MLP and CNN, over 3 dispatches of 10 updates (parameters within 1e-5 relative; the
// difference is float summation order, which Adam's normalisation amplifies a little).
TEST(Accumulate, NMicroBatchesEqualOneBatch) {
  auto data = noisy_dataset(400, 7);  // 12 updates per epoch: the dispatches cross an epoch boundary
  // Dropout's masks are keyed by the sample's row in the whole update: four micro-batches draw one batch's.
  for (auto const& model : {std::string("in=8x8x1 flatten dense:32:relu dense:10"),
                            std::string("in=8x8x1 conv3x3:4:relu avgpool2 flatten dense:10"),
                            std::string("in=8x8x1 flatten dense:32:gelu dropout:0.3 dense:10")}) {
    for (auto kind : {ktr::OptimizerConfig::Kind::sgd, ktr::OptimizerConfig::Kind::adam}) {
      SCOPED_TRACE(model + " " + ktr::OptimizerConfig::kind_name(kind));
      RunConfig one = config(1, model), four = config(4, model);
      one.optimizer.kind = four.optimizer.kind = kind;
      one.optimizer.momentum = four.optimizer.momentum = kind == ktr::OptimizerConfig::Kind::sgd ? 0.9f : 0.0f;
      Session a(one, 10), b(four, 10);
      EXPECT_EQ(b.state().micro_batch, 8);
      for (int d = 0; d < 3; ++d) {
        ktr::dispatch(ktr::ExecSpace(), a.state(), a.model(), data, 10);
        ktr::dispatch(ktr::ExecSpace(), b.state(), b.model(), data, 10);
        auto const ma = ktr::read_metrics(ktr::ExecSpace(), a.state(), 10);
        auto const mb = ktr::read_metrics(ktr::ExecSpace(), b.state(), 10);
        for (int i = 0; i < 10; ++i) {
          EXPECT_NEAR(ma.loss[std::size_t(i)], mb.loss[std::size_t(i)], 1e-5 * (1 + ma.loss[std::size_t(i)]));
          EXPECT_EQ(ma.correct[std::size_t(i)], mb.correct[std::size_t(i)]);
        }
      }
      EXPECT_EQ(b.state().host_step(), 30);  // K counts optimiser updates
      EXPECT_LT(max_relative_difference(a, b), 1e-5);
    }
  }
}

TEST(Accumulate, ADispatchCopiesAndAllocatesNothing) {
  auto data = noisy_dataset(300, 3);
  Session s(config(4), 8);
  ktr::ExecSpace space;
  ktr::dispatch(space, s.state(), s.model(), data, 8);
  space.fence();
  ktr::ToolsCounter counter;
  ktr::dispatch(space, s.state(), s.model(), data, 8);
  space.fence();
  EXPECT_EQ(counter.deep_copies(), 0) << (counter.events().empty() ? "" : counter.events().front());
  EXPECT_EQ(counter.allocations(), 0) << (counter.events().empty() ? "" : counter.events().front());
}

TEST(Accumulate, TheBatchMustSplitIntoMicroBatches) {
  RunConfig c = config(3);  // 32 is not a multiple of 3
  try {
    Session s(c, 1);
    FAIL() << "accepted a batch of 32 in 3 micro-batches";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of ranks x accumulate = 1 x 3"), std::string::npos)
        << e.what();
  }
}

// A gather of rows [row, row + b) of a global batch of S rows is those rows of the gather of all S.
TEST(DataParallel, ASliceOfTheGlobalBatchIsItsRows) {
  auto data = noisy_dataset(100, 5);
  ktr::InputTransform const norm;
  Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
  Kokkos::deep_copy(step, std::int64_t(7));  // epoch 2 of 3 steps per epoch
  ktr::Tensor whole("ktr::test::whole", data.batch_shape(32)), part("ktr::test::part", data.batch_shape(8));
  ktr::DeviceView<std::int32_t*> yw("ktr::test::yw", 32), yp("ktr::test::yp", 8);
  ktr::gather_batch(ktr::ExecSpace(), data, ktr::BatchCursor{step, 0, 9, 32}, norm, whole, yw);
  auto const xw = ktr::download(whole.view());
  std::vector<std::int32_t> lw(32), lp(8);
  Kokkos::deep_copy(ktr::HostView<std::int32_t*>(lw.data(), 32), yw);
  for (std::int64_t row : {0, 8, 24}) {
    ktr::gather_batch(ktr::ExecSpace(), data, ktr::BatchCursor{step, 0, 9, 8, 32, row}, norm, part, yp);
    auto const xp = ktr::download(part.view());
    Kokkos::deep_copy(ktr::HostView<std::int32_t*>(lp.data(), 8), yp);
    for (std::size_t i = 0; i < xp.size(); ++i) ASSERT_EQ(xp[i], xw[std::size_t(row) * 64 + i]) << row << " " << i;
    for (std::size_t i = 0; i < 8; ++i) ASSERT_EQ(lp[i], lw[std::size_t(row) + i]);
  }
  EXPECT_THROW(ktr::gather_batch(ktr::ExecSpace(), data, ktr::BatchCursor{step, 0, 9, 8, 32, 28}, norm, part, yp),
               ktr::Error);
}

TEST(DataParallel, OneRankCollectivesChangeNothing) {
  for (auto const& comm : {ktr::Communicator(), ktr::Communicator::loopback(), ktr::Communicator::world()}) {
    if (comm.size() != 1) continue;  // the MPI tests run elsewhere
    EXPECT_EQ(comm.rank(), 0);
    std::vector<float> values(1000);
    for (int i = 0; i < 1000; ++i) values[std::size_t(i)] = 0.5f * float(i) - 3.0f;
    ktr::DeviceView<float*> v("ktr::test::v", 1000);
    Kokkos::deep_copy(v, ktr::HostView<const float*>(values.data(), values.size()));
    comm.allreduce_sum(ktr::ExecSpace(), v);
    comm.broadcast(ktr::ExecSpace(), v);
    auto const h = ktr::download(v);
    EXPECT_EQ(h, values);
    std::vector<double> sums{1.5, -2};
    comm.sum(sums);
    EXPECT_EQ(sums, (std::vector<double>{1.5, -2}));
    EXPECT_TRUE(comm.any(true));
    EXPECT_FALSE(comm.any(false));
  }
}

// On CUDA with NCCL the loopback communicator runs ncclAllReduce inside every step, on the stream of a captured
// K-step program (the path a multi-rank run takes, as one rank); elsewhere it is the plain single rank.
TEST(DataParallel, ALoopbackCollectiveInTheStepChangesNothing) {
  auto data = noisy_dataset(300, 8);
  Session plain(config(1), 8), looped(config(1), 8, ktr::Communicator::loopback());
  ktr::DeviceStream const stream;
  for (int d = 0; d < 3; ++d) {  // plain, captured, replayed where the backend captures
    ktr::dispatch(stream.space(), plain.state(), plain.model(), data, 8);
    ktr::dispatch(stream.space(), looped.state(), looped.model(), data, 8);
  }
  stream.space().fence();
  EXPECT_EQ(max_relative_difference(plain, looped), 0.0) << looped.state().parallel.comm.transport();
}

TEST(Accumulate, CheckpointsRecordItAndOlderOnesMeanOne) {
  std::string const path = ::testing::TempDir() + "ktr_test_accumulate.ckpt";
  Session s(config(4), 1);
  s.save(ktr::ExecSpace(), path);
  ktr::Checkpoint c = ktr::read_checkpoint(path);
  EXPECT_EQ(c.get("accumulate"), "4");
  EXPECT_EQ(c.get("ranks"), "1");
  EXPECT_EQ(Session::restore(path, 1)->config().accumulate, 4);
  c.header.erase("accumulate");
  c.header.erase("ranks");
  ktr::write_checkpoint(path, c);
  EXPECT_EQ(Session::restore(path, 1)->config().accumulate, 1);
  std::remove(path.c_str());
}

}  // namespace
