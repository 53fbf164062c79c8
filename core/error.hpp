// The one exception type ktr throws for bad input and misuse: the message names the file or flag and the reason.
#pragma once

#include <stdexcept>
#include <string>

namespace ktr {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws ktr::Error("<what>: <why>") unless `ok`.
inline void require(bool ok, std::string const& what, std::string const& why) {
  if (!ok) throw Error(what + ": " + why);
}

}  // namespace ktr
