//===- IndexingCases.cpp - cases for the indexing and newer ops ----------===//
//
// slice, concat, pad, gather, take_along_axis, rand/dropout, logic,
// floor/round/mod and i64, alone and fused into chains. Random integer
// inputs lie in [-8, 8], so gathers over short dims see negative indices
// and indices out of range (which must give the evaluator's fill).
//
//===----------------------------------------------------------------------===//

#include "OpCases.h"

namespace kfuse::testing {

namespace {

void addSliceConcatPad(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::i64})
    cases.push_back({std::string("slice_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {13, 12});
                       g.output("strided", slice(x, 1, 1, std::nullopt, 3));
                       g.output("rows", slice(x, 0, 2, -1) * scalarLike(x, 3));
                       // Both halves of the last dim, recombined.
                       Tensor lo = slice(x, -1, 0, 6), hi = slice(x, -1, 6);
                       g.output("halves", lo - hi);
                     },
                     {{13, 12}}});
  for (DType d : {DType::f32, DType::f16, DType::i32})
    cases.push_back({std::string("concat_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor a = g.input("a", d, {5, 3});
                       Tensor b = g.input("b", d, {5, 8});
                       g.output("cols", concat({a, b, a}, 1));
                       g.output("rows", concat({b, b * scalarLike(b, 2)}, 0));
                     },
                     {{5, 3}, {5, 8}}});
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::i1})
    cases.push_back({std::string("pad_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {7, 9});
                       g.output("pad", pad(x, {{1, 2}, {0, 3}}, -1.5));
                       g.output("sides", pad(x, {{0, 0}, {4, 4}}));
                     },
                     {{7, 9}}});
  // Rotate-half as RoPE writes it: slices, a negation and a concat, fused.
  cases.push_back({"rotate_half_bf16", [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {2, 3, 17, 16});
                     Tensor cosT = g.input("cos", DType::bf16, {17, 16});
                     Tensor sinT = g.input("sin", DType::bf16, {17, 16});
                     Tensor rotated =
                         concat({-slice(x, -1, 8), slice(x, -1, 0, 8)}, -1);
                     g.output("y", x * cosT + rotated * sinT);
                   },
                   {{2, 3, 17, 16}, {17, 16}, {17, 16}}});
}

/// Index maps at multiples of the vector (4 f32 or i32, 8 bf16, 2 i64
/// lanes), which read whole vectors of their operand: a stride-2 slice, an
/// aligned slice, concat parts, a pad's border, a gathered row (ids in [-8, 8] of 7
/// rows: some out of range, a vector of fill), a transpose keeping the last dim and a
/// broadcast over a middle dim.
void addVectorIndexMaps(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::i64})
    cases.push_back(
        {std::string("index_maps_as_vectors_") + dtypeName(d),
         [d](Graph &g) {
           Tensor x = g.input("x", d, {6, 32});
           Tensor table = g.input("table", d, {7, 16});
           Tensor ids = g.input("ids", DType::i64, {3, 5});
           Tensor pos = g.input("pos", d, {5, 16});
           Tensor cube = g.input("cube", d, {4, 6, 16});
           Tensor row = g.input("row", d, {6, 1, 16});
           Tensor strided = slice(x, 1, 0, std::nullopt, 2);
           g.output("slices", strided + slice(x, 1, 8, 24));
           g.output("concat", concat({-slice(x, 1, 16), strided}, 1));
           g.output("pad", pad(x, {{1, 1}, {8, 8}}, 2.0));
           g.output("embed", gather(table, ids, 0) + pos);
           g.output("moved", transpose(cube, {1, 0, 2}) +
                                 broadcastTo(row, {6, 4, 16}));
         },
         {{6, 32}, {7, 16}, {3, 5}, {5, 16}, {4, 6, 16}, {6, 1, 16}}});
}

/// Embedding rows plus positions plus a residual, large enough that kf-tile
/// deals the blocks' chunks out among the 4 sequences (9.4 MB of the
/// kernel's bytes between two reads of a position) and streams the stores.
void addPositionsInGroups(std::vector<OpCase> &cases) {
  cases.push_back({"embedding_positions_in_groups_bf16", [](Graph &g) {
                     Tensor table = g.input("table", DType::bf16, {64, 2048});
                     Tensor ids = g.input("ids", DType::i64, {4, 1024});
                     Tensor pos = g.input("pos", DType::bf16, {1024, 2048});
                     Tensor x = g.input("x", DType::bf16, {4, 1024, 2048});
                     g.output("y", gather(table, ids, 0) + pos + x);
                   },
                   {{64, 2048}, {4, 1024}, {1024, 2048}, {4, 1024, 2048}}});
  // Gathered rows of 1000 floats (250 vectors), four vectors a block apart
  // a thread step: a step's vectors lie in different rows, some of them
  // straddling two.
  cases.push_back({"gathered_rows_interleaved_f32", [](Graph &g) {
                     Tensor table = g.input("table", DType::f32, {300, 1000});
                     Tensor ids = g.input("ids", DType::i32, {1536});
                     g.output("y", exp(gather(table, ids, 0)));
                   },
                   {{300, 1000}, {1536}}});
}

void addGathers(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16, DType::i32, DType::i1})
    for (DType index : {DType::i32, DType::i64})
      cases.push_back(
          {std::string("gather_") + dtypeName(d) + "_by_" + dtypeName(index),
           [d, index](Graph &g) {
             // An embedding lookup (dim 11: every index in range or counted
             // from the end) and a gather along columns of 5 (some out of
             // range).
             Tensor table = g.input("table", d, {11, 6});
             Tensor ids = g.input("ids", index, {3, 5});
             Tensor x = g.input("x", d, {4, 5});
             Tensor cols = g.input("cols", index, {9});
             g.output("embed", gather(table, ids, 0));
             g.output("cols", gather(x, cols, 1));
           },
           {{11, 6}, {3, 5}, {4, 5}, {9}}});
  for (DType d : {DType::f32, DType::bf16})
    for (DType index : {DType::i32, DType::i64})
      cases.push_back(
          {std::string("index_add_") + dtypeName(d) + "_by_" +
               dtypeName(index),
           [d, index](Graph &g) {
             // gather's two cases transposed: [3, 5] ids' rows of updates
             // into 11 rows, and 9 columns into 5 (some out of range),
             // each with a prologue on the updates and the sums.
             Tensor rows = g.input("rows", d, {3, 5, 6});
             Tensor ids = g.input("ids", index, {3, 5});
             Tensor x = g.input("x", d, {4, 9});
             Tensor cols = g.input("cols", index, {9});
             g.output("table", indexAdd(rows * rows, ids, 0, 11) * 2.0);
             g.output("cols", indexAdd(x, cols, 1, 5));
           },
           {{3, 5, 6}, {3, 5}, {4, 9}, {9}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back(
        {std::string("index_add_tiles_") + dtypeName(d),
         [d](Graph &g) {
           // Ordered index_add's tiles (indices are drawn in [-8, 8]): 2 x 9
           // rows of 1,100 columns (two column tiles, the second partial,
           // four columns a thread) from 1,300 indices (two chunks of
           // 1,024, the second partial; about 76 hits a row, many a batch
           // of 4 hits); and 300 x 16 rows of 64 columns (tiles of 16 rows,
           // 4 row groups) from 40 indices.
           Tensor wide = g.input("wide", d, {2, 1300, 1100});
           Tensor ids = g.input("ids", DType::i64, {1300});
           Tensor narrow = g.input("narrow", d, {300, 40, 64});
           Tensor few = g.input("few", DType::i32, {40});
           g.output("wide", indexAdd(wide, ids, 1, 9));
           g.output("narrow", indexAdd(narrow, few, 1, 16));
         },
         {{2, 1300, 1100}, {1300}, {300, 40, 64}, {40}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("take_along_axis_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor logits = g.input("logits", d, {8, 50});
                       Tensor labels = g.input("labels", DType::i64, {8, 1});
                       Tensor x = cast(logits, DType::f32);
                       Tensor m = reduceMax(x, {1}, true);
                       Tensor lse =
                           log(reduceSum(exp(x - m), {1}, true)) + m;
                       // Cross-entropy per row: one row kernel.
                       g.output("loss", lse - takeAlongAxis(x, labels, 1));
                       g.output("picked", takeAlongAxis(logits, labels, 1));
                     },
                     {{8, 50}, {8, 1}}});
  // A one-hot of i64 labels against an iota of columns (cross-entropy's
  // backward): the compare narrows to i32, so labels past the columns, below
  // 0 (labels are in [-8, 8]) or 2^32 past one (its low half is a column)
  // must not match.
  cases.push_back({"one_hot_i64_labels", [](Graph &g) {
                     Tensor labels = g.input("labels", DType::i64, {6, 1});
                     Tensor y = g.input("y", DType::f32, {6, 5});
                     Tensor cols = iota(g, {6, 5}, 1, DType::i64);
                     auto hot = [&](Tensor l, Compare c) {
                       return compare(c, broadcastTo(l, {6, 5}), cols);
                     };
                     Tensor zero = y * 0.0;
                     g.output("hot", where(hot(labels, Compare::eq), y, zero));
                     g.output("cold", hot(labels, Compare::ne));
                     g.output("far", where(hot(labels + 4294967296.0,
                                                Compare::eq),
                                            y, zero));
                   },
                   {{6, 1}, {6, 5}}});
  // Rows too long for registers: the max and the sum of exponentials in
  // one online pass (40003 is ragged against any thread count).
  cases.push_back({"cross_entropy_long_rows", [](Graph &g) {
                     Tensor x = cast(g.input("logits", DType::bf16, {3, 40003}),
                                     DType::f32);
                     Tensor labels = g.input("labels", DType::i64, {3, 1});
                     Tensor m = reduceMax(x, {1}, true);
                     Tensor lse = log(reduceSum(exp(x - m), {1}, true)) + m;
                     Tensor loss = lse - takeAlongAxis(x, labels, 1);
                     g.output("loss", loss);
                     g.output("mean", reduceMean(loss));
                     g.output("lse", lse);
                   },
                   {{3, 40003}, {3, 1}}});
}

/// argmax/argmin and cumsum along the last, a middle and the first axis.
/// Integer inputs in [-8, 8] tie often (the first of equal ones must
/// win); log of inputs in [-1, 1] puts NaNs in the lines (the first NaN
/// must win).
void addAxisOps(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16, DType::i32})
    cases.push_back(
        {std::string("argmax_argmin_cumsum_") + dtypeName(d),
         [d](Graph &g) {
           Tensor x = g.input("x", d, {5, 7, 33});
           g.output("argmax_last", argmax(x, -1));
           g.output("argmin_middle", argmin(x, 1, true));
           g.output("argmax_first", argmax(x * scalarLike(x, 2), 0));
           g.output("cumsum_last", cumsum(x, 2));
           g.output("cumsum_first", cumsum(x, 0));
           if (isFloat(d))
             g.output("nan_wins", argmin(log(x), -1));
         },
         {{5, 7, 33}}});
  // Rows of whole vectors, several chunks a thread (f32: 256 threads x 4
  // chunks; bf16: 32 threads x 4 chunks): the vector path of the row
  // templates, and a scan carried across chunks.
  for (auto [d, length] : {std::pair{DType::f32, int64_t(4096)},
                           std::pair{DType::bf16, int64_t(1024)}})
    cases.push_back({std::string("argmax_cumsum_long_rows_") + dtypeName(d),
                     [d, length](Graph &g) {
                       Tensor x = g.input("x", d, {3, length});
                       g.output("argmax", argmax(x, -1));
                       g.output("cumsum", cumsum(x, -1));
                     },
                     {{3, length}}});
  // Ragged rows of whole vectors (4000 = 250 x 16 but not a whole number
  // of chunks; 32000 bf16, a vocabulary): vectors wholly inside or
  // outside the row, read and stored as vectors.
  for (auto [d, length] : {std::pair{DType::f32, int64_t(4000)},
                           std::pair{DType::bf16, int64_t(32000)}})
    cases.push_back(
        {std::string("argmax_cumsum_ragged_vectors_") + dtypeName(d),
         [d, length](Graph &g) {
           Tensor x = g.input("x", d, {5, length});
           g.output("argmax", argmax(x, -1));
           g.output("cumsum", cumsum(x, -1));
         },
         {{5, length}}});
  // Down columns in chunks (column_scan_tiling): 600 rows are two whole
  // chunks of 256 and a partial one, 45 columns a whole tile of 32 and a
  // partial one, of each of 3 leading indices; a prologue read through
  // elementAt; integers too.
  for (DType d : {DType::f32, DType::i32})
    cases.push_back({std::string("cumsum_columns_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {3, 600, 45});
                       g.output("middle", cumsum(x + x, 1));
                       g.output("first", cumsum(x, 0));
                     },
                     {{3, 600, 45}}});
  // An even number of columns: a thread two of them, a vector a row
  // (columnsPerThread = 2, chunks of 128 rows). 130 columns are two whole
  // tiles of 64 and one of a single pair; 300 rows two whole chunks and a
  // partial one; 16-bit pairs too.
  for (DType d : {DType::f32, DType::bf16, DType::i32})
    cases.push_back({std::string("cumsum_column_pairs_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {2, 300, 130});
                       g.output("down", cumsum(x, 1));
                     },
                     {{2, 300, 130}}});
}

void addRandomAndScalars(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("rand_dropout_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor seed = g.input("seed", DType::i32, {});
                       Tensor x = g.input("x", d, {"M", 333});
                       g.output("u", rand(seed, {1000, 33}, d));
                       g.output("dropped", dropout(x, seed, 0.25));
                     },
                     {{}, {61, 333}}});
  cases.push_back({"logic_i1", [](Graph &g) {
                     Tensor a = g.input("a", DType::i1, {33});
                     Tensor b = g.input("b", DType::i1, {33});
                     Tensor i = g.input("i", DType::i32, {33});
                     g.output("and", logicalAnd(a, b));
                     g.output("or", logicalOr(a, i));
                     g.output("xor", logicalXor(a, b));
                     g.output("not", logicalNot(logicalAnd(a, b)));
                   },
                   {{33}, {33}, {33}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("floor_round_mod_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {17, 19}) * 4.0;
                       g.output("floor", floor(x));
                       g.output("round", round(x));
                       g.output("mod", mod(x, scalarLike(x, 0.75)));
                       g.output("negmod", mod(x, scalarLike(x, -1.25)));
                     },
                     {{17, 19}}});
  for (DType d : {DType::i32, DType::i64})
    cases.push_back({std::string("mod_") + dtypeName(d),
                     [d](Graph &g) {
                       // Divisors in [-8, 8]: zero included (x mod 0 = 0).
                       Tensor a = g.input("a", d, {41});
                       Tensor b = g.input("b", d, {41});
                       g.output("mod", mod(a, b));
                       g.output("sum", a * b + a);
                     },
                     {{41}, {41}}});
}

} // namespace

void addIndexingCases(std::vector<OpCase> &cases) {
  addSliceConcatPad(cases);
  addVectorIndexMaps(cases);
  addGathers(cases);
  addPositionsInGroups(cases);
  addAxisOps(cases);
  addRandomAndScalars(cases);
}

} // namespace kfuse::testing
