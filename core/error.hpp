// ktr's exceptions. Everything ktr throws for bad input and misuse is a ktr::Error (catch it to catch them all),
// whose message names the file or flag and the reason; the kinds that callers tell apart derive from it:
// DivergenceError and UsageError here, ConfigError (a YAML configuration, config/yaml_config.hpp) and the C API's
// own NotSupported (capi/guard.hpp), which become the CLI's exit codes and the C API's status codes.
#pragma once

#include <stdexcept>
#include <string>

namespace ktr {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Training produced a non-finite loss, parameter or optimiser state (divergence): the CLI's exit code 3.
class DivergenceError : public Error {
 public:
  using Error::Error;
};

/// A bad setting handed to ktr by its user (a flag, an environment variable, an option of the API): the CLI's exit
/// code 2. The message names the setting, the value and what is accepted.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// Throws ktr::Error("<what>: <why>") unless `ok`. A macro so that the message is only built on failure: checks
/// sit on the training loop's path, which must not allocate.
#define KTR_REQUIRE(ok, what, why)                                   \
  do {                                                               \
    if (!(ok)) throw ::ktr::Error(std::string(what) + ": " + (why)); \
  } while (false)

}  // namespace ktr
