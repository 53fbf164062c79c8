// Collectives for data-parallel training: the one allreduce per optimiser step over the gradient arena, and the
// broadcast and metric reductions around it. train_steps calls them like any other kernel.
//
//   single rank (the default, and any build without MPI): every call is a no-op; nothing is fenced
//   MPI (KTR_ENABLE_MPI): the caller's communicator; the arena is summed with MPI_Allreduce in place, on the
//       device pointer where the MPI is GPU-aware (or the device is the host), else on a host mirror allocated
//       once. The instance is fenced first: MPI sees host-synchronised buffers.
//   NCCL (CUDA, KTR_ENABLE_NCCL): ncclAllReduce on the instance's stream, no fence, so a K-step dispatch still
//       needs no host synchronisation and can be captured. Its unique id travels over MPI; without MPI a
//       loopback() communicator runs NCCL as a single rank (to exercise the path on one device).
//
// The library never initialises or finalises MPI: the application does, and hands its communicator in.
#pragma once

#include "../core/types.hpp"

#include <memory>
#include <string>
#include <vector>

#if defined(KTR_ENABLE_MPI)
#include <mpi.h>
#endif

namespace ktr {

/// Time the gradient allreduces took (host wall clock). The MPI path measures itself without adding
/// synchronisation (it fences anyway), but its time then includes waiting for the slowest rank; with
/// Communicator::set_timing the ranks first meet in a barrier (counted in `wait_seconds`) and NCCL is fenced.
struct CollectiveStats {
  std::int64_t calls = 0;
  double seconds = 0;       ///< in the allreduce (with timing: after the barrier)
  double wait_seconds = 0;  ///< with timing: in the barrier before it (load imbalance between ranks)
  double bytes = 0;
};

class Communicator {
 public:
  /// One rank, no transport: every collective is a no-op.
  Communicator();
#if defined(KTR_ENABLE_MPI)
  /// Ranks of `comm` (the caller's; not duplicated, not freed). MPI must be initialised; collective over `comm`.
  /// On CUDA with NCCL, the NCCL communicator is created at the first allreduce (after Kokkos chose the device).
  explicit Communicator(MPI_Comm comm);
  MPI_Comm mpi_comm() const;
#endif
  /// MPI_COMM_WORLD where this build has MPI and the application initialised it, else one rank.
  static Communicator world();
  /// One rank that still runs the device transport where the build has one (NCCL on CUDA): tests the path on a
  /// single device. Elsewhere the same as Communicator().
  static Communicator loopback();

  int rank() const;
  int size() const;
  /// Rank among the ranks on this node (to choose a GPU), 0 with one rank.
  int local_rank() const;
  /// "single rank", "MPI (host-staged)", "MPI (GPU-aware)", "NCCL over MPI", ...
  std::string transport() const;
  /// True when the allreduce waits for the host (MPI without NCCL, several ranks): such a step cannot be captured.
  bool host_synchronised() const;

  /// v = sum over ranks of v, in place, enqueued on `space` (NCCL) or after fencing it (MPI).
  void allreduce_sum(ExecSpace const& space, DeviceView<float*> const& v) const;
  /// v = rank root's v (blocking; at start-up).
  void broadcast(ExecSpace const& space, DeviceView<float*> const& v, int root = 0) const;
  /// Host values summed over ranks, in place (blocking; metrics once per dispatch).
  void sum(std::vector<double>& values) const;
  /// True on every rank if `flag` is true on any (blocking).
  bool any(bool flag) const;
  /// Every rank's `bytes` on `root`, in rank order (their sizes may differ); an empty list on the other ranks
  /// (blocking; checkpoints).
  std::vector<std::string> gather(std::string bytes, int root = 0) const;
  /// Ends every rank of the job with `code` (MPI_Abort); returns only with one rank (it then does nothing).
  void abort(int code) const;

  /// Benchmarks: a barrier before every allreduce (MPI) or fences around it (NCCL), so that stats() separates
  /// the transfer from the wait for the slowest rank. Adds synchronisation: not for production runs.
  void set_timing(bool on) const;
  CollectiveStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ktr
