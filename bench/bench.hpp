// Benchmarks behind `ktr bench kernels`, `pipeline` and `profile` (also used by the micro-benchmarks).
#pragma once

#include <ktr/backends/precision.hpp>
#include <ktr/data/dataset.hpp>

#include <string>
#include <vector>

namespace ktr::bench {

struct ModelRate {
  double samples_per_s, gflops;
};

/// Batch gather throughput (uint8 read + float write) in GB/s.
double gather_gbps(ExecSpace const& space, DeviceDataset const& data, std::int64_t batch);
/// Adam update over an arena of n floats, GB/s of arena traffic.
double adam_gbps(ExecSpace const& space, std::int64_t n);
/// Forward + loss + backward of a model at a batch, its matmuls in `precision`.
ModelRate model_rate(ExecSpace const& space, std::string const& description, std::int64_t batch,
                     MatmulPrecision precision);

/// The kernel table (quick: tiny sizes, for smoke tests).
int run_kernels(ExecSpace const& space, bool quick);

struct PipelineOptions {
  std::string models = "mlp,cnn";
  std::int64_t steps = 64;  // timed steps per variant and round (a multiple of every K)
  int rounds = 5;           // interleaved rounds; the median is reported
  std::string ks = "4,16,64";
  std::string json, plot;  // output files ("" = none)
  std::int64_t mlp_batch = 256, cnn_batch = 32;
  std::string precision = "fp32";  // gemm arithmetic of every variant's session: fp32 or tf32 (CUDA)
  std::int64_t samples = 60000;    // random 28x28 images in the dataset
  std::int64_t sgemm_n = 2048;     // the large sgemm of the limits line
};
/// The pipeline comparison: naive, resident, multistep-K, graph-K. Every variant's session runs `precision` (or,
/// where the build cannot, the sessions refuse it); the output names the precision each variant's gemm calls ran
/// in, and the JSON file is rewritten (atomically, medians so far) after every interleaved round.
int run_pipeline(ExecSpace const& space, PipelineOptions const& options);

struct ProfileOptions {
  std::string models = "mlp,cnn";
  std::int64_t steps = 64;  // a multiple of k
  int k = 16;               // steps per dispatch
  std::int64_t mlp_batch = 256, cnn_batch = 32;
  std::string precision = "fp32";  // the sessions' (refused where the build cannot run it)
};
/// Where a training step's time goes, kernel by kernel (KernelTimer), beside the unprofiled step.
int run_profile(ExecSpace const& space, ProfileOptions const& options);

struct RlBenchOptions {
  std::int64_t updates = 2048;  // timed updates per case and round (a multiple of 16)
  int rounds = 3;               // interleaved rounds; medians are reported
  bool suite = false;           // TorchFort's convergence suite instead, timed
  int seeds = 1;                // seeds of the suite
};
/// Off-policy updates per second (TD3, DDPG; TorchFort's test and cart-pole sizes; K = 1 and 16 per call), the
/// per-step calls' latency, or (suite) TorchFort's convergence suite with its time; non-zero if a case failed.
int run_rl(ExecSpace const& space, RlBenchOptions const& options);

struct DerivativesBenchOptions {
  std::vector<std::int64_t> widths{20, 64, 256};  // hidden widths, one case each
  int depth = 4;                                  // hidden tanh layers
  std::int64_t points = 2048;                     // collocation points (the batch of both steps)
  int rounds = 5;                                 // interleaved rounds; medians are reported
  int steps = 20;                                 // timed steps per round
};
/// A physics-informed step (Burgers' jet, residual, reverse pass, Adam) beside a plain step at the same batch.
int run_derivatives(ExecSpace const& space, DerivativesBenchOptions const& options);

}  // namespace ktr::bench
