//===- Check.cpp - one fuzzed graph, fused against unfused against float64 ===//

#include "Check.h"

#include "kfuse/Compiler.h"
#include "kfuse/Testing.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <cstring>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

namespace kfuse::fuzz {

namespace {

const char *modeName(Fusion fusion) {
  return fusion == Fusion::Fused ? "fused" : "unfused";
}

CheckResult failed(std::string failure, std::string detail) {
  return {CheckResult::Failed, std::move(failure), std::move(detail)};
}

/// ptxas's complaint about `ptx`, or "" when it assembles.
std::string assemble(const std::string &ptxas, const std::string &arch,
                     const std::string &ptx) {
  char path[] = "/tmp/kfuse-fuzz-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return "cannot create a temporary file";
  close(fd);
  std::ofstream(path, std::ios::binary) << ptx;
  std::string command = ptxas + " -arch=" + kfuse::ptxTarget(ptx) +
                        " -o /dev/null " + path +
                        " 2>&1";
  std::string output;
  int rc = -1;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[512];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, n);
    rc = pclose(pipe);
  }
  unlink(path);
  return rc == 0 ? "" : "ptxas: " + output;
}

Expected<Executable> compileMode(const Graph &graph, const CheckConfig &config,
                                 Fusion fusion) {
  CompileOptions options;
  options.arch = config.arch;
  options.fusion = fusion;
  options.diskCache = false;
  return Compiler(options).compile(graph);
}

/// The first output of `got` that is not `want` to 1e-12, as a failure
/// message; empty where all are.
std::string firstDifference(const std::vector<TensorInfo> &outputs,
                            const std::vector<HostTensor> &got,
                            const std::vector<HostTensor> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (double error = relativeError(got[i], want[i]); !(error <= 1e-12))
      return "output '" + outputs[i].name + "' relative error " +
             std::to_string(error) + " against the graph as built";
  return {};
}

/// The graph as the compiler runs it (specialised, in its canonical forms
/// and CSE'd: a mask of positions become `causal`, repeat_kv read as
/// grouped heads, the folds) evaluates as the graph as built does. The
/// rewrites are exact in one of the evaluator's two semantics: rewrites
/// from primitives (softmax to kf.attention) in the ideal one, which rounds
/// only at casts and outputs; folds that take a value to be its dtype's
/// (cast(cast(x to f32) to f16) is x for an f16 x) where each op's result
/// is rounded to its dtype, as a store does: in the ideal semantics the
/// two casts round an unrounded x twice, which differs at a tie.
CheckResult checkCanonicalForm(const BuiltGraph &built, Executable &exe,
                               const std::vector<HostTensor> &inputs,
                               const std::vector<HostTensor> &expected) {
  Expected<std::string> text = exe.dump(Stage::Graph, built.inputShapes);
  if (!text)
    return failed("canonical form", text.error().message());
  Expected<Graph> canonical = Graph::fromMLIR(*text, "canonical");
  if (!canonical)
    return failed("canonical form", canonical.error().message());
  Expected<std::vector<HostTensor>> got = evaluate(*canonical, inputs);
  if (!got)
    return failed("canonical form", got.error().message());
  std::vector<TensorInfo> outputs = built.graph.outputs();
  std::string ideal = firstDifference(outputs, *got, expected);
  if (ideal.empty())
    return {};
  Expected<std::vector<HostTensor>> wantRounded =
      evaluate(built.graph, inputs, EvaluateOptions{true});
  Expected<std::vector<HostTensor>> gotRounded =
      evaluate(*canonical, inputs, EvaluateOptions{true});
  if (wantRounded && gotRounded &&
      firstDifference(outputs, *gotRounded, *wantRounded).empty())
    return {};
  return failed("canonical form", ideal);
}

CheckResult checkOnCpu(const BuiltGraph &built, const CheckConfig &config) {
  std::optional<Executable> fused;
  for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
    Expected<Executable> exe = compileMode(built.graph, config, fusion);
    if (!exe)
      return failed(std::string("compile ") + modeName(fusion),
                    exe.error().message());
    if (fusion == Fusion::Fused)
      fused.emplace(std::move(*exe));
    Executable &compiled = fusion == Fusion::Fused ? *fused : *exe;
    Expected<std::string> ptx = compiled.dump(Stage::PTX, built.inputShapes);
    if (!ptx)
      return failed(std::string("compile ") + modeName(fusion),
                    ptx.error().message());
    if (config.ptxas.empty())
      continue;
    if (std::string log = assemble(config.ptxas, config.arch, *ptx);
        !log.empty())
      return failed(std::string("ptxas ") + modeName(fusion), log);
  }
  // The evaluator is cheap on small graphs, and it is the oracle: it must
  // not fail on any graph the frontend accepts.
  if (built.maxElements <= (int64_t(1) << 16)) {
    std::vector<HostTensor> inputs = randomInputs(built, config.inputSeed);
    auto result = evaluate(built.graph, inputs);
    if (!result)
      return failed("evaluate", result.error().message());
    return checkCanonicalForm(built, *fused, inputs, *result);
  }
  return {};
}

/// For graphs that take discrete decisions on computed floats: the
/// elements that differ by more than `tolerance` (relative to the larger of
/// the element and the output's root mean square) are flips of a decision
/// near its boundary when there are few of them: at most one in a thousand
/// (more for 16-bit dtypes: twice their tolerance), and at least two. (A
/// bug confined to a few elements, a tail, say, can hide in such graphs;
/// graphs without discrete decisions are compared strictly.)
bool fewFlips(const HostTensor &actual, const HostTensor &expected,
              double tolerance, double flipRate) {
  double sumSquares = 0;
  for (size_t i = 0; i < expected.numElements(); ++i)
    sumSquares += expected.get(i) * expected.get(i);
  double rms = std::sqrt(sumSquares / double(expected.numElements()));
  size_t flips = 0;
  for (size_t i = 0; i < expected.numElements(); ++i) {
    double a = actual.get(i), e = expected.get(i);
    if (std::isnan(a))
      return false; // NaN never passes
    flips += std::abs(a - e) > tolerance * std::max(std::abs(e), rms);
  }
  double allowed = std::max(2.0, flipRate * double(expected.numElements()));
  return double(flips) <= allowed;
}

bool allFinite(const HostTensor &t) {
  for (size_t i = 0; i < t.numElements(); ++i)
    if (!std::isfinite(t.get(i)))
      return false;
  return true;
}

/// The precision of `dtype` (2^-mantissa bits), or 0 for integers.
double unitRoundoff(DType dtype) {
  switch (dtype) {
  case DType::f32: return std::ldexp(1.0, -23);
  case DType::f16: return std::ldexp(1.0, -10);
  case DType::bf16: return std::ldexp(1.0, -7);
  default: return 0;
  }
}

/// How far each output moves, relative to itself, when every float input
/// element moves by about `delta`, one unit in its last place.
struct InputNudge {
  double delta = 0;
  std::vector<double> shift; ///< per output; empty if none could be measured
};

InputNudge nudgeInputs(const BuiltGraph &built,
                       const std::vector<HostTensor> &inputs,
                       const std::vector<HostTensor> &reference,
                       uint64_t seed) {
  // The evaluator rounds each output to its dtype, so a nudge smaller than
  // an output's own ulp would not move it: an f16 gradient summed over
  // terms that cancel measured a condition of 1. Inputs move by their
  // ulp, or by twice the least precise output's, whichever is larger,
  // which keeps that rounding within half a unit of the measure.
  InputNudge nudge;
  for (const HostTensor &t : inputs)
    nudge.delta = std::max(nudge.delta, unitRoundoff(t.dtype()));
  for (const HostTensor &t : reference)
    nudge.delta = std::max(nudge.delta, 2 * unitRoundoff(t.dtype()));
  std::vector<HostTensor> nudged = inputs;
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (HostTensor &t : nudged) {
    if (unitRoundoff(t.dtype()) == 0)
      continue;
    for (size_t i = 0; i < t.numElements(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double sign = (state >> 63) ? 1.0 : -1.0;
      t.set(i, t.get(i) * (1 + sign * nudge.delta));
    }
  }
  Expected<std::vector<HostTensor>> moved = evaluate(built.graph, nudged);
  if (!moved || nudge.delta == 0)
    return nudge;
  for (size_t i = 0; i < reference.size(); ++i)
    nudge.shift.push_back(relativeError((*moved)[i], reference[i]));
  return nudge;
}

/// How much output `i` of the graph amplifies relative rounding of its
/// inputs: the evaluator's output moves by this times the relative change
/// when every float input element moves by about one unit in its last
/// place. A sin of a large sum, or a sum that cancels, has a large one:
/// f32 kernels round their intermediates, so such an output is only as
/// accurate as this times their precision, correct kernels included.
std::vector<double> conditionNumbers(const InputNudge &nudge, size_t outputs) {
  std::vector<double> kappa(outputs, 1.0);
  for (size_t i = 0; i < nudge.shift.size(); ++i)
    kappa[i] = std::max(1.0, nudge.shift[i] / nudge.delta);
  return kappa;
}

} // namespace

bool plausibleRoundingFlips(const HostTensor &actual, const HostTensor &expected,
                            DType leastPrecise) {
  double u = unitRoundoff(leastPrecise);
  double likelyFlips = 0;
  size_t flips = 0;
  for (size_t i = 0; i < expected.numElements(); ++i) {
    double a = actual.get(i), e = std::abs(expected.get(i));
    if (std::isnan(a))
      return false;
    double off = std::abs(a - expected.get(i));
    if (off > 1 + u * (e + 1))
      return false;
    flips += off != 0;
    likelyFlips += std::min(1.0, (e + 1) * u / 2);
  }
  return double(flips) <= likelyFlips + 4 * std::sqrt(likelyFlips) + 2;
}

namespace {

/// Whether `actual` differs from `expected` by no more than f32's smallest
/// normal number anywhere: an f32 kernel's sigmoid of -100 is 0 (exp(100)
/// overflows), the evaluator's a subnormal, and an output of only such
/// values is all rounding. NaN never passes.
bool withinSubnormals(const HostTensor &actual, const HostTensor &expected) {
  for (size_t i = 0; i < expected.numElements(); ++i) {
    double a = actual.get(i), e = expected.get(i);
    if (std::isnan(a) || !(std::abs(a - e) <= FLT_MIN))
      return false;
  }
  return true;
}

/// Element by element, whichever of `a` and `b` lies nearer `actual`.
HostTensor nearerReading(const HostTensor &actual, const HostTensor &a,
                         const HostTensor &b) {
  HostTensor nearer = a;
  for (size_t i = 0; i < a.numElements(); ++i)
    if (std::abs(actual.get(i) - b.get(i)) < std::abs(actual.get(i) - a.get(i)))
      nearer.set(i, b.get(i));
  return nearer;
}

/// A graph that takes discrete decisions has no condition number (an ulp
/// moves a decision), but an output is still noise when nudging the inputs
/// by an ulp and rounding every intermediate to its dtype each move it by
/// half its own size or more: the gradient of min(x, 4) through the mean of
/// a softmax, whose rows sum to 1, is x's rounding of that 1.
bool isNoiseOfDiscreteGraph(const BuiltGraph &built,
                            const std::vector<HostTensor> &inputs,
                            const std::vector<HostTensor> &reference,
                            const std::vector<HostTensor> &rounded, size_t i,
                            uint64_t seed) {
  constexpr double kHalf = 0.5;
  if (relativeError(rounded[i], reference[i]) < kHalf)
    return false;
  InputNudge nudge = nudgeInputs(built, inputs, reference, seed);
  return i < nudge.shift.size() && nudge.shift[i] >= kHalf;
}

/// A few decisions that rounding flips, each added into a row of a
/// result, move it by this much at most (relative): seed 66000071, a
/// floor of an f32 attention's output 1.4e-6 from an integer into a
/// matmul, was one flip at 3.7e-3. A wrong kernel moves outputs by more.
constexpr double kFewSpreadFlips = 0.02;

CheckResult checkOnGpu(const BuiltGraph &built, const CheckConfig &config) {
  std::vector<HostTensor> inputs =
      randomInputs(built, config.inputSeed);
  Expected<std::vector<HostTensor>> reference = evaluate(built.graph, inputs);
  if (!reference)
    return failed("evaluate", reference.error().message());
  for (const HostTensor &t : *reference)
    if (!allFinite(t))
      return {CheckResult::Degenerate, "", "reference is not finite"};
  // Graphs that take discrete decisions are judged by their flips instead;
  // elsewhere the tolerance grows with the measured conditioning, up to
  // kMaxCondition (beyond that a graph is noise, and a bug could hide).
  constexpr double kMaxCondition = 64;
  std::vector<double> kappa(reference->size(), 1.0);
  if (!built.discrete)
    kappa = conditionNumbers(
        nudgeInputs(built, inputs, *reference, config.inputSeed),
        reference->size());
  std::vector<TensorInfo> outputs = built.graph.outputs();
  double leastPreciseTolerance =
      testing::tolerance(built.leastPrecise, built.reductionLength);
  auto toleranceOf = [&](size_t i) {
    DType dtype = (*reference)[i].dtype();
    return config.toleranceFactor *
           (!isFloat(dtype)
                ? testing::tolerance(dtype)
                : leastPreciseTolerance * std::min(kappa[i], kMaxCondition));
  };
  auto agrees = [&](const HostTensor &actual, const HostTensor &expected,
                    size_t i) {
    double tolerance = toleranceOf(i);
    bool integral = !isFloat(expected.dtype());
    return relativeError(actual, expected) <= tolerance ||
           (!integral && withinSubnormals(actual, expected)) ||
           (built.discrete &&
            fewFlips(actual, expected, tolerance,
                     std::max(1e-3, 2 * leastPreciseTolerance))) ||
           (built.discrete && integral &&
            plausibleRoundingFlips(actual, expected, built.leastPrecise));
  };
  // Every op rounded to its dtype (as unfused kernels store them, and as
  // kernels compute f32) is the graph's other reading: a result that
  // agrees with it is right too (computed when needed). The two differ
  // where a discrete decision falls on values rounding moves (sin(x) <= x
  // of a bf16 x near 0; erf(4) is 1 in f32, so its cast to i32 is 1, not
  // 0), or where a rounded intermediate is amplified (the cos of an f16 sum
  // near 800, whose ulp is 0.5), which measuring the condition by nudging
  // the inputs does not see.
  // A fused kernel rounds some intermediates and not others, so an output
  // may follow one reading in some elements and the other elsewhere (the
  // cast to i32 of a bf16 gelu(x) of integers: x - 1 for x = 4, whose
  // f32 gelu is 3.99987, and x for x = 6, whose f32 gelu is 6): compared
  // also against the reading nearer to it in each element.
  std::optional<Expected<std::vector<HostTensor>>> rounded;
  auto agreesRounded = [&](const HostTensor &actual, size_t i) {
    if (!rounded)
      rounded = evaluate(built.graph, inputs, EvaluateOptions{true});
    if (!*rounded)
      return false;
    const HostTensor &other = (**rounded)[i];
    return agrees(actual, other, i) ||
           agrees(actual, nearerReading(actual, (*reference)[i], other), i);
  };
  for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
    std::string mode = modeName(fusion);
    Expected<Executable> exe = compileMode(built.graph, config, fusion);
    if (!exe)
      return failed("compile " + mode, exe.error().message());
    Expected<std::vector<HostTensor>> results = exe->runOnHost(inputs);
    if (!results)
      return failed("run " + mode, results.error().message());
    for (size_t i = 0; i < results->size(); ++i) {
      const HostTensor &expected = (*reference)[i];
      if (agrees((*results)[i], expected, i) ||
          agreesRounded((*results)[i], i))
        continue;
      // Nudging the float inputs does not see an output that cancels
      // values computed from integers (erf(3) + erf(-4) of i32 inputs): how
      // far the op-by-op rounded reading lies from the exact one measures
      // its condition with respect to the rounding of intermediates, and
      // kernels whose transcendentals are off by an ulp where the reading's
      // are correctly rounded miss that reading by as much again.
      if (isFloat(expected.dtype()) && *rounded && !built.discrete) {
        double kappaRounding = relativeError((**rounded)[i], expected) /
                               unitRoundoff(built.leastPrecise);
        if (kappaRounding > kappa[i]) {
          kappa[i] = kappaRounding;
          if (agrees((*results)[i], expected, i))
            continue;
        }
      }
      // An output whose measured condition makes its expected error 100%
      // or more is noise in any precision kfuse computes in (a backward
      // graph's gradient through a near-cancelling difference).
      if (isFloat(expected.dtype()) &&
          kappa[i] * leastPreciseTolerance >= 1)
        return {CheckResult::Degenerate, "",
                "output '" + outputs[i].name + "' is noise: condition " +
                    std::to_string(kappa[i])};
      if (isFloat(expected.dtype()) && built.discrete && *rounded &&
          isNoiseOfDiscreteGraph(built, inputs, *reference, **rounded, i,
                                 config.inputSeed))
        return {CheckResult::Degenerate, "",
                "output '" + outputs[i].name + "' is noise: an ulp of the "
                "inputs and the rounding of intermediates each move it by "
                "half its size"};
      if (isFloat(expected.dtype()) && built.discreteSpreads &&
          relativeError((*results)[i], expected) <= kFewSpreadFlips)
        return {CheckResult::Degenerate, "",
                "output '" + outputs[i].name + "' adds up values that "
                "depend on discrete decisions: a flip moves whole rows "
                "(relative error " +
                    std::to_string(relativeError((*results)[i], expected)) +
                    ")"};
      return failed("mismatch " + mode,
                    "output '" + outputs[i].name + "' (" +
                        dtypeName(expected.dtype()) + ") relative error " +
                        std::to_string(relativeError((*results)[i], expected)) +
                        " > tolerance " + std::to_string(toleranceOf(i)) +
                        " (condition " + std::to_string(kappa[i]) + ")");
    }
  }
  return {};
}

/// Runs the CPU check in a child process, so that a compiler crash is a
/// failure the fuzzer reports and shrinks, not the end of the run. (On a
/// GPU the check runs in-process: a CUDA context does not survive fork.)
CheckResult checkInChild(const BuiltGraph &built, const CheckConfig &config) {
  int fds[2];
  if (pipe(fds) != 0)
    return checkOnCpu(built, config);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    CheckResult r = checkOnCpu(built, config);
    std::string message = std::to_string(int(r.kind)) + "\n" + r.failure +
                          "\n" + r.detail;
    for (size_t done = 0; done < message.size();) {
      ssize_t n = write(fds[1], message.data() + done, message.size() - done);
      if (n <= 0)
        break;
      done += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;)
    message.append(buffer, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return failed("crash", WIFSIGNALED(status)
                               ? std::string("signal ") +
                                     strsignal(WTERMSIG(status))
                               : "the check did not finish");
  CheckResult r;
  size_t first = message.find('\n'), second = message.find('\n', first + 1);
  r.kind = CheckResult::Kind(std::atoi(message.substr(0, first).c_str()));
  r.failure = message.substr(first + 1, second - first - 1);
  r.detail = message.substr(second + 1);
  return r;
}

} // namespace

CheckResult checkGraph(const BuiltGraph &built, const CheckConfig &config) {
  return config.gpu ? checkOnGpu(built, config) : checkInChild(built, config);
}

} // namespace kfuse::fuzz
