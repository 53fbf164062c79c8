// Test main: Kokkos initialise -> GoogleTest -> Kokkos finalise.
#include <ktr/train/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

// CTest registers every test once per thread count and passes it as KTR_TEST_THREADS.
int main(int argc, char* argv[]) {
  ktr::adopt_host_wait_policy(argv);  // CTest runs tests side by side: threads sleep soon when idle
  ::testing::InitGoogleTest(&argc, argv);
  char const* threads = std::getenv("KTR_TEST_THREADS");
  ktr::Runtime runtime(threads ? std::atoi(threads) : -1);
  return RUN_ALL_TESTS();
}
