//===- kfuse-fuzz.cpp - differential fuzzing of the compiler --------------===//
//
//   kfuse-fuzz [--count N] [--seed S] [--time-limit SECONDS] [--cpu|--gpu]
//              [--regressions DIR] [--max-nodes N] [--max-elements N]
//              [--gradients | --backward]
//   kfuse-fuzz --replay FILE.mlir...
//
// Generates seeded random graphs and checks each (Check.h): on a GPU,
// fused and unfused against the float64 evaluator; without one, both
// compiled and assembled by ptxas. With --gradients, the backward instead:
// gradients against float64 finite differences and the training split
// against the joint graph (no GPU needed). With --backward, the joint
// vjp() graph of each random graph is checked as above, fused and unfused
// (16-bit and discrete graphs too). A failing graph is shrunk and written to
// DIR as a .mlir regression test whose RUN line replays it. Exits 1 when
// anything failed.
//
//===----------------------------------------------------------------------===//

#include "Check.h"
#include "Recipe.h"

#include "kfuse/Compiler.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <execinfo.h>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace kfuse;
using namespace kfuse::fuzz;

namespace {

struct Options {
  uint64_t count = 100, seed = 1;
  double timeLimit = 0; ///< seconds; 0: none
  int mode = -1;        ///< 0 cpu, 1 gpu, -1 gpu when there is one
  bool gradients = false, backward = false;
  std::string regressions;
  GenerateOptions generate;
  std::vector<std::string> replay;
};

/// What the generated graphs exercised, to show every op and dtype is.
struct Coverage {
  std::map<std::string, std::set<int>> ops;
  std::set<std::string> dtypes;
  uint64_t nodes = 0;

  uint64_t symbolic = 0;

  void add(const Recipe &recipe) {
    symbolic += recipe.symbolic;
    for (const Node &n : recipe.nodes) {
      ++nodes;
      switch (n.kind) {
      case NodeKind::Unary: ops["unary"].insert(n.op); break;
      case NodeKind::Binary: ops["binary"].insert(n.op); break;
      case NodeKind::Select:
        ops["compare"].insert(n.op & kCompareBits);
        ops["logic"].insert((n.op >> kLogicShift & 3) |
                            ((n.op & kNegateMask) ? 4 : 0));
        break;
      case NodeKind::Reduce: ops["reduce"].insert(n.op); break;
      case NodeKind::Input: dtypes.insert(dtypeName(n.dtype)); break;
      case NodeKind::Cast:
        ops["cast"].insert(int(n.dtype));
        break;
      default: ops["other"].insert(int(n.kind)); break;
      }
    }
  }
  std::string str() const {
    std::ostringstream os;
    os << nodes << " nodes, " << symbolic << " graphs with symbolic dims; kinds:";
    for (auto &[name, seen] : ops)
      os << " " << name << " " << seen.size();
    os << "; input dtypes:";
    for (const std::string &d : dtypes)
      os << " " << d;
    return os.str();
  }
};

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    const char *v = nullptr;
    if (arg == "--cpu")
      o.mode = 0;
    else if (arg == "--gpu")
      o.mode = 1;
    else if (arg == "--gradients") {
      // Finite differences evaluate the graph twice per input element:
      // small tensors (a later --max-elements still sets the size).
      o.gradients = true;
      o.generate.maxElements = 256;
    }
    else if (arg == "--backward") {
      // The joint graph's tolerance grows with the largest value's size
      // (its gradients sum over it): smaller graphs keep it meaningful.
      o.backward = true;
      o.generate.maxElements = 4096;
    }
    else if (arg == "--replay") {
      while (i + 1 < argc && argv[i + 1][0] != '-')
        o.replay.push_back(argv[++i]);
    } else if ((arg == "--count" || arg == "--seed" || arg == "--max-nodes" ||
                arg == "--max-elements" || arg == "--time-limit" ||
                arg == "--regressions") &&
               (v = value())) {
      if (arg == "--regressions")
        o.regressions = v;
      else if (arg == "--time-limit")
        o.timeLimit = std::atof(v);
      else if (arg == "--count")
        o.count = std::strtoull(v, nullptr, 10);
      else if (arg == "--seed")
        o.seed = std::strtoull(v, nullptr, 10);
      else if (arg == "--max-nodes")
        o.generate.maxNodes = std::atoi(v);
      else
        o.generate.maxElements = std::atoll(v);
    } else {
      std::cerr << "kfuse-fuzz: unknown or incomplete argument '" << arg
                << "'\n";
      return false;
    }
  }
  if (o.generate.maxNodes < 2) {
    std::cerr << "kfuse-fuzz: --max-nodes must be at least 2\n";
    return false;
  }
  return true;
}

/// Writes the shrunk graph as a regression test that replays it, with the
/// seed of its random inputs: some failures show only for some values.
void writeRegression(const std::string &dir, const Recipe &recipe,
                     const BuiltGraph &built, const CheckResult &result,
                     uint64_t inputSeed) {
  Expected<std::string> text = built.graph.toMLIR();
  if (!text) {
    std::cerr << "  cannot print the graph: " << text.error().message() << "\n";
    return;
  }
  std::string path = dir + "/fuzz-" + std::to_string(recipe.seed) + ".mlir";
  std::ofstream out(path);
  out << "// Found by kfuse-fuzz --seed " << recipe.seed << " (" << result.failure
      << "), shrunk to " << recipe.nodes.size() << " nodes.\n"
      << "// kfuse-fuzz: reduction-length " << built.reductionLength
      << " least-precise " << dtypeName(built.leastPrecise)
      << (built.discrete ? " discrete" : "") << "\n"
      << "// kfuse-fuzz: input-seed " << inputSeed << "\n"
      << "// kfuse-fuzz: shapes";
  for (const std::vector<int64_t> &shape : built.inputShapes) {
    out << " ";
    for (size_t d = 0; d < shape.size(); ++d)
      out << (d ? "x" : "") << shape[d];
    if (shape.empty())
      out << "scalar";
  }
  out << "\n"
      << "// RUN: kfuse-fuzz --replay %s\n"
      << *text;
  std::cerr << "  written to " << path << "\n";
}

/// Replays regression files: each must pass.
int replay(const Options &o, CheckConfig config) {
  int failures = 0;
  for (const std::string &path : o.replay) {
    config.inputSeed = CheckConfig().inputSeed;
    Expected<Graph> graph = Graph::fromFile(path);
    if (!graph) {
      std::cerr << graph.error().message() << "\n";
      ++failures;
      continue;
    }
    BuiltGraph built{graph.take()};
    for (const TensorInfo &info : built.graph.inputs()) {
      built.inputShapes.emplace_back();
      for (const Dim &d : info.shape)
        built.inputShapes.back().push_back(d.size());
    }
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string slashes, tag, key;
      if (words >> slashes >> tag >> key && tag == "kfuse-fuzz:" &&
          key == "shapes") {
        built.inputShapes.clear();
        for (std::string shape; words >> shape;) {
          built.inputShapes.emplace_back();
          std::istringstream dims(shape == "scalar" ? "" : shape);
          for (std::string dim; std::getline(dims, dim, 'x');)
            built.inputShapes.back().push_back(std::stoll(dim));
        }
      }
      if (tag == "kfuse-fuzz:" && key == "input-seed")
        words >> config.inputSeed;
      if (tag == "kfuse-fuzz:" && key == "reduction-length") {
        words >> built.reductionLength;
        for (std::string word; words >> word;) {
          if (word == "discrete")
            built.discrete = true;
          else if (std::optional<DType> d = parseDType(word))
            built.leastPrecise = *d;
        }
      }
    }
    CheckResult result = check(built, config);
    std::cout << path << ": "
              << (result.kind == CheckResult::Failed ? "FAILED " + result.failure
                                                     : std::string("passed"))
              << (result.detail.empty() ? "" : ": " + result.detail) << "\n";
    failures += result.kind == CheckResult::Failed;
  }
  return failures ? 1 : 0;
}

/// What a run found.
struct Summary {
  uint64_t tried = 0, passed = 0, degenerate = 0, failed = 0;
  std::map<std::string, int> byClass;
  Coverage coverage;
};

/// Reports a failing graph, shrinks it, and writes the regression test.
void reportFailure(const Options &o, const CheckConfig &config,
                   const Recipe &recipe, const CheckResult &result) {
  std::cerr << "seed " << recipe.seed << ": FAILED " << result.failure << ": "
            << result.detail << "\n" << recipe.str() << "\n";
  Recipe small = shrink(recipe, [&](const Recipe &candidate) {
    Expected<BuiltGraph> b = build(candidate);
    return b && check(*b, config).failure == result.failure;
  });
  std::cerr << "  shrunk to:\n" << small.str() << "\n";
  if (o.regressions.empty())
    return;
  Expected<BuiltGraph> b = build(small);
  if (!b)
    return;
  // With --backward the regression is the joint graph that failed, replayed
  // as any graph.
  CheckResult found = check(*b, config);
  if (!config.backward) {
    writeRegression(o.regressions, small, *b, found, config.inputSeed);
  } else if (Expected<BuiltGraph> joint = backwardGraph(*b)) {
    writeRegression(o.regressions, small, *joint, found, config.inputSeed);
  }
}

/// Generates and checks one graph.
/// The seed being checked, for the crash report: on a GPU a check runs in
/// this process (a CUDA context does not survive fork), so a crash there
/// would otherwise end the run without saying which graph did it.
volatile sig_atomic_t crashSeedHigh, crashSeedLow;

void writeDecimal(int fd, uint64_t v) {
  char digits[24];
  int n = 0;
  do
    digits[n++] = char('0' + v % 10);
  while (v /= 10);
  for (char *a = digits, *z = digits + n - 1; a < z; ++a, --z)
    std::swap(*a, *z);
  (void)!write(fd, digits, size_t(n));
}

/// Names the seed and prints the raw backtrace (symbolise it with
/// llvm-symbolizer against the same binary), then dies of the signal.
extern "C" void reportCrash(int sig) {
  static const char head[] = "kfuse-fuzz: crashed checking seed ";
  (void)!write(2, head, sizeof head - 1);
  writeDecimal(2, (uint64_t(uint32_t(crashSeedHigh)) << 32) |
                      uint32_t(crashSeedLow));
  static const char tail[] = "; backtrace:\n";
  (void)!write(2, tail, sizeof tail - 1);
  void *frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

void installCrashReport() {
  void *warm[1];
  backtrace(warm, 1); // loads libgcc before any crash, not inside a handler
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    signal(sig, reportCrash);
}

void fuzzOne(const Options &o, CheckConfig &config, uint64_t seed,
             Summary &sum) {
  crashSeedHigh = sig_atomic_t(seed >> 32);
  crashSeedLow = sig_atomic_t(uint32_t(seed));
  Recipe recipe = generate(seed, o.generate);
  sum.coverage.add(recipe);
  Expected<BuiltGraph> built = build(recipe);
  ++sum.tried;
  if (!built) {
    std::cerr << "seed " << seed << ": the generator made an invalid graph: "
              << built.error().message() << "\n" << recipe.str() << "\n";
    ++sum.failed, ++sum.byClass["generator"];
    return;
  }
  config.inputSeed = seed * 7919;
  CheckResult result = check(*built, config);
  if (result.kind == CheckResult::Passed) {
    ++sum.passed;
  } else if (result.kind == CheckResult::Degenerate) {
    ++sum.degenerate;
  } else {
    ++sum.failed, ++sum.byClass[result.failure];
    reportFailure(o, config, recipe, result);
  }
}

int runFuzzing(const Options &o, CheckConfig &config) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  Summary sum;
  installCrashReport();
  for (uint64_t seed = o.seed; seed < o.seed + o.count; ++seed) {
    if (o.timeLimit > 0 && elapsed() > o.timeLimit)
      break;
    fuzzOne(o, config, seed, sum);
  }
  std::string how = config.gradients
                        ? "gradients against float64 finite differences"
                    : config.gpu ? "GPU: fused and unfused run against the "
                                 "evaluator"
                    : config.ptxas.empty()
                        ? "CPU: fused and unfused compiled"
                        : "CPU: fused and unfused compiled, assembled by ptxas";
  if (config.backward)
    how = "joint backward graphs, " + how;
  std::cout << "kfuse-fuzz: " << sum.tried << " graphs from seed " << o.seed
            << " (" << how << ") in " << elapsed() << " s: " << sum.passed
            << " passed, " << sum.degenerate
            << (config.gradients
                    ? " degenerate (16-bit, discrete or not finite), "
                    : " degenerate (reference not finite), ")
            << sum.failed
            << " failed\n";
  for (auto &[name, n] : sum.byClass)
    std::cout << "  " << name << ": " << n << "\n";
  std::cout << "coverage: " << sum.coverage.str() << "\n";
  return sum.failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, o))
    return 2;
  CheckConfig config;
  Expected<DeviceInfo> gpu = device();
  config.gpu = !o.gradients && (o.mode == 1 || (o.mode == -1 && gpu));
  config.gradients = o.gradients;
  config.backward = o.backward && !o.gradients;
  if (config.gpu && !gpu) {
    std::cerr << "kfuse-fuzz: --gpu, but " << gpu.error().message() << "\n";
    return 2;
  }
  config.ptxas = KFUSE_PTXAS;
  if (!config.gpu && access(config.ptxas.c_str(), X_OK) != 0) {
    std::cerr << "kfuse-fuzz: no ptxas at " << config.ptxas
              << ": compiling only\n";
    config.ptxas.clear();
  }
  return o.replay.empty() ? runFuzzing(o, config) : replay(o, config);
}
