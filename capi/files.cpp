// Saving and loading a C API model: its weights (safetensors, ktr export's format) and its whole run (a run
// directory: train/run_directory.hpp). Each call first waits for the steps enqueued on the model's streams.
#include "api.hpp"
#include "guard.hpp"
#include "registry.hpp"

#include "../core/parse.hpp"
#include "../train/interop.hpp"
#include "../train/run_directory.hpp"
#include "../train/safetensors.hpp"
#include "../train/session.hpp"

using namespace ktr;
using namespace ktr::capi;

extern "C" {

ktr_result_t ktr_save_model(char const* name, char const* file) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(file != nullptr, "file", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'", "has no weights yet (train it first)");
    e.instances.fence();  // steps enqueued on the caller's streams finish before the weights are read
    ExecSpace const space;
    Trainer& t = *e.trainer;
    // export_weights refuses non-finite weights: the file is then left as it was.
    write_safetensors(file, export_weights(t.model(), download(space, t.model().arena().params()), t.config()));
  });
}

ktr_result_t ktr_load_model(char const* name, char const* file) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(file != nullptr, "file", "is a null pointer");
    SafeTensors const st = read_safetensors(file);
    e.instances.fence();  // no step on a caller's stream is running while the weights are replaced
    auto const recorded = st.metadata.find("ktr.task");  // the task first: a classifier's shapes differ anyway
    std::unique_ptr<Trainer> fresh;
    if (!e.trainer) {  // weights before any training (create, load, infer): the task from the file
      KTR_REQUIRE(recorded != st.metadata.end(), file,
                  "records no task (ktr.task), and '" + std::string(name) + "' has seen no batch to tell");
      fresh = Trainer::untrained(ExecSpace(), untrained_config(e, recorded->second == "regression"),
                                 options_of(e.cfg, e.torchfort), e.comm);
    }
    Trainer& t = fresh ? *fresh : *e.trainer;
    char const* const task = t.config().task == Task::regression ? "regression" : "classification";
    KTR_REQUIRE(recorded == st.metadata.end() || recorded->second == task, file,
                "holds a " + escaped(recorded->second) + " model, '" + std::string(name) + "' is a " + task);
    ImportedWeights const w = import_weights(t.model(), st, file);
    t.set_weights(ExecSpace(), w.params, w.has_transform ? &w.input_transform : nullptr, file);
    if (fresh) e.trainer = std::move(fresh);  // kept once the weights are in
  });
}

ktr_result_t ktr_save_checkpoint(char const* name, char const* directory) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'", "has nothing to save yet");
    RunDirectoryState state;
    state.config_text = e.config_text;
    state.inference_calls = e.inference_calls;
    e.instances.fence();  // steps enqueued on the caller's streams finish before the run is read
    save_run_directory(ExecSpace(), directory, *e.trainer, e.buffer.get(), state);
  });
}

ktr_result_t ktr_load_checkpoint(char const* name, char const* directory, std::int64_t* step_train,
                                 std::int64_t* step_inference) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    RunDirectory const saved = read_run_directory(directory);
    std::string const& path = saved.checkpoint_path;
    RunConfig config = saved.restorable_into(e.cfg.run.model, e.cfg.general.buffer_size,
                                             "the configuration of '" + std::string(name) + "'");
    config.precision = e.cfg.run.precision;  // the model's (its file's, checked at creation), not the saved run's
    RunDirectoryState const& st = saved.state;
    e.instances.fence();  // no step on a caller's stream is running while the run is replaced
    ExecSpace const space;
    auto t = Trainer::resume(space, saved.checkpoint, path, config, DeviceDataset{}, DeviceDataset{},
                             options_of(e.cfg, e.torchfort), e.comm);
    std::unique_ptr<ReplayBuffer> buffer;
    if (st.has_buffer) {
      buffer = std::make_unique<ReplayBuffer>(space, st.buffer_capacity, t->model().input_shape(1), config.task,
                                              t->model().output_width());
      buffer->restore(space, st.buffer, saved.state_path);
    }
    e.trainer = std::move(t);  // nothing changes before everything has been read and checked
    e.buffer = std::move(buffer);
    e.inference_calls = st.inference_calls;
    if (step_train)
      *step_train = e.torchfort ? train_calls(e) : e.trainer->steps_taken();  // TorchFort counts calls
    if (step_inference) *step_inference = st.inference_calls;
  });
}

}  // extern "C"
