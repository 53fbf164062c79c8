// Uses the installed headers and library: a tensor, a kernel, a model forward pass.
#include <ktr/ktr.hpp>

#include <cstdio>

int main() {
  ktr::Runtime runtime;
  {
    ktr::ExecSpace space;
    ktr::Model model(ktr::Model::mlp({16}), 4);
    model.init(space, 1);
    ktr::Tensor x("consumer::x", model.input_shape(4));
    ktr::fill(space, x.view(), 0.5f);
    auto logits = ktr::to_host(model.forward(space, x));
    std::printf("%s: %zu logits, first %.4f\n", ktr::version_line().c_str(), logits.size(), logits[0]);
    if (logits.size() != 40) return 1;
  }
  return 0;
}
