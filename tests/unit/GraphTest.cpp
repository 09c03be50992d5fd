//===- GraphTest.cpp - the C++ frontend: shapes, dtypes, errors -----------===//

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

using namespace kfuse;

namespace {

std::string shapeOf(Tensor t) { return shapeString(t.shape()); }

TEST(Graph, BuildsAndPrintsIR) {
  Graph g("mlp");
  Tensor x = g.input("x", DType::bf16, {"M", 768});
  Tensor w = g.input("w", DType::bf16, {768, 3072});
  Tensor y = gelu(matmul(x, w) + 1.0);
  g.output("y", y);
  ASSERT_TRUE(g.status()) << g.status().message();
  EXPECT_EQ(shapeOf(y), "Mx3072");
  EXPECT_EQ(y.dtype(), DType::bf16);
  Expected<std::string> ir = g.toMLIR();
  ASSERT_TRUE(ir);
  EXPECT_NE(ir->find("func.func @mlp"), std::string::npos);
  EXPECT_NE(ir->find("kf.dim_symbols = [\"M\", \"\"]"), std::string::npos);
  EXPECT_NE(ir->find("kf.matmul"), std::string::npos);
  EXPECT_NE(ir->find("kf.gelu"), std::string::npos);
}

TEST(Graph, TransposeOfSizeOneDimsIsAReshape) {
  Graph g("unit_dims");
  Tensor x = g.input("x", DType::f32, {4, 1, 8});
  Tensor moved = transpose(x, {1, 0, 2});   // [1, 4, 8]: a reshape
  Tensor swapped = transpose(x, {2, 1, 0}); // [8, 1, 4]: a transpose
  g.output("moved", moved);
  g.output("swapped", swapped);
  ASSERT_TRUE(g.status()) << g.status().message();
  EXPECT_EQ(shapeOf(moved), "1x4x8");
  Expected<std::string> ir = g.toMLIR();
  ASSERT_TRUE(ir);
  EXPECT_NE(ir->find("kf.reshape %arg0 : tensor<4x1x8xf32> -> "
                     "tensor<1x4x8xf32>"),
            std::string::npos)
      << *ir;
  size_t first = ir->find("kf.transpose");
  EXPECT_NE(first, std::string::npos);
  EXPECT_EQ(ir->find("kf.transpose", first + 1), std::string::npos) << *ir;
}

TEST(Graph, RoundTripsThroughText) {
  Graph g("rt");
  Tensor x = g.input("x", DType::f32, {4, "N"});
  g.output("s", reduceSum(exp(x), {-1}, true));
  Expected<std::string> text = g.toMLIR();
  ASSERT_TRUE(text);
  Expected<Graph> back = Graph::fromMLIR(*text, "rt.mlir");
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->inputs().size(), 1u);
  EXPECT_EQ(back->inputs()[0].name, "x");
  EXPECT_EQ(shapeString(back->inputs()[0].shape), "4xN");
  ASSERT_EQ(back->outputs().size(), 1u);
  EXPECT_EQ(back->outputs()[0].name, "s");
  EXPECT_EQ(*back->toMLIR(), *text);
}

TEST(Graph, NumpyBroadcasting) {
  Graph g;
  Tensor a = g.input("a", DType::f32, {8, 1, 6});
  Tensor b = g.input("b", DType::f32, {7, 1});
  EXPECT_EQ(shapeOf(a + b), "8x7x6");
  Tensor row = g.input("row", DType::f32, {"M", 1});
  Tensor col = g.input("col", DType::f32, {64});
  EXPECT_EQ(shapeOf(row * col), "Mx64");
  EXPECT_EQ(shapeOf(a * 2.0), "8x1x6");
  EXPECT_TRUE(g.status());
}

TEST(Graph, DtypePromotion) {
  Graph g;
  Tensor f32 = g.input("f32", DType::f32, {4});
  Tensor f16 = g.input("f16", DType::f16, {4});
  Tensor bf16 = g.input("bf16", DType::bf16, {4});
  Tensor i32 = g.input("i32", DType::i32, {4});
  Tensor i1 = g.input("i1", DType::i1, {4});
  EXPECT_EQ((f16 + f32).dtype(), DType::f32);
  EXPECT_EQ((f16 + bf16).dtype(), DType::f32);
  EXPECT_EQ((bf16 + i32).dtype(), DType::bf16);
  EXPECT_EQ((i32 + i1).dtype(), DType::i32);
  EXPECT_EQ((i1 + i1).dtype(), DType::i32);
  EXPECT_EQ((bf16 * 3.0).dtype(), DType::bf16);
  EXPECT_EQ((i32 * 3.0).dtype(), DType::i32);
  EXPECT_EQ((i32 * 0.5).dtype(), DType::f32);
  EXPECT_EQ(exp(i32).dtype(), DType::f32);
  EXPECT_EQ(abs(i32).dtype(), DType::i32);
  EXPECT_EQ((f16 < bf16).dtype(), DType::i1);
  EXPECT_EQ(reduceMean(i32).dtype(), DType::f32);
  EXPECT_EQ(reduceSum(i1).dtype(), DType::i32);
  EXPECT_EQ(where(i1, f16, i32).dtype(), DType::f16);
  MatmulOptions toF32;
  toF32.resultType = DType::f32;
  Tensor a = g.input("a", DType::bf16, {4, 8});
  Tensor b = g.input("b", DType::bf16, {8, 2});
  EXPECT_EQ(matmul(a, b, toF32).dtype(), DType::f32);
  EXPECT_TRUE(g.status());
}

/// Builds a graph with `build` and returns its first error message.
template <typename Fn> std::string errorOf(Fn build) {
  Graph g;
  build(g);
  EXPECT_FALSE(g.status());
  return g.status().message();
}

TEST(GraphErrors, MatmulInnerDims) {
  EXPECT_EQ(errorOf([](Graph &g) {
              matmul(g.input("a", DType::bf16, {64, 128}),
                     g.input("b", DType::bf16, {256, 32}));
            }),
            "matmul: inner dimensions differ: a is 64x128, b is 256x32");
}

TEST(GraphErrors, SymbolicDimsByName) {
  EXPECT_EQ(errorOf([](Graph &g) {
              matmul(g.input("a", DType::f32, {"M", "K"}),
                     g.input("b", DType::f32, {"N", 32}));
            }),
            "matmul: inner dimensions differ: a is MxK, b is Nx32");
  EXPECT_EQ(errorOf([](Graph &g) {
              g.input("a", DType::f32, {"M"}) + g.input("b", DType::f32, {"N"});
            }),
            "add: shapes cannot be broadcast together: M and N (dim 0: M vs N)");
}

TEST(GraphErrors, Broadcast) {
  EXPECT_EQ(errorOf([](Graph &g) {
              g.input("a", DType::f32, {4, 3}) * g.input("b", DType::f32, {4});
            }),
            "mul: shapes cannot be broadcast together: 4x3 and 4 (dim 1: 3 vs 4)");
  EXPECT_EQ(errorOf([](Graph &g) {
              broadcastTo(g.input("a", DType::f32, {3, 4}), {2, 5, 4});
            }),
            "broadcastTo: cannot broadcast 3x4 to 2x5x4: input dim 0 is 3, "
            "not 1 or 5");
}

TEST(GraphErrors, ShapeOps) {
  EXPECT_EQ(errorOf([](Graph &g) {
              reshape(g.input("a", DType::f32, {4, 6}), {5, 5});
            }),
            "reshape: cannot reshape 4x6 (24 elements) to 5x5 (25 elements)");
  EXPECT_EQ(errorOf([](Graph &g) {
              transpose(g.input("a", DType::f32, {2, 3}), {0, 0});
            }),
            "transpose: permutation [0, 0] is not a permutation of the dims "
            "of 2x3");
  EXPECT_EQ(errorOf([](Graph &g) {
              reduceSum(g.input("a", DType::f32, {2, 3}), {2});
            }),
            "reduceSum: axis 2 is out of range for rank 2");
  EXPECT_EQ(errorOf([](Graph &g) {
              softmax(g.input("a", DType::f32, {2, 3}), -3);
            }),
            "softmax: axis -3 is out of range for rank 2");
  EXPECT_EQ(errorOf([](Graph &g) { iota(g, {4}, 0, DType::i1); }),
            "iota: dtype must be numeric, got i1");
  EXPECT_EQ(errorOf([](Graph &g) { g.input("a", DType::f32, {2, -3}); }),
            "input: input 'a' has a negative dim in 2x-3");
}

TEST(GraphErrors, AxisOps) {
  EXPECT_EQ(errorOf([](Graph &g) {
              argmax(g.input("a", DType::i64, {2, 3}), 1);
            }),
            "argmax: takes floats or i32, got i64 2x3");
  EXPECT_EQ(errorOf([](Graph &g) {
              argmin(g.input("a", DType::f32, {2, 0}), -1);
            }),
            "argmin: axis 1 of 2x0 is empty: no position to return");
  EXPECT_EQ(errorOf([](Graph &g) {
              cumsum(g.input("a", DType::bf16, {2, 3}), 2);
            }),
            "cumsum: axis 2 is out of range for rank 2");
  EXPECT_EQ(errorOf([](Graph &g) {
              cumsum(g.input("a", DType::i1, {4}), 0);
            }),
            "cumsum: takes floats or i32, got i1 4");
}

TEST(GraphErrors, SelectAndCompare) {
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor x = g.input("x", DType::f32, {4});
              where(x, x, x);
            }),
            "where: the condition must be i1, got f32");
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor c = g.input("c", DType::i1, {4});
              c < c;
            }),
            "compare: i1 operands allow only eq and ne, got lt");
}

TEST(GraphErrors, Attention) {
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor q = g.input("q", DType::f16, {1, 6, 8, 64});
              Tensor k = g.input("k", DType::f16, {1, 4, 8, 64});
              attention(q, k, k);
            }),
            "attention: query heads must be a multiple of key/value heads: "
            "q is 1x6x8x64, k is 1x4x8x64, v is 1x4x8x64");
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor q = g.input("q", DType::f16, {1, 1, 8, "D"});
              attention(q, q, q);
            }),
            "attention: the head dim is D; give a scale explicitly");
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor q = g.input("q", DType::f16, {1, 1, 8, 64});
              AttentionOptions o;
              o.mask = g.input("m", DType::i1, {9, 8});
              attention(q, q, q, o);
            }),
            "attention: mask: cannot broadcast 9x8 to 1x1x8x8: input dim 0 is "
            "9, not 1 or 8");
}

TEST(GraphErrors, NamesAndGraphs) {
  EXPECT_EQ(errorOf([](Graph &g) {
              g.input("x", DType::f32, {4});
              g.input("x", DType::f32, {4});
            }),
            "input: input 'x' is declared twice");
  EXPECT_EQ(errorOf([](Graph &g) {
              Tensor x = g.input("x", DType::f32, {4});
              g.output("y", x);
              g.output("y", x);
            }),
            "output: output 'y' is declared twice");
  EXPECT_EQ(errorOf([](Graph &g) {
              Graph other;
              g.input("x", DType::f32, {4}) + other.input("y", DType::f32, {4});
            }),
            "add: operands come from different graphs");
  EXPECT_EQ(errorOf([](Graph &g) { g.output("y", Tensor()); }),
            "output: output 'y' is an invalid tensor");
}

TEST(GraphErrors, SizesThatOverflow) {
  const int64_t huge = int64_t(1) << 40;
  EXPECT_EQ(errorOf([&](Graph &g) { g.input("x", DType::f32, {huge, huge}); }),
            "input: a tensor of 1099511627776x1099511627776 has more bytes "
            "than 64 bits can count");
  EXPECT_EQ(errorOf([&](Graph &g) {
              g.input("a", DType::f32, {huge, 1}) +
                  g.input("b", DType::f32, {1, huge});
            }),
            "broadcast: a tensor of 1099511627776x1099511627776 has more "
            "bytes than 64 bits can count");
}

TEST(GraphErrors, FirstErrorSticks) {
  Graph g;
  Tensor a = g.input("a", DType::f32, {2, 3});
  Tensor bad = matmul(a, a);
  EXPECT_FALSE(bad.isValid());
  Tensor worse = exp(bad) + reshape(a, {7});
  EXPECT_FALSE(worse.isValid());
  EXPECT_EQ(g.status().message(),
            "matmul: inner dimensions differ: a is 2x3, b is 2x3");
  Expected<std::string> ir = g.toMLIR();
  ASSERT_FALSE(ir);
  EXPECT_EQ(ir.error().code(), ErrorCode::InvalidGraph);
}

TEST(GraphErrors, ParseErrorsNamePositions) {
  Expected<Graph> g = Graph::fromMLIR(
      "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %y = kf.exp %x : tensor<4xf32>\n"
      "  return %y : tens\n",
      "t.mlir");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message().find("t.mlir:3:14: error: expected "
                                     "non-function type"),
            std::string::npos)
      << g.error().message();
  Expected<Graph> bad = Graph::fromMLIR(
      "func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {\n"
      "  return %x : tensor<4xf64>\n}\n",
      "d.mlir");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("d.mlir:1:1: error: argument 0 has "
                                       "type 'tensor<4xf64>'"),
            std::string::npos)
      << bad.error().message();
  Expected<Graph> missing = Graph::fromFile("/nonexistent/graph.mlir");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::IOError);
}

TEST(DType, NamesAndSizes) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1})
    EXPECT_EQ(parseDType(dtypeName(d)), d);
  EXPECT_FALSE(parseDType("f64"));
  EXPECT_EQ(dtypeSize(DType::bf16), 2u);
  EXPECT_EQ(dtypeSize(DType::i1), 1u);
  EXPECT_STREQ(version(), "0.1.0");
  EXPECT_STRNE(llvmVersion(), "");
}

} // namespace
