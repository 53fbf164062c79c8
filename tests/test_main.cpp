// Test main: Kokkos initialise -> GoogleTest -> Kokkos finalise.
#include <ktr/train/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <stdlib.h>

// test_run_directory.cpp's saving child, which its kill test spawns (weak: that file is built with the C API
// only).
__attribute__((weak)) int ktr_test_save_loop(std::string const& spec);

// CTest registers every test once per thread count and passes it as KTR_TEST_THREADS.
int main(int argc, char* argv[]) {
  if (char const* loop = std::getenv("KTR_TEST_SAVE_LOOP"); loop && ktr_test_save_loop)
    return ktr_test_save_loop(loop);
  ktr::adopt_host_wait_policy(argv);  // CTest runs tests side by side: threads sleep soon when idle
  // CTest runs the suite at 1 and 2 threads side by side: each process gets a temporary folder of its own, so that
  // tests writing files under ::testing::TempDir() never share them.
  std::string tmp = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/ktr-tests-XXXXXX");
  if (::mkdtemp(tmp.data()) == nullptr) {
    std::perror("ktr_tests: mkdtemp");
    return 1;
  }
  ::setenv("TEST_TMPDIR", (tmp + "/").c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  char const* threads = std::getenv("KTR_TEST_THREADS");
  ktr::Runtime runtime(threads ? std::atoi(threads) : -1);
  int const status = RUN_ALL_TESTS();
  std::error_code ignored;
  std::filesystem::remove_all(tmp, ignored);
  return status;
}
