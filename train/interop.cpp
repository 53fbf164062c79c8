// Flax-named safetensors export and import.
#include "interop.hpp"

#include "../core/error.hpp"
#include "../core/parse.hpp"

#include <ktr/ktr_config.hpp>

#include <cmath>
#include <cstdio>

namespace ktr {

namespace {

std::string float_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string shape_str(std::vector<std::int64_t> const& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::vector<std::int64_t> dims(Shape const& s) {
  return std::vector<std::int64_t>(s.dims.begin(), s.dims.begin() + s.rank);
}

// Metadata numbers are read strictly: the whole string, finite ("nan", "1e999", "0.5x" are refused, naming the
// key).
double metadata_number(std::string const& text, char const* key, std::string const& path, double fallback) {
  if (text.empty()) return fallback;
  double v = 0;
  KTR_REQUIRE(parse_number(text, -3.4e38, 3.4e38, v), path,
              std::string("metadata ") + key + " is '" + escaped(text) + "', not a finite float32 number");
  return v;
}

// Nothing non-finite enters a model: not from a checkpoint, not from an imported file.
void require_finite(std::vector<float> const& values, std::string const& what, std::string const& path) {
  for (std::size_t i = 0; i < values.size(); ++i)
    KTR_REQUIRE(
        std::isfinite(values[i]), path,
        what + " holds a non-finite value (" + std::to_string(values[i]) + " at index " + std::to_string(i) + ")");
}

bool arena_has(Arena const& arena, std::string const& name) {
  for (std::size_t i = 0; i < arena.count(); ++i)
    if (arena.spec(i).name == name) return true;
  return false;
}

}  // namespace

SafeTensors export_weights(Model const& model, std::vector<float> const& params, RunConfig const& config) {
  Arena const& arena = model.arena();
  KTR_REQUIRE(std::int64_t(params.size()) == arena.size(), "ktr::export_weights",
              "parameters do not fit the model");
  auto refuse_non_finite = [](std::vector<float> const& values, char const* what) {
    for (std::size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        throw DivergenceError(std::string("ktr::export_weights: ") + what + " " + std::to_string(i) +
                              " is not finite: nothing non-finite is exported");
  };
  refuse_non_finite(params, "parameter");
  SafeTensors st;
  for (std::size_t i = 0; i < arena.count(); ++i) {
    SafeTensor t;
    t.shape = dims(arena.spec(i).shape);
    auto const begin = params.begin() + arena.offset(i);
    t.values.assign(begin, begin + arena.spec(i).shape.size());
    st.tensors[arena.spec(i).name] = std::move(t);
  }
  st.metadata["ktr.model"] = config.model;
  st.metadata["ktr.task"] = config.task == Task::regression ? "regression" : "classification";
  st.metadata["ktr.version"] = KTR_VERSION;
  st.metadata["ktr.normalize_scale"] = float_text(config.input_transform.scale);
  st.metadata["ktr.normalize_shift"] = float_text(config.input_transform.shift);
  if (config.input_transform.per_feature()) {
    std::vector<std::int64_t> const input = dims(model.input_shape(1));  // (1, ...): one sample
    std::vector<std::int64_t> const sample(input.begin() + 1, input.end());
    for (auto const& [name, view] :
         {std::pair<char const*, DeviceView<float*>>{"ktr.input_scale", config.input_transform.feature_scale},
          {"ktr.input_shift", config.input_transform.feature_shift}}) {
      SafeTensor t;
      t.shape = sample;
      t.values = download(view);
      refuse_non_finite(t.values, "input transform value");
      st.tensors[name] = std::move(t);
    }
  }
  return st;
}

ImportedWeights import_weights(Model const& model, SafeTensors const& st, std::string const& path) {
  Arena const& arena = model.arena();
  ImportedWeights w;
  w.params.assign(std::size_t(arena.size()), 0.0f);
  std::size_t used = 0;
  for (std::size_t i = 0; i < arena.count(); ++i) {
    ParamSpec const& spec = arena.spec(i);
    auto it = st.tensors.find(spec.name);
    KTR_REQUIRE(it != st.tensors.end(), path,
                "no tensor '" + spec.name + "' " + shape_str(dims(spec.shape)) + ", which the model needs");
    SafeTensor const& t = it->second;
    KTR_REQUIRE(t.dtype == "F32", path, "tensor '" + spec.name + "' is " + escaped(t.dtype) + ", ktr reads F32");
    KTR_REQUIRE(t.shape == dims(spec.shape), path,
                "tensor '" + spec.name + "' is " + shape_str(t.shape) + ", the model needs " +
                    shape_str(dims(spec.shape)));
    require_finite(t.values, "tensor '" + spec.name + "'", path);
    std::copy(t.values.begin(), t.values.end(), w.params.begin() + arena.offset(i));
    ++used;
  }
  std::int64_t const sample = model.input_shape(1).size();
  for (char const* name : {"ktr.input_scale", "ktr.input_shift"}) {
    auto it = st.tensors.find(name);
    if (it == st.tensors.end()) continue;
    KTR_REQUIRE(it->second.dtype == "F32" && std::int64_t(it->second.values.size()) == sample, path,
                std::string("tensor '") + name + "' must be F32 with one value per input feature (" +
                    std::to_string(sample) + ")");
    require_finite(it->second.values, std::string("tensor '") + name + "'", path);
    ++used;
  }
  for (auto const& [name, t] : st.tensors)
    KTR_REQUIRE(name.rfind("ktr.", 0) == 0 || arena_has(arena, name), path,
                "tensor '" + escaped(name) + "' is not a parameter of " + model.description());
  (void)used;
  auto meta = [&](char const* key) {
    auto it = st.metadata.find(key);
    return it == st.metadata.end() ? std::string() : it->second;
  };
  std::string const task = meta("ktr.task");
  KTR_REQUIRE(task.empty() || task == "classification" || task == "regression", path,
              "metadata ktr.task is '" + escaped(task) + "', not classification or regression");
  w.task = task;
  w.model = meta("ktr.model");
  if (!meta("ktr.normalize_scale").empty() || !meta("ktr.normalize_shift").empty() ||
      st.tensors.count("ktr.input_scale")) {
    w.has_transform = true;
    w.input_transform.scale =
        float(metadata_number(meta("ktr.normalize_scale"), "ktr.normalize_scale", path, 1.0));
    w.input_transform.shift =
        float(metadata_number(meta("ktr.normalize_shift"), "ktr.normalize_shift", path, 0.0));
    KTR_REQUIRE(w.input_transform.scale != 0.0f, path,
                "metadata ktr.normalize_scale is 0: every input would be the same");
    KTR_REQUIRE(st.tensors.count("ktr.input_scale") == st.tensors.count("ktr.input_shift"), path,
                "the tensors ktr.input_scale and ktr.input_shift go together");
    if (st.tensors.count("ktr.input_scale")) {
      auto const& scale = st.tensors.at("ktr.input_scale").values;
      auto const& shift = st.tensors.at("ktr.input_shift").values;
      w.input_transform.scale = 1.0f, w.input_transform.shift = 0.0f;
      w.input_transform.feature_scale = DeviceView<float*>("ktr::data::feature_scale", scale.size());
      w.input_transform.feature_shift = DeviceView<float*>("ktr::data::feature_shift", shift.size());
      Kokkos::deep_copy(w.input_transform.feature_scale, HostView<const float*>(scale.data(), scale.size()));
      Kokkos::deep_copy(w.input_transform.feature_shift, HostView<const float*>(shift.data(), shift.size()));
    }
  }
  return w;
}

}  // namespace ktr
