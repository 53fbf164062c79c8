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

char const* const kExportHelp =
    "usage: ktr export --checkpoint FILE --out FILE.safetensors\n"
    "  writes the parameters (float32) named by Flax's parameter paths (Dense_0.kernel, Conv_0.bias, ...) with\n"
    "  metadata ktr.model, ktr.task, ktr.normalize_scale, ktr.normalize_shift, ktr.version (and the tensors\n"
    "  ktr.input_scale / ktr.input_shift for a per-feature input transform); an existing FILE is replaced only\n"
    "  if it is a safetensors file\n";

char const* const kImportHelp =
    "usage: ktr import --model mlp|cnn|DESC --weights FILE.safetensors --out CHECKPOINT [flags]\n"
    "  builds a checkpoint (step 0, fresh optimiser state) from Flax-named float32 tensors, refusing missing,\n"
    "  unexpected or misshapen tensors\n"
    "  --normalize unit|none      the input transform when the file records none (default unit: pixels / 255)\n"
    "  --task classification|regression   (default: the file's ktr.task, else classification)\n"
    "  --batch B                  the batch a fine-tuning run (ktr train --resume) will use (default 256)\n"
    "  --threads N\n";

std::string model_arg(std::string const& name) {
  if (name == "mlp") return Model::mlp();
  if (name == "cnn") return Model::simple_cnn();
  if (name.rfind("in=", 0) == 0) return name;
  throw FlagError("--model: unknown model '" + name + "' (mlp, cnn, or a description starting with in=)");
}

}  // namespace

int export_weights_cmd(int argc, char* argv[]) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s", kExportHelp);
    return 0;
  }
  Flags const f(argc, argv, 2, {"checkpoint", "out", "threads"});
  std::string const ckpt = f.str("checkpoint", ""), out = f.str("out", "");
  if (ckpt.empty()) throw FlagError("--checkpoint: required");
  if (out.empty()) throw FlagError("--out: required");
  Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
  TrainedModel m = load_trained_model(ckpt, 1);
  SafeTensors const st = export_weights(*m.model, download(m.model->arena().params()), m.config);
  write_safetensors(out, st);
  std::printf("%s: %zu tensors, %lld parameters of %s (step %lld)\n", out.c_str(), st.tensors.size(),
              (long long)m.model->arena().num_parameters(), m.config.model.c_str(), (long long)m.step);
  return 0;
}

int import_weights_cmd(int argc, char* argv[]) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s", kImportHelp);
    return 0;
  }
  Flags const f(argc, argv, 2, {"model", "weights", "out", "normalize", "task", "batch", "threads"});
  std::string const weights = f.str("weights", ""), out = f.str("out", ""), model = f.str("model", "");
  if (model.empty()) throw FlagError("--model: required");
  if (weights.empty()) throw FlagError("--weights: required");
  if (out.empty()) throw FlagError("--out: required");
  RunConfig config;
  config.model = model_arg(model);
  config.batch = f.integer("batch", 256, 1, 1 << 24);
  std::string const normalize = f.str("normalize", "unit");
  if (normalize != "unit" && normalize != "none") throw FlagError("--normalize: must be unit or none");
  std::string const task = f.str("task", "");
  if (!task.empty() && task != "classification" && task != "regression")
    throw FlagError("--task: must be classification or regression");
  Model::plan(config.model, config.batch);  // a bad description is refused before anything else
  check_checkpoint_target(out, "--out");
  SafeTensors const st = read_safetensors(weights);
  Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
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
