// Stream capture and replay on CUDA and HIP (the two runtimes' graph APIs are the same calls under two
// prefixes, mapped once below); a no-op elsewhere.
#include "graph.hpp"

#include "../core/error.hpp"
#include "gemm.hpp"
#include "kokkos_compat.hpp"

#include <exception>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#define KTR_CAPTURE 1
#elif defined(KOKKOS_ENABLE_HIP) && KTR_KK_GEMM_TAKES_SPACE
#include <hip/hip_runtime.h>
#define KTR_CAPTURE 1
#else
#define KTR_CAPTURE 0
#endif

namespace ktr {

#if KTR_CAPTURE

namespace {

#if defined(KOKKOS_ENABLE_CUDA)
namespace rt {
using Stream = cudaStream_t;
using Graph = cudaGraph_t;
using GraphExec = cudaGraphExec_t;
using Status = cudaError_t;
constexpr Status success = cudaSuccess;
inline Stream stream_of(ExecSpace const& space) { return space.cuda_stream(); }
inline Status stream_create(Stream* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline Status stream_destroy(Stream s) { return cudaStreamDestroy(s); }
inline Status begin_capture(Stream s) { return cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed); }
inline Status end_capture(Stream s, Graph* g) { return cudaStreamEndCapture(s, g); }
inline Status instantiate(GraphExec* e, Graph g) { return cudaGraphInstantiateWithFlags(e, g, 0); }
inline Status launch(GraphExec e, Stream s) { return cudaGraphLaunch(e, s); }
inline Status graph_destroy(Graph g) { return cudaGraphDestroy(g); }
inline Status exec_destroy(GraphExec e) { return cudaGraphExecDestroy(e); }
inline Status last_error() { return cudaGetLastError(); }
inline char const* describe(Status s) { return cudaGetErrorString(s); }
}  // namespace rt
#else
namespace rt {
using Stream = hipStream_t;
using Graph = hipGraph_t;
using GraphExec = hipGraphExec_t;
using Status = hipError_t;
constexpr Status success = hipSuccess;
inline Stream stream_of(ExecSpace const& space) { return space.hip_stream(); }
inline Status stream_create(Stream* s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline Status stream_destroy(Stream s) { return hipStreamDestroy(s); }
inline Status begin_capture(Stream s) { return hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed); }
inline Status end_capture(Stream s, Graph* g) { return hipStreamEndCapture(s, g); }
inline Status instantiate(GraphExec* e, Graph g) { return hipGraphInstantiate(e, g, nullptr, nullptr, 0); }
inline Status launch(GraphExec e, Stream s) { return hipGraphLaunch(e, s); }
inline Status graph_destroy(Graph g) { return hipGraphDestroy(g); }
inline Status exec_destroy(GraphExec e) { return hipGraphExecDestroy(e); }
inline Status last_error() { return hipGetLastError(); }
inline char const* describe(Status s) { return hipGetErrorString(s); }
}  // namespace rt
#endif

void check(rt::Status err, char const* what) {
  if (err != rt::success) throw Error(std::string("ktr::graph: ") + what + ": " + rt::describe(err));
}

}  // namespace

DeviceStream::DeviceStream() {
  rt::Stream s = nullptr;
  check(rt::stream_create(&s), "stream create");
  stream_ = s;
  space_ = ExecSpace(s);
}

DeviceStream::~DeviceStream() {
  space_.fence();
  release_gemm_resources(space_);  // its cuBLAS handle and workspace (CUDA)
  space_ = ExecSpace();
  (void)rt::stream_destroy(static_cast<rt::Stream>(stream_));
}

StreamIdentity stream_identity(ExecSpace const& space) {
  rt::Stream const stream = rt::stream_of(space);
  if (stream == nullptr) return {};
  return {reinterpret_cast<std::uintptr_t>(stream), gemm_resources_generation(space),
          reinterpret_cast<std::uintptr_t>(space.impl_internal_space_instance())};
}

bool CapturedProgram::supported() { return true; }
std::string CapturedProgram::unsupported_reason() { return ""; }
bool CapturedProgram::can_capture(ExecSpace const& space) { return rt::stream_of(space) != nullptr; }

CapturedProgram::~CapturedProgram() {
  if (exec_) (void)rt::exec_destroy(static_cast<rt::GraphExec>(exec_));
  if (graph_) (void)rt::graph_destroy(static_cast<rt::Graph>(graph_));
}

bool CapturedProgram::capture(ExecSpace const& space, std::function<void()> const& enqueue) {
  error_.clear();
  rt::Stream const stream = rt::stream_of(space);
  if (stream == nullptr) {
    error_ = "the default instance's null stream cannot be captured (use a DeviceStream)";
    return false;
  }
  rt::Status status = rt::begin_capture(stream);
  if (status != rt::success) {
    (void)rt::last_error();
    error_ = std::string("begin capture: ") + rt::describe(status);
    return false;
  }
  rt::Graph graph = nullptr;
  try {
    enqueue();  // records only: nothing runs, so a failure here leaves the device state untouched
  } catch (std::exception const& e) {
    // e.g. a launch that synchronises on the host inside the capture (Kokkos reports it by throwing)
    (void)rt::end_capture(stream, &graph);
    if (graph) (void)rt::graph_destroy(graph);
    (void)rt::last_error();
    error_ = std::string("during capture: ") + e.what();
    return false;
  }
  status = rt::end_capture(stream, &graph);
  if (status != rt::success || graph == nullptr) {
    (void)rt::last_error();  // clear the sticky capture error
    error_ = std::string("end capture: ") + rt::describe(status) +
             " (something in the step synchronised or used another stream)";
    if (graph) (void)rt::graph_destroy(graph);
    return false;
  }
  rt::GraphExec exec = nullptr;
  status = rt::instantiate(&exec, graph);
  if (status != rt::success) {
    (void)rt::last_error();
    (void)rt::graph_destroy(graph);
    error_ = std::string("instantiate: ") + rt::describe(status);
    return false;
  }
  graph_ = graph;
  exec_ = exec;
  return true;
}

void CapturedProgram::replay(ExecSpace const& space) const {
  KTR_REQUIRE(exec_ != nullptr, "ktr::graph", "replay of an empty program");
  check(rt::launch(static_cast<rt::GraphExec>(exec_), rt::stream_of(space)), "graph launch");
}

#else

DeviceStream::DeviceStream() = default;
DeviceStream::~DeviceStream() = default;
StreamIdentity stream_identity(ExecSpace const&) { return {}; }
bool CapturedProgram::supported() { return false; }
bool CapturedProgram::can_capture(ExecSpace const&) { return false; }
std::string CapturedProgram::unsupported_reason() {
#if defined(KOKKOS_ENABLE_HIP)
  return "HIP with Kokkos Kernels 3.4.01: its gemm runs on the null stream, which cannot be captured (Kokkos "
         "Kernels 4.x's execution-space gemm can)";
#else
  return std::string("no stream capture on ") + ExecSpace::name() + " (CUDA or HIP only)";
#endif
}
CapturedProgram::~CapturedProgram() = default;
bool CapturedProgram::capture(ExecSpace const&, std::function<void()> const&) {
  error_ = unsupported_reason();
  return false;
}
void CapturedProgram::replay(ExecSpace const&) const {
  throw Error("ktr::graph: this backend has no captured programs; run the plain loop");
}

#endif

}  // namespace ktr
