//===- Testing.cpp - regression-testing fusion ----------------------------===//

#include "kfuse/Testing.h"
#include "compiler/DeviceArguments.h"
#include "kfuse/Evaluator.h"
#include "runtime/CudaDriver.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace kfuse::testing {

double tolerance(DType dtype, int64_t reductionLength, bool allowTF32) {
  // TF32 keeps f16's 10 mantissa bits of each product's operands.
  double base = dtype == DType::bf16  ? 1e-2
                : dtype == DType::f16 ? 2e-3
                : dtype == DType::f32 ? (allowTF32 ? 2e-3 : 1e-5)
                                      : 0.0;
  return base * std::max(1.0, std::sqrt(double(reductionLength)) / 8.0);
}

double outputTolerance(const Graph &graph, const TensorInfo &output,
                       int64_t reductionLength, bool allowTF32) {
  double bound = tolerance(output.dtype, reductionLength, allowTF32);
  if (bound == 0.0)
    return bound;
  for (const TensorInfo &input : graph.inputs())
    bound = std::max(bound, tolerance(input.dtype, reductionLength, allowTF32));
  return bound;
}

std::string FusionReport::summary() const {
  std::ostringstream os;
  os << "seed " << seed << ": " << fusedKernels << " fused kernels, "
     << unfusedKernels << " unfused";
  if (fusedMs > 0)
    os << "; fused " << fusedMs << " ms, unfused " << unfusedMs << " ms";
  for (const OutputCheck &o : outputs)
    os << "; '" << o.name << "' (" << dtypeName(o.dtype) << ") error fused "
       << o.fusedError << ", unfused " << o.unfusedError << " (tolerance "
       << o.tolerance << ")" << (o.passed ? "" : " FAILED");
  if (fusedMs > 0 && !fusedNotSlower)
    os << "; fused is slower than unfused";
  return os.str();
}

namespace {

struct Run {
  std::vector<HostTensor> outputs;
  size_t kernels;
  double ms = 0;
};

Expected<Run> runMode(const Graph &graph, Fusion fusion,
                      const std::vector<HostTensor> &inputs,
                      const std::vector<std::vector<int64_t>> &shapes,
                      const CheckOptions &options) {
  CompileOptions compile;
  compile.fusion = fusion;
  compile.allowTF32 = options.allowTF32;
  Expected<Executable> exe = Compiler(compile).compile(graph);
  if (!exe)
    return exe.error();
  Run run;
  Expected<std::vector<HostTensor>> outputs = exe->runOnHost(inputs);
  if (!outputs)
    return outputs.error();
  run.outputs = outputs.take();
  Expected<std::vector<KernelReport>> kernels = exe->kernels(shapes);
  if (!kernels)
    return kernels.error();
  run.kernels = kernels->size();
  if (!options.time)
    return run;
  // Time on device buffers (the outputs' contents no longer matter).
  std::vector<detail::OutputSpec> specs;
  for (const HostTensor &t : run.outputs)
    specs.push_back({t.dtype(), t.shape(), t.sizeInBytes()});
  Expected<detail::DeviceArguments> args =
      detail::deviceArguments(inputs, specs, /*poison=*/false);
  if (!args)
    return args.error();
  Expected<std::vector<double>> times = timeOnDevice(
      [&] {
        return exe->run(args->in.data(), args->in.size(), args->out.data(),
                        args->out.size());
      },
      options.repetitions);
  if (!times)
    return times.error();
  std::sort(times->begin(), times->end());
  run.ms = (*times)[times->size() / 2];
  return run;
}

} // namespace

namespace {

/// The input shapes to check at: the options' or, where they give none,
/// the graph's static ones.
Expected<std::vector<std::vector<int64_t>>>
checkShapes(const std::vector<TensorInfo> &infos, const CheckOptions &options) {
  std::vector<std::vector<int64_t>> shapes = options.shapes;
  if (shapes.empty())
    for (const TensorInfo &info : infos) {
      std::vector<int64_t> shape;
      for (const Dim &d : info.shape) {
        if (d.isSymbolic())
          return Error(ErrorCode::InvalidArgument,
                       "checkFusion: input '" + info.name +
                           "' has symbolic dims: give the shapes");
        shape.push_back(d.size());
      }
      shapes.push_back(shape);
    }
  if (shapes.size() != infos.size())
    return Error(ErrorCode::InvalidArgument,
                 "checkFusion: the graph takes " + std::to_string(infos.size()) +
                     " inputs, got " + std::to_string(shapes.size()) +
                     " shapes");
  return shapes;
}

/// Each output of both runs against the evaluator's, into `report`.
void compareOutputs(const Graph &graph, const CheckOptions &options,
                    const std::vector<HostTensor> &reference, const Run &fused,
                    const Run &unfused, FusionReport &report) {
  report.valuesMatch = true;
  std::vector<TensorInfo> outputs = graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    OutputCheck check{
        outputs[i].name,
        outputs[i].dtype,
        relativeError(fused.outputs[i], reference[i]),
        relativeError(unfused.outputs[i], reference[i]),
        outputTolerance(graph, outputs[i], options.reductionLength,
                        options.allowTF32),
        false};
    // NaN fails both comparisons.
    check.passed = check.fusedError <= check.tolerance &&
                   check.unfusedError <= check.tolerance;
    report.valuesMatch &= check.passed;
    report.outputs.push_back(check);
  }
}

} // namespace

Expected<FusionReport> checkFusion(const Graph &graph,
                                   const CheckOptions &options) {
  if (!graph.status())
    return graph.status().error();
  std::vector<TensorInfo> infos = graph.inputs();
  Expected<std::vector<std::vector<int64_t>>> shapes =
      checkShapes(infos, options);
  if (!shapes)
    return shapes.error();
  FusionReport report;
  report.seed = options.seed ? options.seed : std::random_device{}();
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < infos.size(); ++i)
    inputs.push_back(HostTensor::random(infos[i].dtype, (*shapes)[i],
                                        report.seed + i));
  Expected<std::vector<HostTensor>> reference = evaluate(graph, inputs);
  if (!reference)
    return reference.error();
  auto timeBoth = [&]() -> Expected<std::pair<Run, Run>> {
    Expected<Run> fused =
        runMode(graph, Fusion::Fused, inputs, *shapes, options);
    if (!fused)
      return fused.error();
    Expected<Run> unfused =
        runMode(graph, Fusion::Unfused, inputs, *shapes, options);
    if (!unfused)
      return unfused.error();
    return std::pair{std::move(*fused), std::move(*unfused)};
  };
  Expected<std::pair<Run, Run>> runs = timeBoth();
  if (!runs)
    return runs.error();
  auto &[fused, unfused] = *runs;
  compareOutputs(graph, options, *reference, fused, unfused, report);
  report.fusedKernels = fused.kernels;
  report.unfusedKernels = unfused.kernels;
  report.fusedMs = fused.ms;
  report.unfusedMs = unfused.ms;
  auto notSlower = [&] {
    return report.fusedMs <=
           std::max(report.unfusedMs * (1 + options.noiseMargin),
                    report.unfusedMs + options.noiseFloorMs);
  };
  report.fusedNotSlower = !options.time || notSlower();
  if (!report.fusedNotSlower) {
    // A clock change while one mode was timed (an idle GPU ramping up)
    // slows only that mode: time both once more, the faster median of each
    // counting. A fused graph that is really slower stays slower.
    Expected<std::pair<Run, Run>> again = timeBoth();
    if (!again)
      return again.error();
    report.fusedMs = std::min(report.fusedMs, again->first.ms);
    report.unfusedMs = std::min(report.unfusedMs, again->second.ms);
    report.fusedNotSlower = notSlower();
  }
  return report;
}

/// One thread stores past its buffer by 2^40 bytes: far outside any
/// allocation, so the GPU faults.
static const char kOutOfBoundsPTX[] = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry kfuse_out_of_bounds_store(.param .u64 buffer) {
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [buffer];
  add.s64 %rd2, %rd1, 1099511627776;
  mov.b32 %r1, 1;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

Status launchOutOfBoundsStore() {
  using runtime::Driver;
  Expected<Driver *> driver = Driver::get();
  if (!driver)
    return driver.error();
  Driver &d = **driver;
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(256);
  if (!buffer)
    return buffer.error();
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  KFUSE_RETURN_IF_ERROR(d.check(d.cuModuleLoadData(&module, kOutOfBoundsPTX),
                                "cuModuleLoadData"));
  KFUSE_RETURN_IF_ERROR(d.check(
      d.cuModuleGetFunction(&function, module, "kfuse_out_of_bounds_store"),
      "cuModuleGetFunction"));
  CUdeviceptr pointer = reinterpret_cast<CUdeviceptr>(buffer->data());
  void *params[] = {&pointer};
  KFUSE_RETURN_IF_ERROR(d.check(
      d.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      "cuLaunchKernel"));
  return d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
}

} // namespace kfuse::testing
