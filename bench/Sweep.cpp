//===- Sweep.cpp - kfuse-bench sweep: shapes around the bench rows --------===//
//
// Issue 31's sweep. The bench rows are tuned; the shapes next to them show
// whether the configurations generalise: attention at head dims 64 to 256
// and sequence lengths off the tile multiples (causal, grouped-query), row
// kernels (softmax, LayerNorm, RMSNorm, row sums) from 128 to 64k columns,
// and bf16 matmuls with N or K off the multiples of 8 and decode-sized M.
// Each shape is compiled fused and timed on zeroed device buffers; its peer
// comes from one `bench/peers.py --sweep` process in the same run (SDPA;
// PyTorch eager and torch.compile; torch.matmul, which is cuBLAS). Each
// family's table ends with its worst ratio against the targets;
// --json writes the rows (bench/plot_sweep.py draws them).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace kfuse::bench {

namespace {

/// One shape of the sweep: its graph, its line for peers.py --sweep, and
/// what its floor counts.
struct SweepShape {
  std::string family, name, peerLine;
  std::function<Graph()> build;
  double flops = 0;
};

/// The peer's numbers for a shape: SDPA or cuBLAS ms, or eager and
/// torch.compile ms (0 where not run).
struct PeerTimes {
  double first = 0, second = 0;
};

struct SweepRow {
  const SweepShape *shape;
  double kfuseMs = 0, floorMs = 0, bytes = 0;
  PeerTimes peer;
};

void addAttention(std::vector<SweepShape> &all, AttentionShape s) {
  std::string name = "attn_b" + std::to_string(s.batch) + "h" +
                     std::to_string(s.heads) + "kv" +
                     std::to_string(s.kvHeads) + "_s" + std::to_string(s.seq) +
                     "_d" + std::to_string(s.headDim) +
                     (s.causal ? "_causal" : "");
  double flops = 4.0 * s.batch * s.heads * s.seq * s.seq * s.headDim /
                 (s.causal ? 2 : 1);
  all.push_back({"attention", name,
                 "attn " + joinInts({s.batch, s.heads, s.kvHeads, s.seq,
                                   s.headDim, s.causal ? 1 : 0}),
                 [=] { return attentionFromPrimitives(name, s); }, flops});
}

void addRows(std::vector<SweepShape> &all, const std::string &kind,
             DType dtype, int64_t rows, int64_t cols) {
  std::string name = kind + "_" + dtypeName(dtype) + "_" +
                     std::to_string(rows) + "x" + std::to_string(cols);
  all.push_back({"rows", name,
                 "rows " + kind + "," + std::to_string(rows) + "," +
                     std::to_string(cols) + "," + dtypeName(dtype),
                 [=] {
                   Graph g(name);
                   Tensor x = g.input("x", dtype, {rows, cols});
                   Tensor y = kind == "softmax" ? softmax(x)
                              : kind == "layernorm"
                                  ? layernorm(g, x, dtype, cols)
                              : kind == "rmsnorm" ? rmsnorm(g, x, dtype, cols)
                                                  : reduceSum(x, {1});
                   g.output("y", y);
                   return g;
                 }});
}

/// A bf16 [m, k] x [k, n], or with `weightRows` x @ w^T of a w [n, k] (as a
/// Linear layer holds its weight).
void addMatmul(std::vector<SweepShape> &all, int64_t m, int64_t n, int64_t k,
               bool weightRows = false) {
  std::string name = "mm_bf16_" + std::to_string(m) + "x" + std::to_string(n) +
                     "x" + std::to_string(k) + (weightRows ? "_wt" : "");
  all.push_back({"matmul", name,
                 (weightRows ? "mmt " : "mm ") + joinInts({m, n, k}),
                 [=] {
                   Graph g(name);
                   MatmulOptions o;
                   o.transposeB = weightRows;
                   Shape b = weightRows ? Shape{n, k} : Shape{k, n};
                   g.output("c", matmul(g.input("a", DType::bf16, {m, k}),
                                        g.input("b", DType::bf16, b), o));
                   return g;
                 },
                 2.0 * m * n * k});
}

std::vector<SweepShape> sweepShapes() {
  std::vector<SweepShape> all;
  // Head dims around 64 and 128; lengths off the 64- and 128-row tiles;
  // the Llama block's causal GQA 32/4.
  for (int64_t d : {64, 80, 96, 128, 192, 256})
    addAttention(all, {2, 16, 16, 2048, d, false});
  for (int64_t s : {1000, 2111, 4096})
    addAttention(all, {2, 32, 8, s, 128, true});
  for (int64_t s : {1000, 2111})
    addAttention(all, {4, 32, 4, s, 64, true});
  addAttention(all, {4, 32, 4, 2048, 64, true});
  // Rows from a few hundred to 64k columns, and few rows of many.
  for (auto [rows, cols] : std::initializer_list<std::pair<int64_t, int64_t>>{
           {131072, 128}, {32768, 1000}, {16384, 4096}, {300, 4096},
           {4096, 16384}, {1024, 65536}})
    for (const char *kind : {"softmax", "layernorm", "rmsnorm"})
      addRows(all, kind, DType::bf16, rows, cols);
  addRows(all, "sum", DType::f32, 8192, 3000);
  addRows(all, "sum", DType::f32, 64, 1 << 20);
  addRows(all, "sum", DType::f32, 1, 1 << 26); // a whole tensor's sum
  // bf16 matmuls: aligned, N or K one off, decode-sized M, the Llama MLP.
  for (auto [m, n, k] : std::initializer_list<std::array<int64_t, 3>>{
           {4096, 4096, 4096}, {4096, 4097, 4096}, {4096, 4100, 4096},
           {4096, 4096, 4097}, {1, 4096, 4096}, {16, 11008, 4096},
           {64, 4096, 11008}, {8192, 5632, 2048}})
    addMatmul(all, m, n, k);
  // The same as x @ w^T: N one or eight off, the last column of tiles narrow.
  for (int64_t n : {4096, 4097, 4104})
    addMatmul(all, 4096, n, 4096, true);
  // Decoding 16 tokens: an attention projection and Llama's lm-head.
  addMatmul(all, 16, 4096, 4096, true);
  addMatmul(all, 16, 32000, 4096, true);
  return all;
}

/// Each shape's peer times from one peers.py process, in order; zeros
/// where it cannot run.
std::vector<PeerTimes>
peerTimes(const std::string &peers,
          const std::vector<const SweepShape *> &shapes) {
  std::vector<PeerTimes> times(shapes.size());
  char path[] = "/tmp/kfuse-sweep-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return times;
  close(fd);
  {
    std::ofstream lines(path);
    for (const SweepShape *s : shapes)
      lines << s->peerLine << "\n";
  }
  std::string command =
      "python3 " + peers + " --sweep " + path + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE *)> pipe(popen(command.c_str(), "r"),
                                              pclose);
  for (size_t i = 0; pipe && i < times.size(); ++i)
    if (std::fscanf(pipe.get(), "%lf %lf", &times[i].first,
                    &times[i].second) != 2)
      break;
  pipe.reset();
  std::remove(path);
  return times;
}

Expected<SweepRow> measure(const SweepShape &shape, double copyGBs) {
  constexpr double kPeakTflops = 679; // cuBLAS's 8192^3 on the H200
  Graph g = shape.build();
  if (!g.status())
    return g.status().error();
  int kernels = 0;
  double bytes = 0;
  Expected<double> ms = timeOnZeros(g, kernels, bytes);
  if (!ms)
    return ms.error();
  SweepRow row{&shape, *ms};
  row.bytes = bytes;
  row.floorMs = std::max(shape.flops / (kPeakTflops * 1e12),
                         row.bytes / (copyGBs * 1e9)) *
                1e3;
  return row;
}

/// peer / kfuse (> 1: kfuse faster), or 0 without the peer.
double speedup(double peerMs, double kfuseMs) {
  return peerMs > 0 ? peerMs / kfuseMs : 0;
}

void printFamily(const std::string &family, const std::vector<SweepRow> &rows) {
  if (std::none_of(rows.begin(), rows.end(), [&](const SweepRow &r) {
        return r.shape->family == family;
      }))
    return;
  bool isRows = family == "rows";
  std::printf("\n%s\n%-34s %9s %9s %9s %9s %8s %8s %8s\n", family.c_str(),
              "shape", "floor_ms", "kfuse_ms", isRows ? "eager_ms" : "peer_ms",
              isRows ? "comp_ms" : "", "kf/floor", "peer/kf",
              isRows ? "comp/kf" : "");
  double worstPeer = INFINITY, worstCompiled = INFINITY, worstFloor = 0;
  constexpr double kL2Bytes = 50e6;
  for (const SweepRow &r : rows) {
    if (r.shape->family != family)
      continue;
    double peer = speedup(r.peer.first, r.kfuseMs),
           compiled = speedup(r.peer.second, r.kfuseMs);
    std::printf("%-34s %9.4f %9.4f %9.4f %9.4f %8.3f %8.3f %8.3f\n",
                r.shape->name.c_str(), r.floorMs, r.kfuseMs, r.peer.first,
                r.peer.second, r.kfuseMs / r.floorMs, peer, compiled);
    if (peer > 0)
      worstPeer = std::min(worstPeer, peer);
    if (isRows && compiled > 0)
      worstCompiled = std::min(worstCompiled, compiled);
    if (!isRows || r.bytes > kL2Bytes)
      worstFloor = std::max(worstFloor, r.kfuseMs / r.floorMs);
  }
  if (isRows)
    std::printf("worst: %.3fx floor (shapes larger than L2; target <= 1.2), "
                "eager / kfuse %.3f, torch.compile / kfuse %.3f (target > 1)\n",
                worstFloor, worstPeer, worstCompiled);
  else
    std::printf("worst: %s / kfuse %.3f (target >= 1.0), %.3fx floor\n",
                family == "attention" ? "SDPA" : "cuBLAS", worstPeer,
                worstFloor);
}

std::string json(const std::vector<SweepRow> &rows) {
  std::ostringstream os;
  os << "{\"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow &r = rows[i];
    os << (i ? ",\n " : "\n ") << "{\"family\": \"" << r.shape->family
       << "\", \"name\": \"" << r.shape->name << "\", \"kfuse_ms\": "
       << r.kfuseMs << ", \"floor_ms\": " << r.floorMs
       << ", \"peer_ms\": " << r.peer.first
       << ", \"compiled_ms\": " << r.peer.second << "}";
  }
  os << "\n]}\n";
  return os.str();
}

} // namespace

int runSweep(const std::string &only, bool list, double copyGBs,
             const std::string &peers, const std::string &jsonPath) {
  std::vector<SweepShape> all = sweepShapes();
  std::vector<const SweepShape *> chosen;
  for (const SweepShape &s : all)
    if (namedIn(s.family, only) || namedIn(s.name, only))
      chosen.push_back(&s);
  if (list) {
    for (const SweepShape *s : chosen)
      std::printf("%s %s\n", s->family.c_str(), s->name.c_str());
    return 0;
  }
  if (chosen.empty()) {
    std::fprintf(stderr, "no sweep family or shape '%s' (see --list)\n",
                 only.c_str());
    return 2;
  }
  std::printf("floor = max(FLOPs / 679 TFLOP/s, bytes / %.0f GB/s); peers "
              "from %s in one process (0: not run)\n",
              copyGBs, peers.c_str());
  std::vector<SweepRow> rows;
  for (const SweepShape *s : chosen) {
    Expected<SweepRow> row = measure(*s, copyGBs);
    if (!row) {
      std::fprintf(stderr, "%s: %s\n", s->name.c_str(),
                   row.error().message().c_str());
      return 1;
    }
    rows.push_back(*row);
  }
  std::vector<PeerTimes> peer = peerTimes(peers, chosen);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].peer = peer[i];
  for (const char *family : {"attention", "rows", "matmul"})
    printFamily(family, rows);
  if (!jsonPath.empty())
    std::ofstream(jsonPath) << json(rows);
  return 0;
}

} // namespace kfuse::bench
