//===- WorkspaceTest.cpp - where a plan's temporaries lie -----------------===//
//
// WorkspaceLayout::of lets temporaries that are never in use at the same
// step share bytes. Checked on plans whose lifetimes are known: no two
// temporaries in use at one step overlap, dead ones are reused, offsets
// are 256-byte aligned, and the layout is the same every time. The
// streams' workspaces (WorkspaceArenas) against a fake driver: what each
// run allocates, waits for and records, growth only after the stream's
// last run, eviction of the least recently used stream's buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/Plan.h"
#include "runtime/Workspace.h"

#include <gtest/gtest.h>

#include <random>

using namespace kfuse;
using namespace kfuse::runtime;

namespace {

/// A plan of one input, one output and `temps` temporaries of the given
/// sizes; launches[k] lists the buffers launch k uses.
Plan planOf(const std::vector<uint64_t> &tempBytes,
            const std::vector<std::vector<uint32_t>> &launches) {
  Plan plan;
  plan.buffers.push_back({BufferRole::Input, 0, DType::f32, {1}, 4});
  plan.buffers.push_back({BufferRole::Output, 0, DType::f32, {1}, 4});
  for (size_t t = 0; t < tempBytes.size(); ++t)
    plan.buffers.push_back({BufferRole::Temp, uint32_t(t), DType::f32,
                            {int64_t(tempBytes[t] / 4)}, tempBytes[t]});
  for (const std::vector<uint32_t> &buffers : launches) {
    LaunchDesc l;
    l.kernel = "k";
    l.grid = l.block = 1;
    l.buffers = buffers;
    plan.launches.push_back(l);
  }
  return plan;
}

/// Every pair of temporaries used by one launch: disjoint bytes.
void expectNoLiveOverlap(const Plan &plan, const WorkspaceLayout &layout) {
  size_t n = plan.buffers.size();
  std::vector<size_t> first(n, SIZE_MAX), last(n, 0);
  for (size_t k = 0; k < plan.launches.size(); ++k)
    for (uint32_t b : plan.launches[k].buffers) {
      first[b] = std::min(first[b], k);
      last[b] = std::max(last[b], k);
    }
  for (uint32_t a = 0; a < plan.buffers.size(); ++a) {
    if (plan.buffers[a].role != BufferRole::Temp)
      continue;
    EXPECT_EQ(layout.offsets[a] % 256, 0u) << "temporary " << a;
    EXPECT_LE(layout.offsets[a] + plan.buffers[a].bytes, layout.bytes);
    for (uint32_t b = a + 1; b < plan.buffers.size(); ++b) {
      if (plan.buffers[b].role != BufferRole::Temp)
        continue;
      bool together = first[a] <= last[b] && first[b] <= last[a];
      bool disjoint =
          layout.offsets[a] + plan.buffers[a].bytes <= layout.offsets[b] ||
          layout.offsets[b] + plan.buffers[b].bytes <= layout.offsets[a];
      EXPECT_TRUE(!together || disjoint)
          << "temporaries " << a << " and " << b << " are in use together "
          << "but share bytes";
    }
  }
}

TEST(WorkspaceLayout, AChainReusesWhatItsLastReaderFreed) {
  // x -> t0 -> t1 -> t2 -> t3 -> y, each 1 MB: two are live at a time.
  const uint64_t mb = 1 << 20;
  Plan plan = planOf({mb, mb, mb, mb},
                     {{0, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 1}});
  WorkspaceLayout layout = WorkspaceLayout::of(plan);
  expectNoLiveOverlap(plan, layout);
  EXPECT_EQ(layout.bytes, 2 * mb);
  EXPECT_EQ(layout.offsets[2], layout.offsets[4]);
}

TEST(WorkspaceLayout, ARandomPlanNeverOverlapsLiveTemporaries) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    size_t temps = 1 + random() % 12, launches = 1 + random() % 10;
    std::vector<uint64_t> bytes;
    uint64_t sum = 0;
    for (size_t t = 0; t < temps; ++t) {
      bytes.push_back(1 + random() % 5000);
      sum += (bytes.back() + 255) / 256 * 256;
    }
    std::vector<std::vector<uint32_t>> uses(launches);
    for (auto &u : uses)
      for (int i = 0; i < 3; ++i)
        u.push_back(random() % (temps + 2));
    Plan plan = planOf(bytes, uses);
    WorkspaceLayout layout = WorkspaceLayout::of(plan);
    expectNoLiveOverlap(plan, layout);
    EXPECT_LE(layout.bytes, sum) << "round " << round;
    WorkspaceLayout again = WorkspaceLayout::of(plan);
    EXPECT_EQ(again.offsets, layout.offsets) << "round " << round;
  }
}

} // namespace

namespace {

/// An output right after the part of an input a call uses: the plan's
/// (a bucket's) size of the input would overlap it, the call's does not.
TEST(OutputsOverInputs, ACallsInputSizeDecidesOverlap) {
  Plan plan;
  plan.buffers.push_back({BufferRole::Input, 0, DType::f32, {1024}, 4096});
  plan.buffers.push_back({BufferRole::Output, 0, DType::f32, {16}, 64});
  CUdeviceptr table[] = {0x10000, 0x10000 + 600 * 4};
  std::vector<uint32_t> redirected;
  outputsOverInputs(plan, table, redirected);
  EXPECT_EQ(redirected, (std::vector<uint32_t>{1})) << "the plan's size";
  uint64_t callBytes[] = {600 * 4};
  outputsOverInputs(plan, table, redirected, callBytes);
  EXPECT_TRUE(redirected.empty()) << "the call's size";
  callBytes[0] = 601 * 4; // one element into the output
  outputsOverInputs(plan, table, redirected, callBytes);
  EXPECT_EQ(redirected, (std::vector<uint32_t>{1}));
}

} // namespace

//===----------------------------------------------------------------------===//
// The streams' workspaces, against a fake driver
//===----------------------------------------------------------------------===//

namespace {

/// What the fake driver was asked, in order ("alloc 2097152", "wait s1",
/// ...); addresses from a counter, events and streams by number.
struct FakeDriver {
  static std::vector<std::string> calls;
  static CUdeviceptr next;
  static uintptr_t events;
  static std::string stream(CUstream s) {
    return "s" + std::to_string(reinterpret_cast<uintptr_t>(s));
  }
  static std::string event(CUevent e) {
    return "e" + std::to_string(reinterpret_cast<uintptr_t>(e));
  }
  static CUresult alloc(CUdeviceptr *p, size_t bytes) {
    *p = next;
    next += 0x10000000;
    calls.push_back("alloc " + std::to_string(bytes));
    return CUDA_SUCCESS;
  }
  static CUresult free(CUdeviceptr p) {
    calls.push_back("free " + std::to_string(p));
    return CUDA_SUCCESS;
  }
  static CUresult create(CUevent *e, unsigned) {
    *e = reinterpret_cast<CUevent>(++events);
    calls.push_back("create " + event(*e));
    return CUDA_SUCCESS;
  }
  static CUresult destroy(CUevent e) {
    calls.push_back("destroy " + event(e));
    return CUDA_SUCCESS;
  }
  static CUresult record(CUevent e, CUstream s) {
    calls.push_back("record " + event(e) + " " + stream(s));
    return CUDA_SUCCESS;
  }
  static CUresult synchronize(CUevent e) {
    calls.push_back("sync " + event(e));
    return CUDA_SUCCESS;
  }
  static CUresult wait(CUstream s, CUevent e, unsigned) {
    calls.push_back("wait " + stream(s) + " " + event(e));
    return CUDA_SUCCESS;
  }

  static std::unique_ptr<Driver> make() {
    calls.clear();
    next = 0x10000000;
    events = 0;
    std::unique_ptr<Driver> d = Driver::unopened();
    d->cuMemAlloc_v2 = alloc;
    d->cuMemFree_v2 = free;
    d->cuEventCreate = create;
    d->cuEventDestroy_v2 = destroy;
    d->cuEventRecord = record;
    d->cuEventSynchronize = synchronize;
    d->cuStreamWaitEvent = wait;
    return d;
  }
};
std::vector<std::string> FakeDriver::calls;
CUdeviceptr FakeDriver::next = 0;
uintptr_t FakeDriver::events = 0;

CUstream streamNumber(uintptr_t n) { return reinterpret_cast<CUstream>(n); }

/// A run of `bytes` on stream `n` that records the address it was given.
Status runOn(WorkspaceArenas &arenas, uintptr_t n, size_t bytes,
             CUdeviceptr *address = nullptr) {
  return arenas.run(bytes, streamNumber(n), [&](CUdeviceptr a) {
    FakeDriver::calls.push_back("enqueue at " + std::to_string(a));
    if (address)
      *address = a;
    return Status::ok();
  });
}

using Calls = std::vector<std::string>;

/// A stream's first run allocates a whole granule and orders nothing; the
/// next on it waits for the first's event; a larger one waits for the
/// stream's last run (sync) before moving the buffer.
TEST(WorkspaceArenas, GrowOnlyAfterTheStreamsLastRun) {
  std::unique_ptr<Driver> d = FakeDriver::make();
  WorkspaceArenas arenas(*d);
  CUdeviceptr first = 0, second = 0;
  ASSERT_TRUE(runOn(arenas, 1, 1000, &first));
  EXPECT_EQ(FakeDriver::calls,
            (Calls{"alloc 2097152", "create e1",
                   "enqueue at " + std::to_string(first), "record e1 s1"}));
  EXPECT_EQ(arenas.reservedBytes(), WorkspaceArenas::kGranule);
  FakeDriver::calls.clear();
  ASSERT_TRUE(runOn(arenas, 1, WorkspaceArenas::kGranule, &second));
  EXPECT_EQ(second, first) << "a run that fits reuses the buffer";
  EXPECT_EQ(FakeDriver::calls,
            (Calls{"wait s1 e1", "enqueue at " + std::to_string(first),
                   "record e1 s1"}));
  FakeDriver::calls.clear();
  ASSERT_TRUE(runOn(arenas, 1, WorkspaceArenas::kGranule + 1, &second));
  EXPECT_NE(second, first);
  EXPECT_EQ(FakeDriver::calls,
            (Calls{"sync e1", "free " + std::to_string(first),
                   "alloc 4194304", "wait s1 e1",
                   "enqueue at " + std::to_string(second), "record e1 s1"}));
  EXPECT_EQ(arenas.reservedBytes(), 2 * WorkspaceArenas::kGranule);
}

/// Streams have buffers of their own; past kMaxArenas the least recently
/// used is freed once its last run is done, and trim frees them all.
TEST(WorkspaceArenas, StreamsBeyondTheLimitEvictTheLeastRecentlyUsed) {
  std::unique_ptr<Driver> d = FakeDriver::make();
  WorkspaceArenas arenas(*d);
  std::vector<CUdeviceptr> at(WorkspaceArenas::kMaxArenas + 2);
  for (uintptr_t s = 1; s <= WorkspaceArenas::kMaxArenas; ++s)
    ASSERT_TRUE(runOn(arenas, s, 100, &at[s]));
  for (uintptr_t s = 2; s <= WorkspaceArenas::kMaxArenas; ++s)
    EXPECT_NE(at[s], at[s - 1]) << "streams share no buffer";
  ASSERT_TRUE(runOn(arenas, 1, 100)); // stream 2 is now the oldest
  FakeDriver::calls.clear();
  uintptr_t extra = WorkspaceArenas::kMaxArenas + 1;
  ASSERT_TRUE(runOn(arenas, extra, 100, &at[extra]));
  EXPECT_EQ(FakeDriver::calls,
            (Calls{"sync e2", "free " + std::to_string(at[2]), "destroy e2",
                   "alloc 2097152", "create e9",
                   "enqueue at " + std::to_string(at[extra]),
                   "record e9 s" + std::to_string(extra)}));
  EXPECT_EQ(arenas.reservedBytes(),
            WorkspaceArenas::kMaxArenas * WorkspaceArenas::kGranule);
  FakeDriver::calls.clear();
  ASSERT_TRUE(arenas.trim());
  EXPECT_EQ(arenas.reservedBytes(), 0u);
  size_t freed = 0, synced = 0;
  for (const std::string &call : FakeDriver::calls) {
    freed += call.rfind("free ", 0) == 0;
    synced += call.rfind("sync ", 0) == 0;
  }
  EXPECT_EQ(freed, WorkspaceArenas::kMaxArenas);
  EXPECT_EQ(synced, WorkspaceArenas::kMaxArenas);
}

/// A run whose enqueue fails part way still records its end (the work
/// already enqueued uses the buffer), and the failure is returned.
TEST(WorkspaceArenas, AFailedEnqueueStillRecordsItsEnd) {
  std::unique_ptr<Driver> d = FakeDriver::make();
  WorkspaceArenas arenas(*d);
  Status status = arenas.run(100, streamNumber(3), [](CUdeviceptr) {
    return Status(Error(ErrorCode::DeviceError, "launch failed"));
  });
  EXPECT_FALSE(status);
  EXPECT_EQ(status.message(), "launch failed");
  ASSERT_FALSE(FakeDriver::calls.empty());
  EXPECT_EQ(FakeDriver::calls.back(), "record e1 s3");
}

} // namespace
