//===- ExecutableLaunch.cpp - enqueueing a run of a specialisation --------===//
//
// A run goes out as the specialisation's CUDA graph (built on first use,
// its nodes updated where the buffers moved or the sizes taken at run time
// changed) or kernel by kernel, with its temporaries and any redirected
// outputs in a workspace: the stream's arena, or on a stream being captured
// a memory node of the caller's graph.
// profile() times each kernel with events between them.
//
//===----------------------------------------------------------------------===//

#include "compiler/ExecutableImpl.h"
#include "runtime/Debug.h"

#include <algorithm>

namespace kfuse::detail {

Status ExecutableImpl::launch(Driver &d, Specialization &spec,
                              const DeviceTensor *in, const DeviceTensor *out,
                              CUstream stream, CUevent *events) {
  const runtime::Plan &plan = spec.entry->plan;
  size_t numIn = inputs.size(), numOut = outputs.size();
  for (size_t i = 0; i < numIn; ++i)
    spec.table[i] = reinterpret_cast<CUdeviceptr>(in[i].data);
  for (size_t i = 0; i < numOut; ++i)
    spec.table[numIn + i] = reinterpret_cast<CUdeviceptr>(out[i].data);
  if (auto pair = runtime::overlappingOutputs(plan, spec.table.data()))
    return invalid("run: outputs '" + outputs[pair->first - numIn].name +
                   "' and '" + outputs[pair->second - numIn].name +
                   "' overlap in memory; give each output a buffer of its "
                   "own");
  if (spec.runtime) {
    spec.extents.fill(plan,
                      [&](uint32_t input) { return in[input].shape.begin(); });
    // The call's inputs, not the bucket's, are what an output may overlap.
    for (size_t i = 0; i < numIn; ++i) {
      spec.inputBytes[i] = dtypeSize(plan.buffers[i].dtype);
      for (int64_t d : in[i].shape)
        spec.inputBytes[i] *= uint64_t(d);
    }
  }
  // Outputs over inputs that the plan cannot compute in place are computed
  // into the workspace, after the temporaries, and copied out at the end.
  runtime::outputsOverInputs(plan, spec.table.data(), spec.redirected,
                             spec.runtime ? spec.inputBytes.data() : nullptr);
  // A stream being captured into the caller's own graph gets the kernels
  // as nodes of that graph, and its workspace as that graph's allocation.
  // A failed query counts as a capture.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  bool captured = d.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
                  capture != CU_STREAM_CAPTURE_STATUS_NONE;
  if (!events && spec.redirected.empty() && usesGraph(d, spec, captured)) {
    Expected<bool> launched = false;
    KFUSE_RETURN_IF_ERROR(withWorkspace(
        d, spec, spec.workspace, stream, false, [&]() -> Status {
          launched = launchGraph(d, spec, stream);
          return launched ? Status::ok() : Status(launched.error());
        }));
    if (*launched)
      return Status::ok();
  }
  return enqueueWithWorkspace(d, spec, out, stream, events, captured);
}

Status ExecutableImpl::withWorkspace(Driver &d, Specialization &spec,
                                     const runtime::WorkspaceLayout &layout,
                                     CUstream stream, bool captured,
                                     const std::function<Status()> &enqueue) {
  if (layout.bytes == 0)
    return enqueue();
  size_t callers = inputs.size() + outputs.size();
  auto place = [&](CUdeviceptr workspace) {
    for (size_t i = callers; i < spec.table.size(); ++i)
      spec.table[i] = workspace + layout.offsets[i];
    for (uint32_t o : spec.redirected)
      spec.table[o] = workspace + layout.offsets[o];
  };
  if (!captured)
    return runtime::WorkspaceArenas::get(d).run(
        layout.bytes, stream, [&](CUdeviceptr workspace) {
          place(workspace);
          return enqueue();
        });
  Expected<CUdeviceptr> workspace =
      runtime::allocateCaptured(d, layout.bytes, stream);
  if (!workspace)
    return workspace.error();
  place(*workspace);
  Status status = enqueue();
  // Freed in stream order whatever happened: the work already enqueued
  // may still use it.
  Status freed = runtime::freeCaptured(d, *workspace, stream);
  return status ? freed : status;
}

Status ExecutableImpl::enqueueWithWorkspace(Driver &d, Specialization &spec,
                                            const DeviceTensor *out,
                                            CUstream stream, CUevent *events,
                                            bool captured) {
  const runtime::Plan &plan = spec.entry->plan;
  size_t numIn = inputs.size();
  runtime::WorkspaceLayout &layout = spec.runLayout;
  layout = spec.workspace; // keeps its capacity: no allocation
  for (uint32_t o : spec.redirected)
    layout.offsets[o] = layout.append(plan.buffers[o].bytes);
  return withWorkspace(d, spec, layout, stream, captured, [&]() -> Status {
    KFUSE_RETURN_IF_ERROR(enqueue(d, spec, stream, events));
    for (uint32_t o : spec.redirected)
      KFUSE_RETURN_IF_ERROR(d.check(
          d.cuMemcpyDtoDAsync_v2(
              reinterpret_cast<CUdeviceptr>(out[o - numIn].data),
              spec.table[o], plan.buffers[o].bytes, stream),
          "cuMemcpyDtoDAsync"));
    return Status::ok();
  });
}

bool ExecutableImpl::usesGraph(Driver &d, const Specialization &spec,
                               bool captured) const {
  return options.launch != Launch::Kernels && !spec.graphFailed &&
         d.hasGraphs() && !captured &&
         (options.launch != Launch::Auto || spec.kernels >= kAutoGraphKernels);
}

Expected<bool> ExecutableImpl::launchGraph(Driver &d, Specialization &spec,
                                           CUstream stream) {
  if (spec.graph) {
    KFUSE_RETURN_IF_ERROR(
        spec.graph->launch(spec.table.data(), spec.extents, stream));
    return true;
  }
  auto start = std::chrono::steady_clock::now();
  const CacheEntry &entry = *spec.entry;
  Expected<std::unique_ptr<runtime::LaunchGraph>> graph =
      runtime::LaunchGraph::create(d, entry.plan, entry.module,
                                   spec.table.data(), spec.extents);
  if (!graph) {
    if (options.launch == Launch::Graph)
      return graph.error();
    debugLog("launching kernel by kernel: " + graph.error().message());
    spec.graphFailed = true;
    return false;
  }
  spec.graph = graph.take();
  double built = msSince(start);
  KFUSE_RETURN_IF_ERROR(
      spec.graph->launch(spec.table.data(), spec.extents, stream));
  if (debugEnabled())
    debugLog("a CUDA graph of " + std::to_string(spec.kernels) +
             " kernels built in " + std::to_string(built) +
             " ms, first launched in " + std::to_string(msSince(start) - built) +
             " ms (" + std::to_string(spec.workspace.bytes) +
             " bytes of temporaries)");
  return true;
}

Status ExecutableImpl::enqueue(Driver &d, Specialization &spec,
                               CUstream stream, CUevent *events) {
  const runtime::Plan &plan = spec.entry->plan;
  void *params[runtime::kMaxKernelParams];
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    const runtime::LaunchDesc &l = plan.launches[k];
    if (events)
      KFUSE_RETURN_IF_ERROR(
          d.check(d.cuEventRecord(events[k], stream), "cuEventRecord"));
    if (l.grid == 0)
      continue;
    for (const runtime::ZeroDesc &z : plan.zeroes)
      if (z.launch == k)
        KFUSE_RETURN_IF_ERROR(
            d.check(d.cuMemsetD8Async(spec.table[z.buffer], 0,
                                      plan.buffers[z.buffer].bytes, stream),
                    "cuMemsetD8Async"));
    spec.tensorMaps.resize(plan.launches.size());
    KFUSE_RETURN_IF_ERROR(runtime::kernelParams(d, plan, l, spec.table.data(),
                                                spec.extents.of(k),
                                                spec.tensorMaps[k], params));
    KFUSE_RETURN_IF_ERROR(d.check(
        d.cuLaunchKernel(spec.entry->module.functions[k], l.grid, 1, 1, l.block,
                         1, 1, l.sharedBytes, stream, params, nullptr),
        "cuLaunchKernel"));
  }
  if (events)
    KFUSE_RETURN_IF_ERROR(
        d.check(d.cuEventRecord(events[plan.launches.size()], stream),
                "cuEventRecord"));
  for (const runtime::CopyDesc &c : plan.copies)
    KFUSE_RETURN_IF_ERROR(
        d.check(d.cuMemcpyDtoDAsync_v2(spec.table[c.dst], spec.table[c.src],
                                       plan.buffers[c.dst].bytes, stream),
                "cuMemcpyDtoDAsync"));
  return Status::ok();
}

} // namespace kfuse::detail

namespace kfuse {

using detail::invalid;
using runtime::Driver;

Expected<std::vector<KernelProfile>>
Executable::profile(const DeviceTensor *in, size_t numIn,
                    const DeviceTensor *out, size_t numOut, int repetitions,
                    const Roofline &roofline) {
  detail::ExecutableImpl &impl = *impl_;
  if (numIn != impl.inputs.size() || numOut != impl.outputs.size())
    return invalid("profile: the graph takes " +
                   std::to_string(impl.inputs.size()) + " inputs and " +
                   std::to_string(impl.outputs.size()) + " outputs")
        .error();
  std::lock_guard<std::mutex> lock(impl.mutex);
  Driver *d = nullptr;
  Expected<detail::Specialization *> spec =
      detail::prepare(impl, in, numIn, out, numOut, d);
  if (!spec)
    return spec.error();
  const runtime::Plan &plan = (*spec)->entry->plan;
  size_t kernels = plan.launches.size();
  std::vector<CUevent> events(kernels + 1, nullptr);
  Status status;
  for (CUevent &e : events)
    if (status)
      status = d->check(d->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<std::vector<double>> times(kernels);
  for (int r = -1; status && r < repetitions; ++r) { // r = -1: warm-up
    status = impl.launch(*d, **spec, in, out, nullptr, events.data());
    if (status)
      status = d->check(d->cuEventSynchronize(events.back()),
                        "cuEventSynchronize");
    for (size_t k = 0; status && r >= 0 && k < kernels; ++k) {
      float ms = 0;
      status = d->check(d->cuEventElapsedTime_v2(&ms, events[k], events[k + 1]),
                        "cuEventElapsedTime");
      times[k].push_back(ms);
    }
  }
  for (CUevent e : events)
    if (e)
      d->cuEventDestroy_v2(e);
  if (!status)
    return status.error();
  std::vector<KernelReport> reports =
      runtime::kernelReports(plan, &(*spec)->entry->module);
  std::vector<KernelProfile> profiles;
  for (size_t k = 0; k < kernels; ++k) {
    std::sort(times[k].begin(), times[k].end());
    KernelProfile p;
    p.name = reports[k].name;
    p.ms = times[k][times[k].size() / 2];
    p.bytes = reports[k].bytes;
    p.flops = reports[k].flops;
    double seconds = p.ms * 1e-3;
    p.gbPerSecond = seconds > 0 ? p.bytes / seconds / 1e9 : 0;
    p.tflopPerSecond = seconds > 0 ? p.flops / seconds / 1e12 : 0;
    double memory = p.bytes / roofline.bytesPerSecond;
    double compute = p.flops / roofline.flopsPerSecond;
    double ceiling = std::max(memory, compute);
    p.rooflineFraction = seconds > 0 ? ceiling / seconds : 0;
    p.bound = p.ms < 0.01 && ceiling < seconds / 4 ? "launch overhead"
              : memory >= compute                   ? "memory"
                                                    : "compute";
    profiles.push_back(p);
  }
  return profiles;
}

} // namespace kfuse
