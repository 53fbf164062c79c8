// ktr's own reinforcement-learning calls (ktr_rl_* in ktr_c.h) over the systems TorchFort's door shares
// (rl_systems.hpp): K updates in one call with no read-back unless a loss is asked for, n_envs per system (ranks
// may differ), and arrays read in place on the device without waiting where they are device floats.
#include "guard.hpp"
#include "ktr_array.h"
#include "ktr_c.h"
#include "rl_systems.hpp"

#include "../backends/device_info.hpp"
#include "../data/strided.hpp"

#include <initializer_list>
#include <string>
#include <utility>

namespace {

using ktr::capi::Array;
using ktr::capi::RlEntry;

// `n` rows of `width` values of the call's datatype (a C caller's pointer).
Array rows(void const* data, std::int64_t n, std::int64_t width, ktr_datatype_t dtype, char const* what) {
  KTR_REQUIRE(n >= 1 && n <= (std::int64_t(1) << 31), what, "needs 1 to 2^31 rows, got " + std::to_string(n));
  std::int64_t const shape[2] = {n, width};
  return ktr::capi::c_array(const_cast<void*>(data), 2, shape, dtype, what);
}

// A described array (Fortran's, dimensions reversed) as rows of `width` values: (rows, width), or one dimension of
// rows x width values.
Array as_rows(Array a, std::int64_t width, char const* what) {
  KTR_REQUIRE(a.dtype == KTR_FLOAT || a.dtype == KTR_DOUBLE, what, "must be real (real32 or real64)");
  if (a.rank == 1) {
    KTR_REQUIRE(
        a.extent[0] % width == 0, what,
        "holds " + std::to_string(a.extent[0]) + " values, not rows of the system's " + std::to_string(width));
    a.rank = 2;
    a.extent[1] = width, a.stride[1] = a.stride[0];
    a.extent[0] /= width, a.stride[0] *= width;
    return a;
  }
  KTR_REQUIRE(a.rank == 2 && a.extent[1] == width, what,
              "must be (" + std::to_string(width) + ", rows) in Fortran, (rows, " + std::to_string(width) +
                  ") in C: the system's values per row");
  return a;
}

bool in_place(Array const& a) { return a.dtype == KTR_FLOAT && ktr::device_can_read(a.data); }

void same_rows(Array const& a, Array const& b, char const* what) {
  KTR_REQUIRE(a.extent[0] == b.extent[0], what,
              "has " + std::to_string(b.extent[0]) + " rows for " + std::to_string(a.extent[0]) + " states");
}

// One time step of the system's environments: state, action, reward, next_state, done.
void push(char const* name, Array const (&in)[5], void* stream) {
  RlEntry& e = ktr::capi::rl_system(name);
  ktr::rl::OffPolicySystem& sys = *e.system;
  std::int64_t const n = sys.config().n_envs;
  char const* what[5] = {"state", "action", "reward", "next_state", "done"};
  std::int64_t const width[5] = {sys.state_dim(), sys.action_dim(), 1, sys.state_dim(), 1};
  ktr::ExecSpace const space = e.instances.of(stream);
  ktr::DeviceView<float*> v[5];
  bool wait = false;
  for (int i = 0; i < 5; ++i) {
    Array const a = as_rows(in[i], width[i], what[i]);
    KTR_REQUIRE(a.extent[0] == n, what[i],
                "holds " + std::to_string(a.extent[0]) + " environments; system '" + std::string(name) + "' has " +
                    std::to_string(n) + " per push");
    v[i] = ktr::capi::device_floats(space, a);
    wait = wait || !in_place(a);
  }
  sys.push(space, v[0].data(), v[1].data(), v[2].data(), v[3].data(), v[4].data());
  if (wait) space.fence();  // packed copies of the caller's arrays: kept until the push has read them
}

void predict(char const* name, Array const& state, Array const& action, bool explore, void* stream) {
  RlEntry& e = ktr::capi::rl_system(name);
  ktr::rl::OffPolicySystem& sys = *e.system;
  std::int64_t const S = sys.state_dim(), A = sys.action_dim();
  Array const s = as_rows(state, S, "state"), a = as_rows(action, A, "action");
  same_rows(s, a, "action");
  std::int64_t const n = s.extent[0];
  ktr::ExecSpace const space = e.instances.of(stream);
  ktr::Tensor const in(ktr::capi::device_floats(space, s), ktr::Shape{n, S});
  if (in_place(a) && a.stride[1] == 1 && a.stride[0] == A) {  // written where it lives, not waited for
    ktr::Tensor const out(ktr::DeviceView<float*>(static_cast<float*>(a.data), std::size_t(n * A)),
                          ktr::Shape{n, A});
    sys.predict(space, in, out, explore);
    if (!in_place(s)) space.fence();
    return;
  }
  ktr::Tensor const out(ktr::capi::rl_scratch(e, space, n * A), ktr::Shape{n, A});
  sys.predict(space, in, out, explore);
  ktr::scatter_strided(space, out.data(), a.strided());
}

void evaluate(char const* name, Array const& state, Array const& action, Array const& value, void* stream) {
  RlEntry& e = ktr::capi::rl_system(name);
  ktr::rl::OffPolicySystem& sys = *e.system;
  std::int64_t const S = sys.state_dim(), A = sys.action_dim();
  Array const s = as_rows(state, S, "state"), a = as_rows(action, A, "action"), q = as_rows(value, 1, "q");
  same_rows(s, a, "action");
  same_rows(s, q, "q");
  std::int64_t const n = s.extent[0];
  ktr::ExecSpace const space = e.instances.of(stream);
  ktr::Tensor const sv(ktr::capi::device_floats(space, s), ktr::Shape{n, S});
  ktr::Tensor const av(ktr::capi::device_floats(space, a), ktr::Shape{n, A});
  ktr::Tensor const qv(ktr::capi::rl_scratch(e, space, n), ktr::Shape{n});
  sys.evaluate(space, sv, av, qv);
  ktr::scatter_strided(space, qv.data(), q.strided());
}

// The described arrays of a binding, or the binding's failure.
ktr_result_t described(std::initializer_list<std::pair<ktr_array_t const*, char const*>> in, Array* out) {
  return ktr::capi::guarded([&] {
    for (auto const& d : in) *out++ = ktr::capi::described_array(d.first, d.second);
  });
}

}  // namespace

extern "C" {

ktr_result_t ktr_rl_create_system(const char* name, const char* config_file, int64_t n_envs, int device) {
  return ktr::capi::create_rl_system(name, config_file, device, n_envs);
}

ktr_result_t ktr_rl_push(const char* name, int64_t n_envs, const void* state, const void* action,
                         const void* reward, const void* next_state, const void* done, ktr_datatype_t dtype,
                         void* stream) {
  return ktr::capi::guarded([&] {
    RlEntry const& e = ktr::capi::rl_system(name);
    std::int64_t const n = e.system->config().n_envs, S = e.system->state_dim(), A = e.system->action_dim();
    KTR_REQUIRE(n_envs == n, "n_envs",
                "is " + std::to_string(n_envs) + "; system '" + std::string(name) + "' has " + std::to_string(n) +
                    " environments per push");
    push(name,
         {rows(state, n, S, dtype, "state"), rows(action, n, A, dtype, "action"),
          rows(reward, n, 1, dtype, "reward"), rows(next_state, n, S, dtype, "next_state"),
          rows(done, n, 1, dtype, "done")},
         stream);
  });
}

ktr_result_t ktr_rl_ready(const char* name, int* ready) {
  return ktr::capi::guarded([&] {
    KTR_REQUIRE(ready != nullptr, "ready", "is a null pointer");
    RlEntry& e = ktr::capi::rl_system(name);
    *ready = e.system->ready(e.instances.of(nullptr)) ? 1 : 0;
  });
}

ktr_result_t ktr_rl_train(const char* name, int64_t updates, float* policy_loss, float* critic_loss,
                          void* stream) {
  return ktr::capi::guarded([&] {
    KTR_REQUIRE(updates >= 1, "updates", "must be at least 1, got " + std::to_string(updates));
    RlEntry& e = ktr::capi::rl_system(name);
    ktr::capi::rl_train(e, name, e.instances.of(stream), updates, policy_loss, critic_loss);
  });
}

ktr_result_t ktr_rl_predict(const char* name, int64_t n, const void* state, void* action, int explore,
                            ktr_datatype_t dtype, void* stream) {
  return ktr::capi::guarded([&] {
    RlEntry const& e = ktr::capi::rl_system(name);
    predict(name, rows(state, n, e.system->state_dim(), dtype, "state"),
            rows(action, n, e.system->action_dim(), dtype, "action"), explore != 0, stream);
  });
}

ktr_result_t ktr_rl_evaluate(const char* name, int64_t n, const void* state, const void* action, void* q,
                             ktr_datatype_t dtype, void* stream) {
  return ktr::capi::guarded([&] {
    RlEntry const& e = ktr::capi::rl_system(name);
    evaluate(name, rows(state, n, e.system->state_dim(), dtype, "state"),
             rows(action, n, e.system->action_dim(), dtype, "action"), rows(q, n, 1, dtype, "q"), stream);
  });
}

// The bindings' forms (ktr_array.h): any rank-1 or rank-2 arrays, real32 or real64, strided.
ktr_result_t ktr_rl_push_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                               const ktr_array_t* reward, const ktr_array_t* next_state, const ktr_array_t* done,
                               void* stream) {
  Array in[5];
  ktr_result_t const r = described(
      {{state, "state"}, {action, "action"}, {reward, "reward"}, {next_state, "next_state"}, {done, "done"}}, in);
  return r != KTR_RESULT_SUCCESS ? r : ktr::capi::guarded([&] { push(name, in, stream); });
}

ktr_result_t ktr_rl_predict_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                                  int explore, void* stream) {
  Array in[2];
  ktr_result_t const r = described({{state, "state"}, {action, "action"}}, in);
  return r != KTR_RESULT_SUCCESS ? r
                                 : ktr::capi::guarded([&] { predict(name, in[0], in[1], explore != 0, stream); });
}

ktr_result_t ktr_rl_evaluate_array(const char* name, const ktr_array_t* state, const ktr_array_t* action,
                                   const ktr_array_t* q, void* stream) {
  Array in[3];
  ktr_result_t const r = described({{state, "state"}, {action, "action"}, {q, "q"}}, in);
  return r != KTR_RESULT_SUCCESS ? r : ktr::capi::guarded([&] { evaluate(name, in[0], in[1], in[2], stream); });
}

ktr_result_t ktr_rl_save_checkpoint(const char* name, const char* directory) {
  return ktr::capi::guarded([&] {
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    RlEntry& e = ktr::capi::rl_system(name);
    e.system->save(e.instances.of(nullptr), directory, e.config_text);
  });
}

ktr_result_t ktr_rl_load_checkpoint(const char* name, const char* directory) {
  return ktr::capi::guarded([&] {
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    RlEntry& e = ktr::capi::rl_system(name);
    e.system->load(e.instances.of(nullptr), directory);
    e.refused_reported = e.system->refused(e.instances.of(nullptr));
  });
}

ktr_result_t ktr_rl_destroy_system(const char* name) {
  return ktr::capi::guarded([&] {
    KTR_REQUIRE(ktr::capi::destroy_rl_system(name), "system '" + std::string(name ? name : "") + "'",
                "does not exist");
  });
}

}  // extern "C"
