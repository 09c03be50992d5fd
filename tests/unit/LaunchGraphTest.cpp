//===- LaunchGraphTest.cpp - a plan as one CUDA graph, against fakes ------===//
//
// LaunchGraph's nodes against a fake driver that records each graph call:
// a launch that adds into a buffer (Plan::zeroes) gets a memset node of
// the buffer's bytes just before its kernel node, in the chain's order,
// and a run whose buffer moved updates that memset node (and the kernels
// that use the buffer) before the graph launches. The GPU tests run the
// same graphs on an H200 (tests/gpu/AttentionTest.cpp, AtomicDq).
//
//===----------------------------------------------------------------------===//

#include "runtime/LaunchGraph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace kfuse;
using namespace kfuse::runtime;

namespace {

struct FakeGraphDriver {
  static std::vector<std::string> calls;
  static uintptr_t nodes;

  static CUgraphNode newNode() {
    return reinterpret_cast<CUgraphNode>(++nodes);
  }
  static std::string node(CUgraphNode n) {
    return "n" + std::to_string(reinterpret_cast<uintptr_t>(n));
  }
  static std::string after(const CUgraphNode *deps, size_t count) {
    return count ? " after " + node(deps[0]) : "";
  }
  static CUresult create(CUgraph *g, unsigned) {
    *g = reinterpret_cast<CUgraph>(0x100);
    return CUDA_SUCCESS;
  }
  static CUresult addKernel(CUgraphNode *n, CUgraph, const CUgraphNode *deps,
                            size_t count, const CUDA_KERNEL_NODE_PARAMS *p) {
    *n = newNode();
    calls.push_back("kernel " + node(*n) + " grid " +
                    std::to_string(p->gridDimX) + after(deps, count));
    return CUDA_SUCCESS;
  }
  static CUresult addMemset(CUgraphNode *n, CUgraph, const CUgraphNode *deps,
                            size_t count, const CUDA_MEMSET_NODE_PARAMS *p,
                            CUcontext) {
    *n = newNode();
    calls.push_back("memset " + node(*n) + " at " + std::to_string(p->dst) +
                    " bytes " + std::to_string(p->width * p->elementSize) +
                    " value " + std::to_string(p->value) + after(deps, count));
    return CUDA_SUCCESS;
  }
  static CUresult setMemset(CUgraphExec, CUgraphNode n,
                            const CUDA_MEMSET_NODE_PARAMS *p, CUcontext) {
    calls.push_back("update memset " + node(n) + " at " +
                    std::to_string(p->dst));
    return CUDA_SUCCESS;
  }
  static CUresult setKernel(CUgraphExec, CUgraphNode n,
                            const CUDA_KERNEL_NODE_PARAMS *) {
    calls.push_back("update kernel " + node(n));
    return CUDA_SUCCESS;
  }
  static CUresult instantiate(CUgraphExec *e, CUgraph, unsigned long long) {
    *e = reinterpret_cast<CUgraphExec>(0x200);
    calls.push_back("instantiate");
    return CUDA_SUCCESS;
  }
  static CUresult launch(CUgraphExec, CUstream) {
    calls.push_back("launch");
    return CUDA_SUCCESS;
  }
  static CUresult destroyExec(CUgraphExec) { return CUDA_SUCCESS; }
  static CUresult destroy(CUgraph) { return CUDA_SUCCESS; }

  static std::unique_ptr<Driver> make() {
    calls.clear();
    nodes = 0;
    std::unique_ptr<Driver> d = Driver::unopened(/*graphs=*/true);
    d->cuGraphCreate = create;
    d->cuGraphAddKernelNode_v2 = addKernel;
    d->cuGraphAddMemsetNode = addMemset;
    d->cuGraphExecMemsetNodeSetParams = setMemset;
    d->cuGraphExecKernelNodeSetParams_v2 = setKernel;
    d->cuGraphInstantiateWithFlags = instantiate;
    d->cuGraphLaunch = launch;
    d->cuGraphExecDestroy = destroyExec;
    d->cuGraphDestroy = destroy;
    return d;
  }
};
std::vector<std::string> FakeGraphDriver::calls;
uintptr_t FakeGraphDriver::nodes = 0;

using Calls = std::vector<std::string>;

/// Input 0 -> launch 0 -> temp 2 -> launch 1 (adds into output 1).
Plan addingPlan() {
  Plan plan;
  plan.buffers = {{BufferRole::Input, 0, DType::bf16, {64}, 128},
                  {BufferRole::Output, 0, DType::f32, {64}, 256},
                  {BufferRole::Temp, 0, DType::f32, {64}, 256}};
  plan.launches = {{"k0", 2, 128, 0, {0, 2}, {}, {}, 0},
                   {"k1", 3, 256, 0, {2, 1}, {}, {}, 0}};
  plan.zeroes = {{1, 1}};
  return plan;
}

TEST(LaunchGraph, ZeroesABufferJustBeforeTheKernelThatAddsIntoIt) {
  std::unique_ptr<Driver> d = FakeGraphDriver::make();
  Plan plan = addingPlan();
  LoadedModule module;
  module.functions = {reinterpret_cast<CUfunction>(1),
                      reinterpret_cast<CUfunction>(2)};
  std::vector<CUdeviceptr> table = {0x1000, 0x2000, 0x3000};
  Expected<std::unique_ptr<LaunchGraph>> graph = LaunchGraph::create(
      *d, plan, module, table.data(), ExtentValues(plan));
  ASSERT_TRUE(graph) << graph.error().message();
  EXPECT_EQ(FakeGraphDriver::calls,
            (Calls{"kernel n1 grid 2",
                   "memset n2 at " + std::to_string(0x2000) +
                       " bytes 256 value 0 after n1",
                   "kernel n3 grid 3 after n2", "instantiate"}));
  FakeGraphDriver::calls.clear();
  ASSERT_TRUE((*graph)->launch(table.data(), ExtentValues(plan), nullptr));
  EXPECT_EQ(FakeGraphDriver::calls, (Calls{"launch"}));
  // The zeroed output moved: its memset and the kernel that adds into it
  // follow it; the other kernel stays.
  FakeGraphDriver::calls.clear();
  table[1] = 0x5000;
  ASSERT_TRUE((*graph)->launch(table.data(), ExtentValues(plan), nullptr));
  EXPECT_EQ(FakeGraphDriver::calls,
            (Calls{"update memset n2 at " + std::to_string(0x5000),
                   "update kernel n3", "launch"}));
}

} // namespace
