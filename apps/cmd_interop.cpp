// `ktr export` and `ktr import`: a checkpoint's weights to safetensors named as Flax names them, and back into a
// checkpoint ready for `ktr eval`, inference or fine-tuning (`ktr train --resume`).
#include "apps/cli.hpp"
#include "apps/flags.hpp"

#include <ktr/train/interop.hpp>
#include <ktr/train/runtime.hpp>

#include <cstdio>
#include <optional>

namespace ktr::cli {

namespace {

std::string model_arg(std::string const& name) {
  if (name == "mlp") return Model::mlp();
  if (name == "cnn") return Model::simple_cnn();
  if (name.rfind("in=", 0) == 0) return name;
  throw FlagError("--model: unknown model '" + name + "' (mlp, cnn, or a description starting with in=)");
}

}  // namespace

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
  app.add_option("--threads", threads, "host threads")->check(integer_in(1, 4096));
  if (!parse(app, argc, argv, 2)) return 0;
  Runtime runtime(threads);
  TrainedModel m = load_trained_model(ckpt, 1);
  SafeTensors const st = export_weights(*m.model, download(m.model->arena().params()), m.config);
  write_safetensors(out, st);
  std::printf("%s: %zu tensors, %lld parameters of %s (step %lld)\n", out.c_str(), st.tensors.size(),
              (long long)m.model->arena().num_parameters(), m.config.model.c_str(), (long long)m.step);
  return 0;
}

int import_weights_cmd(int argc, char* argv[]) {
  CLI::App app{
      "Builds a checkpoint (step 0, fresh optimiser state) from Flax-named float32 safetensors, ready for "
      "ktr eval, inference or fine-tuning (ktr train --resume); refuses missing, unexpected or misshapen "
      "tensors.",
      "ktr import"};
  std::string model, weights, out, normalize = "unit", task;
  std::int64_t batch = 256;
  int threads = -1;
  app.add_option("--model", model, "mlp, cnn or a description")->required();
  app.add_option("--weights", weights, "FILE.safetensors")->required();
  app.add_option("--out", out, "the checkpoint to write")->required();
  app.add_option("--normalize", normalize,
                 "the input transform when the file records none: unit (pixels / 255) or none")
      ->check(one_of({"unit", "none"}))
      ->capture_default_str();
  app.add_option("--task", task,
                 "classification or regression (default: the file's ktr.task, else classification)")
      ->check(one_of({"classification", "regression"}));
  app.add_option("--batch", batch, "the batch a fine-tuning run (ktr train --resume) will use")
      ->check(integer_in(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--threads", threads, "host threads")->check(integer_in(1, 4096));
  if (!parse(app, argc, argv, 2)) return 0;
  RunConfig config;
  config.model = model_arg(model);
  config.batch = batch;
  Model::plan(config.model, config.batch);  // a bad description is refused before anything else
  check_checkpoint_target(out, "--out");
  SafeTensors const st = read_safetensors(weights);
  Runtime runtime(threads);
  std::optional<Session> session;
  {
    Model const probe(config.model, 1);
    ImportedWeights w = import_weights(probe, st, weights);
    std::string const chosen = !task.empty() ? task : !w.task.empty() ? w.task : "classification";
    config.task = chosen == "regression" ? Task::regression : Task::classification;
    config.normalize = w.has_transform ? "recorded" : normalize;
    config.norm = w.has_transform ? w.norm : normalize == "none" ? Normalization::identity() : Normalization{};
    session.emplace(config, 1);
    Kokkos::deep_copy(session->model().arena().params(), HostView<const float*>(w.params.data(), w.params.size()));
  }
  session->save(ExecSpace(), out);
  std::printf("%s: %s from %s (%lld parameters, input transform %s)\n", out.c_str(), config.model.c_str(),
              weights.c_str(), (long long)session->model().arena().num_parameters(),
              config.normalize == "recorded" ? "from the file" : config.normalize.c_str());
  return 0;
}

}  // namespace ktr::cli
