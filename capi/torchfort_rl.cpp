// TorchFort's reinforcement-learning calls (torchfort/torchfort_rl.h) over ktr's rl/ layer: the off-policy systems
// (TD3, DDPG, SAC) with a uniform replay buffer of n_envs environments per slot. Each call translates its
// arguments (one datatype for every array, Fortran-ordered shapes in the _F forms, host or device memory) and runs
// under the C API's guard on the system's instance of the caller's stream; a failure is printed as TorchFort
// prints it and returned as its result code. What ktr has not built yet (PPO and the on-policy calls, the metric
// log) answers TORCHFORT_RESULT_NOT_SUPPORTED with its reason and touches none of its arguments; the distributed
// systems are made in distributed.cpp.
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: the headers then declare the MPI_Comm forms
#endif

#include "torchfort/torchfort_rl.h"

#include "../backends/device_info.hpp"
#include "../backends/stream_instances.hpp"
#include "../config/rl_config.hpp"
#include "../data/strided.hpp"
#include "../rl/off_policy.hpp"
#include "api.hpp"
#include "arrays.hpp"
#include "guard.hpp"
#include "rl_systems.hpp"
#include "torchfort_door.hpp"

#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace {

using ktr::capi::Array;

torchfort_result_t rl_refused(char const* call) {
  return torchfort_result_t(ktr::capi::torchfort_refused(
      call, KTR_RESULT_NOT_SUPPORTED,
      "not in ktr's reinforcement learning yet (it has torchfort_rl_off_policy_* systems of TD3, DDPG and SAC: "
      "create_system, update_replay_buffer, is_ready, train_step, predict, predict_explore, evaluate, "
      "save_checkpoint, load_checkpoint, load_model, wandb_log)"));
}

using ktr::capi::device_floats;
using ktr::capi::RlEntry;
auto& system_named = ktr::capi::rl_system;
auto& scratch_of = ktr::capi::rl_scratch;

// The datatype every array of a call shares, as ktr's: float or double.
ktr_datatype_t float_type(torchfort_datatype_t dtype) {
  ktr_datatype_t t{};
  if (!ktr::capi::ktr_dtype(dtype, t) || (t != KTR_FLOAT && t != KTR_DOUBLE))
    throw ktr::UsageError("dtype: " + std::to_string(int(dtype)) +
                          " is not TORCHFORT_FLOAT or TORCHFORT_DOUBLE (states, actions and rewards are real)");
  return t;
}

// A caller's array (C or, reversed, Fortran shape) as rows of `width` values: (width) is one row, (N, width) N.
Array rows_of(void* data, std::size_t dim, std::int64_t const* shape, ktr_datatype_t t, bool fortran,
              std::int64_t width, char const* what) {
  KTR_REQUIRE(shape != nullptr || dim == 0, what, "its shape is a null pointer");
  KTR_REQUIRE(dim == 1 || dim == 2, what,
              "has " + std::to_string(dim) + " dimensions; ktr takes (values) or (environments, values)");
  std::int64_t s[2] = {shape[0], dim == 2 ? shape[1] : 0};
  if (fortran && dim == 2) std::swap(s[0], s[1]);
  std::int64_t const c_shape[2] = {dim == 1 ? 1 : s[0], dim == 1 ? s[0] : s[1]};
  Array a = ktr::capi::c_array(data, 2, c_shape, t, what);
  KTR_REQUIRE(
      a.extent[1] == width, what,
      "holds " + std::to_string(a.extent[1]) + " values per row; the system's are " + std::to_string(width));
  return a;
}

void store(ktr::ExecSpace const& space, ktr::Tensor const& values, Array const& out) {
  ktr::scatter_strided(space, values.data(), out.strided());
}

torchfort_result_t call(char const* fn, std::function<void()> const& body) {
  return ktr::capi::reported(fn, ktr::capi::guarded(body));
}

// TorchFort's metric lines of a reported update (general.enable_wandb_hook): the critic's loss and rate
// ("critic_0"; DDPG's one critic is "critic") at the update count, and the actor's where this update moved the
// policy, at its own count (updates / policy_lag) when that is a multiple of the frequency, as TorchFort's critic
// and actor report. SAC's alpha loss is not read back, so it has no line.
void log_losses(RlEntry& e, ktr::ExecSpace const& space, float p, float q) {
  if (e.metric_log.path.empty() || !e.metric_log.writer) return;
  ktr::rl::OffPolicySystem const& sys = *e.system;
  ktr::rl::OffPolicyConfig const& c = sys.config();
  std::pair<float, float> const lr = sys.learning_rates(space);
  std::int64_t const updates = sys.updates();
  using ktr::capi::metric_text;
  bool const ddpg = c.algorithm == ktr::rl::OffPolicyConfig::Algorithm::ddpg;
  ktr::capi::append_step_metrics(e.metric_log, ddpg ? "critic" : "critic_0", updates,
                                 {{"train_loss", metric_text(q)}, {"train_lr", metric_text(lr.second)}});
  if (updates % c.policy_lag == 0 && (updates / c.policy_lag) % e.report_frequency == 0)
    ktr::capi::append_step_metrics(e.metric_log, "actor", updates / c.policy_lag,
                                   {{"train_loss", metric_text(p)}, {"train_lr", metric_text(lr.first)}});
}

// torchfort_rl_off_policy_wandb_log_*: "model: NAME, step: STEP, METRIC: VALUE" in the system's metric log, where
// it has one; nothing otherwise. An unknown system or an empty metric name is refused.
torchfort_result_t log_metric(char const* fn, char const* name, char const* metric, int64_t step,
                              std::string const& value) {
  return call(fn, [&] {
    RlEntry& e = system_named(name);
    KTR_REQUIRE(metric != nullptr && metric[0] != '\0', "metric_name", "is null or empty");
    ktr::capi::append_metric(e.metric_log, name, step, metric, value);
  });
}

torchfort_result_t predict(char const* fn, char const* name, void* state, std::size_t state_dim,
                           std::int64_t* state_shape, void* action, std::size_t action_dim,
                           std::int64_t* action_shape, torchfort_datatype_t dtype, void* stream, bool fortran,
                           bool explore) {
  return call(fn, [&] {
    RlEntry& e = system_named(name);
    ktr::rl::OffPolicySystem& sys = *e.system;
    ktr_datatype_t const t = float_type(dtype);
    Array const s = rows_of(state, state_dim, state_shape, t, fortran, sys.state_dim(), "state");
    Array const a = rows_of(action, action_dim, action_shape, t, fortran, sys.action_dim(), "action");
    KTR_REQUIRE(s.extent[0] == a.extent[0], "action",
                "has " + std::to_string(a.extent[0]) + " rows for " + std::to_string(s.extent[0]) + " states");
    ktr::ExecSpace const space = e.instances.of(stream);
    std::int64_t const n = s.extent[0];
    ktr::Tensor const in(device_floats(space, s), ktr::Shape{n, sys.state_dim()});
    ktr::Tensor const out(scratch_of(e, space, n * sys.action_dim()), ktr::Shape{n, sys.action_dim()});
    sys.predict(space, in, out, explore);
    store(space, out, a);
  });
}

torchfort_result_t evaluate(char const* name, void* state, std::size_t state_dim, std::int64_t* state_shape,
                            void* action, std::size_t action_dim, std::int64_t* action_shape, void* reward,
                            std::size_t reward_dim, std::int64_t* reward_shape, torchfort_datatype_t dtype,
                            void* stream, bool fortran) {
  return call("torchfort_rl_off_policy_evaluate", [&] {
    RlEntry& e = system_named(name);
    ktr::rl::OffPolicySystem& sys = *e.system;
    ktr_datatype_t const t = float_type(dtype);
    Array const s = rows_of(state, state_dim, state_shape, t, fortran, sys.state_dim(), "state");
    Array const a = rows_of(action, action_dim, action_shape, t, fortran, sys.action_dim(), "action");
    std::int64_t const n = s.extent[0];
    KTR_REQUIRE(a.extent[0] == n, "action",
                "has " + std::to_string(a.extent[0]) + " rows for " + std::to_string(n) + " states");
    KTR_REQUIRE(reward_shape != nullptr && reward_dim >= 1 && reward_dim <= 2, "reward",
                "must be (environments) or (environments, 1)");
    std::int64_t count = 1;
    for (std::size_t i = 0; i < reward_dim; ++i) count *= reward_shape[i];
    KTR_REQUIRE(count == n, "reward",
                "holds " + std::to_string(count) + " values for " + std::to_string(n) + " states");
    std::int64_t const r_shape[1] = {n};
    Array const q = ktr::capi::c_array(reward, 1, r_shape, t, "reward");
    ktr::ExecSpace const space = e.instances.of(stream);
    ktr::Tensor const sv(device_floats(space, s), ktr::Shape{n, sys.state_dim()});
    ktr::Tensor const av(device_floats(space, a), ktr::Shape{n, sys.action_dim()});
    ktr::Tensor const out(scratch_of(e, space, n), ktr::Shape{n});
    sys.evaluate(space, sv, av, out);
    store(space, out, q);
  });
}

// The states, actions, rewards and terminal flags of one time step of every environment. One environment's
// reward and flag come as host scalars (`reward`, `final_state`); the _multi forms give arrays of n_envs values
// (`rewards`, `finals`, in the states' datatype and memory), each checked against the system's n_envs.
struct Step {
  void *state_old, *state_new, *action;
  std::size_t state_dim, action_dim;
  std::int64_t *state_shape, *action_shape;
  void const* reward = nullptr;
  bool final_state = false;
  void *rewards = nullptr, *finals = nullptr;
  std::size_t rewards_dim = 0, finals_dim = 0;
  std::int64_t *rewards_shape = nullptr, *finals_shape = nullptr;
};

// A (n_envs) array of values (also (n_envs, 1) or (1, n_envs)).
Array values_of(void* data, std::size_t dim, std::int64_t const* shape, ktr_datatype_t t, std::int64_t n,
                char const* what) {
  KTR_REQUIRE(shape != nullptr && dim >= 1 && dim <= 2, what, "must be (environments) or (environments, 1)");
  std::int64_t count = 1;
  for (std::size_t i = 0; i < dim; ++i) count *= shape[i];
  KTR_REQUIRE(count == n, what,
              "holds " + std::to_string(count) + " values; the system has " + std::to_string(n) +
                  " environments (replay_buffer.parameters.n_envs)");
  std::int64_t const c_shape[2] = {n, 1};
  return ktr::capi::c_array(data, 2, c_shape, t, what);
}

torchfort_result_t update_buffer(char const* name, Step const& st, torchfort_datatype_t dtype, void* stream,
                                 bool fortran) {
  return call("torchfort_rl_off_policy_update_replay_buffer", [&] {
    RlEntry& e = system_named(name);
    ktr::rl::OffPolicySystem& sys = *e.system;
    std::int64_t const n = sys.config().n_envs;
    ktr_datatype_t const t = float_type(dtype);
    Array const s = rows_of(st.state_old, st.state_dim, st.state_shape, t, fortran, sys.state_dim(), "state_old");
    Array const s2 = rows_of(st.state_new, st.state_dim, st.state_shape, t, fortran, sys.state_dim(), "state_new");
    Array const a = rows_of(st.action, st.action_dim, st.action_shape, t, fortran, sys.action_dim(), "action_old");
    bool const multi = st.rewards != nullptr || st.finals != nullptr;
    KTR_REQUIRE(s.extent[0] == n && a.extent[0] == n, "state_old",
                "holds " + std::to_string(s.extent[0]) + " environments and action_old " +
                    std::to_string(a.extent[0]) + "; the system has " + std::to_string(n) +
                    " (replay_buffer.parameters.n_envs" + (multi ? ")" : "; one per call without _multi)"));
    ktr::ExecSpace const space = e.instances.of(stream);
    ktr::DeviceView<float*> r, d;
    if (multi) {
      r = device_floats(space, values_of(st.rewards, st.rewards_dim, st.rewards_shape, t, n, "reward"));
      d = device_floats(space, values_of(st.finals, st.finals_dim, st.finals_shape, t, n, "final_state"));
    } else {
      KTR_REQUIRE(st.reward != nullptr, "reward", "is a null pointer");
      // The scalar reward and flag travel in one small host array beside the states.
      float const host[2] = {
          t == KTR_DOUBLE ? float(*static_cast<double const*>(st.reward)) : *static_cast<float const*>(st.reward),
          st.final_state ? 1.0f : 0.0f};
      Kokkos::View<float const*, ktr::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(host, 2);
      ktr::DeviceView<float*> const rd = scratch_of(e, space, 2);
      Kokkos::deep_copy(space, rd, h);
      r = Kokkos::subview(rd, std::make_pair(0, 1));
      d = Kokkos::subview(rd, std::make_pair(1, 2));
    }
    auto const sv = device_floats(space, s), s2v = device_floats(space, s2), av = device_floats(space, a);
    sys.push(space, sv.data(), av.data(), r.data(), s2v.data(), d.data());
    space.fence();  // the caller may reuse its arrays (and the host scalars) when the call returns
  });
}

}  // namespace

// One definition per call, its parameters as declared (a mismatch would not compile against the header).
#define KTR_TF_RL_REFUSE(fn, ...) \
  torchfort_result_t fn(__VA_ARGS__) { return rl_refused(#fn); }
#define KTR_TF_RL_REFUSE_FAMILY(family)                                                                          \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_create_system, const char*, const char*, int, int)                    \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_create_distributed_system_F, const char*, const char*, int, int, int) \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_train_step, const char*, float*, float*, torchfort_stream_t)          \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_explore, const char*, void*, size_t, int64_t*, void*, size_t, \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_explore_F, const char*, void*, size_t, int64_t*, void*,       \
                   size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                                   \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict, const char*, void*, size_t, int64_t*, void*, size_t,         \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_predict_F, const char*, void*, size_t, int64_t*, void*, size_t,       \
                   int64_t*, torchfort_datatype_t, torchfort_stream_t)                                           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_evaluate, const char*, void*, size_t, int64_t*, void*, size_t,        \
                   int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                  \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_evaluate_F, const char*, void*, size_t, int64_t*, void*, size_t,      \
                   int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)                  \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_save_checkpoint, const char*, const char*)                            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_load_checkpoint, const char*, const char*)                            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_load_model, const char*, const char*)                                 \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_is_ready, const char*, bool&)                                         \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_int, const char*, const char*, int64_t, int)                \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_float, const char*, const char*, int64_t, float)            \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_wandb_log_double, const char*, const char*, int64_t, double)
// The buffer's calls: the state and action arguments of the family (old and new states for a replay buffer).
#define KTR_TF_RL_REFUSE_BUFFER(family, buffer, ...)                                                              \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer, const char*, __VA_ARGS__, const void*, bool, \
                   torchfort_datatype_t, torchfort_stream_t)                                                      \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_F, const char*, __VA_ARGS__, const void*,     \
                   bool, torchfort_datatype_t, torchfort_stream_t)                                                \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_multi, const char*, __VA_ARGS__, void*,       \
                   size_t, int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)           \
  KTR_TF_RL_REFUSE(torchfort_rl_##family##_update_##buffer##_buffer_multi_F, const char*, __VA_ARGS__, void*,     \
                   size_t, int64_t*, void*, size_t, int64_t*, torchfort_datatype_t, torchfort_stream_t)

extern "C" {

torchfort_result_t torchfort_rl_off_policy_create_system(char const* name, char const* config_fname,
                                                         int model_device, int) {
  int const device =
      ktr::device_is_host || model_device == TORCHFORT_DEVICE_CPU ? KTR_DEVICE_DEFAULT : model_device;
  return ktr::capi::reported(
      "torchfort_rl_off_policy_create_system",
      ktr::capi::create_rl_system(name, config_fname, device, 0, ktr::Communicator(), true, /*torchfort=*/true));
}

torchfort_result_t torchfort_rl_off_policy_is_ready(char const* name, bool& ready) {
  return call("torchfort_rl_off_policy_is_ready", [&] {
    RlEntry& e = system_named(name);
    ready = e.system->ready(e.instances.of(nullptr));
  });
}

torchfort_result_t torchfort_rl_off_policy_train_step(char const* name, float* p_loss_val, float* q_loss_val,
                                                      torchfort_stream_t stream) {
  return call("torchfort_rl_off_policy_train_step", [&] {
    RlEntry& e = system_named(name);
    ktr::ExecSpace const space = e.instances.of((void*)stream);
    ktr::rl::OffPolicySystem const& sys = *e.system;
    bool const report = e.report_frequency > 0 && (sys.updates() + 1) % e.report_frequency == 0;
    float p = 0, q = 0;
    bool const read = p_loss_val != nullptr || q_loss_val != nullptr || report;
    ktr::capi::rl_train(e, name, space, 1, read ? &p : nullptr, read ? &q : nullptr);
    if (p_loss_val) *p_loss_val = p;
    if (q_loss_val) *q_loss_val = q;
    if (report && !ktr::capi::torchfort_quiet())
      std::printf("TORCHFORT::INFO: system: %s, step_train: %lld, policy loss: %g, critic loss: %g\n", name,
                  static_cast<long long>(sys.updates()), double(p), double(q));
    if (report) log_losses(e, space, p, q);
  });
}

torchfort_result_t torchfort_rl_off_policy_predict(char const* name, void* state, size_t state_dim,
                                                   int64_t* state_shape, void* action, size_t action_dim,
                                                   int64_t* action_shape, torchfort_datatype_t dtype,
                                                   torchfort_stream_t stream) {
  return predict("torchfort_rl_off_policy_predict", name, state, state_dim, state_shape, action, action_dim,
                 action_shape, dtype, (void*)stream, false, false);
}
torchfort_result_t torchfort_rl_off_policy_predict_F(char const* name, void* state, size_t state_dim,
                                                     int64_t* state_shape, void* action, size_t action_dim,
                                                     int64_t* action_shape, torchfort_datatype_t dtype,
                                                     torchfort_stream_t stream) {
  return predict("torchfort_rl_off_policy_predict", name, state, state_dim, state_shape, action, action_dim,
                 action_shape, dtype, (void*)stream, true, false);
}
torchfort_result_t torchfort_rl_off_policy_predict_explore(char const* name, void* state, size_t state_dim,
                                                           int64_t* state_shape, void* action, size_t action_dim,
                                                           int64_t* action_shape, torchfort_datatype_t dtype,
                                                           torchfort_stream_t stream) {
  return predict("torchfort_rl_off_policy_predict_explore", name, state, state_dim, state_shape, action,
                 action_dim, action_shape, dtype, (void*)stream, false, true);
}
torchfort_result_t torchfort_rl_off_policy_predict_explore_F(char const* name, void* state, size_t state_dim,
                                                             int64_t* state_shape, void* action, size_t action_dim,
                                                             int64_t* action_shape, torchfort_datatype_t dtype,
                                                             torchfort_stream_t stream) {
  return predict("torchfort_rl_off_policy_predict_explore", name, state, state_dim, state_shape, action,
                 action_dim, action_shape, dtype, (void*)stream, true, true);
}

torchfort_result_t torchfort_rl_off_policy_evaluate(char const* name, void* state, size_t state_dim,
                                                    int64_t* state_shape, void* action, size_t action_dim,
                                                    int64_t* action_shape, void* reward, size_t reward_dim,
                                                    int64_t* reward_shape, torchfort_datatype_t dtype,
                                                    torchfort_stream_t stream) {
  return evaluate(name, state, state_dim, state_shape, action, action_dim, action_shape, reward, reward_dim,
                  reward_shape, dtype, (void*)stream, false);
}
torchfort_result_t torchfort_rl_off_policy_evaluate_F(char const* name, void* state, size_t state_dim,
                                                      int64_t* state_shape, void* action, size_t action_dim,
                                                      int64_t* action_shape, void* reward, size_t reward_dim,
                                                      int64_t* reward_shape, torchfort_datatype_t dtype,
                                                      torchfort_stream_t stream) {
  return evaluate(name, state, state_dim, state_shape, action, action_dim, action_shape, reward, reward_dim,
                  reward_shape, dtype, (void*)stream, true);
}

torchfort_result_t torchfort_rl_off_policy_update_replay_buffer(char const* name, void* state_old, void* state_new,
                                                                size_t state_dim, int64_t* state_shape,
                                                                void* action_old, size_t action_dim,
                                                                int64_t* action_shape, const void* reward,
                                                                bool final_state, torchfort_datatype_t dtype,
                                                                torchfort_stream_t stream) {
  Step const st{state_old,   state_new,    action_old, state_dim,  action_dim,
                state_shape, action_shape, reward,     final_state};
  return update_buffer(name, st, dtype, (void*)stream, false);
}
torchfort_result_t torchfort_rl_off_policy_update_replay_buffer_F(
    char const* name, void* state_old, void* state_new, size_t state_dim, int64_t* state_shape, void* action_old,
    size_t action_dim, int64_t* action_shape, const void* reward, bool final_state, torchfort_datatype_t dtype,
    torchfort_stream_t stream) {
  Step const st{state_old,   state_new,    action_old, state_dim,  action_dim,
                state_shape, action_shape, reward,     final_state};
  return update_buffer(name, st, dtype, (void*)stream, true);
}

torchfort_result_t torchfort_rl_off_policy_update_replay_buffer_multi(
    char const* name, void* state_old, void* state_new, size_t state_dim, int64_t* state_shape, void* action_old,
    size_t action_dim, int64_t* action_shape, void* reward, size_t reward_dim, int64_t* reward_shape,
    void* final_state, size_t final_state_dim, int64_t* final_state_shape, torchfort_datatype_t dtype,
    torchfort_stream_t stream) {
  Step const st{state_old,   state_new,    action_old,      state_dim,    action_dim,
                state_shape, action_shape, nullptr,         false,        reward,
                final_state, reward_dim,   final_state_dim, reward_shape, final_state_shape};
  return update_buffer(name, st, dtype, (void*)stream, false);
}
torchfort_result_t torchfort_rl_off_policy_update_replay_buffer_multi_F(
    char const* name, void* state_old, void* state_new, size_t state_dim, int64_t* state_shape, void* action_old,
    size_t action_dim, int64_t* action_shape, void* reward, size_t reward_dim, int64_t* reward_shape,
    void* final_state, size_t final_state_dim, int64_t* final_state_shape, torchfort_datatype_t dtype,
    torchfort_stream_t stream) {
  Step const st{state_old,   state_new,    action_old,      state_dim,    action_dim,
                state_shape, action_shape, nullptr,         false,        reward,
                final_state, reward_dim,   final_state_dim, reward_shape, final_state_shape};
  return update_buffer(name, st, dtype, (void*)stream, true);
}

// A system's checkpoint directory (rl/system_io.cpp): every network, target, optimiser state, the buffer and the
// counters, written as one generation; load_checkpoint restores all of it into a system of the same shape,
// load_model the online networks only (targets copied from them, nothing else touched).
torchfort_result_t torchfort_rl_off_policy_save_checkpoint(char const* name, char const* checkpoint_dir) {
  return call("torchfort_rl_off_policy_save_checkpoint", [&] {
    RlEntry& e = system_named(name);
    KTR_REQUIRE(checkpoint_dir != nullptr, "checkpoint_dir", "is a null pointer");
    e.system->save(e.instances.of(nullptr), checkpoint_dir, e.config_text);
  });
}
torchfort_result_t torchfort_rl_off_policy_load_checkpoint(char const* name, char const* checkpoint_dir) {
  return call("torchfort_rl_off_policy_load_checkpoint", [&] {
    RlEntry& e = system_named(name);
    KTR_REQUIRE(checkpoint_dir != nullptr, "checkpoint_dir", "is a null pointer");
    e.system->load(e.instances.of(nullptr), checkpoint_dir);
    e.refused_reported = e.system->refused(e.instances.of(nullptr));
  });
}
torchfort_result_t torchfort_rl_off_policy_load_model(char const* name, char const* checkpoint_dir) {
  return call("torchfort_rl_off_policy_load_model", [&] {
    RlEntry& e = system_named(name);
    KTR_REQUIRE(checkpoint_dir != nullptr, "checkpoint_dir", "is a null pointer");
    e.system->load(e.instances.of(nullptr), checkpoint_dir, true);
  });
}

torchfort_result_t torchfort_rl_off_policy_wandb_log_int(char const* name, char const* metric_name, int64_t step,
                                                         int value) {
  return log_metric("torchfort_rl_off_policy_wandb_log_int", name, metric_name, step,
                    ktr::capi::metric_text(value));
}
torchfort_result_t torchfort_rl_off_policy_wandb_log_float(char const* name, char const* metric_name, int64_t step,
                                                           float value) {
  return log_metric("torchfort_rl_off_policy_wandb_log_float", name, metric_name, step,
                    ktr::capi::metric_text(value));
}
torchfort_result_t torchfort_rl_off_policy_wandb_log_double(char const* name, char const* metric_name,
                                                            int64_t step, double value) {
  return log_metric("torchfort_rl_off_policy_wandb_log_double", name, metric_name, step,
                    ktr::capi::metric_text(value));
}

// Not built yet: each answers NOT_SUPPORTED with its reason.
KTR_TF_RL_REFUSE_FAMILY(on_policy)
KTR_TF_RL_REFUSE_BUFFER(on_policy, rollout, void*, size_t, int64_t*, void*, size_t, int64_t*)
KTR_TF_RL_REFUSE(torchfort_rl_on_policy_reset_rollout_buffer, const char*)

#if defined(KTR_ENABLE_MPI)
KTR_TF_RL_REFUSE(torchfort_rl_on_policy_create_distributed_system, const char*, const char*, MPI_Comm, int, int)
#endif

// The Fortran module's RL procedures (torchfort_rl.f90): what they do not have yet prints and answers as above; a
// descriptor fortran.c cannot hand on is refused as INVALID_USAGE, printed the same way.
ktr_result_t ktr_torchfort_rl_refused_F(char const* call) { return ktr_result_t(rl_refused(call)); }
int ktr_torchfort_rl_failed_F(char const* call, char const* message) {
  return int(ktr::capi::torchfort_refused(call, KTR_RESULT_INVALID_USAGE, message));
}

}  // extern "C"
