// Flag parsing and validation.
#include "apps/flags.hpp"

#include <ktr/core/error.hpp>

#include <cmath>

namespace ktr::cli {

Flags::Flags(int argc, char* argv[], int first, std::set<std::string> known, std::set<std::string> switches) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) throw FlagError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2), value;
    auto eq = name.find('=');
    bool const inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (!known.count(name) && !switches.count(name)) throw FlagError("--" + name + ": unknown flag");
    if (switches.count(name)) {
      if (inline_value) throw FlagError("--" + name + ": takes no value");
    } else if (!inline_value) {
      if (i + 1 >= argc) throw FlagError("--" + name + ": missing value");
      value = argv[++i];
    }
    if (values_.count(name)) throw FlagError("--" + name + ": given twice");
    values_[name] = value;
  }
}

std::string Flags::str(std::string const& name, std::string const& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (it->second.empty()) throw FlagError("--" + name + ": empty value");
  return it->second;
}

std::int64_t Flags::integer(std::string const& name, std::int64_t fallback, std::int64_t lo,
                            std::int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    std::size_t used = 0;
    long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= lo && v <= hi) return v;
  } catch (std::logic_error const&) {
  }
  throw FlagError("--" + name + ": '" + it->second + "' is not an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
}

double Flags::number(std::string const& name, double fallback, double lo, double hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    std::size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used == it->second.size() && std::isfinite(v) && v >= lo && v <= hi) return v;
  } catch (std::logic_error const&) {
  }
  throw FlagError("--" + name + ": '" + it->second + "' is not a number in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
}

}  // namespace ktr::cli
