// Strict reading of numbers and names that come from files and the environment: the whole text must be the
// number (no leading blanks, no trailing characters), finite and in range, and a string shown in an error message
// is escaped so that a control character or an embedded NUL is visible instead of cutting the message short.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ktr {

/// Every digit of `v` ("%.17g"): a number printed into a header reads back as the same double.
inline std::string exact_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// The whole of `text` as a finite double in [lo, hi]; false for "", " 1", "1x", "nan", "inf", "1e999", ....
inline bool parse_number(std::string const& text, double lo, double hi, double& out) {
  if (text.empty() || text.find('\0') != std::string::npos) return false;
  char const c = text[0];
  if (!(c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'))) return false;  // no blanks, no "nan"
  char* end = nullptr;
  errno = 0;
  double const v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi) return false;
  out = v;
  return true;
}

/// The whole of `text` as a decimal integer in [lo, hi]; false otherwise ("1.5", "-0x1", " 3",
/// "99999999999999999999").
inline bool parse_integer(std::string const& text, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  if (text.empty() || text.find('\0') != std::string::npos) return false;
  std::size_t const digits = text[0] == '-' ? 1 : 0;
  if (digits >= text.size()) return false;
  for (std::size_t i = digits; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return false;
  char* end = nullptr;
  errno = 0;
  long long const v = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE || v < lo || v > hi) return false;
  out = std::int64_t(v);
  return true;
}

/// An integer in [lo, hi] written as one or as a number with no fraction ("100000", "1e5", "100000.0"), as
/// configuration files write counts (TorchFort's `T_max: 1e5`); the command line reads counts the same way.
inline bool parse_whole_number(std::string const& text, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  if (parse_integer(text, lo, hi, out)) return true;
  double d = 0;
  if (!parse_number(text, double(lo), double(hi), d) || d != std::floor(d) || d > 9.0e15 || d < -9.0e15)
    return false;
  out = std::int64_t(d);
  return true;
}

/// `text` with every byte outside printable ASCII written as \0, \n, \t or \xHH (and a backslash as \\), for
/// error messages that quote strings read from files.
inline std::string escaped(std::string const& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch >= 0x20 && ch < 0x7f) {
      out += char(ch);
    } else if (ch == 0) {
      out += "\\0";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return out;
}

}  // namespace ktr
