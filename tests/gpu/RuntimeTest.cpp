//===- RuntimeTest.cpp - streams, workspaces and outputs over inputs ------===//
//
// What run() promises beyond one call on one stream:
//  - one executable run on two streams at once, with different inputs,
//    gives each stream its own right result (each run's temporaries are
//    its own);
//  - device memory stays bounded over a hundred shapes of one executable,
//    and CUDA graphs follow workspaces that grow, move and are freed;
//  - an output placed over an input (in place, or shifted) is computed
//    right by every template kind, and two overlapping outputs are refused
//    before anything is launched.
// Fresh random inputs, outputs poisoned, against the float64 evaluator.
// Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../common/GpuTest.h"
#include "../common/OpCases.h"
#include "kfuse/Testing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

using namespace kfuse;
using kfuse::testing::freshSeed;
using kfuse::testing::randomInputs;

namespace {

CompileOptions noDiskCache(Fusion fusion = Fusion::Fused) {
  CompileOptions options;
  options.fusion = fusion;
  options.diskCache = false;
  return options;
}

Tensor layernorm(Tensor x, int64_t axis) {
  Tensor mean = reduceMean(x, {axis}, true);
  Tensor centred = x - mean;
  return centred * rsqrt(reduceMean(centred * centred, {axis}, true) + 1e-5);
}

/// A pre-norm MLP block: layernorm, matmul, GELU, matmul, residual, then a
/// softmax over the rows; several kernels with temporaries between them.
Graph mlpBlock() {
  Graph g("mlp_block");
  Tensor x = g.input("x", DType::bf16, {1024, 256});
  Tensor w1 = g.input("w1", DType::bf16, {256, 512});
  Tensor w2 = g.input("w2", DType::bf16, {512, 256});
  Tensor h = cast(layernorm(cast(x, DType::f32), 1), DType::bf16);
  Tensor y = matmul(gelu(matmul(h, w1)), w2) + x;
  g.output("y", softmax(cast(y, DType::f32)));
  return g;
}

/// An unfused layernorm: one kernel per op, each writing a temporary.
Graph unfusedLayernorm() {
  Graph g("layernorm");
  g.output("y", layernorm(g.input("x", DType::f32, {2048, 1024}), 1));
  return g;
}

struct DeviceInputs {
  std::vector<HostTensor> host;
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> tensors;
};

DeviceInputs upload(const Graph &g, uint64_t seed) {
  DeviceInputs in;
  in.host = randomInputs(g, seed);
  for (const HostTensor &t : in.host) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    EXPECT_TRUE(b) << b.error().message();
    if (!b)
      return in;
    in.tensors.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    in.buffers.push_back(b.take());
  }
  return in;
}

/// Poisoned (NaN bytes) device outputs of `exe` for these inputs.
struct DeviceOutputs {
  std::vector<HostTensor> like; ///< dtype and shape of each output
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> tensors;
};

DeviceOutputs poisonedOutputs(const std::vector<HostTensor> &reference) {
  DeviceOutputs out;
  for (const HostTensor &r : reference) {
    Expected<DeviceBuffer> b = DeviceBuffer::allocate(r.sizeInBytes());
    EXPECT_TRUE(b && b->fill(0xFF));
    if (!b)
      return out;
    out.tensors.push_back(b->tensor(r.dtype(), Dims(r.shape())));
    out.buffers.push_back(b.take());
    out.like.emplace_back(r.dtype(), r.shape());
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Two streams at once
//===----------------------------------------------------------------------===//

struct StreamCase {
  std::string name;
  Graph (*build)();
  Fusion fusion;
  double tolerance;
};

class TwoStreams : public ::testing::TestWithParam<StreamCase> {};

/// The bytes of device output `buffer`, shaped as `like`.
HostTensor download(const DeviceBuffer &buffer, const HostTensor &like) {
  HostTensor got(like.dtype(), like.shape());
  Status s = buffer.copyToHost(got.data(), got.sizeInBytes());
  EXPECT_TRUE(s) << s.message();
  return got;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.sizeInBytes() == b.sizeInBytes() &&
         std::memcmp(a.data(), b.data(), a.sizeInBytes()) == 0;
}

/// Each stream's result must be the evaluator's, and byte for byte what the
/// same inputs give run alone (the kernels are deterministic: a shared
/// temporary would show as any difference).
TEST_P(TwoStreams, EachStreamGetsItsOwnResult) {
  SKIP_WITHOUT_GPU();
  const StreamCase &c = GetParam();
  Graph g = c.build();
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<Executable> exe = Compiler(noDiskCache(c.fusion)).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  auto kernels = exe->kernels();
  ASSERT_TRUE(kernels);
  EXPECT_GT(kernels->size(), 2u) << "meant to have temporaries";
  uint64_t seed = freshSeed();
  DeviceInputs a = upload(g, seed), b = upload(g, seed + 1000);
  auto refA = evaluate(g, a.host), refB = evaluate(g, b.host);
  ASSERT_TRUE(refA && refB);
  DeviceOutputs outA = poisonedOutputs(*refA), outB = poisonedOutputs(*refB);
  // Alone first, on the default stream.
  ASSERT_TRUE(exe->run(a.tensors.data(), a.tensors.size(), outA.tensors.data(),
                       outA.tensors.size()));
  ASSERT_TRUE(exe->run(b.tensors.data(), b.tensors.size(), outB.tensors.data(),
                       outB.tensors.size()));
  ASSERT_TRUE(synchronize());
  HostTensor aloneA = download(outA.buffers[0], (*refA)[0]);
  HostTensor aloneB = download(outB.buffers[0], (*refB)[0]);
  EXPECT_LE(relativeError(aloneA, (*refA)[0]), c.tolerance) << "seed " << seed;
  EXPECT_LE(relativeError(aloneB, (*refB)[0]), c.tolerance) << "seed " << seed;
  for (DeviceBuffer *buffer : {&outA.buffers[0], &outB.buffers[0]})
    ASSERT_TRUE(buffer->fill(0xFF));
  Expected<DeviceStream> s1 = DeviceStream::create(), s2 = DeviceStream::create();
  ASSERT_TRUE(s1 && s2);
  // Interleaved enqueues: the two streams' kernels overlap on the GPU.
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(exe->run(a.tensors.data(), a.tensors.size(),
                         outA.tensors.data(), outA.tensors.size(),
                         s1->handle()));
    ASSERT_TRUE(exe->run(b.tensors.data(), b.tensors.size(),
                         outB.tensors.data(), outB.tensors.size(),
                         s2->handle()));
  }
  ASSERT_TRUE(s1->synchronize());
  ASSERT_TRUE(s2->synchronize());
  EXPECT_TRUE(sameBytes(download(outA.buffers[0], aloneA), aloneA))
      << "stream 1 differs from the same run alone; seed " << seed;
  EXPECT_TRUE(sameBytes(download(outB.buffers[0], aloneB), aloneB))
      << "stream 2 differs from the same run alone; seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, TwoStreams,
    ::testing::Values(
        // bf16 products over 512, then a softmax of their sums.
        StreamCase{"mlp_block_fused", mlpBlock, Fusion::Fused, 6e-2},
        StreamCase{"layernorm_unfused", unfusedLayernorm, Fusion::Unfused,
                   1e-5}),
    [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Memory over many shapes
//===----------------------------------------------------------------------===//

/// A hundred shapes of a graph whose two kernels pass a temporary of up to
/// 26 MB: the old design kept each shape's temporaries (1.3 GB here); the
/// stream's workspace holds about the largest one, and gives it back when
/// asked.
TEST(Workspace, DeviceMemoryStaysBoundedOverAHundredShapes) {
  SKIP_WITHOUT_GPU();
  Graph g("shapes");
  Tensor x = g.input("x", DType::f32, {"M", 1024});
  g.output("y", transpose(softmax(x), {1, 0}) + 1.0);
  Expected<Executable> exe = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(exe);
  // Earlier tests' workspaces stay pooled until released.
  ASSERT_TRUE(synchronize());
  ASSERT_TRUE(releaseWorkspaceMemory());
  Expected<DeviceMemory> before = deviceMemory();
  ASSERT_TRUE(before) << before.error().message();
  EXPECT_EQ(before->workspaceReservedBytes, 0u);
  const int64_t rowsPerStep = 64, steps = 100;
  const uint64_t largest = uint64_t(rowsPerStep * steps) * 1024 * 4;
  for (int64_t step = 1; step <= steps; ++step) {
    std::vector<HostTensor> in = {HostTensor::random(
        DType::f32, {rowsPerStep * step, 1024}, freshSeed())};
    Expected<std::vector<HostTensor>> out = exe->runOnHost(in);
    ASSERT_TRUE(out) << out.error().message();
    if (step % 25 != 1)
      continue;
    Expected<std::vector<HostTensor>> ref = evaluate(g, in);
    ASSERT_TRUE(ref);
    EXPECT_LE(relativeError((*out)[0], (*ref)[0]), 1e-5) << "M " << step * 64;
  }
  Expected<DeviceMemory> after = deviceMemory();
  ASSERT_TRUE(after);
  std::cout << "[  MEMORY  ] pool " << after->workspaceReservedBytes
            << " bytes after 100 shapes (largest workspace " << largest
            << "); free " << before->freeBytes << " -> " << after->freeBytes
            << "\n";
  EXPECT_EQ(after->workspaceUsedBytes, 0u);
  EXPECT_LE(after->workspaceReservedBytes, 2 * largest);
  EXPECT_GE(int64_t(after->freeBytes), int64_t(before->freeBytes) -
                                           int64_t(4 * largest))
      << "free before " << before->freeBytes << ", after " << after->freeBytes;
  ASSERT_TRUE(releaseWorkspaceMemory());
  Expected<DeviceMemory> released = deviceMemory();
  ASSERT_TRUE(released);
  EXPECT_EQ(released->workspaceReservedBytes, 0u);
}

/// Workspaces that move under a CUDA graph: ten streams (two more than
/// kfuse keeps a workspace for, so the least recently used are freed and
/// made again) take turns with growing and shrinking shapes of one
/// executable launched as a graph, each run against the evaluator. A graph
/// node left pointing at a freed or another stream's workspace shows as a
/// wrong result (or a fault under compute-sanitizer).
TEST(Workspace, GraphsFollowMovingWorkspaces) {
  SKIP_WITHOUT_GPU();
  Graph shapes("shapes");
  Tensor x = shapes.input("x", DType::f32, {"M", 1024});
  shapes.output("y", layernorm(x, 1));
  CompileOptions options = noDiskCache(Fusion::Unfused);
  options.launch = Launch::Graph;
  Expected<Executable> exe = Compiler(options).compile(shapes);
  ASSERT_TRUE(exe) << exe.error().message();
  std::vector<DeviceStream> streams;
  for (int s = 0; s < 10; ++s) {
    Expected<DeviceStream> stream = DeviceStream::create();
    ASSERT_TRUE(stream);
    streams.push_back(stream.take());
  }
  uint64_t seed = freshSeed();
  for (int run = 0; run < 30; ++run) {
    int64_t rows = 64 * (1 + (run * 7) % 24); // up to 1536 rows, 6 MB
    std::vector<HostTensor> in = {
        HostTensor::random(DType::f32, {rows, 1024}, seed + run)};
    Expected<DeviceBuffer> input = DeviceBuffer::fromHost(in[0]);
    Expected<std::vector<HostTensor>> ref = evaluate(shapes, in);
    ASSERT_TRUE(input && ref);
    DeviceOutputs out = poisonedOutputs(*ref);
    DeviceTensor inTensor = input->tensor(DType::f32, Dims(in[0].shape()));
    const DeviceStream &stream = streams[run % streams.size()];
    ASSERT_TRUE(exe->run(&inTensor, 1, out.tensors.data(), 1, stream.handle()));
    ASSERT_TRUE(stream.synchronize());
    EXPECT_LE(relativeError(download(out.buffers[0], (*ref)[0]), (*ref)[0]),
              1e-5)
        << "run " << run << ", " << rows << " rows; seed " << seed;
  }
  ASSERT_TRUE(releaseWorkspaceMemory());
  Expected<DeviceMemory> released = deviceMemory();
  ASSERT_TRUE(released);
  EXPECT_EQ(released->workspaceReservedBytes, 0u);
}

//===----------------------------------------------------------------------===//
// Outputs over inputs
//===----------------------------------------------------------------------===//

struct AliasCase {
  std::string name;
  std::function<void(Graph &)> build;
  size_t input, output;
  int64_t shiftBytes; ///< where the output starts in the input's buffer
  double tolerance;
};

void PrintTo(const AliasCase &c, std::ostream *os) { *os << c.name; }

class OutputOverInput : public ::testing::TestWithParam<AliasCase> {};

/// Output `output` is placed in input `input`'s buffer, `shiftBytes` in;
/// every output must be what the evaluator computes from the inputs as
/// they were before the run.
TEST_P(OutputOverInput, IsComputedFromTheInputsAsTheyWere) {
  SKIP_WITHOUT_GPU();
  const AliasCase &c = GetParam();
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<Executable> exe = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  uint64_t seed = freshSeed();
  DeviceInputs in = upload(g, seed);
  auto ref = evaluate(g, in.host);
  ASSERT_TRUE(ref);
  DeviceOutputs out = poisonedOutputs(*ref);
  // The shared buffer: room for the input and the shifted output.
  const HostTensor &shared = in.host[c.input];
  size_t bytes = std::max(shared.sizeInBytes(),
                          size_t(c.shiftBytes) + (*ref)[c.output].sizeInBytes());
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(bytes);
  ASSERT_TRUE(buffer && buffer->fill(0xFF));
  ASSERT_TRUE(buffer->copyFromHost(shared.data(), shared.sizeInBytes()));
  in.tensors[c.input] = buffer->tensor(shared.dtype(), Dims(shared.shape()));
  out.tensors[c.output] = {
      static_cast<char *>(buffer->data()) + c.shiftBytes, (*ref)[c.output].dtype(),
      Dims((*ref)[c.output].shape()), bytes - size_t(c.shiftBytes)};
  Status run = exe->run(in.tensors.data(), in.tensors.size(),
                        out.tensors.data(), out.tensors.size());
  ASSERT_TRUE(run) << run.message();
  ASSERT_TRUE(synchronize());
  for (size_t o = 0; o < ref->size(); ++o) {
    const HostTensor &expected = (*ref)[o];
    HostTensor got(expected.dtype(), expected.shape());
    if (o == c.output) {
      std::vector<char> all(bytes);
      ASSERT_TRUE(buffer->copyToHost(all.data(), bytes));
      std::memcpy(got.data(), all.data() + c.shiftBytes, got.sizeInBytes());
    } else {
      ASSERT_TRUE(out.buffers[o].copyToHost(got.data(), got.sizeInBytes()));
    }
    EXPECT_LE(relativeError(got, expected), c.tolerance)
        << "output " << o << ", seed " << seed;
  }
}

std::vector<AliasCase> aliasCases() {
  auto f32 = [](Graph &g, const char *name, Shape shape) {
    return g.input(name, DType::f32, shape);
  };
  auto bf16 = [](Graph &g, const char *name, Shape shape) {
    return g.input(name, DType::bf16, shape);
  };
  return {
      // The pointwise template computes this one in place.
      {"pointwise_in_place",
       [=](Graph &g) {
         Tensor x = f32(g, "x", {1000, 1027});
         g.output("y", exp(x) * 0.5 + x * f32(g, "w", {1000, 1027}));
       },
       0, 0, 0, 1e-5},
      {"pointwise_shifted",
       [=](Graph &g) {
         g.output("y", tanh(f32(g, "x", {1 << 20})) + 1.0);
       },
       0, 0, 4 * 4097, 1e-5},
      {"over_a_reduced_input",
       [=](Graph &g) {
         Tensor x = f32(g, "x", {512, 512});
         Tensor row = f32(g, "row", {512, 512});
         g.output("y", x + reduceSum(row, {0}, true));
       },
       1, 0, 0, 1e-5},
      {"pointwise_two_outputs_one_over_input",
       [=](Graph &g) {
         Tensor x = bf16(g, "x", {4096, 256});
         g.output("a", cast(sigmoid(x), DType::bf16));
         g.output("b", x * 3.0);
       },
       0, 0, 0, 1e-2},
      {"tiled_transpose",
       [=](Graph &g) {
         Tensor x = f32(g, "x", {1024, 1024});
         g.output("y", transpose(x, {1, 0}) + x);
       },
       0, 0, 0, 1e-5},
      {"row_softmax",
       [=](Graph &g) { g.output("y", softmax(f32(g, "x", {777, 2048}))); },
       0, 0, 0, 1e-5},
      {"row_reduction_shifted",
       [=](Graph &g) {
         g.output("y", reduceMax(f32(g, "x", {4096, 513}), {1}));
       },
       0, 0, 4 * 1000, 1e-5},
      {"column_reduction",
       [=](Graph &g) {
         g.output("y", reduceSum(f32(g, "x", {4096, 1024}), {0}));
       },
       0, 0, 4 * 256, 1e-5},
      {"matmul_tensor_cores",
       [=](Graph &g) {
         Tensor a = bf16(g, "a", {512, 512});
         g.output("c", matmul(a, bf16(g, "b", {512, 512})));
       },
       0, 0, 0, 2e-2},
      {"matmul_over_b",
       [=](Graph &g) {
         Tensor a = bf16(g, "a", {512, 512});
         g.output("c", gelu(matmul(a, bf16(g, "b", {512, 512}))));
       },
       1, 0, 0, 2e-2},
      {"flash_attention",
       [=](Graph &g) {
         Tensor q = bf16(g, "q", {1, 4, 512, 64});
         Tensor k = bf16(g, "k", {1, 4, 512, 64});
         Tensor v = bf16(g, "v", {1, 4, 512, 64});
         AttentionOptions options;
         options.causal = true;
         g.output("o", attention(q, k, v, options));
       },
       0, 0, 0, 2e-2},
      {"multi_kernel",
       [=](Graph &g) {
         Tensor x = f32(g, "x", {1024, 1024});
         g.output("y", transpose(softmax(x), {1, 0}) + x);
       },
       0, 0, 0, 1e-5},
      {"output_that_is_the_input",
       [=](Graph &g) {
         Tensor x = f32(g, "x", {4096});
         g.output("same", x);
         g.output("y", x * 2.0);
       },
       0, 1, 0, 1e-5},
  };
}

INSTANTIATE_TEST_SUITE_P(Templates, OutputOverInput,
                         ::testing::ValuesIn(aliasCases()),
                         [](const auto &info) { return info.param.name; });

TEST(OutputOverOutput, IsRefusedNamingBothAndLaunchesNothing) {
  SKIP_WITHOUT_GPU();
  Graph g("two_outputs");
  Tensor x = g.input("x", DType::f32, {4096});
  g.output("first", x + 1.0);
  g.output("second", x * 2.0);
  Expected<Executable> exe = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(exe);
  DeviceInputs in = upload(g, freshSeed());
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(4096 * 4 + 64);
  ASSERT_TRUE(out && out->fill(0xFF));
  char *base = static_cast<char *>(out->data());
  DeviceTensor outputs[2] = {{base, DType::f32, {4096}, 0},
                             {base + 64, DType::f32, {4096}, 0}};
  Status s = exe->run(in.tensors.data(), 1, outputs, 2);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'first'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'second'"), std::string::npos) << s.message();
  ASSERT_TRUE(synchronize());
  std::vector<unsigned char> bytes(4096 * 4 + 64);
  ASSERT_TRUE(out->copyToHost(bytes.data(), bytes.size()));
  for (unsigned char byte : bytes)
    ASSERT_EQ(byte, 0xFF) << "something was written";
}

} // namespace
