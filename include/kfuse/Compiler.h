//===- kfuse/Compiler.h - compiling and running graphs ----------*- C++ -*-===//
//
//   kfuse::Compiler compiler;                        // sm_90, fused
//   kfuse::Expected<kfuse::Executable> exe = compiler.compile(graph);
//   exe->run({{x_ptr, kfuse::DType::f32, {4096, 1024}}},
//            {{y_ptr, kfuse::DType::f32, {4096, 1024}}}, stream);
//
// A graph with symbolic dims is specialised for the shapes of each call:
// the first call with new shapes compiles (or loads from the disk cache),
// later calls with those shapes only launch. Arguments are checked before
// anything is launched (count, dtype, shape, null and misaligned pointers).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_H
#define KFUSE_COMPILER_H

#include "kfuse/DType.h"
#include "kfuse/Error.h"
#include "kfuse/Evaluator.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace kfuse {

class Graph;

enum class Fusion {
  Fused,   ///< kf-fuse groups ops into as few kernels as it can
  Unfused, ///< one kernel per op: the baseline fusion is measured against
};

/// How run() enqueues the kernels of a specialisation.
enum class Launch {
  /// A CUDA graph for plans of kAutoGraphKernels kernels or more where the
  /// driver has graphs and the stream is not being captured, else kernel
  /// by kernel.
  Auto,
  Kernels, ///< one cuLaunchKernel per kernel
  /// One instantiated CUDA graph per specialisation, launched with one
  /// call; runs of it on several streams follow each other on the GPU.
  Graph,
};
/// The fewest kernels Launch::Auto launches as a CUDA graph: measured on
/// an H200 (`kfuse-bench costs`), a graph of one kernel already costs the
/// host less than a launch (1.6 against 3.9 us) and starts sooner.
constexpr size_t kAutoGraphKernels = 1;

/// The compiler's stages, each of which can be printed.
enum class Stage {
  Graph, ///< kf IR after specialisation, canonicalisation and CSE
  Fused, ///< kf IR partitioned into kf.kernel regions with launch configs
  GPU,   ///< the gpu.module of kernels (scf, arith, math, memref)
  LLVM,  ///< optimised LLVM IR
  PTX,
};

struct CompileOptions {
  std::string arch = "sm_90"; ///< any sm_XY the NVPTX backend knows
  Fusion fusion = Fusion::Fused;
  /// kf-pad: rows of buffers between kernels padded to 16 bytes, so that
  /// their kernels use 16-byte accesses and tensor cores.
  bool padRows = true;
  /// f32 matmuls may run on tensor cores in TF32 (10-bit mantissas,
  /// f32 accumulation: about 1e-3 relative error, as PyTorch's
  /// allow_tf32); without it they stay exact, on the CUDA cores.
  bool allowTF32 = false;
  /// kf-split-k: a matmul whose output tiles leave most SMs idle (decode
  /// sizes, long K) sums partial products over K chunks in a second kernel.
  bool splitK = true;
  /// kf-split-keys (flash-decoding): an attention whose query tiles leave
  /// most SMs idle (decode steps over a long KV cache) runs over chunks of
  /// its keys at once and combines them by their log-sum-exps. On since
  /// session 41's decode step (KV 4096: 2.04x its floor split, 2.60x
  /// whole, same run on an H200).
  bool splitKeys = true;
  /// Results are the same bits from run to run. Off, kernels may add
  /// partial results with atomics in whatever order they come: today
  /// FlashAttention's backward, whose key blocks then add up dq themselves
  /// (kf-atomic-dq) instead of query blocks recomputing the probabilities
  /// for it. Off is PyTorch's default; on here until the GPU has measured
  /// the atomic kernel.
  bool deterministic = true;
  /// FlashAttention's deterministic backward copies its tiles with the TMA
  /// from a warpgroup of its own, on mbarriers (kf-promote-shared's
  /// `grad-tma`), instead of cp.async by every thread and a block barrier
  /// a tile. Takes the backward from 0.74-0.80x to 0.88-1.09x of SDPA's
  /// under torch.compile (B4 H16 S2048, d64/d128, causal or not; session
  /// 46, an H100). Kernels it does not fit keep cp.async.
  bool attentionGradTma = true;
  /// Disk cache directory; empty means $KFUSE_CACHE_DIR, else
  /// $XDG_CACHE_HOME/kfuse, else ~/.cache/kfuse.
  std::string cacheDir;
  bool diskCache = true;
  /// Writes every stage of every specialisation here; empty means
  /// $KFUSE_DUMP_DIR if set. Not part of the cache key.
  std::string dumpDir;
  /// Not part of the cache key: the same kernels either way.
  Launch launch = Launch::Auto;
  /// Symbolic dims whose size changes from call to call (a KV cache's
  /// length in a generation loop). A call's sizes fall in a bucket (the
  /// power of two at or above them, 64 at least) and the graph is compiled
  /// once per bucket, its kernels taking the call's size at run time, where
  /// they all can; where not, the dims are specialised exactly, as other
  /// symbols are, and KFUSE_DEBUG says why. Today the FlashAttention
  /// template takes its key length at run time (K and V inputs, no mask).
  std::vector<std::string> dynamicDims;
};

/// A shape of at most 8 dims, held inline so that describing arguments
/// allocates nothing.
class Dims {
public:
  static constexpr int kMaxRank = 8;
  Dims() = default;
  Dims(std::initializer_list<int64_t> dims);
  Dims(const std::vector<int64_t> &dims);
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  const int64_t *begin() const { return dims_; }
  const int64_t *end() const { return dims_ + rank_; }
  bool operator==(const Dims &other) const;
  bool valid() const { return rank_ >= 0; }

private:
  int64_t dims_[kMaxRank] = {};
  int rank_ = 0; ///< -1 when constructed from more than kMaxRank dims
};

/// A tensor in device memory (a CUdeviceptr), row-major and contiguous.
struct DeviceTensor {
  void *data = nullptr;
  DType dtype = DType::f32;
  Dims shape;
  /// The bytes the buffer at `data` holds, when known (0: unknown); run()
  /// refuses a buffer smaller than the tensor.
  size_t bytes = 0;
};

/// Device memory owned by kfuse, for callers without a CUDA runtime of
/// their own (tests, examples, benchmarks).
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(size_t bytes);
  /// A buffer holding a copy of `tensor`'s data.
  static Expected<DeviceBuffer> fromHost(const HostTensor &tensor);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  void *data() const { return reinterpret_cast<void *>(ptr_); }
  size_t size() const { return bytes_; }
  /// This buffer as a tensor of `dtype` and `shape`, its size known to run().
  DeviceTensor tensor(DType dtype, Dims shape) const {
    return {data(), dtype, shape, bytes_};
  }
  Status copyFromHost(const void *src, size_t bytes);
  Status copyToHost(void *dst, size_t bytes) const;
  /// Sets every byte to `value` (tests poison outputs with 0xFF: NaN).
  Status fill(unsigned char value);

private:
  uintptr_t ptr_ = 0;
  size_t bytes_ = 0;
};

/// A CUDA stream owned by kfuse, for callers without a CUDA runtime of
/// their own. Non-blocking: it does not wait for the legacy default stream,
/// nor that stream for it (DeviceBuffer's copies run on that stream, so
/// synchronize() first).
class DeviceStream {
public:
  static Expected<DeviceStream> create();
  DeviceStream() = default;
  DeviceStream(DeviceStream &&other) noexcept;
  DeviceStream &operator=(DeviceStream &&other) noexcept;
  ~DeviceStream();

  /// The CUstream, for Executable::run.
  void *handle() const { return stream_; }
  /// Waits for the work enqueued on this stream.
  Status synchronize() const;

private:
  void *stream_ = nullptr;
};

/// The GPU kfuse runs on, or the reason there is none ("no CUDA driver",
/// "no GPU").
struct DeviceInfo {
  std::string name;
  int multiprocessors;
  int computeMajor, computeMinor;
};
Expected<DeviceInfo> device();

/// Device memory as the driver sees it, and what kfuse holds of it for
/// run workspaces (the temporaries between a run's kernels, outputs that
/// overlap an input): a buffer a stream, the largest workspace run there
/// (at most 8 streams' at once), and the temporaries of runs captured into
/// the caller's CUDA graphs.
struct DeviceMemory {
  uint64_t freeBytes = 0, totalBytes = 0;
  /// Taken from the device by the streams' buffers, and for the
  /// temporaries of captured graphs (the driver shares that memory between
  /// graphs that do not run at once).
  uint64_t workspaceReservedBytes = 0;
  /// Of the captured graphs' memory, mapped to graphs now.
  uint64_t workspaceUsedBytes = 0;
};
Expected<DeviceMemory> deviceMemory();
/// Gives the device back the workspace memory, once the runs enqueued
/// that use it are done: kfuse keeps what the largest runs needed, as
/// PyTorch's caching allocator does (this is its empty_cache()).
Status releaseWorkspaceMemory();

/// The target PTX text was written for (its `.target` line): "sm_90a"
/// where kfuse used Hopper's wgmma for an "sm_90" compile. Empty if none.
std::string ptxTarget(const std::string &ptx);
/// Waits for all work on the device.
Status synchronize();

/// Times `work` (which enqueues GPU work on the default stream) with CUDA
/// events: `warmup` untimed calls, then milliseconds per repetition.
Expected<std::vector<double>>
timeOnDevice(const std::function<Status()> &work, int repetitions,
             int warmup = 3);

/// One kernel: its launch shape and, once loaded on a GPU, what it uses
/// (-1 where unknown).
struct KernelReport {
  std::string name;
  uint32_t grid, block;
  int registers = -1;
  int localBytes = -1;  ///< local memory per thread: spills and stack
  int spillBytes = -1;  ///< spill stores, from the ptxas log when there is one
  int sharedBytes = -1; ///< static shared memory per block
  uint64_t bytes = 0;   ///< the bytes of the buffers it reads and writes
  uint64_t flops = 0;   ///< the arithmetic it does
};

/// The ceilings a kernel is measured against. The defaults are an H200's:
/// 4.22 TB/s device copy (read + write), 66.9 TFLOP/s of f32 FMA.
struct Roofline {
  double bytesPerSecond = 4.22e12;
  double flopsPerSecond = 66.9e12;
};

/// One kernel's place on the roofline, from a profiled run.
struct KernelProfile {
  std::string name;
  double ms = 0; ///< median
  uint64_t bytes = 0, flops = 0;
  double gbPerSecond = 0, tflopPerSecond = 0;
  /// "memory", "compute", or "launch overhead" (far from both ceilings
  /// and too short for them to matter).
  std::string bound;
  /// The roofline's time over the measured time: 1 is the ceiling.
  double rooflineFraction = 0;
};

/// Process-wide compile and cache counters.
/// One compiled specialisation of an Executable, and why it exists.
struct SpecializationInfo {
  /// The input shapes it was compiled for: a runtime dim at its bucket.
  std::vector<std::vector<int64_t>> shapes;
  /// Whether its kernels take the runtime dims' sizes from each call.
  bool runtimeSizes = false;
  /// Why a call compiled it: "new shapes", the bucket it covers, or why
  /// the dynamic dims were specialised exactly.
  std::string reason;
};

struct CacheStats {
  uint64_t compiles = 0;     ///< runs of the compiler (MLIR and LLVM)
  uint64_t memoryHits = 0;   ///< specialisations found compiled in memory
  uint64_t diskHits = 0;     ///< loaded from the disk cache, no compile
  uint64_t diskRejected = 0; ///< corrupt or mismatched entries ignored
};
CacheStats cacheStats();

namespace detail {
struct ExecutableImpl;
}

class Executable {
public:
  /// Runs on device tensors; `stream` is a CUstream (null: the default
  /// stream). Returns once the work is enqueued. Calls on several streams
  /// may overlap on the GPU: each run's temporaries are its own, in its
  /// stream's workspace (or, on a stream being captured, allocated by the
  /// captured graph). An output may share memory with an input (an
  /// in-place update): where the plan cannot compute it in place, the
  /// output is computed into a temporary and copied over. Two outputs that
  /// overlap are refused, naming both.
  Status run(const DeviceTensor *inputs, size_t numInputs,
             const DeviceTensor *outputs, size_t numOutputs,
             void *stream = nullptr);
  Status run(std::initializer_list<DeviceTensor> inputs,
             std::initializer_list<DeviceTensor> outputs,
             void *stream = nullptr) {
    return run(inputs.begin(), inputs.size(), outputs.begin(), outputs.size(),
               stream);
  }
  /// Runs every kernel `repetitions` times, each timed with CUDA events on
  /// the default stream, and places it on the roofline.
  Expected<std::vector<KernelProfile>>
  profile(const DeviceTensor *inputs, size_t numInputs,
          const DeviceTensor *outputs, size_t numOutputs,
          int repetitions = 20, const Roofline &roofline = {});

  /// Copies host inputs in, runs, synchronises and copies the outputs
  /// back (poisoned with NaN bytes first, so an unwritten element shows).
  Expected<std::vector<HostTensor>> runOnHost(
      const std::vector<HostTensor> &inputs);

  /// The text of a stage for these input shapes (the graph's own if
  /// empty), compiling or loading from the cache if needed.
  Expected<std::string> dump(Stage stage,
                             const std::vector<std::vector<int64_t>> &shapes = {});
  /// The kernels for these shapes, with ptxas's figures once they have been
  /// loaded on a GPU.
  Expected<std::vector<KernelReport>>
  kernels(const std::vector<std::vector<int64_t>> &shapes = {});

  /// The output shapes for these input shapes (the graph's own if empty).
  Expected<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<std::vector<int64_t>> &shapes = {});

  size_t numInputs() const;
  size_t numOutputs() const;

  /// The specialisations compiled (or loaded) so far, oldest first: what a
  /// generation loop or a server's changing sizes made it compile.
  std::vector<SpecializationInfo> specializations() const;

private:
  friend class Compiler;
  std::shared_ptr<detail::ExecutableImpl> impl_;
};

class Compiler {
public:
  explicit Compiler(CompileOptions options = {});
  const CompileOptions &options() const { return options_; }

  /// Checks the graph and, when its shapes are all static, compiles it
  /// (or loads it from the cache). Works without a GPU; running needs one.
  Expected<Executable> compile(const Graph &graph);

private:
  CompileOptions options_;
};

} // namespace kfuse

#endif // KFUSE_COMPILER_H
