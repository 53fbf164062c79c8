// `ktr bench pipeline`: the same model, data, seed and number of steps in each variant, timed after a warm-up,
// in one process:
//   naive         dataset in host memory; each batch gathered on the host, copied to the device; loss read back
//                 every step (the anti-pattern users start from)
//   resident      dataset on the device, on-device shuffle and gather; loss read back every step
//   multistep-K   resident, K steps per dispatch, one read-back per dispatch
//   graph-K       the captured K-step program replayed on a stream of its own (CUDA; HIP with Kokkos Kernels
//                 4.x); elsewhere, or where the capture failed, reported as unavailable with the reason (a plain
//                 run is never labelled graph-K)
// plus, in the same run, the step's GFLOP/s beside large-sgemm GFLOP/s, and kernel launches per step beside the
// cost of one empty launch. Writes a table, optionally a JSON file and a PNG plot (gnuplot) of samples/s vs K.
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>
#include <ktr/core/permutation.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include "bench/bench.hpp"
#include "bench/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>

namespace ktr::bench {

namespace {

struct Result {
  std::string model, variant;
  int k;
  std::int64_t batch;
  double step_ms, samples_per_s, speedup;
  bool available;
  std::string note;                              // why not available
  std::string precision;                         // what its gemm calls ran: "fp32", "tf32", "bf16", or "mixed"
  std::int64_t gemm_fp32, gemm_tf32, gemm_bf16;  // its gemm calls per precision (warm-up, capture, timed rounds)
  int rounds;                                    // timed rounds behind the median
};

std::vector<int> parse_ks(std::string const& text) {
  std::vector<int> ks;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int k = std::atoi(part.c_str());
    KTR_REQUIRE(k > 0, "--k", "'" + part + "' is not a positive integer");
    ks.push_back(k);
  }
  return ks;
}

// The naive step: host gather + normalise, copies to the device, the step, a loss read-back.
class NaiveStepper {
 public:
  NaiveStepper(std::vector<std::uint8_t> const& px, std::vector<std::uint8_t> const& lb, std::int64_t n,
               std::int64_t batch, std::uint64_t seed)
      : px_(px),
        lb_(lb),
        n_(n),
        batch_(batch),
        seed_(seed),
        hx_("ktr::bench::naive_x", std::size_t(batch * 784)),
        hy_("ktr::bench::naive_y", std::size_t(batch)) {}

  void step(ExecSpace const& space, Session& s, std::int64_t step) {
    Precision const precision{s.state().precision, {}};  // the run's, as dispatch hands it to the model
    std::int64_t const spe = n_ / batch_;
    Permutation const perm(std::uint64_t(n_), seed_, std::uint64_t(step / spe));
    for (std::int64_t b = 0; b < batch_; ++b) {
      auto const src = std::int64_t(perm(std::uint64_t((step % spe) * batch_ + b)));
      for (std::int64_t p = 0; p < 784; ++p) hx_(b * 784 + p) = px_[std::size_t(src * 784 + p)] * (1.0f / 255.0f);
      hy_(b) = lb_[std::size_t(src)];
    }
    TrainState& st = s.state();
    Kokkos::deep_copy(st.x.view(), hx_);  // host -> device, every step
    Kokkos::deep_copy(st.y, hy_);
    Tensor const logits = s.model().forward(space, precision, st.x);
    softmax_cross_entropy(space, logits, st.y, s.model().dlogits(), LossOutput{st.loss, st.correct, 0, false});
    s.model().backward(space, precision);
    st.optimizer.update(space, s.model().arena().params(), s.model().arena().grads(), st.step);
    float loss = 0;
    Kokkos::deep_copy(loss, Kokkos::subview(st.loss, 0));  // device -> host, every step
    sink_ += loss;
  }

 private:
  std::vector<std::uint8_t> const& px_;
  std::vector<std::uint8_t> const& lb_;
  std::int64_t n_, batch_;
  std::uint64_t seed_;
  HostView<float*> hx_;
  HostView<std::int32_t*> hy_;
  float sink_ = 0;  // the read-back losses, summed so that the copies are not optimised away
};

double timed(ExecSpace const& space, std::function<void()> const& run) {
  space.fence();
  auto const t0 = std::chrono::steady_clock::now();
  run();
  space.fence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void plot(std::string const& path, std::vector<Result> const& results) {
  std::string const data = path + ".dat.tmp", script = path + ".gp.tmp", tmp_png = path + ".tmp";
  std::string dat;
  for (std::string const model : {"mlp", "cnn"}) {
    bool any = false;
    for (auto const& r : results)
      if (r.model == model && r.available && r.variant != "naive" && r.variant.rfind("graph", 0) != 0) {
        dat += std::to_string(r.k) + " " + num(r.samples_per_s, 1) + "\n";
        any = true;
      }
    dat += any ? "\n\n" : "1 0\n\n\n";
  }
  write_atomically(data, dat);
  double naive_mlp = 0, naive_cnn = 0;
  for (auto const& r : results)
    if (r.variant == "naive") (r.model == "mlp" ? naive_mlp : naive_cnn) = r.samples_per_s;
  std::string const gp = "set terminal png size 900,560\nset output '" + tmp_png +
                         "'\nset title 'ktr: samples/s against steps per dispatch (K = 1: resident)'\n"
                         "set xlabel 'K (optimiser steps per dispatch)'\nset ylabel 'samples/s'\n"
                         "set logscale x 2\nset grid\nset key left top\n"
                         "plot '" +
                         data + "' index 0 with linespoints lw 2 title 'MLP (batch 256)', '" + data +
                         "' index 1 with linespoints lw 2 title 'SimpleCNN (batch 32)', " + num(naive_mlp, 1) +
                         " with lines dt 2 title 'MLP naive', " + num(naive_cnn, 1) +
                         " with lines dt 2 title 'CNN naive'\n";
  write_atomically(script, gp);
  int const rc = std::system(("gnuplot '" + script + "' 2>/dev/null").c_str());
  std::remove(data.c_str());
  std::remove(script.c_str());
  if (rc != 0 || std::rename(tmp_png.c_str(), path.c_str()) != 0) {
    std::remove(tmp_png.c_str());
    std::fprintf(stderr, "ktr bench: could not draw %s (is gnuplot installed?)\n", path.c_str());
  }
}

}  // namespace

namespace {

// "fp32", "tf32" or "bf16", by name only: whether the build can run it is the sessions' to say (ktr::Session
// refuses one it cannot run), so a request is passed on to every variant, never changed on the way.
MatmulPrecision precision_named(std::string const& name) {
  KTR_REQUIRE(name == "fp32" || name == "tf32" || name == "bf16", "--precision",
              "must be fp32, tf32 or bf16, got '" + name + "'");
  return name == "tf32" ? MatmulPrecision::tf32 : name == "bf16" ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
}

// One variant: its own session (the requested precision), how it runs n steps, its timed rounds and gemm calls.
struct Variant {
  std::string name;
  int k;
  std::unique_ptr<Session> session;
  std::function<void(std::int64_t)> run;
  std::vector<double> seconds;
  std::int64_t gemm[matmul_precision_count] = {};  // per MatmulPrecision

  void run_counted(std::int64_t steps) {
    std::int64_t before[matmul_precision_count];
    for (int p = 0; p < matmul_precision_count; ++p) before[p] = gemm_calls(MatmulPrecision(p));
    run(steps);
    for (int p = 0; p < matmul_precision_count; ++p) gemm[p] += gemm_calls(MatmulPrecision(p)) - before[p];
  }
};

// The one precision a variant's gemm calls ran in, or "mixed"; a model without gemm calls (the SimpleCNN on a
// host: ktr's own kernels) ran in its session's precision.
std::string ran(std::int64_t const (&gemm)[matmul_precision_count], MatmulPrecision session) {
  std::string only = matmul_precision_name(session);
  int used = 0;
  for (int p = 0; p < matmul_precision_count; ++p)
    if (gemm[p] > 0) ++used, only = matmul_precision_name(MatmulPrecision(p));
  return used > 1 ? "mixed" : only;
}

// One model's variants, created before anything is measured.
struct ModelBench {
  std::string model;
  RunConfig config;
  std::vector<Variant> variants;
  std::unique_ptr<NaiveStepper> naive;
  std::unique_ptr<DeviceStream> stream;  // captured programs need a stream of their own
  std::int64_t naive_step = 0;
};

std::unique_ptr<ModelBench> make_bench(ExecSpace const& space, std::string const& model, PipelineOptions const& o,
                                       MatmulPrecision precision, std::vector<int> const& ks,
                                       RandomImages const& images, DeviceDataset const& data) {
  auto b = std::make_unique<ModelBench>();
  b->model = model;
  b->config = model_config(model, o.mlp_batch, o.cnn_batch);
  b->config.precision = precision;
  KTR_REQUIRE(o.samples >= b->config.batch, "samples",
              "must be at least the batch (" + std::to_string(b->config.batch) + ")");
  int const max_k = *std::max_element(ks.begin(), ks.end());
  ModelBench* mb = b.get();
  auto add = [&](std::string name, int k, std::function<void(Session&, std::int64_t)> run) {
    mb->variants.push_back(Variant{std::move(name), k, std::make_unique<Session>(mb->config, max_k), nullptr, {}});
    Session* session = mb->variants.back().session.get();
    mb->variants.back().run = [session, run](std::int64_t steps) { run(*session, steps); };
  };
  b->naive =
      std::make_unique<NaiveStepper>(images.pixels, images.labels, o.samples, b->config.batch, b->config.seed);
  add("naive", 1, [mb, space](Session& s, std::int64_t steps) {
    for (std::int64_t i = 0; i < steps; ++i) mb->naive->step(space, s, mb->naive_step++);
  });
  add("resident", 1, [space, &data](Session& s, std::int64_t steps) {
    for (std::int64_t i = 0; i < steps; ++i) {
      train_steps(space, s.state(), s.model(), data, 1);
      read_metrics(space, s.state(), 1);
    }
  });
  for (int k : ks)
    add("multistep-" + std::to_string(k), k, [space, &data, k](Session& s, std::int64_t steps) {
      for (std::int64_t i = 0; i < steps / k; ++i) {
        train_steps(space, s.state(), s.model(), data, k);
        read_metrics(space, s.state(), k);
      }
    });
  if (CapturedProgram::supported()) {
    b->stream = std::make_unique<DeviceStream>();
    for (int k : ks)
      add("graph-" + std::to_string(k), k, [mb, &data, k](Session& s, std::int64_t steps) {
        for (std::int64_t i = 0; i < steps / k; ++i) {
          dispatch(mb->stream->space(), s.state(), s.model(), data, k);
          read_metrics(mb->stream->space(), s.state(), k);
        }
      });
  }
  return b;
}

// Each variant's median so far (rounds timed), as a Result.
std::vector<Result> medians(ModelBench const& b, std::int64_t steps) {
  std::vector<Result> out;
  double naive_rate = 0;
  for (auto const& v : b.variants) {
    if (v.seconds.empty()) continue;
    std::vector<double> sorted = v.seconds;
    std::sort(sorted.begin(), sorted.end());
    double const median = sorted[sorted.size() / 2];
    double const rate = double(steps * b.config.batch) / median;
    if (v.name == "naive") naive_rate = rate;
    out.push_back(Result{b.model, v.name, v.k, b.config.batch, 1e3 * median / double(steps), rate,
                         naive_rate > 0 ? rate / naive_rate : 0, true, "",
                         ran(v.gemm, v.session->config().precision), v.gemm[0], v.gemm[1], v.gemm[2],
                         int(v.seconds.size())});
  }
  return out;
}

struct Limits {
  double sgemm;
  LaunchCost launch;
};

std::string json_text(ExecSpace const& space, PipelineOptions const& o, Limits const& limits,
                      std::string const& json_models, std::vector<Result> const& results, bool complete) {
  std::string j = "{\n  \"ktr\": \"" + version_line() + "\",\n  \"execution_space\": \"" + ExecSpace::name() +
                  "\",\n  \"concurrency\": " + std::to_string(space.concurrency()) + ",\n  \"precision\": \"" +
                  o.precision + "\",\n  \"complete\": " + (complete ? "true" : "false") +
                  ",\n  \"limits\": {\"sgemm_gflops\": " + num(limits.sgemm, 2) +
                  ", \"empty_kernel_us\": " + num(limits.launch.async_us, 3) +
                  ", \"empty_kernel_fenced_us\": " + num(limits.launch.synced_us, 3) + "},\n  \"models\": {" +
                  json_models + "},\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto const& r = results[i];
    j += "    {\"model\": \"" + r.model + "\", \"variant\": \"" + r.variant + "\", \"k\": " + std::to_string(r.k) +
         ", \"batch\": " + std::to_string(r.batch) + ", \"available\": " + (r.available ? "true" : "false") +
         ", \"precision\": \"" + r.precision + "\", \"gemm_calls_fp32\": " + std::to_string(r.gemm_fp32) +
         ", \"gemm_calls_tf32\": " + std::to_string(r.gemm_tf32) +
         ", \"gemm_calls_bf16\": " + std::to_string(r.gemm_bf16) + ", \"rounds\": " + std::to_string(r.rounds) +
         ", \"step_ms\": " + num(r.step_ms, 4) + ", \"samples_per_s\": " + num(r.samples_per_s, 1) +
         ", \"speedup_vs_naive\": " + num(r.speedup, 3) +
         (r.note.empty() ? std::string() : ", \"note\": \"" + r.note + "\"") + "}" +
         (i + 1 < results.size() ? ",\n" : "\n");
  }
  return j + "  ]\n}\n";
}

}  // namespace

int run_pipeline(ExecSpace const& space, PipelineOptions const& o) {
  std::vector<int> const ks = parse_ks(o.ks);
  for (int k : ks)
    KTR_REQUIRE(o.steps % k == 0, "--steps", "must be a multiple of every K (" + std::to_string(k) + ")");
  KTR_REQUIRE(o.rounds > 0, "--rounds", "must be positive");
  KTR_REQUIRE(o.samples > 0, "samples", "must be positive");
  MatmulPrecision const precision = precision_named(o.precision);
  RandomImages const images = random_images(o.samples, 7);
  DeviceDataset const data = make_device_dataset(images.pixels, images.labels, o.samples, 28, 28, 1, 10, "random");

  // Every variant's session first, each in the requested precision (a build that cannot run it refuses here).
  std::vector<std::unique_ptr<ModelBench>> benches;
  for (std::string const& model : model_names(o.models))
    benches.push_back(make_bench(space, model, o, precision, ks, images, data));

  Limits const limits{sgemm_gflops(space, o.sgemm_n, 7, 2, precision), launch_cost(space)};
  std::printf("%s\n", version_line().c_str());
  std::printf("gemm: %s, matmul precision %s (every variant's session)\n", gemm_backend(precision).c_str(),
              matmul_precision_name(precision));
  std::printf(
      "limits (same run): large sgemm (%s) %s GFLOP/s, empty kernel %s us back-to-back / %s us with a fence\n",
      matmul_precision_name(precision), num(limits.sgemm).c_str(), num(limits.launch.async_us, 2).c_str(),
      num(limits.launch.synced_us, 2).c_str());
  std::printf("timing: %lld rounds of %lld steps per variant, interleaved; median round shown%s\n",
              (long long)o.rounds, (long long)o.steps,
              o.json.empty() ? "" : (" (" + o.json + " rewritten after every round)").c_str());
  std::printf("%-4s %-13s %5s %6s %12s %12s %10s %s\n", "model", "variant", "batch", "steps", "ms/step",
              "samples/s", "vs naive", "precision (gemm calls)");
  std::fflush(stdout);

  std::vector<Result> results;
  std::string json_models;
  auto write_json = [&](std::vector<Result> const& partial, bool complete) {
    if (o.json.empty()) return;
    std::vector<Result> all = results;
    all.insert(all.end(), partial.begin(), partial.end());
    write_atomically(o.json, json_text(space, o, limits, json_models, all, complete));
  };
  for (auto& bench : benches) {
    ModelBench& b = *bench;
    std::string const& model = b.model;
    RunConfig const& config = b.config;
    // Every variant is warmed up, then all are timed in interleaved rounds (round r times each variant in turn),
    // so drift on a noisy machine hits them alike; the median round is reported.
    for (auto& v : b.variants) v.run_counted(2 * v.k);  // warm-up (and, for graph-K, the capture)
    // A graph-K whose capture failed ran the plain loop (multistep-K measures that): report it as unavailable.
    std::vector<Result> failed;
    for (auto it = b.variants.begin(); it != b.variants.end();) {
      std::string const& why = it->session->state().capture_error();
      if (it->name.rfind("graph-", 0) == 0 && !why.empty()) {
        failed.push_back(Result{model, it->name, it->k, config.batch, 0, 0, 0, false, "capture failed: " + why,
                                ran(it->gemm, it->session->config().precision), it->gemm[0], it->gemm[1],
                                it->gemm[2], 0});
        it = b.variants.erase(it);
      } else {
        ++it;
      }
    }
    for (int r = 0; r < o.rounds; ++r) {
      for (auto& v : b.variants) v.seconds.push_back(timed(space, [&] { v.run_counted(o.steps); }));
      write_json(medians(b, o.steps), false);  // what was measured survives a crash or a timeout
    }
    for (auto const& r : medians(b, o.steps)) {
      results.push_back(r);
      std::printf("%-4s %-13s %5lld %6lld %12s %12s %9sx %s (%lld fp32, %lld tf32, %lld bf16)\n", model.c_str(),
                  r.variant.c_str(), (long long)r.batch, (long long)(o.steps * o.rounds),
                  num(r.step_ms, 3).c_str(), num(r.samples_per_s, 0).c_str(), num(r.speedup, 2).c_str(),
                  r.precision.c_str(), (long long)r.gemm_fp32, (long long)r.gemm_tf32, (long long)r.gemm_bf16);
    }
    if (!CapturedProgram::supported()) {
      for (int k : ks)
        results.push_back(Result{model, "graph-" + std::to_string(k), k, config.batch, 0, 0, 0, false,
                                 CapturedProgram::unsupported_reason(), "", 0, 0, 0, 0});
      std::printf("%-4s %-13s (%s: the plain loop above is the same kernels)\n", model.c_str(), "graph-K",
                  CapturedProgram::unsupported_reason().c_str());
    }
    for (auto const& r : failed) {
      results.push_back(r);
      std::printf("%-4s %-13s not measured: %s\n", model.c_str(), r.variant.c_str(), r.note.c_str());
    }

    // Launch accounting for one step, and the step's FLOP rate at the best variant.
    Session s(config, 1);
    train_steps(space, s.state(), s.model(), data, 1);
    space.fence();
    std::int64_t const gemms0 = gemm_calls();
    std::int64_t kernels = 0;
    {
      ToolsCounter counter;
      train_steps(space, s.state(), s.model(), data, 1);
      space.fence();
      kernels = counter.kernels();
    }
    std::int64_t const gemms = gemm_calls() - gemms0;
    double best = 0;
    for (auto const& r : results)
      if (r.model == model && r.available) best = std::max(best, r.samples_per_s);
    double const step_gflops = s.model().train_flops(config.batch) / double(config.batch) * best / 1e9;
    std::printf(
        "%-4s per step: %lld Kokkos kernels + %lld gemm calls (launch floor ~%s us at %s us each); "
        "best %s GFLOP/s = %s%% of large sgemm\n",
        model.c_str(), (long long)kernels, (long long)gemms,
        num(double(kernels + gemms) * limits.launch.async_us, 1).c_str(), num(limits.launch.async_us, 2).c_str(),
        num(step_gflops).c_str(), num(100 * step_gflops / limits.sgemm, 0).c_str());
    std::fflush(stdout);
    json_models +=
        std::string(json_models.empty() ? "" : ",") + "\"" + model +
        "\":{\"kokkos_kernels_per_step\":" + std::to_string(kernels) +
        ",\"gemm_calls_per_step\":" + std::to_string(gemms) + ",\"best_step_gflops\":" + num(step_gflops, 2) +
        ",\"flops_per_sample\":" + num(s.model().train_flops(config.batch) / double(config.batch), 0) + "}";
    bench.reset();  // its sessions' device memory, before the next model's runs
  }

  if (!o.json.empty()) {
    write_json({}, true);
    std::printf("wrote %s\n", o.json.c_str());
  }
  if (!o.plot.empty()) {
    plot(o.plot, results);
    std::printf("wrote %s\n", o.plot.c_str());
  }
  return 0;
}

}  // namespace ktr::bench
