// Stream capture and replay on CUDA; a no-op elsewhere.
#include "graph.hpp"

#include "../core/error.hpp"

#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace ktr {

#if defined(KOKKOS_ENABLE_CUDA)

namespace {
void check(cudaError_t err, char const* what) {
  if (err != cudaSuccess) throw Error(std::string("ktr::graph: ") + what + ": " + cudaGetErrorString(err));
}
}  // namespace

DeviceStream::DeviceStream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
  space_ = ExecSpace(s);
}

DeviceStream::~DeviceStream() {
  space_.fence();
  space_ = ExecSpace();
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

bool CapturedProgram::supported() { return true; }

CapturedProgram::~CapturedProgram() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

bool CapturedProgram::capture(ExecSpace const& space, std::function<void()> const& enqueue) {
  cudaStream_t const stream = space.cuda_stream();
  if (stream == nullptr) return false;  // the legacy default stream cannot be captured
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) return false;
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  if (cudaStreamEndCapture(stream, &graph) != cudaSuccess || graph == nullptr) {
    cudaGetLastError();  // clear the sticky capture error
    return false;
  }
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiateWithFlags(&exec, graph, 0) != cudaSuccess) {
    cudaGetLastError();
    cudaGraphDestroy(graph);
    return false;
  }
  graph_ = graph;
  exec_ = exec;
  return true;
}

void CapturedProgram::replay(ExecSpace const& space) const {
  KTR_REQUIRE(exec_ != nullptr, "ktr::graph", "replay of an empty program");
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), space.cuda_stream()), "cudaGraphLaunch");
}

#else

DeviceStream::DeviceStream() = default;
DeviceStream::~DeviceStream() = default;
bool CapturedProgram::supported() { return false; }
CapturedProgram::~CapturedProgram() = default;
bool CapturedProgram::capture(ExecSpace const&, std::function<void()> const&) { return false; }
void CapturedProgram::replay(ExecSpace const&) const {
  throw Error("ktr::graph: this backend has no captured programs; run the plain loop");
}

#endif

}  // namespace ktr
