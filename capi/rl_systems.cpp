#include "rl_systems.hpp"

#include "../backends/device_info.hpp"
#include "../config/rl_config.hpp"
#include "../data/strided.hpp"
#include "guard.hpp"

#include <cctype>
#include <map>

namespace ktr::capi {

namespace {

std::map<std::string, std::unique_ptr<RlEntry>>& systems() {
  // Never destroyed (as the models' registry): the finalize hook empties it at exit, after the function-local
  // statics made since ktr started Kokkos are gone.
  static auto* const s = new std::map<std::string, std::unique_ptr<RlEntry>>;
  return *s;
}
bool g_finalize_hook = false;

std::string key_of(char const* name) {
  KTR_REQUIRE(name != nullptr && *name != '\0', "name", "a system needs a name (null or empty given)");
  std::string k = name;
  for (auto& c : k) c = char(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

void add_system(char const* name, char const* config_file, std::int64_t n_envs, Communicator const& comm,
                bool torchfort) {
  std::string const key = key_of(name);
  KTR_REQUIRE(config_file != nullptr, "config_fname", "is a null pointer");
  KTR_REQUIRE(systems().count(key) == 0, "system '" + std::string(name) + "'", "exists already");
  KTR_REQUIRE(n_envs >= 0, "n_envs", "must be 0 (the file's) or positive, got " + std::to_string(n_envs));
  std::string text = read_config_text(config_file);
  RlFileConfig const cfg = parse_rl_config(text, config_file, n_envs);
  auto e = std::make_unique<RlEntry>();
  e->config_text = std::move(text);
  e->system = std::make_unique<rl::OffPolicySystem>(ExecSpace(), cfg.system, comm);
  e->report_frequency = cfg.report_frequency;
  if (cfg.enable_wandb_hook)
    e->metric_log = open_metric_log(config_file, e->config_text, name, comm.rank() == 0, torchfort);
  if (!g_finalize_hook) {  // the systems' views go before Kokkos does
    Kokkos::push_finalize_hook([] {
      std::unique_lock<std::recursive_mutex> hook_lock(api_mutex(), std::defer_lock);
      if (!on_worker()) hook_lock.lock();
      systems().clear();
      g_finalize_hook = false;
    });
    g_finalize_hook = true;
  }
  systems()[key] = std::move(e);
}

}  // namespace

ktr_result_t create_rl_system(char const* name, char const* config_file, int device, std::int64_t n_envs,
                              Communicator const& comm, bool own_thread, bool torchfort) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  ktr_result_t const started = guarded([&] { ensure_runtime(device, own_thread); });
  if (started != KTR_RESULT_SUCCESS) return started;
  return guarded([&] { add_system(name, config_file, n_envs, comm, torchfort); });
}

RlEntry& rl_system(char const* name) {
  auto it = systems().find(key_of(name));
  KTR_REQUIRE(it != systems().end(), "system '" + std::string(name) + "'",
              "does not exist (ktr_rl_create_system or torchfort_rl_off_policy_create_system makes it)");
  return *it->second;
}

bool destroy_rl_system(char const* name) { return systems().erase(key_of(name)) == 1; }

DeviceView<float*> rl_scratch(RlEntry& e, ExecSpace const& space, std::int64_t n) {
  if (std::int64_t(e.scratch.extent(0)) < n)
    e.scratch = DeviceView<float*>(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::rl::scratch"),
                                   std::size_t(n));
  return DeviceView<float*>(e.scratch.data(), std::size_t(n));
}

DeviceView<float*> device_floats(ExecSpace const& space, Array const& a) {
  std::int64_t const n = a.extent[0] * a.extent[1];
  bool const contiguous = a.rank == 2 ? a.stride[1] == 1 && a.stride[0] == a.extent[1] : a.stride[0] == 1;
  if (a.dtype == KTR_FLOAT && contiguous && device_can_read(a.data))
    return DeviceView<float*>(static_cast<float*>(a.data), std::size_t(n));
  return pack_strided<float>(space, a.strided());
}

void rl_train(RlEntry& e, char const* name, ExecSpace const& space, std::int64_t updates, float* p_loss,
              float* q_loss) {
  rl::OffPolicySystem& sys = *e.system;
  KTR_REQUIRE(sys.ready(space), "system '" + std::string(name) + "'",
              "its replay buffer does not hold min_size (" +
                  std::to_string(sys.config().min_size * sys.config().n_envs) +
                  ") transitions yet (torchfort_rl_off_policy_is_ready and ktr_rl_ready say when)");
  bool const read = p_loss != nullptr || q_loss != nullptr;
  float p = 0, q = 0;
  sys.train(space, updates, read ? &p : nullptr, read ? &q : nullptr);
  if (!read) return;
  std::int64_t const refused = sys.refused(space);
  if (refused > e.refused_reported) {
    std::int64_t const fresh = refused - e.refused_reported;
    e.refused_reported = refused;
    throw Error("system '" + std::string(name) + "': " + std::to_string(fresh) +
                " transitions pushed since the last report held non-finite values and were not stored");
  }
  if (p_loss) *p_loss = p;
  if (q_loss) *q_loss = q;
}

}  // namespace ktr::capi
