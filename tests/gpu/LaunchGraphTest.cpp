//===- LaunchGraphTest.cpp - runs launched as one CUDA graph --------------===//
//
// Launch::Graph enqueues a specialisation as one instantiated CUDA graph
// whose nodes hold the buffers' addresses; Launch::Kernels launches kernel
// by kernel. For graphs with temporaries, TMA tensor maps and copies:
//  - each mode matches the evaluator, on buffers that move between calls
//    (new inputs and outputs: the graph's nodes must follow them) and on
//    buffers that come back;
//  - both modes give the same bytes (the kernels are the same);
//  - a graph run on two streams gives each stream its own result.
// Fresh random inputs, outputs poisoned, against the float64 evaluator.
// Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../../bench/WorkloadGraphs.h"
#include "../common/GpuTest.h"
#include "../common/OpCases.h"
#include "kfuse/Testing.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kfuse;
using kfuse::testing::freshSeed;
using kfuse::testing::randomInputs;

namespace {

/// bf16 matmuls with TMA copies, a row kernel, temporaries between them.
Graph matmulBlock() {
  Graph g("matmul_block");
  Tensor x = g.input("x", DType::bf16, {512, 256});
  Tensor w1 = g.input("w1", DType::bf16, {256, 512});
  Tensor w2 = g.input("w2", DType::bf16, {512, 256});
  Tensor y = matmul(gelu(matmul(x, w1)), w2) + x;
  g.output("y", softmax(cast(y, DType::f32)));
  return g;
}

/// Seven pointwise ops, compiled unfused: a chain of seven kernels and six
/// temporaries.
Graph pointwiseChain() {
  Graph g("chain");
  Tensor x = g.input("x", DType::f32, {333, 77});
  Tensor b = g.input("b", DType::f32, {77});
  Tensor t = exp(x * 0.5) + b;
  t = tanh(t) * x - b;
  g.output("y", sigmoid(t + 1.0));
  return g;
}

/// Outputs that are an input and a repeat of another output: the plan's
/// copies, which the graph runs as memcpy nodes.
Graph outputsWithCopies() {
  Graph g("copies");
  Tensor x = g.input("x", DType::f32, {4096});
  Tensor y = exp(x) + 1.0;
  g.output("y", y);
  g.output("again", y);
  g.output("x_out", x);
  g.output("z", y * x);
  return g;
}

/// A Llama-style decode step at small sizes: twenty-odd kernels (split-K
/// matmuls, RoPE, the KV cache's concat, grouped-query attention).
Graph smallDecodeStep() {
  return kfuse::bench::llamaDecodeStep({256, 4, 2, 512, 37});
}

/// Whole prefill blocks at small sizes: a pre-norm block (LayerNorm, QKV
/// with bias split into heads, causal attention, GELU MLP) and a
/// Llama-style block (RMSNorm, RoPE, grouped-query attention, SwiGLU).
Graph smallPreNormBlock() {
  return kfuse::bench::preNormStack({2, 128, 256, 4}, 1, "small_prenorm");
}

Graph smallLlamaBlock() {
  return kfuse::bench::llamaStack({2, 128, 256, 8, 2, 512}, 1, "small_llama");
}

struct GraphCase {
  std::string name;
  Graph (*build)();
  Fusion fusion;
  double tolerance;
  bool usesTma; ///< its PTX must copy with the TMA (so maps get re-encoded)
};

void PrintTo(const GraphCase &c, std::ostream *os) { *os << c.name; }

/// The inputs and poisoned outputs of one call, in buffers of their own.
struct Call {
  std::vector<HostTensor> in, reference;
  std::vector<DeviceBuffer> inBuffers, outBuffers;
  std::vector<DeviceTensor> inTensors, outTensors;
};

Call makeCall(const Graph &g, uint64_t seed) {
  Call c;
  c.in = randomInputs(g, seed);
  Expected<std::vector<HostTensor>> ref = evaluate(g, c.in);
  EXPECT_TRUE(ref) << ref.error().message();
  if (!ref)
    return c;
  c.reference = ref.take();
  for (const HostTensor &t : c.in) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    EXPECT_TRUE(b);
    c.inTensors.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    c.inBuffers.push_back(b.take());
  }
  for (const HostTensor &r : c.reference) {
    Expected<DeviceBuffer> b = DeviceBuffer::allocate(r.sizeInBytes());
    EXPECT_TRUE(b && b->fill(0xFF));
    c.outTensors.push_back(b->tensor(r.dtype(), Dims(r.shape())));
    c.outBuffers.push_back(b.take());
  }
  return c;
}

std::vector<HostTensor> results(const Call &c) {
  std::vector<HostTensor> got;
  for (size_t i = 0; i < c.reference.size(); ++i) {
    got.emplace_back(c.reference[i].dtype(), c.reference[i].shape());
    Status s = c.outBuffers[i].copyToHost(got.back().data(),
                                          got.back().sizeInBytes());
    EXPECT_TRUE(s) << s.message();
  }
  return got;
}

Status run(Executable &exe, Call &c, void *stream = nullptr) {
  for (DeviceBuffer &b : c.outBuffers)
    KFUSE_RETURN_IF_ERROR(b.fill(0xFF));
  return exe.run(c.inTensors.data(), c.inTensors.size(), c.outTensors.data(),
                 c.outTensors.size(), stream);
}

Expected<Executable> compileWith(const Graph &g, Fusion fusion,
                                 Launch launch) {
  CompileOptions options;
  options.fusion = fusion;
  options.diskCache = false;
  options.launch = launch;
  return Compiler(options).compile(g);
}

class LaunchModes : public ::testing::TestWithParam<GraphCase> {};

/// Calls A, B (every buffer moved), A again (every buffer back, new
/// values), each against the evaluator, in both modes; the modes agree
/// byte for byte.
TEST_P(LaunchModes, MatchTheEvaluatorAsBuffersMove) {
  SKIP_WITHOUT_GPU();
  const GraphCase &gc = GetParam();
  Graph g = gc.build();
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<Executable> graphExe = compileWith(g, gc.fusion, Launch::Graph);
  Expected<Executable> kernelExe = compileWith(g, gc.fusion, Launch::Kernels);
  ASSERT_TRUE(graphExe && kernelExe);
  if (gc.usesTma) {
    Expected<std::string> ptx = graphExe->dump(Stage::PTX);
    ASSERT_TRUE(ptx);
    ASSERT_NE(ptx->find("cp.async.bulk.tensor"), std::string::npos)
        << "meant to take TMA tensor maps";
  }
  uint64_t seed = freshSeed();
  Call a = makeCall(g, seed), b = makeCall(g, seed + 100);
  for (int step = 0; step < 3; ++step) {
    Call &c = step == 1 ? b : a;
    if (step == 2) { // same buffers as step 0, new values
      Call fresh = makeCall(g, seed + 200);
      for (size_t i = 0; i < c.in.size(); ++i)
        ASSERT_TRUE(c.inBuffers[i].copyFromHost(fresh.in[i].data(),
                                                fresh.in[i].sizeInBytes()));
      c.in = fresh.in;
      c.reference = fresh.reference;
    }
    std::vector<std::vector<HostTensor>> byMode;
    for (Executable *exe : {&*graphExe, &*kernelExe}) {
      Status s = run(*exe, c);
      ASSERT_TRUE(s) << s.message();
      ASSERT_TRUE(synchronize());
      byMode.push_back(results(c));
      for (size_t o = 0; o < c.reference.size(); ++o)
        EXPECT_LE(relativeError(byMode.back()[o], c.reference[o]),
                  gc.tolerance)
            << (exe == &*graphExe ? "graph" : "kernels") << ", step " << step
            << ", output " << o << ", seed " << seed;
    }
    for (size_t o = 0; o < c.reference.size(); ++o)
      EXPECT_EQ(std::memcmp(byMode[0][o].data(), byMode[1][o].data(),
                            byMode[0][o].sizeInBytes()),
                0)
          << "graph and kernel launches differ: step " << step << ", output "
          << o;
  }
}

/// One graph run on two streams, interleaved: each stream's result is its
/// own (the graph's temporaries are used by one launch at a time).
TEST_P(LaunchModes, TwoStreamsEachGetTheirOwnResult) {
  SKIP_WITHOUT_GPU();
  const GraphCase &gc = GetParam();
  Graph g = gc.build();
  Expected<Executable> exe = compileWith(g, gc.fusion, Launch::Graph);
  ASSERT_TRUE(exe);
  uint64_t seed = freshSeed();
  Call a = makeCall(g, seed), b = makeCall(g, seed + 1);
  Expected<DeviceStream> s1 = DeviceStream::create(), s2 = DeviceStream::create();
  ASSERT_TRUE(s1 && s2);
  ASSERT_TRUE(synchronize());
  for (int round = 0; round < 10; ++round) {
    ASSERT_TRUE(exe->run(a.inTensors.data(), a.inTensors.size(),
                         a.outTensors.data(), a.outTensors.size(),
                         s1->handle()));
    ASSERT_TRUE(exe->run(b.inTensors.data(), b.inTensors.size(),
                         b.outTensors.data(), b.outTensors.size(),
                         s2->handle()));
  }
  ASSERT_TRUE(s1->synchronize() && s2->synchronize());
  for (Call *c : {&a, &b}) {
    std::vector<HostTensor> got = results(*c);
    for (size_t o = 0; o < c->reference.size(); ++o)
      EXPECT_LE(relativeError(got[o], c->reference[o]), gc.tolerance)
          << (c == &a ? "stream 1" : "stream 2") << ", output " << o
          << ", seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, LaunchModes,
    ::testing::Values(
        GraphCase{"matmul_block", matmulBlock, Fusion::Fused, 6e-2, true},
        GraphCase{"pointwise_chain_unfused", pointwiseChain, Fusion::Unfused,
                  1e-5, false},
        GraphCase{"outputs_with_copies", outputsWithCopies, Fusion::Fused,
                  1e-5, false},
        GraphCase{"llama_decode_step", smallDecodeStep, Fusion::Fused, 6e-2,
                  false},
        GraphCase{"prenorm_block", smallPreNormBlock, Fusion::Fused, 6e-2,
                  true},
        GraphCase{"llama_prefill_block", smallLlamaBlock, Fusion::Fused, 6e-2,
                  true}),
    [](const auto &info) { return info.param.name; });

} // namespace
