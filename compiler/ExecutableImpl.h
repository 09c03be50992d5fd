//===- ExecutableImpl.h - what an Executable holds ----------------*- C++ -*-===//
//
// The state behind kfuse::Executable, shared by Executable.cpp (the cache,
// specialisations, argument checks, the public calls) and
// ExecutableLaunch.cpp (enqueueing a run: kernel by kernel or as a CUDA
// graph, workspaces, profiling).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_EXECUTABLEIMPL_H
#define KFUSE_COMPILER_EXECUTABLEIMPL_H

#include "compiler/CompileGraph.h"
#include "compiler/RuntimeDims.h"
#include "kfuse/Compiler.h"
#include "kfuse/Graph.h"
#include "runtime/LaunchGraph.h"
#include "runtime/Module.h"
#include "runtime/TensorMaps.h"
#include "runtime/Workspace.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kfuse::detail {

using runtime::Driver;

/// A compiled specialisation, shared by every Executable with its key.
struct CacheEntry {
  std::once_flag compiled;
  Status status;
  runtime::Plan plan;
  std::once_flag loaded;
  Status loadStatus;
  /// Every stage's text, compiled again when a stage the plan does not
  /// hold is asked for (a plan from the disk cache holds none; a compile
  /// keeps only the small ones): plan.dumps stays as compiled, so readers
  /// of its stages need no lock.
  std::once_flag dumped;
  Status dumpStatus;
  std::map<std::string, std::string> allDumps;
  runtime::LoadedModule module;
  std::atomic<bool> isLoaded{false};
  /// Why the compile for runtime dims failed, where that is why.
  std::string runtimeRefusal;
};

inline std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out;
  for (int64_t d : shape)
    out += (out.empty() ? "" : "x") + std::to_string(d);
  return out.empty() ? "scalar" : out;
}

inline std::string shapeText(const Dims &shape) {
  return shapeText(std::vector<int64_t>(shape.begin(), shape.end()));
}

inline Status invalid(const std::string &message) {
  return Error(ErrorCode::InvalidArgument, message);
}

inline double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// One specialisation of an Executable: its shapes, its shared compiled
/// entry, its launch table and where its temporaries lie in a workspace.
struct Specialization {
  std::vector<Dims> inputShapes;
  bool aligned; ///< compiled for 16-byte-aligned buffers
  /// Compiled for the buckets of the executable's runtime dims, whose
  /// sizes its kernels take from each call (in `extents`).
  bool runtime = false;
  runtime::ExtentValues extents;
  std::string reason; ///< why a call compiled it (specializations())
  /// With runtime sizes: the call's bytes of each input.
  std::vector<uint64_t> inputBytes;
  std::string key;
  std::shared_ptr<CacheEntry> entry;
  /// Launches with a non-empty grid.
  size_t kernels = 0;
  /// The plan as one CUDA graph, built on the first run that uses it
  /// (destroyed before `entry`, whose plan and module it launches).
  std::unique_ptr<runtime::LaunchGraph> graph;
  bool graphFailed = false; ///< do not try again
  /// Buffer addresses of the run being enqueued, indexed as plan.buffers.
  std::vector<CUdeviceptr> table;
  /// Per launch: the TMA tensor maps its kernel takes (most take none).
  std::vector<runtime::LaunchTensorMaps> tensorMaps;
  /// Where the temporaries lie in a run's workspace.
  runtime::WorkspaceLayout workspace;
  /// The run being enqueued: its outputs that overlap an input, and the
  /// workspace with room for them.
  std::vector<uint32_t> redirected;
  runtime::WorkspaceLayout runLayout;
};

struct ExecutableImpl {
  CompileOptions options;
  std::string graphText, graphName;
  std::vector<TensorInfo> inputs, outputs;
  /// CompileOptions::dynamicDims' dims, until a compile says its kernels
  /// cannot take them at run time (then empty: specialised exactly).
  compiler::RuntimeDims runtimeDims;
  std::string runtimeRefusal; ///< non-empty once refused
  bool takesRuntimeDims() const {
    return !runtimeDims.empty() && runtimeRefusal.empty();
  }
  std::mutex mutex;
  std::vector<std::unique_ptr<Specialization>> specializations;
  Specialization *last = nullptr;

  std::string keyFor(const std::vector<std::vector<int64_t>> &shapes,
                     bool aligned, bool runtime) const;
  /// Whether `spec` runs the call with input shapes `in`.
  bool matches(const Specialization &spec, const DeviceTensor *in) const;
  Status bindShapes(const std::vector<std::vector<int64_t>> &shapes) const;
  Expected<Specialization *>
  specialize(const std::vector<std::vector<int64_t>> &shapes,
             bool aligned = true);
  compiler::CompileRequest
  compileRequest(const std::vector<std::vector<int64_t>> &shapes,
                 bool aligned, bool runtime) const;
  /// The text of `stage` ("graph", "fused", "gpu", "llvm"): the plan's,
  /// or from compiling again with every stage printed (once an entry).
  Expected<const std::string *> stageText(Specialization &spec,
                                          const std::string &stage);
  /// Whether compiles write their stages to a directory (dumpDir or
  /// $KFUSE_DUMP_DIR), and so keep every stage's text.
  std::string dumpRoot() const;
  Status compileEntry(CacheEntry &entry, const std::string &key,
                      const std::vector<std::vector<int64_t>> &shapes,
                      bool aligned, bool runtime, std::string *refusal);
  Status load(Driver &driver, CacheEntry &entry, const std::string &key);
  void writeDumps(Specialization &spec);
  Status checkArguments(const Specialization &spec, const DeviceTensor *in,
                        const DeviceTensor *out) const;
  /// Runs the plan on the caller's buffers in a workspace of its own;
  /// with `events`, records events[k] before kernel k and events[kernels]
  /// after the last (for profiling).
  Status launch(Driver &driver, Specialization &spec, const DeviceTensor *in,
                const DeviceTensor *out, CUstream stream, CUevent *events);
  /// Whether this run goes through spec's CUDA graph (`captured`: the
  /// stream is being captured into the caller's graph).
  bool usesGraph(Driver &driver, const Specialization &spec,
                 bool captured) const;
  /// The plan as spec's CUDA graph on the buffers in spec.table; false
  /// where no graph could be built (Launch::Auto): launch kernels.
  Expected<bool> launchGraph(Driver &driver, Specialization &spec,
                             CUstream stream);
  /// Runs `enqueue` with spec.table's temporaries and redirected outputs
  /// placed by `layout` in a workspace: the stream's arena, or where the
  /// stream is `captured` an allocation of the caller's graph.
  Status withWorkspace(Driver &driver, Specialization &spec,
                       const runtime::WorkspaceLayout &layout, CUstream stream,
                       bool captured, const std::function<Status()> &enqueue);
  /// The plan kernel by kernel in a workspace, redirected outputs copied
  /// out after.
  Status enqueueWithWorkspace(Driver &driver, Specialization &spec,
                              const DeviceTensor *out, CUstream stream,
                              CUevent *events, bool captured);
  /// The plan's kernels and copies on the buffers in spec.table.
  Status enqueue(Driver &driver, Specialization &spec, CUstream stream,
                 CUevent *events);
};

/// Everything run() does before launching: the specialisation for these
/// shapes and alignment, argument checks, the loaded module. The caller
/// holds the mutex.
Expected<Specialization *> prepare(ExecutableImpl &impl, const DeviceTensor *in,
                                   size_t numIn, const DeviceTensor *out,
                                   size_t numOut, Driver *&driverOut);

} // namespace kfuse::detail

#endif // KFUSE_COMPILER_EXECUTABLEIMPL_H
