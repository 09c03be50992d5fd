//===- LaunchGraph.cpp - a plan's kernels as one CUDA graph ---------------===//

#include "runtime/LaunchGraph.h"

#include <algorithm>

namespace kfuse::runtime {

ExtentValues::ExtentValues(const Plan &plan) {
  for (const LaunchDesc &l : plan.launches) {
    offsets.push_back(values.size());
    values.resize(values.size() + l.extents.size(), 0);
  }
}

Status kernelParams(Driver &d, const Plan &plan, const LaunchDesc &launch,
                    CUdeviceptr *table, const int64_t *extents,
                    LaunchTensorMaps &maps, void **params) {
  size_t scalars = launch.buffers.size() + launch.extents.size();
  if (scalars + launch.tensorMaps.size() > kMaxKernelParams)
    return Error(ErrorCode::CompileFailed,
                 "kernel " + launch.kernel + " has too many parameters");
  for (size_t p = 0; p < launch.buffers.size(); ++p)
    params[p] = &table[launch.buffers[p]];
  for (size_t e = 0; e < launch.extents.size(); ++e)
    params[launch.buffers.size() + e] = const_cast<int64_t *>(&extents[e]);
  if (launch.tensorMaps.empty())
    return Status::ok();
  KFUSE_RETURN_IF_ERROR(maps.update(d, plan, launch, table, extents));
  for (size_t m = 0; m < launch.tensorMaps.size(); ++m)
    params[scalars + m] = maps.param(m);
  return Status::ok();
}

Expected<std::unique_ptr<LaunchGraph>>
LaunchGraph::create(Driver &d, const Plan &plan, const LoadedModule &module,
                    const CUdeviceptr *table, const ExtentValues &extents) {
  if (!d.hasGraphs())
    return Error(ErrorCode::DeviceError,
                 "the CUDA driver has no graphs (driver 12.0 or later)");
  std::unique_ptr<LaunchGraph> g(new LaunchGraph(d, plan, module));
  size_t buffers = plan.buffers.size();
  g->table.assign(table, table + buffers);
  g->extents = extents;
  g->launchesOf.resize(buffers);
  g->copiesOf.resize(buffers);
  g->zeroesOf.resize(buffers);
  for (uint32_t k = 0; k < plan.launches.size(); ++k)
    for (uint32_t b : plan.launches[k].buffers)
      if (g->launchesOf[b].empty() || g->launchesOf[b].back() != k)
        g->launchesOf[b].push_back(k);
  for (uint32_t c = 0; c < plan.copies.size(); ++c)
    for (uint32_t b : {plan.copies[c].dst, plan.copies[c].src})
      g->copiesOf[b].push_back(c);
  for (uint32_t z = 0; z < plan.zeroes.size(); ++z)
    g->zeroesOf[plan.zeroes[z].buffer].push_back(z);
  KFUSE_RETURN_IF_ERROR(g->build());
  return g;
}

LaunchGraph::~LaunchGraph() {
  // An executable graph still running is freed when it completes.
  if (exec)
    driver.cuGraphExecDestroy(exec);
  if (graph)
    driver.cuGraphDestroy(graph);
}

/// The graph: (zeroes ->) kernels -> copies, each node after the one
/// before, as the launches follow each other on a stream.
Status LaunchGraph::build() {
  Driver &d = driver;
  KFUSE_RETURN_IF_ERROR(d.check(d.cuGraphCreate(&graph, 0), "cuGraphCreate"));
  CUgraphNode last = nullptr;
  maps.resize(plan.launches.size());
  kernelNodes.assign(plan.launches.size(), nullptr);
  zeroNodes.assign(plan.zeroes.size(), nullptr);
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    for (size_t z = 0; z < plan.zeroes.size(); ++z)
      if (plan.zeroes[z].launch == k)
        KFUSE_RETURN_IF_ERROR(addZero(z, last));
    KFUSE_RETURN_IF_ERROR(addKernel(k, last));
  }
  copyNodes.assign(plan.copies.size(), nullptr);
  for (size_t c = 0; c < plan.copies.size(); ++c)
    KFUSE_RETURN_IF_ERROR(addCopy(c, last));
  return d.check(d.cuGraphInstantiateWithFlags(&exec, graph, 0),
                 "cuGraphInstantiate");
}

CUDA_KERNEL_NODE_PARAMS LaunchGraph::kernelNodeParams(size_t k,
                                                      void **params) {
  const LaunchDesc &l = plan.launches[k];
  CUDA_KERNEL_NODE_PARAMS p = {};
  p.func = module.functions[k];
  p.gridDimX = l.grid;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = l.block;
  p.blockDimY = p.blockDimZ = 1;
  p.sharedMemBytes = l.sharedBytes;
  p.kernelParams = params;
  return p;
}

Status LaunchGraph::addKernel(size_t k, CUgraphNode &last) {
  if (plan.launches[k].grid == 0)
    return Status::ok();
  void *params[kMaxKernelParams];
  KFUSE_RETURN_IF_ERROR(kernelParams(driver, plan, plan.launches[k],
                                     table.data(), extents.of(k), maps[k],
                                     params));
  CUDA_KERNEL_NODE_PARAMS p = kernelNodeParams(k, params);
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuGraphAddKernelNode_v2(&kernelNodes[k], graph, &last,
                                     last ? 1 : 0, &p),
      "cuGraphAddKernelNode"));
  last = kernelNodes[k];
  return Status::ok();
}

CUDA_MEMCPY3D LaunchGraph::copyParams(size_t c) const {
  const CopyDesc &copy = plan.copies[c];
  CUDA_MEMCPY3D p = {};
  p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = table[copy.src];
  p.dstDevice = table[copy.dst];
  p.WidthInBytes = plan.buffers[copy.dst].bytes;
  p.Height = p.Depth = 1;
  return p;
}

Status LaunchGraph::addCopy(size_t c, CUgraphNode &last) {
  if (plan.buffers[plan.copies[c].dst].bytes == 0)
    return Status::ok();
  CUDA_MEMCPY3D p = copyParams(c);
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuGraphAddMemcpyNode(&copyNodes[c], graph, &last, last ? 1 : 0,
                                  &p, driver.context),
      "cuGraphAddMemcpyNode"));
  last = copyNodes[c];
  return Status::ok();
}

CUDA_MEMSET_NODE_PARAMS LaunchGraph::zeroParams(size_t z) const {
  uint32_t buffer = plan.zeroes[z].buffer;
  CUDA_MEMSET_NODE_PARAMS p = {};
  p.dst = table[buffer];
  p.value = 0;
  p.elementSize = 1;
  p.width = plan.buffers[buffer].bytes;
  p.height = 1;
  return p;
}

Status LaunchGraph::addZero(size_t z, CUgraphNode &last) {
  if (plan.buffers[plan.zeroes[z].buffer].bytes == 0)
    return Status::ok();
  CUDA_MEMSET_NODE_PARAMS p = zeroParams(z);
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuGraphAddMemsetNode(&zeroNodes[z], graph, &last, last ? 1 : 0,
                                  &p, driver.context),
      "cuGraphAddMemsetNode"));
  last = zeroNodes[z];
  return Status::ok();
}

/// Points the nodes that use a buffer that moved at its new address
/// (`newTable`), and records the addresses the nodes now hold.
Status LaunchGraph::refresh(const CUdeviceptr *newTable,
                            const ExtentValues &sizes) {
  Driver &d = driver;
  staleLaunches.assign(plan.launches.size(), 0);
  staleCopies.assign(plan.copies.size(), 0);
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    size_t n = plan.launches[k].extents.size();
    if (n && !std::equal(sizes.of(k), sizes.of(k) + n, extents.of(k))) {
      std::copy(sizes.of(k), sizes.of(k) + n, extents.of(k));
      staleLaunches[k] = 1;
    }
  }
  for (size_t b = 0; b < table.size(); ++b) {
    if (table[b] == newTable[b])
      continue;
    table[b] = newTable[b];
    for (uint32_t k : launchesOf[b])
      staleLaunches[k] = 1;
    for (uint32_t c : copiesOf[b])
      staleCopies[c] = 1;
    for (uint32_t z : zeroesOf[b])
      if (zeroNodes[z]) {
        CUDA_MEMSET_NODE_PARAMS p = zeroParams(z);
        KFUSE_RETURN_IF_ERROR(d.check(
            d.cuGraphExecMemsetNodeSetParams(exec, zeroNodes[z], &p, d.context),
            "cuGraphExecMemsetNodeSetParams"));
        ++updates;
      }
  }
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    if (!staleLaunches[k] || !kernelNodes[k])
      continue;
    void *params[kMaxKernelParams];
    KFUSE_RETURN_IF_ERROR(kernelParams(d, plan, plan.launches[k],
                                       table.data(), extents.of(k), maps[k],
                                       params));
    CUDA_KERNEL_NODE_PARAMS p = kernelNodeParams(k, params);
    KFUSE_RETURN_IF_ERROR(
        d.check(d.cuGraphExecKernelNodeSetParams_v2(exec, kernelNodes[k], &p),
                "cuGraphExecKernelNodeSetParams"));
    ++updates;
  }
  for (size_t c = 0; c < plan.copies.size(); ++c) {
    if (!staleCopies[c] || !copyNodes[c])
      continue;
    CUDA_MEMCPY3D p = copyParams(c);
    KFUSE_RETURN_IF_ERROR(d.check(
        d.cuGraphExecMemcpyNodeSetParams(exec, copyNodes[c], &p, d.context),
        "cuGraphExecMemcpyNodeSetParams"));
    ++updates;
  }
  return Status::ok();
}

Status LaunchGraph::launch(const CUdeviceptr *newTable,
                           const ExtentValues &sizes, CUstream stream) {
  if (!std::equal(table.begin(), table.end(), newTable) ||
      !(sizes == extents)) {
    if (Status s = refresh(newTable, sizes); !s) {
      // Some nodes may hold old addresses or sizes: refresh them all next
      // time.
      std::fill(table.begin(), table.end(), 0);
      extents = ExtentValues(plan);
      return s;
    }
  }
  return driver.check(driver.cuGraphLaunch(exec, stream), "cuGraphLaunch");
}

} // namespace kfuse::runtime
