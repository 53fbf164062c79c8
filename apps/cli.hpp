// The `ktr` command line as a library, so tests can run commands in-process.
#pragma once

namespace ktr::cli {

/// Runs `ktr <command> [flags]`; returns the process exit code (0 ok, 1 runtime error, 2 usage error,
/// 3 diverged, 130 interrupted).
int run(int argc, char* argv[]);

int train(int argc, char* argv[]);  // ktr train ...
int eval(int argc, char* argv[]);   // ktr eval ...
int synth(int argc, char* argv[]);  // ktr synth ...
int bench(int argc, char* argv[]);  // ktr bench ...

}  // namespace ktr::cli
