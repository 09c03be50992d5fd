//===- Workspace.cpp - the device memory of one run -----------------------===//

#include "runtime/Workspace.h"

#include <algorithm>
#include <limits>
#include <mutex>

namespace kfuse::runtime {

Expected<CUdeviceptr> allocateCaptured(Driver &driver, size_t bytes,
                                       CUstream stream) {
  CUdeviceptr address = 0;
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuMemAllocAsync(&address, bytes, stream), "cuMemAllocAsync"));
  return address;
}

Status freeCaptured(Driver &driver, CUdeviceptr address, CUstream stream) {
  return driver.check(driver.cuMemFreeAsync(address, stream), "cuMemFreeAsync");
}

Status trimWorkspaces(Driver &driver) {
  KFUSE_RETURN_IF_ERROR(WorkspaceArenas::get(driver).trim());
  if (!driver.hasGraphs())
    return Status::ok();
  return driver.check(driver.cuDeviceGraphMemTrim(driver.device),
                      "cuDeviceGraphMemTrim");
}

Expected<WorkspaceUsage> workspaceUsage(Driver &driver) {
  WorkspaceUsage usage;
  usage.reservedBytes = WorkspaceArenas::get(driver).reservedBytes();
  if (!driver.hasGraphs())
    return usage;
  cuuint64_t reserved = 0, used = 0;
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuDeviceGetGraphMemAttribute(
          driver.device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved),
      "cuDeviceGetGraphMemAttribute"));
  KFUSE_RETURN_IF_ERROR(driver.check(
      driver.cuDeviceGetGraphMemAttribute(
          driver.device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used),
      "cuDeviceGetGraphMemAttribute"));
  usage.reservedBytes += reserved;
  usage.usedBytes = used;
  return usage;
}

WorkspaceArenas &WorkspaceArenas::get(Driver &driver) {
  // For the life of the process, as the primary context it allocates in.
  static WorkspaceArenas *instance = new WorkspaceArenas(driver);
  return *instance;
}

Status WorkspaceArenas::run(size_t bytes, CUstream stream,
                            const Enqueue &enqueue) {
  std::lock_guard<std::mutex> lock(mutex);
  Expected<Arena *> found = arenaOf(stream);
  if (!found)
    return found.error();
  Arena &arena = **found;
  arena.lastUse = ++uses;
  KFUSE_RETURN_IF_ERROR(grow(arena, bytes));
  if (arena.done)
    KFUSE_RETURN_IF_ERROR(driver.check(
        driver.cuStreamWaitEvent(stream, arena.done, 0), "cuStreamWaitEvent"));
  else
    KFUSE_RETURN_IF_ERROR(driver.check(
        driver.cuEventCreate(&arena.done, CU_EVENT_DISABLE_TIMING),
        "cuEventCreate"));
  Status status = enqueue(arena.address);
  // Recorded whatever happened: part of the run may be enqueued.
  Status recorded =
      driver.check(driver.cuEventRecord(arena.done, stream), "cuEventRecord");
  return status ? recorded : status;
}

Expected<WorkspaceArenas::Arena *> WorkspaceArenas::arenaOf(CUstream stream) {
  for (Arena &arena : arenas)
    if (arena.stream == stream)
      return &arena;
  if (arenas.size() == kMaxArenas) {
    auto oldest = std::min_element(
        arenas.begin(), arenas.end(), [](const Arena &a, const Arena &b) {
          return a.lastUse < b.lastUse;
        });
    KFUSE_RETURN_IF_ERROR(discard(*oldest));
    arenas.erase(oldest);
  }
  arenas.push_back(Arena{stream});
  return &arenas.back();
}

Status WorkspaceArenas::grow(Arena &arena, uint64_t bytes) {
  if (bytes <= arena.bytes)
    return Status::ok();
  KFUSE_RETURN_IF_ERROR(free(arena));
  uint64_t size = (bytes + kGranule - 1) / kGranule * kGranule;
  KFUSE_RETURN_IF_ERROR(
      driver.check(driver.cuMemAlloc_v2(&arena.address, size), "cuMemAlloc"));
  arena.bytes = size;
  return Status::ok();
}

Status WorkspaceArenas::free(Arena &arena) {
  if (arena.done)
    KFUSE_RETURN_IF_ERROR(driver.check(driver.cuEventSynchronize(arena.done),
                                       "cuEventSynchronize"));
  if (arena.address)
    KFUSE_RETURN_IF_ERROR(
        driver.check(driver.cuMemFree_v2(arena.address), "cuMemFree"));
  arena.address = 0;
  arena.bytes = 0;
  return Status::ok();
}

Status WorkspaceArenas::discard(Arena &arena) {
  KFUSE_RETURN_IF_ERROR(free(arena));
  if (arena.done)
    KFUSE_RETURN_IF_ERROR(driver.check(driver.cuEventDestroy_v2(arena.done),
                                       "cuEventDestroy"));
  arena.done = nullptr;
  return Status::ok();
}

Status WorkspaceArenas::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  for (Arena &arena : arenas)
    KFUSE_RETURN_IF_ERROR(discard(arena));
  arenas.clear();
  return Status::ok();
}

uint64_t WorkspaceArenas::reservedBytes() {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t total = 0;
  for (const Arena &arena : arenas)
    total += arena.bytes;
  return total;
}

/// `offset` rounded up to 256 bytes: what cuMemAlloc guarantees, more than
/// any kernel assumes (16-byte vectors, 128-byte TMA boxes).
static uint64_t aligned(uint64_t offset) {
  constexpr uint64_t kAlignment = 256;
  return (offset + kAlignment - 1) / kAlignment * kAlignment;
}

uint64_t WorkspaceLayout::append(uint64_t size) {
  uint64_t offset = aligned(bytes);
  bytes = offset + size;
  return offset;
}

/// When each buffer is in use: from the first step (launch, or the copies
/// after the last launch) that reads or writes it to the last.
static std::vector<std::pair<size_t, size_t>> lifetimes(const Plan &plan) {
  size_t never = std::numeric_limits<size_t>::max();
  std::vector<std::pair<size_t, size_t>> life(plan.buffers.size(),
                                              {never, 0});
  auto use = [&](uint32_t buffer, size_t step) {
    life[buffer].first = std::min(life[buffer].first, step);
    life[buffer].second = std::max(life[buffer].second, step);
  };
  for (size_t k = 0; k < plan.launches.size(); ++k)
    for (uint32_t b : plan.launches[k].buffers)
      use(b, k);
  for (const CopyDesc &c : plan.copies) {
    use(c.dst, plan.launches.size());
    use(c.src, plan.launches.size());
  }
  for (auto &[first, last] : life)
    if (first == never) // unused: live throughout, to be safe
      first = 0, last = plan.launches.size();
  return life;
}

WorkspaceLayout WorkspaceLayout::of(const Plan &plan) {
  // Temporaries whose lifetimes do not overlap share memory: the steps run
  // one after another (on one stream, or as a chain of graph nodes), so
  // once a temporary's last reader has run its bytes are free. Placed
  // largest first, each at the lowest 256-byte-aligned offset clear of the
  // placed ones it lives alongside (the greedy order of TFLite's arena
  // planner); ties by index, so the layout is the same on every compile.
  WorkspaceLayout layout;
  layout.offsets.assign(plan.buffers.size(), 0);
  std::vector<std::pair<size_t, size_t>> life = lifetimes(plan);
  std::vector<uint32_t> temps;
  for (uint32_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].role == BufferRole::Temp)
      temps.push_back(i);
  std::stable_sort(temps.begin(), temps.end(), [&](uint32_t a, uint32_t b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<uint32_t> placed; // by offset
  for (uint32_t t : temps) {
    uint64_t size = plan.buffers[t].bytes, offset = 0;
    for (uint32_t p : placed) {
      bool together = life[p].first <= life[t].second &&
                      life[t].first <= life[p].second;
      if (!together)
        continue;
      if (offset + size <= layout.offsets[p])
        break;
      offset = std::max(offset, aligned(layout.offsets[p] +
                                         plan.buffers[p].bytes));
    }
    layout.offsets[t] = offset;
    layout.bytes = std::max(layout.bytes, offset + size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), t,
                                   [&](uint32_t a, uint32_t b) {
                                     return layout.offsets[a] <
                                            layout.offsets[b];
                                   }),
                  t);
  }
  return layout;
}

static bool overlap(const CUdeviceptr *table, uint32_t a, uint64_t aBytes,
                    uint32_t b, uint64_t bBytes) {
  return aBytes && bBytes && table[a] < table[b] + bBytes &&
         table[b] < table[a] + aBytes;
}

static bool overlap(const Plan &plan, const CUdeviceptr *table, uint32_t a,
                    uint32_t b) {
  return overlap(table, a, plan.buffers[a].bytes, b, plan.buffers[b].bytes);
}

void outputsOverInputs(const Plan &plan, const CUdeviceptr *table,
                       std::vector<uint32_t> &redirected,
                       const uint64_t *inputBytes) {
  redirected.clear();
  uint32_t numIn = plan.numInputs(), numOut = plan.numOutputs();
  for (uint32_t o = numIn; o < numIn + numOut; ++o)
    for (uint32_t i = 0; i < numIn; ++i) {
      uint64_t in = inputBytes ? inputBytes[i] : plan.buffers[i].bytes,
               out = plan.buffers[o].bytes;
      bool sameBuffer = table[i] == table[o] && in == out;
      if (overlap(table, i, in, o, out) &&
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
