// Checkpoint directories replace the previous save all or nothing (train/run_directory.hpp): a save that fails at
// any step, or is killed anywhere, leaves the folder loading as the previous checkpoint or the new one, and what a
// killed save left is never loaded and never stands in the next save's way.
#include <ktr/ktr_c.h>
#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>
#include <ktr/train/run_directory.hpp>

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string const kConfig =
    "general:\n  seed: 5\n  batch_size: 16\nmodel:\n  type: mlp\n  parameters:\n    layer_sizes: [3, 16, 1]\n"
    "optimizer:\n  type: adam\n  parameters:\n    learning_rate: 0.01\n";

std::string config_file() {
  std::string const path = ::testing::TempDir() + "run_directory.yaml";
  std::ofstream(path) << kConfig;
  return path;
}

// One step on 16 samples of y = x0 - x1 x2 drawn from `seed`.
int train_step(char const* name, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(48), y(16);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 3; ++j) x[std::size_t(3 * i + j)] = u(rng);
    y[std::size_t(i)] = x[std::size_t(3 * i)] - x[std::size_t(3 * i + 1)] * x[std::size_t(3 * i + 2)];
  }
  int64_t const xs[2] = {16, 3}, ys[2] = {16, 1};
  return ktr_train(name, x.data(), 2, xs, KTR_FLOAT, y.data(), 2, ys, KTR_FLOAT, nullptr, nullptr);
}

std::string bytes_of(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every entry of `dir`, recursively, with its bytes (folders as "/").
std::map<std::string, std::string> snapshot(std::string const& dir) {
  std::map<std::string, std::string> out;
  for (auto const& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] = e.is_directory() ? "/" : bytes_of(e.path().string());
  return out;
}

// Loads `dir` into a new model; the step it holds, or -1 if it does not load.
int64_t loaded_step(std::string const& cfg, std::string const& dir) {
  EXPECT_EQ(ktr_create_model("loaded", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << ktr_last_error();
  int64_t step = -1;
  if (ktr_load_checkpoint("loaded", dir.c_str(), &step, nullptr) != KTR_RESULT_SUCCESS) {
    ADD_FAILURE() << dir << " does not load: " << ktr_last_error();
    step = -1;
  }
  EXPECT_EQ(ktr_destroy_model("loaded"), KTR_RESULT_SUCCESS);
  return step;
}

// Creates the model `name`, takes one step and saves it into `dir`, made afresh: generation 1, step 1.
void saved_once(char const* name, std::string const& cfg, std::string const& dir) {
  fs::remove_all(dir);
  ASSERT_EQ(ktr_create_model(name, cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(train_step(name, 1), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint(name, dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
}

struct FaultsOff {
  ~FaultsOff() { ktr::impl::write_steps_left() = -1; }
};

// A save made to fail at each of its steps in turn (creating its folder, and each file's create, write (half of it
// written), flush and rename; the manifest's last) leaves the directory exactly as the previous save wrote it: the
// same bytes, nothing added, loading with that save's step. A save without a fault then replaces it.
TEST(RunDirectory, ASaveFailingAtAnyStepLeavesThePreviousCheckpointBitForBit) {
  std::string const cfg = config_file();
  std::string const dir = ::testing::TempDir() + "run_directory_faults";
  std::string const counted = ::testing::TempDir() + "run_directory_counted";
  fs::remove_all(dir), fs::remove_all(counted);
  FaultsOff const off;
  ASSERT_EQ(ktr_create_model("faults", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << ktr_last_error();
  for (unsigned s = 0; s < 3; ++s) ASSERT_EQ(train_step("faults", s), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint("faults", dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint("faults", counted.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  std::map<std::string, std::string> const before = snapshot(dir);
  ASSERT_EQ(before.count("ktr-gen-1/model.ckpt"), 1u) << "the first save is generation 1";
  ASSERT_EQ(train_step("faults", 3), KTR_RESULT_SUCCESS) << ktr_last_error();

  // The steps of a save over a previous one, counted on a folder in the same state.
  int64_t const many = int64_t(1) << 40;
  ktr::impl::write_steps_left() = many;
  ASSERT_EQ(ktr_save_checkpoint("faults", counted.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  int64_t const steps = many - ktr::impl::write_steps_left();
  ktr::impl::write_steps_left() = -1;
  EXPECT_GE(steps, 1 + 4 * 4) << "the folder, then four files of four steps each at least";

  for (int64_t k = 0; k < steps; ++k) {
    SCOPED_TRACE("the save fails at its step " + std::to_string(k));
    ktr::impl::write_steps_left() = k;
    EXPECT_EQ(ktr_save_checkpoint("faults", dir.c_str()), KTR_RESULT_INVALID_USAGE);
    ktr::impl::write_steps_left() = -1;
    EXPECT_EQ(snapshot(dir), before) << "the directory changed: " << ktr_last_error();
    EXPECT_EQ(loaded_step(cfg, dir), 3);
  }
  ASSERT_EQ(ktr_save_checkpoint("faults", dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  std::map<std::string, std::string> const after = snapshot(dir);
  EXPECT_EQ(after.count("ktr-gen-1"), 0u) << "the previous generation stays after the new one is current";
  EXPECT_EQ(after.count("ktr-gen-2/model.ckpt"), 1u);
  EXPECT_EQ(loaded_step(cfg, dir), 4);
  EXPECT_EQ(ktr_destroy_model("faults"), KTR_RESULT_SUCCESS);
}

// What a killed save left (a generation's folder no manifest names, half-written temporaries) is never loaded, and
// the next save removes it; a folder that only looks like a generation (a link) is never followed.
TEST(RunDirectory, LeftoversOfAKilledSaveAreNeverLoadedAndTheNextSaveRemovesThem) {
  std::string const cfg = config_file();
  std::string const dir = ::testing::TempDir() + "run_directory_leftovers";
  std::string const elsewhere = ::testing::TempDir() + "run_directory_elsewhere";
  fs::remove_all(elsewhere);
  saved_once("left", cfg, dir);
  if (HasFatalFailure()) return;
  fs::create_directories(dir + "/ktr-gen-2");
  std::ofstream(dir + "/ktr-gen-2/model.ckpt") << "half a checkpoint";
  std::ofstream(dir + "/ktr-gen-2/state.bin.tmp.Ab12Cd") << "a temporary";
  std::ofstream(dir + "/ktr-manifest.tmp.Ef34Gh") << "ktr-run-directory 2\ngeneration 2\n";
  fs::create_directories(dir + "/ktr-gen-7");
  std::ofstream(dir + "/ktr-gen-7/notes.txt") << "another program's file";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere + "/model.ckpt") << "not ktr's";
  fs::create_directory_symlink(elsewhere, dir + "/ktr-gen-9");
  EXPECT_EQ(loaded_step(cfg, dir), 1);
  ASSERT_EQ(train_step("left", 2), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint("left", dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  EXPECT_EQ(loaded_step(cfg, dir), 2);
  EXPECT_TRUE(fs::exists(dir + "/ktr-gen-2/model.ckpt")) << "generation 2 is the new save";
  EXPECT_FALSE(fs::exists(dir + "/ktr-gen-2/state.bin.tmp.Ab12Cd"));
  EXPECT_FALSE(fs::exists(dir + "/ktr-gen-1"));
  EXPECT_FALSE(fs::exists(dir + "/ktr-manifest.tmp.Ef34Gh"));
  EXPECT_EQ(bytes_of(dir + "/ktr-gen-7/notes.txt"), "another program's file");
  EXPECT_EQ(bytes_of(elsewhere + "/model.ckpt"), "not ktr's") << "a link was followed";
  EXPECT_EQ(ktr_destroy_model("left"), KTR_RESULT_SUCCESS);
}

// A directory saved by an earlier ktr (version 1: the files beside the manifest) loads, and the next save replaces
// those files by a generation.
TEST(RunDirectory, AVersion1DirectoryLoadsAndTheNextSaveMovesItToAGeneration) {
  std::string const cfg = config_file();
  std::string const dir = ::testing::TempDir() + "run_directory_v1";
  saved_once("v1", cfg, dir);
  if (HasFatalFailure()) return;
  // Rewrite it as version 1 wrote it: the generation's files moved up, the manifest without a generation line.
  for (char const* f : {"model.ckpt", "state.bin", "config.yaml"})
    fs::rename(dir + "/ktr-gen-1/" + f, dir + "/" + f);
  fs::remove(dir + "/ktr-gen-1");
  std::string manifest = bytes_of(dir + "/ktr-manifest");
  manifest.replace(0, manifest.find("model.ckpt"), "ktr-run-directory 1\n");
  std::ofstream(dir + "/ktr-manifest", std::ios::trunc) << manifest;
  EXPECT_EQ(loaded_step(cfg, dir), 1);
  ASSERT_EQ(train_step("v1", 2), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint("v1", dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  EXPECT_EQ(loaded_step(cfg, dir), 2);
  EXPECT_FALSE(fs::exists(dir + "/model.ckpt"));
  EXPECT_TRUE(fs::exists(dir + "/ktr-gen-1/model.ckpt"));
  EXPECT_EQ(ktr_destroy_model("v1"), KTR_RESULT_SUCCESS);
}

// A child process saves into the directory again and again (tests/test_main.cpp runs ktr_test_save_loop when
// KTR_TEST_SAVE_LOOP names the directory and the configuration) and is killed with SIGKILL at a random moment, 50
// times: every time the directory loads (as one of the saves), and a save afterwards succeeds and leaves a single
// generation.
TEST(RunDirectory, SavesKilledAtRandomMomentsAlwaysLeaveALoadableCheckpoint) {
  std::string const cfg = config_file();
  std::string const dir = ::testing::TempDir() + "run_directory_killed";
  saved_once("killed", cfg, dir);
  if (HasFatalFailure()) return;
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("KTR_TEST_SAVE_LOOP=", 0) != 0) env_text.emplace_back(*e);
  env_text.push_back("KTR_TEST_SAVE_LOOP=" + dir + "|" + cfg);
  std::vector<char*> env;
  for (auto& s : env_text) env.push_back(s.data());
  env.push_back(nullptr);
  std::mt19937 rng(47);
  int loads = 0;
  for (int round = 0; round < 50; ++round) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    char arg0[] = "ktr_tests";
    char* argv[] = {arg0, nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, env.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    char c = 0;  // the child's first save is done: the kill lands among the saves that follow
    ASSERT_EQ(::read(out[0], &c, 1), 1) << "the saving child ended before its first save";
    ::usleep(useconds_t(std::uniform_int_distribution<int>(0, 20000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out[0]);
    EXPECT_TRUE(WIFSIGNALED(status)) << "the child ended by itself, status " << status;
    loads += loaded_step(cfg, dir) >= 1;
  }
  EXPECT_EQ(loads, 50);
  ASSERT_EQ(train_step("killed", 2), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_save_checkpoint("killed", dir.c_str()), KTR_RESULT_SUCCESS) << ktr_last_error();
  std::set<std::string> entries;
  for (auto const& e : fs::directory_iterator(dir)) entries.insert(e.path().filename().string());
  std::string listed;
  for (auto const& e : entries) listed += " " + e;
  EXPECT_EQ(entries.size(), 2u) << "the manifest and one generation, not:" << listed;
  EXPECT_EQ(entries.count("ktr-manifest"), 1u);
  EXPECT_EQ(loaded_step(cfg, dir), 2);
  EXPECT_EQ(ktr_destroy_model("killed"), KTR_RESULT_SUCCESS);
}

// A distributed RL system's generation: system.ckpt and config.yaml, and rank-<r>.ckpt for ranks 1 to R - 1; a
// save refuses any other name, and a load refuses a manifest that skips a rank.
// A generation's file that holds its own name.
ktr::GenerationFile named_file(std::string const& name) {
  return ktr::GenerationFile{name, [name](std::string const& path) { ktr::write_atomically(path, name); }};
}

TEST(RunDirectory, AnRlGenerationHoldsEveryRanksFileAndRefusesAGapOrAnotherName) {
  std::string const dir = ::testing::TempDir() + "run_directory_ranks";
  fs::remove_all(dir);
  ktr::save_generation(dir, {named_file("system.ckpt"), named_file("config.yaml"), named_file("rank-1.ckpt"),
                             named_file("rank-2.ckpt")});
  ktr::Generation const g = ktr::read_generation(dir);
  ASSERT_EQ(g.files.size(), 4u);
  EXPECT_EQ(g.files.at("rank-2.ckpt"), "rank-2.ckpt");
  for (char const* name : {"rank-0.ckpt", "rank-01.ckpt", "rank-x.ckpt", "rank-.ckpt", "rank-12345678.ckpt"}) {
    try {
      ktr::save_generation(dir, {named_file("system.ckpt"), named_file("config.yaml"), named_file(name)});
      ADD_FAILURE() << name << " was saved";
    } catch (ktr::Error const& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(ktr::read_generation(dir).files.size(), 4u) << "a refused save changed the directory";
  ktr::save_generation(
      dir, {named_file("system.ckpt"), named_file("config.yaml"), named_file("rank-2.ckpt")});  // no rank 1
  try {
    ktr::read_generation(dir);
    ADD_FAILURE() << "a generation without rank-1.ckpt loaded";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("does not list every file"), std::string::npos) << e.what();
  }
}

// A rank of a distributed RL system reads its own file alone (read_generation's `only`): a file it does not read
// may change bytes without refusing its read, but every file must still be there at its manifest size, and a full
// read or a read of the changed file is refused.
TEST(RunDirectory, AReadOfNamedFilesReadsThoseAloneAndStillChecksEveryFilesSize) {
  std::string const dir = ::testing::TempDir() + "run_directory_only";
  fs::remove_all(dir);
  ktr::save_generation(dir, {named_file("system.ckpt"), named_file("config.yaml"), named_file("rank-1.ckpt"),
                             named_file("rank-2.ckpt")});
  std::string const folder = ktr::read_generation(dir).folder;
  std::ofstream(folder + "/rank-1.ckpt", std::ios::binary | std::ios::trunc) << "rank-X.ckpt";  // same size
  ktr::Generation const mine = ktr::read_generation(dir, {"rank-2.ckpt"});
  ASSERT_EQ(mine.files.size(), 1u);
  EXPECT_EQ(mine.files.at("rank-2.ckpt"), "rank-2.ckpt");
  EXPECT_EQ(mine.names, (std::set<std::string>{"system.ckpt", "config.yaml", "rank-1.ckpt", "rank-2.ckpt"}));
  for (std::vector<std::string> const& only :
       {std::vector<std::string>{}, std::vector<std::string>{"rank-1.ckpt"}})
    EXPECT_NE(ktr::test::error_of([&] { ktr::read_generation(dir, only); }).find("does not match the manifest"),
              std::string::npos);
  std::ofstream(folder + "/rank-1.ckpt", std::ios::binary | std::ios::trunc) << "short";
  EXPECT_NE(ktr::test::error_of([&] {
              ktr::read_generation(dir, {"rank-2.ckpt"});
            }).find("is missing or not the size the manifest lists"),
            std::string::npos);
}

}  // namespace

// The child of SavesKilledAtRandomMomentsAlwaysLeaveALoadableCheckpoint: "DIR|CONFIG"; trains and saves into DIR
// until killed, writing one byte to stdout after each save.
int ktr_test_save_loop(std::string const& spec) {
  std::string const dir = spec.substr(0, spec.find('|')), cfg = spec.substr(spec.find('|') + 1);
  if (ktr_create_model("loop", cfg.c_str(), KTR_DEVICE_DEFAULT) != KTR_RESULT_SUCCESS) return 2;
  for (unsigned i = 0; i < 100000; ++i) {
    if (train_step("loop", 100 + i) != KTR_RESULT_SUCCESS || ktr_save_checkpoint("loop", dir.c_str()) != 0) {
      std::fprintf(stderr, "save loop: %s\n", ktr_last_error());
      return 1;
    }
    std::fputc('.', stdout);
    std::fflush(stdout);
  }
  return 0;
}
