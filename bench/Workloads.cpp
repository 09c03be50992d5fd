//===- Workloads.cpp - memory-bound workloads: fused, unfused, floor ------===//
//
// Each workload is timed in one run next to the copy ceiling: kfuse fused,
// kfuse unfused, and the floor (bytes that must move / measured copy
// bandwidth). Times are medians of repeated batches of back-to-back runs
// timed with CUDA events, on random data larger than the L2 cache. The torch.compile column is the
// ratio to floor measured on the same kind of GPU (../shared/gpu-machine.md).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace kfuse::bench {

std::vector<int64_t> staticShape(const TensorInfo &info, uint64_t &bytes) {
  std::vector<int64_t> shape;
  bytes = dtypeSize(info.dtype);
  for (const Dim &d : info.shape) {
    shape.push_back(d.size());
    bytes *= d.size();
  }
  return shape;
}

namespace {

/// Bytes that must move: every input read once, every output written once.
uint64_t ioBytes(const Graph &g, const std::vector<HostTensor> &inputs) {
  uint64_t bytes = 0;
  for (const HostTensor &t : inputs)
    bytes += t.sizeInBytes();
  for (const TensorInfo &info : g.outputs()) {
    uint64_t n = dtypeSize(info.dtype);
    for (const Dim &d : info.shape)
      n *= d.size();
    bytes += n;
  }
  return bytes;
}

struct DeviceArgs {
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> inputs, outputs;
};

Expected<DeviceArgs> deviceArgs(const Graph &g,
                                const std::vector<HostTensor> &inputs) {
  DeviceArgs args;
  for (const HostTensor &t : inputs) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    if (!b)
      return b.error();
    args.inputs.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    args.buffers.push_back(b.take());
  }
  for (const TensorInfo &info : g.outputs()) {
    uint64_t bytes = 0;
    std::vector<int64_t> shape = staticShape(info, bytes);
    Expected<DeviceBuffer> b = DeviceBuffer::allocate(bytes);
    if (!b)
      return b.error();
    args.outputs.push_back(b->tensor(info.dtype, Dims(shape)));
    args.buffers.push_back(b.take());
  }
  return args;
}

/// Median of `reps` timings of 10 back-to-back runs each, per run: the
/// GPU queue stays full, so host time between launches is not counted.
Expected<double> medianMs(Executable &exe, DeviceArgs &args, int reps) {
  constexpr int kBatch = 10;
  Expected<std::vector<double>> times = timeOnDevice(
      [&]() -> Status {
        for (int i = 0; i < kBatch; ++i)
          KFUSE_RETURN_IF_ERROR(exe.run(args.inputs.data(), args.inputs.size(),
                                        args.outputs.data(),
                                        args.outputs.size()));
        return Status::ok();
      },
      reps);
  if (!times)
    return times.error();
  return median(*times) / kBatch;
}

} // namespace

/// GB/s of a device-to-device copy, counting bytes read plus written.
Expected<double> copyBandwidth() {
  Graph g("copy");
  g.output("y", g.input("x", DType::f32, {int64_t(1) << 28}));
  Expected<Executable> exe = Compiler().compile(g);
  if (!exe)
    return exe.error();
  std::vector<HostTensor> in = {HostTensor(DType::f32, {int64_t(1) << 28})};
  Expected<DeviceArgs> args = deviceArgs(g, in);
  if (!args)
    return args.error();
  Expected<double> ms = medianMs(*exe, *args, 20);
  if (!ms)
    return ms.error();
  return 2.0 * in[0].sizeInBytes() / (*ms * 1e-3) / 1e9;
}

int runMemoryBound(const std::string &only, bool list, MemoryTable &table) {
  std::vector<Workload> all = memoryBoundWorkloads(/*small=*/false);
  if (list) {
    for (const Workload &w : all)
      std::printf("%s\n", w.name.c_str());
    return 0;
  }
  Expected<double> bandwidth = copyBandwidth();
  if (!bandwidth) {
    std::fprintf(stderr, "%s\n", bandwidth.error().message().c_str());
    return 1;
  }
  table.copyGBs = *bandwidth;
  bool found = false;
  for (const Workload &w : all) {
    if (!namedIn(w.name, only))
      continue;
    found = true;
    Graph g(w.name);
    w.build(g);
    if (!g.status()) {
      std::fprintf(stderr, "%s: %s\n", w.name.c_str(),
                   g.status().message().c_str());
      return 1;
    }
    std::vector<HostTensor> inputs;
    uint64_t seed = 1;
    if (w.inputs)
      inputs = w.inputs(g);
    for (const TensorInfo &info : g.inputs()) {
      if (w.inputs)
        break;
      std::vector<int64_t> shape;
      for (const Dim &d : info.shape)
        shape.push_back(d.size());
      inputs.push_back(HostTensor::random(info.dtype, shape, seed++));
    }
    Expected<DeviceArgs> args = deviceArgs(g, inputs);
    if (!args) {
      std::fprintf(stderr, "%s\n", args.error().message().c_str());
      return 1;
    }
    MemoryRow row;
    row.name = w.name;
    row.bytes = ioBytes(g, inputs);
    row.floorMs = row.bytes / (*bandwidth * 1e9) * 1e3;
    row.torchCompileRatio = w.torchCompileRatio;
    for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
      CompileOptions options;
      options.fusion = fusion;
      Expected<Executable> exe = Compiler(options).compile(g);
      Expected<double> ms = exe ? medianMs(*exe, *args, 30)
                                : Expected<double>(exe.error());
      if (!ms) {
        std::fprintf(stderr, "%s: %s\n", w.name.c_str(),
                     ms.error().message().c_str());
        return 1;
      }
      if (fusion == Fusion::Fused) {
        // The roofline of the fused kernels: bound of the longest one, and
        // the ceiling's time over the measured time, all kernels together.
        auto profile = exe->profile(args->inputs.data(), args->inputs.size(),
                                    args->outputs.data(), args->outputs.size());
        if (!profile) {
          std::fprintf(stderr, "%s: %s\n", w.name.c_str(),
                       profile.error().message().c_str());
          return 1;
        }
        double measured = 0, ceiling = 0, longest = 0;
        for (const KernelProfile &k : *profile) {
          measured += k.ms;
          ceiling += k.ms * k.rooflineFraction;
          if (k.ms > longest) {
            longest = k.ms;
            row.bound = k.bound;
          }
        }
        row.rooflineFraction = measured > 0 ? ceiling / measured : 0;
      }
      auto kernels = exe->kernels();
      uint64_t moved = 0;
      for (const KernelReport &k : *kernels)
        moved += k.bytes;
      (fusion == Fusion::Fused ? row.fusedMs : row.unfusedMs) = *ms;
      (fusion == Fusion::Fused ? row.fusedBytes : row.unfusedBytes) = moved;
      (fusion == Fusion::Fused ? row.fusedKernels : row.unfusedKernels) =
          kernels->size();
    }
    table.rows.push_back(row);
  }
  if (!found) {
    std::fprintf(stderr, "no workload '%s' (see --list)\n", only.c_str());
    return 2;
  }
  return 0;
}

void MemoryTable::print() const {
  std::printf("copy ceiling: %.0f GB/s (read + write)\n", copyGBs);
  std::printf("%-18s %6s %8s %8s %9s %6s %8s %9s %7s %6s %-7s %5s\n",
              "workload", "MB", "floor_ms", "fused_ms", "unfused_ms", "GB/s",
              "fused/fl", "unf/fused", "bytes_x", "torch", "bound", "roof");
  for (const MemoryRow &r : rows) {
    double fusedRatio = r.fusedMs / r.floorMs;
    std::printf(
        "%-18s %6.0f %8.4f %8.4f %9.4f %6.0f %8.3f %9.2f %7.2f %6s %-7s %4.0f%%\n",
        r.name.c_str(), r.bytes / 1e6, r.floorMs, r.fusedMs, r.unfusedMs,
        r.bytes / (r.fusedMs * 1e-3) / 1e9, fusedRatio, r.unfusedMs / r.fusedMs,
        double(r.unfusedBytes) / std::max<uint64_t>(r.fusedBytes, 1),
        r.torchCompileRatio
            ? (std::to_string(r.torchCompileRatio).substr(0, 4)).c_str()
            : "-",
        r.bound.c_str(), r.rooflineFraction * 100);
  }
}

std::string MemoryTable::json() const {
  std::string out = "{\"copy_gbs\": " + std::to_string(copyGBs) +
                    ", \"workloads\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const MemoryRow &r = rows[i];
    out += "  {\"name\": \"" + r.name + "\", \"bytes\": " +
           std::to_string(r.bytes) + ", \"floor_ms\": " +
           std::to_string(r.floorMs) + ", \"fused_ms\": " +
           std::to_string(r.fusedMs) + ", \"unfused_ms\": " +
           std::to_string(r.unfusedMs) + ", \"fused_kernels\": " +
           std::to_string(r.fusedKernels) + ", \"unfused_kernels\": " +
           std::to_string(r.unfusedKernels) + ", \"fused_bytes\": " +
           std::to_string(r.fusedBytes) + ", \"unfused_bytes\": " +
           std::to_string(r.unfusedBytes) + ", \"torch_compile_ratio\": " +
           std::to_string(r.torchCompileRatio) + "}" +
           (i + 1 < rows.size() ? ",\n" : "\n");
  }
  return out + "]}\n";
}

} // namespace kfuse::bench
