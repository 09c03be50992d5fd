//===- RuntimeDimsTest.cpp - sizes taken at run time ----------------------===//
//
// A graph compiled with CompileOptions::dynamicDims runs every size of a
// bucket from one compile: FlashAttention takes its key length at run time
// (the TMA pipeline at head dim 128, cp.async copies at 64). For key
// lengths around and across bucket edges, each launch mode:
//  - matches the float64 evaluator (fresh random inputs, outputs poisoned);
//  - gives the bytes of a compile for that exact length (the same tiles in
//    the same order; only the last tile's mask is computed at run time);
//  - compiles once per bucket, also when the sizes go back and forth (the
//    CUDA graph's nodes follow the sizes as they follow moved buffers).
// Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../common/GpuTest.h"
#include "../common/OpCases.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>

using namespace kfuse;
using kfuse::testing::freshSeed;
using kfuse::testing::randomInputs;

namespace {

/// Grouped-query attention over a cache of L keys, a cast and a residual
/// after it (other kernels beside the one that takes L).
Graph cacheAttention(int64_t headDim, Dim keys, const std::string &name) {
  Graph g("cache_attention_d" + std::to_string(headDim) + "_" + name);
  Tensor q = g.input("q", DType::bf16, {2, 4, 3, headDim});
  Tensor k = g.input("k", DType::bf16, {2, 2, keys, headDim});
  Tensor v = g.input("v", DType::bf16, {2, 2, keys, headDim});
  Tensor o = attention(q, k, v);
  g.output("y", cast(o, DType::f32) + cast(q, DType::f32));
  return g;
}

Expected<Executable> compileFor(const Graph &g, Launch launch,
                                std::vector<std::string> dynamic) {
  CompileOptions options;
  options.diskCache = false;
  options.launch = launch;
  options.dynamicDims = std::move(dynamic);
  return Compiler(options).compile(g);
}

/// Runs `exe` on fresh inputs with `keys` keys; the output's bytes.
Expected<HostTensor> runWith(Executable &exe, const std::vector<HostTensor> &in,
                             const Dims &outShape) {
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> tensors;
  for (const HostTensor &t : in) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    if (!b)
      return b.error();
    tensors.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    buffers.push_back(b.take());
  }
  HostTensor out(DType::f32, std::vector<int64_t>(outShape.begin(),
                                                  outShape.end()));
  Expected<DeviceBuffer> ob = DeviceBuffer::allocate(out.sizeInBytes());
  if (!ob)
    return ob.error();
  KFUSE_RETURN_IF_ERROR(ob->fill(0xFF));
  DeviceTensor outTensor = ob->tensor(DType::f32, outShape);
  KFUSE_RETURN_IF_ERROR(
      exe.run(tensors.data(), tensors.size(), &outTensor, 1, nullptr));
  KFUSE_RETURN_IF_ERROR(synchronize());
  KFUSE_RETURN_IF_ERROR(ob->copyToHost(out.data(), out.sizeInBytes()));
  return out;
}

struct RuntimeCase {
  int64_t headDim;
  Launch launch;
};

class RuntimeKeys : public ::testing::TestWithParam<RuntimeCase> {};

TEST_P(RuntimeKeys, EveryLengthMatchesTheEvaluatorAndAnExactCompile) {
  SKIP_WITHOUT_GPU();
  const RuntimeCase &rc = GetParam();
  // Named per case: the compiles counted are this case's own.
  std::string name = rc.launch == Launch::Graph ? "graph" : "kernels";
  Graph g = cacheAttention(rc.headDim, "L", name);
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<Executable> exe = compileFor(g, rc.launch, {"L"});
  ASSERT_TRUE(exe) << exe.error().message();
  // Back and forth within buckets and across their edges.
  const int64_t lengths[] = {100, 65, 128, 1, 37, 64, 100, 129, 200, 256, 65};
  Dims outShape({2, 4, 3, rc.headDim});
  uint64_t seed = freshSeed(), before = cacheStats().compiles;
  std::vector<std::vector<HostTensor>> inputs;
  std::vector<HostTensor> outputs;
  for (int64_t keys : lengths) {
    inputs.push_back(randomInputs(cacheAttention(rc.headDim, keys, name),
                                  seed + keys));
    Expected<HostTensor> got = runWith(*exe, inputs.back(), outShape);
    ASSERT_TRUE(got) << "L = " << keys << ": " << got.error().message();
    outputs.push_back(got.take());
  }
  // One compile a bucket: 64, 128 and 256.
  EXPECT_EQ(cacheStats().compiles - before, 3u);
  for (size_t i = 0; i < std::size(lengths); ++i) {
    Graph exact = cacheAttention(rc.headDim, lengths[i], name);
    Expected<std::vector<HostTensor>> ref = evaluate(exact, inputs[i]);
    ASSERT_TRUE(ref) << ref.error().message();
    EXPECT_LE(relativeError(outputs[i], (*ref)[0]), 2e-2)
        << "L = " << lengths[i] << ", seed " << seed;
    Expected<Executable> exactExe = compileFor(exact, rc.launch, {});
    ASSERT_TRUE(exactExe) << exactExe.error().message();
    Expected<HostTensor> want = runWith(*exactExe, inputs[i], outShape);
    ASSERT_TRUE(want) << want.error().message();
    EXPECT_EQ(std::memcmp(outputs[i].data(), want->data(),
                          want->sizeInBytes()),
              0)
        << "L = " << lengths[i]
        << ": the run-time length and an exact compile differ";
  }
}

INSTANTIATE_TEST_SUITE_P(
    HeadDims, RuntimeKeys,
    ::testing::Values(RuntimeCase{128, Launch::Graph},
                      RuntimeCase{128, Launch::Kernels},
                      RuntimeCase{64, Launch::Graph},
                      RuntimeCase{64, Launch::Kernels}),
    [](const ::testing::TestParamInfo<RuntimeCase> &info) {
      return "D" + std::to_string(info.param.headDim) +
             (info.param.launch == Launch::Graph ? "_graph" : "_kernels");
    });

/// A cache buffer that holds fewer keys than the call says is refused
/// before anything is launched, naming the input and the bytes.
TEST(RuntimeKeys, ABufferSmallerThanTheCallsLengthIsRefused) {
  SKIP_WITHOUT_GPU();
  Graph g = cacheAttention(128, "L", "small_buffer");
  Expected<Executable> exe = compileFor(g, Launch::Auto, {"L"});
  ASSERT_TRUE(exe) << exe.error().message();
  Expected<DeviceBuffer> small = DeviceBuffer::allocate(2 * 2 * 90 * 128 * 2);
  Expected<DeviceBuffer> q = DeviceBuffer::allocate(2 * 4 * 3 * 128 * 2);
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(2 * 4 * 3 * 128 * 4);
  ASSERT_TRUE(small && q && out);
  DeviceTensor in[] = {q->tensor(DType::bf16, {2, 4, 3, 128}),
                       small->tensor(DType::bf16, {2, 2, 100, 128}),
                       small->tensor(DType::bf16, {2, 2, 100, 128})};
  DeviceTensor o = out->tensor(DType::f32, {2, 4, 3, 128});
  Status s = exe->run(in, 3, &o, 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'k'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bytes"), std::string::npos) << s.message();
}

} // namespace
