// `ktr export` and `ktr import`: a checkpoint's weights to safetensors named as Flax names them, and back into a
// checkpoint ready for `ktr eval`, inference or fine-tuning (`ktr train --resume`).
#include "apps/cli.hpp"
#include "apps/flags.hpp"

#include <ktr/models/description.hpp>
#include <ktr/train/interop.hpp>
#include <ktr/train/runtime.hpp>

#include <cstdio>
#include <optional>

namespace ktr::cli {

int export_weights_cmd(int argc, char* argv[]) {
  CLI::App app{
      "Writes a checkpoint's parameters (float32) as safetensors named by Flax's parameter paths "
      "(Dense_0.kernel, Conv_0.bias, ...), with metadata ktr.model, ktr.task, ktr.normalize_scale, "
      "ktr.normalize_shift, ktr.version (and the tensors ktr.input_scale / ktr.input_shift for a "
      "per-feature input transform).",
      "ktr export"};
  std::string ckpt, out;
  int threads = -1;
  app.add_option("--checkpoint", ckpt, "the checkpoint")->required();
  app.add_option("--out", out, "FILE.safetensors (an existing file is replaced only if it is a safetensors file)")
      ->required();
  app.add_option("--threads", threads, "host threads")->check(thread_count());
  if (!parse(app, argc, argv, 2)) return 0;
  check_safetensors_target(out, "--out");  // before any work
  Runtime runtime(threads);
  TrainedModel m = load_trained_model(ckpt, 1);
  SafeTensors const st = export_weights(*m.model, download(m.model->arena().params()), m.config);
  write_safetensors(out, st);
  std::printf("%s: %zu tensors, %lld parameters of %s (step %lld)\n", out.c_str(), st.tensors.size(),
              (long long)m.model->arena().num_parameters(), m.config.model.c_str(), (long long)m.step);
  return 0;
}

namespace {

// A setting the file records and the command line may also give: the file's value unless the flag is given; a flag
// that disagrees with the file is refused, naming both.
std::string from_file_or_flag(std::string const& flag, std::string const& given, std::string const& recorded,
                              std::string const& weights, std::string const& fallback) {
  if (given.empty()) return recorded.empty() ? fallback : recorded;
  if (!recorded.empty() && given != recorded)
    throw FlagError(flag + ": '" + given + "' disagrees with " + weights + ", which records '" + recorded + "'");
  return given;
}

}  // namespace

int import_weights_cmd(int argc, char* argv[]) {
  CLI::App app{
      "Builds a checkpoint (step 0, fresh optimiser state) from Flax-named float32 safetensors, ready for "
      "ktr eval, inference or fine-tuning (ktr train --resume); refuses missing, unexpected or misshapen "
      "tensors. The model, task and input transform a file exported by ktr records are taken from it.",
      "ktr import"};
  std::string model, weights, out, normalize = "unit", task;
  std::int64_t batch = 256;
  int threads = -1;
  app.add_option("--model", model,
                 "mlp, cnn or a description (default: the file's ktr.model; a different one is refused)");
  app.add_option("--weights", weights, "FILE.safetensors")->required();
  app.add_option("--out", out, "the checkpoint to write")->required();
  app.add_option("--normalize", normalize,
                 "the input transform when the file records none: unit (pixels / 255) or none")
      ->check(one_of({"unit", "none"}))
      ->capture_default_str();
  app.add_option("--task", task,
                 "classification or regression (default: the file's ktr.task, else regression for a model whose "
                 "output is a "
                 "field and classification otherwise; a different "
                 "one is refused)")
      ->check(one_of({"classification", "regression"}));
  app.add_option("--batch", batch, "the batch a fine-tuning run (ktr train --resume) will use")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--threads", threads, "host threads")->check(thread_count());
  if (!parse(app, argc, argv, 2)) return 0;
  Runtime runtime(threads);  // first: it outlives every device view below (config.input_transform may hold some)
  RunConfig config;
  if (!model.empty()) config.model = model_flag(model);  // a bad description is refused before anything else
  config.batch = batch;
  check_checkpoint_output(out, "--out");
  SafeTensors const st = read_safetensors(weights);
  auto const recorded = [&](char const* key) {
    auto it = st.metadata.find(key);
    return it == st.metadata.end() ? std::string() : it->second;
  };
  std::string file_model = recorded("ktr.model");
  if (!file_model.empty()) {
    try {
      file_model = parse_description(file_model).text();
    } catch (Error const& e) {
      throw Error(weights + ": metadata ktr.model: " + e.what());
    }
  }
  if (model.empty() && file_model.empty())
    throw FlagError("--model: " + weights + " records no ktr.model; name the model (mlp, cnn or a description)");
  config.model = from_file_or_flag("--model", model.empty() ? "" : parse_description(config.model).text(),
                                   file_model, weights, "");
  ModelPlan const plan = Model::plan(config.model, config.batch);
  // Sizes from the file are checked before anything is allocated for them: a model (the flag's, or the file's
  // ktr.model) with more parameters than the file holds is refused here, not allocated (a forged ktr.model of a
  // petabyte), and the run must fit in memory.
  std::int64_t held = 0;
  for (auto const& [name, t] : st.tensors)
    if (name.rfind("ktr.", 0) != 0) held += std::int64_t(t.values.size());
  if (plan.parameters > held)
    throw Error(weights + ": holds " + std::to_string(held) + " parameters, the model " + config.model + " has " +
                std::to_string(plan.parameters) + (file_model.empty() ? "" : " (its ktr.model)"));
  // A model whose output is a field (no flatten and dense head) predicts values: a regression.
  bool const field = plan.output.rank > 2;
  if (field && task == "classification")
    throw FlagError("--task: classification, but the model's output is a field " + plan.output.str() +
                    ": a field model is a regression");
  std::optional<Session> session;
  {
    Model const probe(config.model, 1);
    ImportedWeights w = import_weights(probe, st, weights);
    if (field && w.task == "classification")
      throw Error(weights + ": records ktr.task classification, but the model's output is a field " +
                  plan.output.str());
    std::string const chosen =
        from_file_or_flag("--task", task, w.task, weights, field ? "regression" : "classification");
    config.task = chosen == "regression" ? Task::regression : Task::classification;
    check_fits_in_memory(config, 1, "--weights " + weights);
    if (w.has_transform && given(app, "--normalize"))
      throw FlagError("--normalize: " + weights + " records its input transform (ktr.normalize_scale)");
    config.normalize = w.has_transform ? InputTransformMode::recorded : parse_input_transform_mode(normalize);
    config.input_transform = w.has_transform       ? w.input_transform
                             : normalize == "none" ? InputTransform::identity()
                                                   : InputTransform{};
    session.emplace(config, 1);
    Kokkos::deep_copy(session->model().arena().params(), HostView<const float*>(w.params.data(), w.params.size()));
  }
  session->save(ExecSpace(), out);
  std::printf("%s: %s from %s (%lld parameters, input transform %s)\n", out.c_str(), config.model.c_str(),
              weights.c_str(), (long long)session->model().arena().num_parameters(),
              config.normalize == InputTransformMode::recorded ? "from the file" : normalize.c_str());
  return 0;
}

}  // namespace ktr::cli
