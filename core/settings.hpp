// A table of settings: one row per field of a settings struct, with its name, what it holds, its range, and how it
// reads from and prints to text. The readers of a struct (checkpoint headers, the YAML file, the command line) and
// its printing all walk its table, so a setting is declared once, with one range and one spelling of its values.
#pragma once

#include "error.hpp"
#include "parse.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ktr {

template <class Config>
struct Setting {
  enum class Type { number, integer, boolean, word, text };
  char const* name = "";  ///< the checkpoint header's key and the name library messages use ("lr", "batch")
  Type type = Type::text;
  double lo = 0, hi = 0;           ///< number and integer: the accepted range
  std::vector<std::string> words;  ///< word: the accepted values
  char const* help = "";           ///< one line: what it is
  bool recorded = true;            ///< kept in checkpoints
  bool omit_default = false;       ///< written only where it differs from the default (keeps older files' bytes)
  bool required = true;            ///< a header without it is refused (else: older files; the default holds)
  std::function<std::string(Config const&)> get;         ///< its value as text (parsed back the same)
  std::function<void(Config&, std::string const&)> set;  ///< from text that check() accepted

  /// "" if `text` is a value of this setting, else why not: "'abc' is not a number in [1e-12, 1e+06]".
  std::string check(std::string const& text) const {
    std::string const quoted = "'" + escaped(text) + "'";
    switch (type) {
      case Type::number: {
        double v = 0;
        return parse_number(text, lo, hi, v) ? "" : quoted + " is not a number in " + range();
      }
      case Type::integer: {
        std::int64_t v = 0;
        return parse_integer(text, std::int64_t(lo), std::int64_t(hi), v)
                   ? ""
                   : quoted + " is not an integer in " + range();
      }
      case Type::boolean:
        return boolean_value(text) >= 0 ? "" : quoted + " is not true or false (or 1 or 0)";
      case Type::word:
        for (auto const& w : words)
          if (text == w) return "";
        return "must be one of " + range() + ", got " + quoted;
      case Type::text:
        try {  // the setter is the parser: tried on a scratch struct
          Config scratch;
          set(scratch, text);
          return "";
        } catch (Error const& e) {  // the parser's message, without the setting's name in front
          std::string const what = e.what(), prefix = std::string(name) + ": ";
          return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
        }
    }
    return "unknown type";
  }

  /// "[lo, hi]", "sgd, adam, adamw", "true or false", or "" for text.
  std::string range() const {
    if (type == Type::number || type == Type::integer) return "[" + shortest(lo) + ", " + shortest(hi) + "]";
    if (type == Type::boolean) return "true or false";
    std::string list;
    for (auto const& w : words) list += (list.empty() ? "" : ", ") + w;
    return list;
  }

  /// An integer in [lo, hi], written as one or as a number with no fraction ("100000", "1e5", "100000.0").
  static bool integer_value(std::string const& text, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    return parse_whole_number(text, lo, hi, out);
  }

  /// The number a text that check() accepted holds (0 for one that is not a number).
  static double number_value(std::string const& text) {
    double v = 0;
    return parse_number(text, -1e300, 1e300, v) ? v : 0;
  }

  /// 1 for true, 1, yes, on (and True, TRUE); 0 for their opposites; -1 otherwise.
  static int boolean_value(std::string const& t) {
    if (t == "1" || t == "true" || t == "True" || t == "TRUE" || t == "yes" || t == "on") return 1;
    if (t == "0" || t == "false" || t == "False" || t == "FALSE" || t == "no" || t == "off") return 0;
    return -1;
  }

  static std::string shortest(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v == double(std::int64_t(v)) && v < 1e15 && v > -1e15 ? "%.0f" : "%g", v);
    return buf;
  }
};

/// The row of `table` named `name` (a programming error otherwise).
template <class Config>
Setting<Config> const& setting_named(std::vector<Setting<Config>> const& table, std::string const& name) {
  for (auto const& s : table)
    if (name == s.name) return s;
  throw Error("no setting named '" + name + "'");
}

/// Sets the setting `name` of `config` from `text`; a value that does not fit throws ktr::Error "<name>: <why>"
/// (the YAML reader and the command line put their own name for it in front).
template <class Config>
void set_setting(std::vector<Setting<Config>> const& table, Config& config, std::string const& name,
                 std::string const& text) {
  Setting<Config> const& s = setting_named(table, name);
  std::string const why = s.check(text);
  if (!why.empty()) throw Error(name + ": " + why);
  s.set(config, text);
}

/// "name value, name value, ...": every row of `table`, or only those that differ from Config{}'s.
template <class Config>
std::string describe_settings(std::vector<Setting<Config>> const& table, Config const& config,
                              bool only_changed = false) {
  Config const defaults{};
  std::string out;
  for (auto const& s : table) {
    std::string value = s.get(config);
    if (only_changed && value == s.get(defaults)) continue;
    double v = 0;
    if (s.type == Setting<Config>::Type::number && parse_number(value, -1e300, 1e300, v))
      value = Setting<Config>::shortest(v);
    out += (out.empty() ? "" : ", ") + std::string(s.name) + " " + value;
  }
  return out;
}

}  // namespace ktr
