// Collectives: single rank (no-op), MPI on host-synchronised buffers (device pointers where MPI is GPU-aware),
// NCCL on the instance's stream on CUDA.
#include "collective.hpp"

#include "../core/error.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <memory>
#include <utility>

#if defined(KTR_ENABLE_MPI) && defined(KOKKOS_ENABLE_CUDA) && defined(OPEN_MPI)
#include <mpi-ext.h>  // MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
#include <nccl.h>
#endif

namespace ktr {

namespace {

[[maybe_unused]] double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
void nccl_check(ncclResult_t r, char const* what) {
  if (r != ncclSuccess) throw Error(std::string("ktr::Communicator: ") + what + ": " + ncclGetErrorString(r));
}
#endif

}  // namespace

struct Communicator::State {
  int rank = 0, size = 1, local_rank = 0;
  bool loopback = false;  // one rank that still runs the device transport
#if defined(KTR_ENABLE_MPI)
  MPI_Comm comm = MPI_COMM_NULL;
  bool gpu_aware = false;
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
  // The NCCL communicator, destroyed with the State or at Kokkos::finalize, whichever comes first (a State that
  // outlives Kokkos, held by an application's Communicator, would destroy it after the CUDA context's teardown).
  struct Nccl {
    ncclComm_t comm = nullptr;
    void destroy() {
      if (comm) (void)ncclCommDestroy(comm);
      comm = nullptr;
    }
    ~Nccl() { destroy(); }
  };
  std::shared_ptr<Nccl> nccl_owner = std::make_shared<Nccl>();
  ncclComm_t nccl = nullptr;  // nccl_owner's, while it lives
  // This rank's communicator of `ranks`, destroyed with the State or at Kokkos::finalize.
  void init_nccl(ncclUniqueId const& id, int ranks, int me) {
    nccl_check(ncclCommInitRank(&nccl_owner->comm, ranks, id, me), "ncclCommInitRank");
    nccl = nccl_owner->comm;
    Kokkos::push_finalize_hook([weak = std::weak_ptr<Nccl>(nccl_owner)] {
      if (auto const owner = weak.lock()) owner->destroy();
    });
  }
  // Several ranks: rank 0's unique id, sent over MPI (collective; every rank reaches its first allreduce).
  void init_nccl() {
#if defined(KTR_ENABLE_MPI)
    if (nccl || size == 1) return;
    ncclUniqueId id;
    if (rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, comm);
    init_nccl(id, size, rank);
#endif
  }
#endif
  HostView<float*> mirror;  // host staging for MPI on a device without GPU-aware MPI, allocated once
  bool timing = false;
  CollectiveStats stats;

  bool has_device_transport() const {
#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
    return loopback || size > 1;  // several ranks: created at the first allreduce
#else
    return false;
#endif
  }
};

Communicator::Communicator() : state_(std::make_shared<State>()) {}

#if defined(KTR_ENABLE_MPI)
Communicator::Communicator(MPI_Comm comm) : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.comm = comm;
  MPI_Comm_rank(comm, &s.rank);
  MPI_Comm_size(comm, &s.size);
#if defined(KOKKOS_ENABLE_CUDA) && defined(OPEN_MPI) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  s.gpu_aware = MPIX_Query_cuda_support() == 1;
#endif
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &s.local_rank);
  MPI_Comm_free(&node);
}

MPI_Comm Communicator::mpi_comm() const { return state_->comm; }
#endif

Communicator Communicator::world() {
#if defined(KTR_ENABLE_MPI)
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) return Communicator(MPI_COMM_WORLD);
#endif
  return Communicator();
}

Communicator Communicator::loopback() {
  Communicator c;
#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
  ncclUniqueId id;
  nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  c.state_->init_nccl(id, 1, 0);
  c.state_->loopback = true;
#endif
  return c;
}

int Communicator::rank() const { return state_->rank; }
int Communicator::size() const { return state_->size; }
int Communicator::local_rank() const { return state_->local_rank; }

std::string Communicator::transport() const {
  auto const& s = *state_;
  if (s.has_device_transport()) return s.size > 1 ? "NCCL over MPI" : "NCCL (one rank)";
  if (s.size == 1) return "single rank";
#if defined(KTR_ENABLE_MPI)
  if (device_is_host) return "MPI";
  return s.gpu_aware ? "MPI (GPU-aware)" : "MPI (host-staged)";
#else
  return "single rank";
#endif
}

bool Communicator::host_synchronised() const {
  auto const& s = *state_;
  return (s.size > 1 || s.loopback) && !s.has_device_transport();
}

void Communicator::allreduce_sum(ExecSpace const& space, DeviceView<float*> const& v) const {
  auto& s = *state_;
  if (s.size == 1 && !s.loopback) return;
  std::int64_t const n = std::int64_t(v.extent(0));
  KTR_REQUIRE(n <= INT_MAX, "ktr::Communicator::allreduce_sum", "more than 2^31 values");
#if defined(KOKKOS_ENABLE_CUDA) && defined(KTR_ENABLE_NCCL)
  s.init_nccl();
  if (s.nccl) {  // on the stream: no fence (unless a benchmark asks for timing)
    double t0 = 0;
    if (s.timing) space.fence(), t0 = now();
    nccl_check(ncclAllReduce(v.data(), v.data(), std::size_t(n), ncclFloat, ncclSum, s.nccl, space.cuda_stream()),
               "ncclAllReduce");
    if (s.timing) space.fence(), s.stats.seconds += now() - t0;
    s.stats.calls += 1, s.stats.bytes += 4.0 * double(n);
    return;
  }
#endif
#if defined(KTR_ENABLE_MPI)
  space.fence();  // MPI works on host-synchronised buffers
  if (s.timing) {
    double const w0 = now();
    MPI_Barrier(s.comm);
    s.stats.wait_seconds += now() - w0;
  }
  double const t0 = now();
  float* data = v.data();
  bool const staged = !device_is_host && !s.gpu_aware;
  if (staged) {
    if (std::int64_t(s.mirror.extent(0)) < n)
      s.mirror = HostView<float*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::collective::mirror"),
                                  std::size_t(n));
    auto const host = Kokkos::subview(s.mirror, std::make_pair(std::size_t(0), std::size_t(n)));
    Kokkos::deep_copy(space, host, v);
    space.fence();
    data = host.data();
  }
  MPI_Allreduce(MPI_IN_PLACE, data, int(n), MPI_FLOAT, MPI_SUM, s.comm);
  if (staged) {
    Kokkos::deep_copy(space, v, Kokkos::subview(s.mirror, std::make_pair(std::size_t(0), std::size_t(n))));
    space.fence();
  }
  s.stats.calls += 1, s.stats.seconds += now() - t0, s.stats.bytes += 4.0 * double(n);
#else
  (void)space;
#endif
}

void Communicator::broadcast(ExecSpace const& space, DeviceView<float*> const& v, int root) const {
  auto& s = *state_;
  if (s.size == 1) return;
#if defined(KTR_ENABLE_MPI)
  std::int64_t const n = std::int64_t(v.extent(0));
  KTR_REQUIRE(n <= INT_MAX, "ktr::Communicator::broadcast", "more than 2^31 values");
  space.fence();
  auto host = Kokkos::create_mirror_view(v);  // the view itself where the device is the host
  Kokkos::deep_copy(host, v);
  MPI_Bcast(host.data(), int(n), MPI_FLOAT, root, s.comm);
  Kokkos::deep_copy(v, host);
#else
  (void)space, (void)v, (void)root;
#endif
}

void Communicator::sum(std::vector<double>& values) const {
#if defined(KTR_ENABLE_MPI)
  if (state_->size > 1 && !values.empty())
    MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()), MPI_DOUBLE, MPI_SUM, state_->comm);
#else
  (void)values;
#endif
}

bool Communicator::any(bool flag) const {
#if defined(KTR_ENABLE_MPI)
  if (state_->size > 1) {
    int f = flag ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_MAX, state_->comm);
    return f != 0;
  }
#endif
  return flag;
}

std::vector<std::string> Communicator::gather(std::string bytes, int root) const {
  auto const& s = *state_;
  std::vector<std::string> all;
  if (s.size == 1) {
    all.push_back(std::move(bytes));  // a checkpoint's bytes: moved, not copied
    return all;
  }
#if defined(KTR_ENABLE_MPI)
  // Point to point, in pieces of at most 1 GiB: MPI counts are ints, and a rank's replay buffer may be larger.
  constexpr std::size_t piece = std::size_t(1) << 30;
  if (s.rank != root) {
    std::uint64_t const size = bytes.size();
    MPI_Send(&size, 1, MPI_UINT64_T, root, 0, s.comm);
    for (std::size_t at = 0; at < bytes.size(); at += piece)
      MPI_Send(bytes.data() + at, int(std::min(piece, bytes.size() - at)), MPI_BYTE, root, 1, s.comm);
    return all;
  }
  all.resize(std::size_t(s.size));
  for (int r = 0; r < s.size; ++r) {
    std::string& b = all[std::size_t(r)];
    if (r == root) {
      b = std::move(bytes);
      continue;
    }
    std::uint64_t size = 0;
    MPI_Recv(&size, 1, MPI_UINT64_T, r, 0, s.comm, MPI_STATUS_IGNORE);
    b.resize(std::size_t(size));
    for (std::size_t at = 0; at < b.size(); at += piece)
      MPI_Recv(&b[at], int(std::min(piece, b.size() - at)), MPI_BYTE, r, 1, s.comm, MPI_STATUS_IGNORE);
  }
#else
  (void)root;
#endif
  return all;
}

void Communicator::abort(int code) const {
#if defined(KTR_ENABLE_MPI)
  if (state_->size > 1) MPI_Abort(state_->comm, code);
#else
  (void)code;
#endif
}

void Communicator::set_timing(bool on) const { state_->timing = on; }
CollectiveStats Communicator::stats() const { return state_->stats; }

}  // namespace ktr
