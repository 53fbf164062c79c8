// safetensors: round trips, Flax names for the MLP and SimpleCNN, and every malformed or mismatched file refused
// with the tensor (or the file) and the reason.
#include <ktr/ktr.hpp>
#include <ktr/train/interop.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <limits>

namespace {

std::string error_of(std::function<void()> const& f) {
  try {
    f();
  } catch (ktr::Error const& e) {
    return e.what();
  }
  return "(no error)";
}

// Raw safetensors bytes from a header string and a data size.
std::string file(std::string const& header, std::size_t data_bytes) {
  std::string out(8, '\0');
  std::uint64_t const n = header.size();
  std::memcpy(&out[0], &n, 8);
  return out + header + std::string(data_bytes, '\0');
}

TEST(Safetensors, ParametersAreNamedByFlaxModulePaths) {
  ktr::Model const cnn(ktr::Model::simple_cnn(), 1), mlp(ktr::Model::mlp(), 1);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < cnn.arena().count(); ++i) names.push_back(cnn.arena().spec(i).name);
  EXPECT_EQ(names, (std::vector<std::string>{"Conv_0.kernel", "Conv_0.bias", "Dense_0.kernel", "Dense_0.bias"}));
  EXPECT_EQ(cnn.arena().spec(0).shape, ktr::Shape({3, 3, 1, 32}));  // HWIO, as Flax
  EXPECT_EQ(cnn.arena().spec(2).shape, ktr::Shape({6272, 10}));
  EXPECT_EQ(mlp.arena().spec(4).name, "Dense_2.kernel");
  EXPECT_EQ(mlp.arena().spec(4).shape, ktr::Shape({512, 10}));
}

TEST(Safetensors, ExportImportRoundTripsEveryParameterAndTheTransform) {
  ktr::Model const model("in=4x4x2 conv3x3:3:relu avgpool2 flatten dense:5", 1);
  model.init(ktr::ExecSpace(), 3);
  ktr::RunConfig cfg;
  cfg.model = model.description();
  cfg.input_transform = ktr::InputTransform::standardized(0.25f, 0.5f);
  std::vector<float> const params = ktr::download(model.arena().params());
  std::string const path = ::testing::TempDir() + "ktr_roundtrip.safetensors";
  std::remove(path.c_str());
  ktr::write_safetensors(path, ktr::export_weights(model, params, cfg));
  ktr::SafeTensors const st = ktr::read_safetensors(path);
  EXPECT_EQ(st.metadata.at("ktr.model"), cfg.model);
  EXPECT_EQ(st.tensors.at("Conv_0.kernel").shape, (std::vector<std::int64_t>{3, 3, 2, 3}));
  ktr::ImportedWeights const w = ktr::import_weights(model, st, path);
  EXPECT_EQ(w.params, params);  // bit for bit, padding included (zero)
  ASSERT_TRUE(w.has_transform);
  EXPECT_EQ(w.input_transform.scale, cfg.input_transform.scale);
  EXPECT_EQ(w.input_transform.shift, cfg.input_transform.shift);
  // A file that is not safetensors is never replaced.
  std::string const notes = ::testing::TempDir() + "ktr_notes.txt";
  {
    std::FILE* f = std::fopen(notes.c_str(), "w");
    std::fputs("notes", f);
    std::fclose(f);
  }
  EXPECT_NE(error_of([&] { ktr::write_safetensors(notes, st); }).find("not a safetensors file; refusing"),
            std::string::npos);
  std::remove(notes.c_str());
  std::remove(path.c_str());
}

// Nothing non-finite is exported (ktr_save_model's defect: NaN weights written and success returned): a NaN or
// infinite parameter is refused by the library, for every door, before a file is written.
TEST(Safetensors, NonFiniteWeightsAreNeverExported) {
  ktr::Model const model("in=3 dense:2", 1);
  model.init(ktr::ExecSpace(), 1);
  ktr::RunConfig cfg;
  cfg.model = model.description();
  std::vector<float> params = ktr::download(model.arena().params());
  std::string const path = ::testing::TempDir() + "ktr_nonfinite.safetensors";
  std::remove(path.c_str());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    params[4] = bad;
    std::string const error =
        error_of([&] { ktr::write_safetensors(path, ktr::export_weights(model, params, cfg)); });
    EXPECT_NE(error.find("parameter 4 is not finite: nothing non-finite is exported"), std::string::npos) << error;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    EXPECT_EQ(f, nullptr) << "a file was written";
    if (f) std::fclose(f);
  }
}

// The layer registry's parameters travel under Flax's names too: LayerNorm scales start at one, so a mix-up with a
// bias would show.
TEST(Safetensors, NewLayerKindsRoundTripUnderFlaxNames) {
  ktr::Model const model(
      "in=6x5x2 conv5x5:4:gelu:s2 layernorm maxpool2 flatten dense:8:silu layernorm dropout:0.1 "
      "dense:3",
      1);
  model.init(ktr::ExecSpace(), 5);
  ktr::RunConfig cfg;
  cfg.model = model.description();
  std::vector<float> const params = ktr::download(model.arena().params());
  std::string const path = ::testing::TempDir() + "ktr_kinds.safetensors";
  std::remove(path.c_str());
  ktr::write_safetensors(path, ktr::export_weights(model, params, cfg));
  ktr::SafeTensors const st = ktr::read_safetensors(path);
  EXPECT_EQ(st.tensors.at("Conv_0.kernel").shape, (std::vector<std::int64_t>{5, 5, 2, 4}));
  EXPECT_EQ(st.tensors.at("LayerNorm_0.scale").values, std::vector<float>(4, 1.0f));
  EXPECT_EQ(st.tensors.at("LayerNorm_1.bias").values, std::vector<float>(8, 0.0f));
  EXPECT_EQ(st.tensors.at("Dense_1.kernel").shape, (std::vector<std::int64_t>{8, 3}));
  EXPECT_EQ(ktr::import_weights(model, st, path).params, params);
  std::remove(path.c_str());
}

TEST(Safetensors, MismatchedNamesShapesAndDtypesAreRefusedNamingTheTensor) {
  ktr::Model const model("in=2x2x1 flatten dense:3", 1);
  ktr::SafeTensors st;
  st.tensors["Dense_0.kernel"] = ktr::SafeTensor{"F32", {4, 3}, std::vector<float>(12, 1.0f)};
  st.tensors["Dense_0.bias"] = ktr::SafeTensor{"F32", {3}, std::vector<float>(3, 0.0f)};
  EXPECT_NO_THROW(ktr::import_weights(model, st, "w.safetensors"));
  auto bad = st;
  bad.tensors.erase("Dense_0.bias");
  EXPECT_NE(error_of([&] {
              ktr::import_weights(model, bad, "w.safetensors");
            }).find("w.safetensors: no tensor 'Dense_0.bias' (3,)"),
            std::string::npos);
  bad = st;
  bad.tensors["Dense_0.kernel"].shape = {3, 4};
  EXPECT_NE(error_of([&] {
              ktr::import_weights(model, bad, "w.safetensors");
            }).find("tensor 'Dense_0.kernel' is (3, 4), the model needs (4, 3)"),
            std::string::npos);
  bad = st;
  bad.tensors["Dense_0.kernel"].dtype = "F16";
  EXPECT_NE(error_of([&] { ktr::import_weights(model, bad, "w.safetensors"); }).find("is F16, ktr reads F32"),
            std::string::npos);
  bad = st;
  bad.tensors["Dense_1.kernel"] = st.tensors["Dense_0.kernel"];
  EXPECT_NE(error_of([&] {
              ktr::import_weights(model, bad, "w.safetensors");
            }).find("tensor 'Dense_1.kernel' is not a parameter of"),
            std::string::npos);
}

TEST(Safetensors, MalformedFilesAreRefusedWithTheReason) {
  auto parse = [](std::string const& bytes) { return error_of([&] { ktr::parse_safetensors("f", bytes); }); };
  EXPECT_NE(parse("short").find("not a safetensors file"), std::string::npos);
  EXPECT_NE(parse(file("{", 0)).find("not a safetensors file (header size"), std::string::npos);  // too small
  EXPECT_NE(parse(file("{\"a\": 1", 0)).find("malformed safetensors header"), std::string::npos);
  std::string const one = R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  EXPECT_EQ(parse(file(one, 8)), "(no error)");
  EXPECT_NE(parse(file(one, 4)).find("exceed the 4 data bytes"), std::string::npos);
  EXPECT_NE(parse(file(one, 12)).find("4 bytes after the last tensor"), std::string::npos);
  EXPECT_NE(
      parse(file(R"({"t": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}})", 8)).find("unknown dtype"),
      std::string::npos);
  EXPECT_NE(parse(file(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8)).find("need 12"),
            std::string::npos);
  EXPECT_NE(parse(file(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                           "u": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                       12))
                .find("overlaps"),
            std::string::npos);
  EXPECT_NE(parse(file(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(parse(file(R"({"__metadata__": {"k": 1}})", 0)).find("metadata 'k' is not a string"),
            std::string::npos);
}

}  // namespace
