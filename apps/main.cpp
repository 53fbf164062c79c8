// The ktr command line entry point.
#include "apps/cli.hpp"

int main(int argc, char* argv[]) { return ktr::cli::run(argc, argv); }
