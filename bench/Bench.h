//===- Bench.h - kfuse-bench ------------------------------------*- C++ -*-===//

#ifndef KFUSE_BENCH_BENCH_H
#define KFUSE_BENCH_BENCH_H

#include "WorkloadGraphs.h"
#include "kfuse/kfuse.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace kfuse::bench {

struct Row {
  std::string what;
  double value;
  std::string unit;
  std::string target;
};

class Table {
public:
  void add(Row row) { rows.push_back(std::move(row)); }
  void print() const;
  std::string json() const;

private:
  std::vector<Row> rows;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct MemoryRow {
  std::string name;
  uint64_t bytes = 0;
  double floorMs = 0, fusedMs = 0, unfusedMs = 0, torchCompileRatio = 0;
  uint64_t fusedBytes = 0, unfusedBytes = 0;
  size_t fusedKernels = 0, unfusedKernels = 0;
  std::string bound;           ///< of the longest fused kernel
  double rooflineFraction = 0; ///< of the fused kernels together
};

struct MemoryTable {
  double copyGBs = 0;
  std::vector<MemoryRow> rows;
  void print() const;
  std::string json() const;
};

/// "4,2048,1024": the values comma-separated, as peers.py takes them.
inline std::string joinInts(std::initializer_list<int64_t> values) {
  std::string out;
  for (int64_t v : values)
    out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

/// `count` numbers printed by `python3 PEERS ARGS`, or zeros when it
/// cannot run (no python3 or torch there) (Blocks.cpp).
std::vector<double> peerNumbers(const std::string &peers,
                                const std::string &args, size_t count);

/// Whether `name` is one of the comma-separated `names` (any, when empty).
inline bool namedIn(const std::string &name, const std::string &names) {
  if (names.empty())
    return true;
  for (size_t at = 0; at <= names.size();) {
    size_t end = std::min(names.find(',', at), names.size());
    if (names.compare(at, end - at, name) == 0)
      return true;
    at = end + 1;
  }
  return false;
}

/// Measures each workload of `all` named in `only` (comma-separated; every
/// one when empty) and prints its row as soon as it is measured. Returns 1
/// when a measurement fails, 2 when no workload has such a name.
template <typename Workload, typename Measure, typename Print>
int measureEach(const std::vector<Workload> &all, const std::string &only,
                Measure measure, Print print) {
  bool found = false;
  for (const Workload &w : all) {
    if (!namedIn(w.name, only))
      continue;
    found = true;
    auto row = measure(w);
    if (!row) {
      std::fprintf(stderr, "%s: %s\n", w.name.c_str(),
                   row.error().message().c_str());
      return 1;
    }
    print(w, *row);
    std::fflush(stdout);
  }
  if (!found) {
    std::fprintf(stderr, "no workload '%s' (see --list)\n", only.c_str());
    return 2;
  }
  return 0;
}

/// Median ms of `once` on the device: 15 timed batches of 5 back-to-back
/// calls, per call.
Expected<double> medianMs(const std::function<Status()> &once);
/// Random inputs of `g` on the device; `bytes` counts them.
Status uploadRandomInputs(const Graph &g, std::vector<DeviceBuffer> &buffers,
                          std::vector<DeviceTensor> &inputs, uint64_t &bytes);
/// A tensor of `dtype` and `shape` copied from the device.
Expected<HostTensor> download(const DeviceBuffer &buffer, DType dtype,
                              std::vector<int64_t> shape);
/// `g` compiled fused and unfused (from `base`'s other options) and timed
/// on the same buffers; `inspectFused` sees the fused executable.
Status
timeFusedAndUnfused(const Graph &g, const std::vector<DeviceTensor> &inputs,
                    const DeviceTensor &result, double &fusedMs,
                    double &unfusedMs,
                    const std::function<void(Executable &)> &inspectFused = {},
                    const CompileOptions &base = {});

/// `g` compiled fused (with `options`) and timed on zeroed buffers
/// (buffersFor), or on the inputs `values` makes where it is set: its
/// median ms, its kernels and the bytes of its inputs and outputs
/// (Main.cpp). With `profile`, also each kernel's place on the roofline.
Expected<double> timeOnZeros(
    const Graph &g, int &kernels, double &bytes,
    const CompileOptions &options = {},
    const std::function<std::vector<HostTensor>(const Graph &)> &values = {},
    std::vector<KernelProfile> *profile = nullptr);

/// The sizes of a tensor of static shape, and its bytes.
std::vector<int64_t> staticShape(const TensorInfo &info, uint64_t &bytes);

/// Device buffers for every input and output of a static graph, zeroed
/// (Costs.cpp).
struct Buffers {
  std::vector<DeviceBuffer> owned;
  std::vector<DeviceTensor> in, out;
  uint64_t bytes = 0; ///< of all of them
};
Expected<Buffers> buffersFor(const Graph &g);

int runCosts(const std::string &self, Table &table);
/// One token through a Llama-style block, launched as a CUDA graph and
/// kernel by kernel, against the HBM floor (Decode.cpp).
int runDecode(double copyGBs);
/// A generation loop over 256 growing KV-cache lengths with the cache's
/// length taken at run time: its compiles, and steps against steps
/// compiled for their exact length (Decode.cpp).
int runDecodeLoop();
/// Compile time to PTX of stacks of pre-norm blocks (no GPU needed): the
/// kernels, the distinct functions in the PTX, and the milliseconds.
int runCompileScaling(const std::vector<int> &layerCounts);
/// The memory-bound workloads (all, or `only`); `list` prints their names.
int runMemoryBound(const std::string &only, bool list, MemoryTable &table);
/// The tensor-core matmuls against cuBLAS (all, or `only`).
int runMatmuls(const std::string &only, bool list, double copyGBs);
/// kf-pad on against off (bench/Padding.cpp).
int runPadding(const std::string &only, bool list);
/// Attention from primitives, fused and unfused, against SDPA run by the
/// python script `peers` (all, or `only`).
int runAttention(const std::string &only, bool list, double copyGBs,
                 const std::string &peers);
int runBlocks(const std::string &only, bool list, double copyGBs,
              const std::string &peers);
/// FLOPs of `layers` pre-norm blocks' forward: projections, and causal
/// attention counted half (Blocks.cpp).
double preNormFlops(const BlockShape &s, int layers);
/// Backward passes against their floors and PyTorch's (Training.cpp).
int runTraining(const std::string &only, bool list, double copyGBs,
                const std::string &peers);
/// Shapes around the bench rows (families attention, rows, matmul, or
/// shape names, in `only`) against their peers (Sweep.cpp).
int runSweep(const std::string &only, bool list, double copyGBs,
             const std::string &peers, const std::string &jsonPath);
/// GB/s of a device-to-device copy, counting bytes read plus written.
Expected<double> copyBandwidth();
/// The child process of a disk-cache row: loads cost graph `name` (see
/// Costs.cpp) from `cacheDir` and prints the milliseconds.
int childLoad(const std::string &cacheDir, const std::string &name,
              int variant);
/// Host and device time of run() kernel by kernel and as one CUDA graph
/// (LaunchCosts.cpp).
int runLaunchCosts(Table &table);

} // namespace kfuse::bench

#endif // KFUSE_BENCH_BENCH_H
