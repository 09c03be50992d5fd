//===- CudaDriver.h - the CUDA driver, opened at run time -------*- C++ -*-===//
//
// libcuda.so.1 is opened with dlopen: kfuse links no driver, loads on a
// machine without one, and reports "no CUDA driver" or "no GPU" as an error
// value. Every CUresult becomes an Error naming the call and the driver's
// message. After a sticky error (an illegal address, a trap) the context is
// unusable: the driver is marked so and nothing more is launched on it.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_CUDADRIVER_H
#define KFUSE_RUNTIME_CUDADRIVER_H

#include "kfuse/Error.h"

#include <cuda.h>

#include <atomic>
#include <memory>
#include <string>

namespace kfuse::runtime {

// The driver calls kfuse uses, by their versioned symbol names.
#define KFUSE_CUDA_FUNCTIONS(X)                                                \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemGetInfo_v2)                                                           \
  X(cuMemAllocAsync)                                                            \
  X(cuMemFreeAsync)                                                            \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuMemcpyDtoDAsync_v2)                                                      \
  X(cuMemsetD8_v2)                                                             \
  X(cuMemsetD8Async)                                                           \
  X(cuModuleLoadData)                                                          \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLinkCreate_v2)                                                           \
  X(cuLinkAddData_v2)                                                          \
  X(cuLinkComplete)                                                            \
  X(cuLinkDestroy)                                                             \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime_v2)

// CUDA graphs (driver 12.0 and later): optional, run() launches kernel by
// kernel without them.
#define KFUSE_CUDA_GRAPH_FUNCTIONS(X)                                          \
  X(cuGraphCreate)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphAddKernelNode_v2)                                                   \
  X(cuGraphAddMemcpyNode)                                                      \
  X(cuGraphAddMemsetNode)                                                      \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphExecKernelNodeSetParams_v2)                                         \
  X(cuGraphExecMemcpyNodeSetParams)                                            \
  X(cuGraphExecMemsetNodeSetParams)                                            \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuDeviceGraphMemTrim)                                                      \
  X(cuDeviceGetGraphMemAttribute)                                              \
  X(cuStreamIsCapturing)

/// The process's one driver connection: device 0 and its primary context.
class Driver {
public:
  /// Opens the driver and the device on first use. Errors: no driver, no
  /// GPU, or a failing call; they are remembered, not retried.
  static Expected<Driver *> get();
  /// A driver that opened nothing, its calls null until the caller sets
  /// them: for testing the runtime's bookkeeping (workspaces, graphs)
  /// against fakes on a machine without a GPU. `graphs`: the caller sets
  /// the graph calls too (hasGraphs()).
  static std::unique_ptr<Driver> unopened(bool graphs = false) {
    std::unique_ptr<Driver> d(new Driver());
    d->graphs = graphs;
    return d;
  }

#define KFUSE_DECLARE(name) decltype(&::name) name = nullptr;
  KFUSE_CUDA_FUNCTIONS(KFUSE_DECLARE)
  KFUSE_CUDA_GRAPH_FUNCTIONS(KFUSE_DECLARE)
#undef KFUSE_DECLARE
  /// CUDA 12 and later (the TMA's tensor maps); null on older drivers,
  /// which run everything but sm_90 matmuls.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;

  /// Turns `result` of `call` into a Status; a sticky error also marks the
  /// context unusable.
  Status check(CUresult result, const char *call);
  /// Makes the context current on this thread; fails once it is unusable.
  Status activate();
  bool usable() const { return !broken.load(); }
  /// Whether the driver has every call of KFUSE_CUDA_GRAPH_FUNCTIONS.
  bool hasGraphs() const { return graphs; }

  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string name;
  int multiprocessors = 0;
  int computeMajor = 0, computeMinor = 0;

private:
  Driver() = default;
  Status open();
  std::atomic<bool> broken{false};
  bool graphs = false;
  std::string brokenReason;
};

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_CUDADRIVER_H
