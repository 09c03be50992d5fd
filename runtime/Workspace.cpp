//===- Workspace.cpp - the device memory of one run -----------------------===//

#include "runtime/Workspace.h"

#include <limits>
#include <mutex>

namespace kfuse::runtime {

Expected<WorkspacePool *> WorkspacePool::get(Driver &driver) {
  // One pool for the life of the process, as the primary context it lives
  // in; created once, under the lock of the static's initialisation.
  static WorkspacePool *instance = new WorkspacePool(driver);
  static Status status = [&]() -> Status {
    CUmemPoolProps props = {};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = driver.device;
    KFUSE_RETURN_IF_ERROR(driver.check(
        driver.cuMemPoolCreate(&instance->pool, &props), "cuMemPoolCreate"));
    cuuint64_t keepAll = std::numeric_limits<cuuint64_t>::max();
    return driver.check(
        driver.cuMemPoolSetAttribute(instance->pool,
                                     CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     &keepAll),
        "cuMemPoolSetAttribute");
  }();
  if (!status)
    return status.error();
  return instance;
}

Expected<CUdeviceptr> WorkspacePool::allocate(size_t bytes, CUstream stream) {
  CUdeviceptr address = 0;
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuMemAllocFromPoolAsync(&address, bytes, pool, stream),
      "cuMemAllocFromPoolAsync"));
  return address;
}

Status WorkspacePool::release(CUdeviceptr address, CUstream stream) {
  return driver.check(driver.cuMemFreeAsync(address, stream), "cuMemFreeAsync");
}

Status WorkspacePool::trim() {
  if (driver.hasGraphs())
    KFUSE_RETURN_IF_ERROR(driver.check(
        driver.cuDeviceGraphMemTrim(driver.device), "cuDeviceGraphMemTrim"));
  return driver.check(driver.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo");
}

Expected<WorkspacePool::Usage> WorkspacePool::usage() {
  cuuint64_t reserved = 0, used = 0;
  KFUSE_RETURN_IF_ERROR(
      driver.check(driver.cuMemPoolGetAttribute(
                       pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
                   "cuMemPoolGetAttribute"));
  KFUSE_RETURN_IF_ERROR(
      driver.check(driver.cuMemPoolGetAttribute(
                       pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used),
                   "cuMemPoolGetAttribute"));
  Usage usage{reserved, used};
  // The temporaries of runs launched as CUDA graphs (LaunchGraph) are
  // reserved, not used: the driver keeps their memory mapped to the
  // graphs between launches, so its "used" figure is not what is in flight.
  if (driver.hasGraphs()) {
    cuuint64_t graphs = 0;
    KFUSE_RETURN_IF_ERROR(driver.check(
        driver.cuDeviceGetGraphMemAttribute(
            driver.device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &graphs),
        "cuDeviceGetGraphMemAttribute"));
    usage.reservedBytes += graphs;
  }
  return usage;
}

uint64_t WorkspaceLayout::append(uint64_t size) {
  // 256 bytes: what cuMemAlloc guarantees, more than any kernel assumes
  // (16-byte vectors, 128-byte TMA boxes).
  constexpr uint64_t kAlignment = 256;
  uint64_t offset = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  bytes = offset + size;
  return offset;
}

WorkspaceLayout WorkspaceLayout::of(const Plan &plan) {
  WorkspaceLayout layout;
  layout.offsets.assign(plan.buffers.size(), 0);
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].role == BufferRole::Temp)
      layout.offsets[i] = layout.append(plan.buffers[i].bytes);
  return layout;
}

static bool overlap(const Plan &plan, const CUdeviceptr *table, uint32_t a,
                    uint32_t b) {
  uint64_t aBytes = plan.buffers[a].bytes, bBytes = plan.buffers[b].bytes;
  return aBytes && bBytes && table[a] < table[b] + bBytes &&
         table[b] < table[a] + aBytes;
}

void outputsOverInputs(const Plan &plan, const CUdeviceptr *table,
                       std::vector<uint32_t> &redirected) {
  redirected.clear();
  uint32_t numIn = plan.numInputs(), numOut = plan.numOutputs();
  for (uint32_t o = numIn; o < numIn + numOut; ++o)
    for (uint32_t i = 0; i < numIn; ++i) {
      bool sameBuffer = table[i] == table[o] &&
                        plan.buffers[i].bytes == plan.buffers[o].bytes;
      if (overlap(plan, table, i, o) &&
          !(sameBuffer && plan.allowsInPlace(i, o))) {
        redirected.push_back(o);
        break;
      }
    }
}

std::optional<std::pair<uint32_t, uint32_t>>
overlappingOutputs(const Plan &plan, const CUdeviceptr *table) {
  uint32_t numIn = plan.numInputs(), end = numIn + plan.numOutputs();
  for (uint32_t a = numIn; a < end; ++a)
    for (uint32_t b = a + 1; b < end; ++b)
      if (overlap(plan, table, a, b))
        return std::pair{a, b};
  return std::nullopt;
}

} // namespace kfuse::runtime
