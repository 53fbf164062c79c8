// The YAML configuration's reader: typed values, one table of handlers per section (an unknown key refused), and
// every message naming the file, the line and the key's full path. Internal to config/.
#pragma once

#include "../core/parse.hpp"
#include "../train/run_settings.hpp"
#include "yaml_config.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ktr::config_impl {

constexpr double kBig = 1e30;
constexpr std::int64_t kMaxCount = std::int64_t(1) << 40;

/// `s` in lower case (TorchFort's names are case-blind: `Adam`, `CriticMLP`).
inline std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(YAML::Node const& at, std::string const& key, std::string const& reason,
                         bool not_supported = false) const {
    std::string where = path_;
    if (at.IsDefined() && at.Mark().line >= 0) where += ":" + std::to_string(at.Mark().line + 1);
    throw ConfigError(where + ": " + key + ": " + reason, not_supported);
  }

  using Handler = std::function<void(YAML::Node const&, std::string const&)>;

  /// A key as it is looked up: case-blind and without spaces, as TorchFort reads them (`T_max` is `t_max`).
  static std::string key_name(std::string const& key) {
    std::string k;
    for (char c : key)
      if (c != ' ') k += char(std::tolower(static_cast<unsigned char>(c)));
    return k;
  }

  /// Runs the handler of each key of the map `node` (the section `name`); an unknown key is refused.
  void section(YAML::Node const& node, std::string const& name,
               std::map<std::string, Handler> const& handlers) const {
    if (!node.IsMap()) fail(node, name, "must be a mapping of keys to values");
    std::map<std::string, int> seen;
    for (auto const& entry : node) {
      if (!entry.first.IsScalar())
        fail(entry.first, name.empty() ? "(top level)" : name, "a key must be a plain name, not a list or a map");
      std::string const key = entry.first.as<std::string>();
      std::string const full = name.empty() ? key : name + "." + key;
      if (seen[key_name(key)]++ > 0) fail(entry.first, full, "appears twice (which one was meant?)");
      auto h = handlers.begin();
      while (h != handlers.end() && key_name(h->first) != key_name(key)) ++h;
      if (h == handlers.end()) {
        std::string known;
        for (auto const& k : handlers) known += (known.empty() ? "" : ", ") + k.first;
        fail(entry.first, full, "unknown key (known here: " + known + ")");
      }
      h->second(entry.second, full);
    }
  }

  std::string text(YAML::Node const& n, std::string const& key) const {
    if (!n.IsScalar()) fail(n, key, "must be a single value");
    return n.as<std::string>();
  }
  double number(YAML::Node const& n, std::string const& key, double lo, double hi) const {
    double v = 0;
    std::string const t = text(n, key);
    if (!parse_number(t, lo, hi, v))
      fail(n, key, "'" + escaped(t) + "' is not a number in [" + fmt(lo) + ", " + fmt(hi) + "]");
    return v;
  }
  /// An integer in [lo, hi], also written as a number with no fraction (TorchFort's `T_max: 1e5`).
  std::int64_t integer(YAML::Node const& n, std::string const& key, std::int64_t lo, std::int64_t hi) const {
    std::int64_t v = 0;
    std::string const t = text(n, key);
    if (Setting<GeneralConfig>::integer_value(t, lo, hi, v)) return v;
    fail(n, key,
         "'" + escaped(t) + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  bool boolean(YAML::Node const& n, std::string const& key) const {
    std::string const t = text(n, key);
    int const b = Setting<GeneralConfig>::boolean_value(t);  // TorchFort's 0 and 1 too
    if (b < 0) fail(n, key, "'" + escaped(t) + "' is not true or false (or 1 or 0)");
    return b == 1;
  }
  /// A TorchFort key ktr does not implement: accepted at its default, refused (not supported) otherwise.
  Handler only_default(double default_value) const {
    return [this, default_value](YAML::Node const& n, std::string const& key) {
      std::string const t = text(n, key);
      double v = 0;
      bool const is_default = (t == "false" && default_value == 0) || (t == "true" && default_value == 1) ||
                              (parse_number(t, -1e300, 1e300, v) && v == default_value);
      if (!is_default)
        fail(n, key, "'" + escaped(t) + "' is not supported by ktr (only the default, " + fmt(default_value) + ")",
             true);
    };
  }
  /// A key that is a row of a settings table (core/settings.hpp): its type, range and values. `lowercase`: the
  /// value is read case-blind (TorchFort's `Adam`).
  template <class Config>
  Handler setting(std::vector<Setting<Config>> const& table, Config& config, char const* name,
                  bool lowercase = false) const {
    Setting<Config> const& s = setting_named(table, name);
    return [this, &config, &s, lowercase](YAML::Node const& n, std::string const& key) {
      std::string t = text(n, key);
      if (lowercase)
        for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      std::string const why = s.check(t);
      if (!why.empty()) fail(n, key, why);
      s.set(config, t);
    };
  }
  Handler setting(RunConfig& run, char const* name, bool lowercase = false) const {
    return setting(run_settings(), run, name, lowercase);
  }
  Handler ignored() const {
    return [](YAML::Node const&, std::string const&) {};
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  std::string path_;
};

}  // namespace ktr::config_impl
