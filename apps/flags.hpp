// A small command-line flag parser: `--name value` or `--name=value`, typed getters that validate, and errors
// that name the flag. Unknown flags are rejected.
#pragma once

#include <ktr/core/error.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ktr::cli {

/// A bad flag or value: the command exits with status 2 and a pointer to its --help.
struct FlagError : Error {
  using Error::Error;
};

class Flags {
 public:
  /// Parses argv[first..argc); `known` are the accepted names (without "--"); `switches` take no value.
  Flags(int argc, char* argv[], int first, std::set<std::string> known, std::set<std::string> switches = {});

  bool has(std::string const& name) const { return values_.count(name) > 0; }
  std::string str(std::string const& name, std::string const& fallback) const;
  std::int64_t integer(std::string const& name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const;
  double number(std::string const& name, double fallback, double lo, double hi) const;
  bool on(std::string const& name) const { return has(name); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace ktr::cli
