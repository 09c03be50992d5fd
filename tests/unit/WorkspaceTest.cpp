//===- WorkspaceTest.cpp - where a plan's temporaries lie -----------------===//
//
// WorkspaceLayout::of lets temporaries that are never in use at the same
// step share bytes. Checked on plans whose lifetimes are known: no two
// temporaries in use at one step overlap, dead ones are reused, offsets
// are 256-byte aligned, and the layout is the same every time.
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
