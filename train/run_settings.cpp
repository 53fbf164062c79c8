// The table of RunConfig's settings: see run_settings.hpp.
#include "run_settings.hpp"

#include "../backends/gemm.hpp"
#include "../models/jet.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace ktr {

namespace {

using Type = RunSetting::Type;

// A row for a float field, reached by `field` (a generic lambda returning a reference to it).
template <class Field>
RunSetting number(char const* name, double lo, double hi, char const* help, Field field) {
  RunSetting s;
  s.name = name, s.type = Type::number, s.lo = lo, s.hi = hi;
  s.help = help;
  s.get = [field](RunConfig const& c) { return exact_text(field(c)); };
  s.set = [field](RunConfig& c, std::string const& t) { field(c) = float(RunSetting::number_value(t)); };
  return s;
}

template <class Field>
RunSetting integer(char const* name, double lo, double hi, char const* help, Field field) {
  RunSetting s;
  s.name = name, s.type = Type::integer, s.lo = lo, s.hi = hi;
  s.help = help;
  s.get = [field](RunConfig const& c) { return std::to_string(field(c)); };
  s.set = [field, lo, hi](RunConfig& c, std::string const& t) {
    std::int64_t v = 0;
    (void)RunSetting::integer_value(t, std::int64_t(lo), std::int64_t(hi), v);  // check() accepted it
    field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(v);
  };
  return s;
}

RunSetting word(char const* name, std::vector<std::string> words, char const* help,
                std::function<std::string(RunConfig const&)> get,
                std::function<void(RunConfig&, std::string const&)> set) {
  RunSetting s;
  s.name = name, s.type = Type::word;
  s.words = std::move(words), s.help = help, s.get = std::move(get), s.set = std::move(set);
  return s;
}

RunSetting text(char const* name, char const* help, std::function<std::string(RunConfig const&)> get,
                std::function<void(RunConfig&, std::string const&)> set) {
  RunSetting s;
  s.name = name, s.type = Type::text;
  s.help = help, s.get = std::move(get), s.set = std::move(set);
  return s;
}

// The seed: any uint64 (a C++ caller may choose any; the YAML file and the command line stop at 2^63 - 1).
void set_seed(RunConfig& c, std::string const& t) {
  bool const digits = !t.empty() && t.size() <= 20 && t.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  std::uint64_t const v = digits ? std::strtoull(t.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE) throw Error("'" + escaped(t) + "' is not an integer in [0, 2^64)");
  c.seed = v;
}

// A derivative spec: its tokens' form is checked here (their inputs against the model's, when the run is made);
// kept with single spaces.
void set_derivatives(RunConfig& c, std::string const& t) {
  std::istringstream words(t);
  std::string token, spec;
  while (words >> token) {
    if (token != "lap") (void)JetSpec::parse(token, std::int64_t(1) << 20);
    spec += (spec.empty() ? "" : " ") + token;
  }
  c.derivatives = spec;
}

std::vector<RunSetting> make_table() {
  using R = OptimizerRanges;
  constexpr double below_one = R::below_one;
  std::vector<RunSetting> t;
  t.push_back(word(
      "optimizer", {"sgd", "adam", "adamw", "lbfgs"}, "sgd, adam, adamw or lbfgs (a fixed batch)",
      [](RunConfig const& c) { return std::string(OptimizerConfig::kind_name(c.optimizer.kind)); },
      [](RunConfig& c, std::string const& v) { c.optimizer.kind = OptimizerConfig::parse_kind(v); }));
  t.push_back(number(
      "lr", R::lr_min, R::lr_max, "learning rate", [](auto& c) -> auto& { return c.optimizer.lr; }));
  t.push_back(number(
      "momentum", 0, below_one, "sgd momentum", [](auto& c) -> auto& { return c.optimizer.momentum; }));
  RunSetting nesterov;
  nesterov.name = "nesterov", nesterov.type = Type::boolean;
  nesterov.help = "sgd with Nesterov momentum";
  nesterov.get = [](RunConfig const& c) { return std::string(c.optimizer.nesterov ? "1" : "0"); };
  nesterov.set = [](RunConfig& c, std::string const& v) {
    c.optimizer.nesterov = RunSetting::boolean_value(v) == 1;
  };
  t.push_back(nesterov);
  t.push_back(number(
      "b1", 0, below_one, "adam's first-moment decay", [](auto& c) -> auto& { return c.optimizer.b1; }));
  t.push_back(number(
      "b2", 0, below_one, "adam's second-moment decay", [](auto& c) -> auto& { return c.optimizer.b2; }));
  t.push_back(number(
      "eps", R::eps_min, R::eps_max, "adam's epsilon", [](auto& c) -> auto& { return c.optimizer.eps; }));
  t.push_back(number(
      "weight_decay", 0, R::decay_max, "adamw decoupled weight decay",
      [](auto& c) -> auto& { return c.optimizer.weight_decay; }));
  RunSetting l2 = number(
      "l2", 0, R::decay_max, "sgd and adam: an L2 penalty's gradient l2 * p added to the gradient",
      [](auto& c) -> auto& { return c.optimizer.l2; });
  l2.omit_default = true, l2.required = false;  // checkpoints before it: none
  t.push_back(l2);
  t.push_back(number(
      "clip_norm", 0, R::clip_max, "clip gradients to this global norm (0: off)",
      [](auto& c) -> auto& { return c.optimizer.clip_norm; }));
  t.push_back(text(
      "schedule",
      "constant | warmup:W | cosine:D[:W[:alpha]] | step:N[:factor] | multistep:M1,M2,...[:factor] | "
      "poly:T[:power] | linear:T[:start[:end]]",
      [](RunConfig const& c) { return c.optimizer.schedule.str(); },
      [](RunConfig& c, std::string const& v) { c.optimizer.schedule = Schedule::parse(v); }));
  // lbfgs's: absent from files and checkpoints that do not change them
  RunSetting history = integer(
      "history", 1, R::history_max, "lbfgs: the (s, y) pairs kept",
      [](auto& c) -> auto& { return c.optimizer.history; });
  RunSetting linesearch = integer(
      "linesearch", 1, R::linesearch_max, "lbfgs: evaluations per line search at most",
      [](auto& c) -> auto& { return c.optimizer.linesearch; });
  RunSetting tolerance_grad = number(
      "tolerance_grad", 0, R::clip_max, "lbfgs: converged once max |gradient| is at most this",
      [](auto& c) -> auto& { return c.optimizer.tolerance_grad; });
  RunSetting tolerance_change = number(
      "tolerance_change", 0, R::clip_max, "lbfgs: ... or a step changes the loss or a parameter by less",
      [](auto& c) -> auto& { return c.optimizer.tolerance_change; });
  for (RunSetting* s : {&history, &linesearch, &tolerance_grad, &tolerance_change}) {
    s->omit_default = true, s->required = false;
    t.push_back(*s);
  }
  t.push_back(integer(
      "batch", 1, double(1 << 24), "samples per optimiser update, over all ranks",
      [](auto& c) -> auto& { return c.batch; }));
  RunSetting accumulate = integer(
      "accumulate", 1, double(1 << 20), "micro-batches whose mean gradient makes one update",
      [](auto& c) -> auto& { return c.accumulate; });
  accumulate.required = false;  // checkpoints before gradient accumulation: one micro-batch per update
  t.push_back(accumulate);
  t.push_back(text(
      "seed", "initialisation and shuffling seed", [](RunConfig const& c) { return std::to_string(c.seed); },
      set_seed));
  RunSetting loss = text(
      "loss", "regression loss: mse, l1, huber[:DELTA] or bce", [](RunConfig const& c) { return c.loss.str(); },
      [](RunConfig& c, std::string const& v) { c.loss = RegressionLoss::parse(v); });
  loss.omit_default = true, loss.required = false;
  t.push_back(loss);
  RunSetting reduction = word(
      "reduction", {"mean", "sum"}, "mean or sum of the element losses",
      [](RunConfig const& c) { return std::string(reduction_name(c.reduction)); },
      [](RunConfig& c, std::string const& v) { c.reduction = parse_reduction(v); });
  reduction.omit_default = true, reduction.required = false;
  t.push_back(reduction);
  RunSetting normalize = word(
      "normalize", {"standard", "unit", "none", "recorded"},
      "the input transform: fitted to the training data (standard), pixels to [0, 1] (unit), none, or recorded",
      [](RunConfig const& c) { return std::string(input_transform_mode_name(c.normalize)); },
      [](RunConfig& c, std::string const& v) { c.normalize = parse_input_transform_mode(v); });
  normalize.required = false;  // version 1 did not record it (run_config then says `recorded`)
  t.push_back(normalize);
  RunSetting precision = word(
      "precision", {"fp32", "tf32", "bf16"},
      "matmul and convolution arithmetic: fp32, tf32 (CUDA tensor cores), or bf16 (mixed precision: bf16 inputs, "
      "fp32 accumulation, parameters and optimiser state; oneDNN on AMX / AVX512-BF16 CPUs, CUDA tensor cores)",
      [](RunConfig const& c) { return std::string(matmul_precision_name(c.precision)); },
      [](RunConfig& c, std::string const& v) {
        c.precision = v == "tf32"   ? MatmulPrecision::tf32
                      : v == "bf16" ? MatmulPrecision::bf16
                                    : MatmulPrecision::fp32;
      });
  // Recorded (a resume continues in the run's precision unless told otherwise); fp32 is not written, so fp32
  // checkpoints are what they were, and older checkpoints read as fp32.
  precision.omit_default = true, precision.required = false;
  t.push_back(precision);
  // Sobolev targets: absent from files and checkpoints of plain targets.
  RunSetting derivatives = text(
      "derivatives",
      "Sobolev targets: the derivatives by the raw inputs each target carries after its value, space-separated "
      "tokens such as d0 (du/dx0), d0,1 (a second derivative), lap (the Laplacian), lap0,1 (over the inputs "
      "listed); targets (N, outputs, 1 + tokens)",
      [](RunConfig const& c) { return c.derivatives; }, set_derivatives);
  RunSetting derivative_weight = number(
      "derivative_weight", 0, 1e6, "Sobolev targets: the weight of the derivatives' mean squared error",
      [](auto& c) -> auto& { return c.derivative_weight; });
  for (RunSetting* s : {&derivatives, &derivative_weight}) {
    s->omit_default = true, s->required = false;
    t.push_back(*s);
  }
  return t;
}

}  // namespace

std::vector<RunSetting> const& run_settings() {
  static std::vector<RunSetting> const table = make_table();
  return table;
}

void set_run_setting(RunConfig& config, std::string const& name, std::string const& text) {
  set_setting(run_settings(), config, name, text);
}

void write_run_settings(RunConfig const& config, Checkpoint& ckpt) {
  RunConfig const defaults;
  for (auto const& s : run_settings()) {
    if (!s.recorded) continue;
    std::string const value = s.get(config);
    if (s.omit_default && value == s.get(defaults)) continue;
    ckpt.header[s.name] = value;
  }
}

void read_run_settings(Checkpoint const& ckpt, std::string const& path, RunConfig& config) {
  for (auto const& s : run_settings()) {
    if (!s.recorded) continue;
    if (!ckpt.has(s.name)) {
      if (!s.required) continue;
      throw Error(path + ": header field '" + s.name + "' is missing");
    }
    std::string const text = ckpt.get(s.name);
    std::string const why = s.check(text);
    if (!why.empty()) throw Error(path + ": header field '" + s.name + "' is '" + escaped(text) + "': " + why);
    s.set(config, text);
  }
}

std::string describe_run_settings(RunConfig const& config, bool only_changed) {
  return describe_settings(run_settings(), config, only_changed);
}

}  // namespace ktr
