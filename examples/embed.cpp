// Embedding ktr: an application trains a surrogate on its own device views and predicts into another.
#include <ktr/ktr.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);  // the application owns Kokkos (and MPI); ktr never initialises it
  int status = 0;
  {
    using View = Kokkos::View<float**, ktr::MemSpace>;  // the backend's default layout
    int const n = 4096;
    View x("app::x", n, 4), y("app::y", n, 1), pred("app::pred", n, 1);
    Kokkos::parallel_for(
        "app::fill", n, KOKKOS_LAMBDA(int i) {
          for (int j = 0; j < 4; ++j) x(i, j) = float((i * 7919 + j * 104729) % 1000) / 500.0f - 1.0f;
          y(i, 0) = 2.0f * x(i, 0) - x(i, 1) + x(i, 2) * x(i, 3);
        });
    ktr::ExecSpace space;                                            // or the application's own instance (stream)
    ktr::DeviceDataset data = ktr::dataset_from_views(space, x, y);  // no copy: read in place
    ktr::RunConfig cfg;  // the task comes from the data; the input standardisation is fitted on it, kept with it
    cfg.model = "in=4 dense:64:relu dense:1";
    cfg.batch = 64;
    cfg.optimizer.lr = 3e-3f;
    ktr::Trainer trainer(space, cfg, data);
    double const before = trainer.evaluate(space, data).loss;
    trainer.fit(space, /*epochs=*/25);  // dispatches of 16 steps, one metrics read-back each
    double const after = trainer.evaluate(space, data).loss;
    trainer.predict(space, data, pred);
    std::printf("mse %.4g -> %.4g: the loss fell %.0fx\n", before, after, before / after);
    status = before / after >= 10 ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
