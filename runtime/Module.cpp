//===- Module.cpp - a Plan's kernels loaded on the GPU --------------------===//

#include "runtime/Module.h"

#include "runtime/Debug.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <regex>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace kfuse::runtime {

/// PTX -> cubin through the driver's JIT linker, keeping ptxas's log.
static Status jitLink(Driver &d, Plan &plan) {
  static constexpr size_t kLogSize = 1 << 16;
  std::string info(kLogSize, '\0'), error(kLogSize, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_LOG_VERBOSE};
  void *values[] = {info.data(), reinterpret_cast<void *>(kLogSize),
                    error.data(), reinterpret_cast<void *>(kLogSize),
                    reinterpret_cast<void *>(1)};
  CUlinkState link = nullptr;
  KFUSE_RETURN_IF_ERROR(
      d.check(d.cuLinkCreate_v2(5, options, values, &link), "cuLinkCreate"));
  Status status = d.check(
      d.cuLinkAddData_v2(link, CU_JIT_INPUT_PTX,
                         const_cast<char *>(plan.ptx.c_str()),
                         plan.ptx.size() + 1, "kernels.ptx", 0, nullptr,
                         nullptr),
      "cuLinkAddData");
  void *cubin = nullptr;
  size_t cubinSize = 0;
  if (status)
    status = d.check(d.cuLinkComplete(link, &cubin, &cubinSize),
                     "cuLinkComplete");
  if (status) {
    plan.cubin.assign(static_cast<const char *>(cubin), cubinSize);
    plan.ptxasLog = info.c_str();
  } else {
    status = Error(ErrorCode::DeviceError,
                   status.message() + "\nptxas: " + error.c_str());
  }
  d.cuLinkDestroy(link);
  return status;
}

std::string findPtxas() {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("KFUSE_PTXAS"))
    candidates.push_back(path);
  else {
    if (const char *home = std::getenv("CUDA_HOME"))
      candidates.push_back(std::string(home) + "/bin/ptxas");
    candidates.push_back("/usr/local/cuda/bin/ptxas");
  }
  for (const std::string &c : candidates)
    if (c != "off" && access(c.c_str(), X_OK) == 0)
      return c;
  return "";
}

static std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Runs `argv` with stdout and stderr to `logPath`; true when it exits 0.
static bool runTool(const std::vector<std::string> &argv,
                    const std::string &logPath) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  return rc == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

/// Whether `ptxas` takes --split-compile (CUDA 12.3 and later): one
/// thread per function, on every CPU. A model's plan is one module of up to
/// a few hundred kernels; one thread took 2.9 s on GPT-2's.
static bool splitsCompiles(const std::string &ptxas) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = known.try_emplace(ptxas, false);
  if (!inserted)
    return it->second;
  const char *tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") +
                    "/kfuse-ptxas-help-XXXXXX";
  if (!mkdtemp(dir.data()))
    return false;
  std::string log = dir + "/help.txt";
  it->second = runTool({ptxas, "--help"}, log) &&
               readFile(log).find("--split-compile") != std::string::npos;
  unlink(log.c_str());
  rmdir(dir.c_str());
  return it->second;
}

bool assembleWithPtxas(const std::string &ptxas, Plan &plan) {
  std::smatch target;
  if (!std::regex_search(plan.ptx, target,
                         std::regex(R"(\.target\s+(sm_[0-9]+a?))")))
    return false;
  const char *tmp = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/kfuse-ptxas-XXXXXX";
  if (!mkdtemp(dir.data()))
    return false;
  std::string ptx = dir + "/kernels.ptx", cubin = dir + "/kernels.cubin",
              log = dir + "/ptxas.log";
  bool ok = false;
  {
    std::ofstream file(ptx, std::ios::binary);
    ok = static_cast<bool>(file << plan.ptx);
  }
  std::vector<std::string> argv = {ptxas, "-arch=" + target[1].str(), "-O3",
                                   "-v"};
  if (splitsCompiles(ptxas))
    argv.push_back("--split-compile=0");
  argv.insert(argv.end(), {ptx, "-o", cubin});
  ok = ok && runTool(argv, log);
  std::string code = ok ? readFile(cubin) : "";
  std::string text = readFile(log);
  for (const std::string &f : {ptx, cubin, log})
    unlink(f.c_str());
  rmdir(dir.c_str());
  if (code.empty()) {
    debugLog("ptxas failed; the driver's JIT compiles instead:\n" + text);
    return false;
  }
  plan.cubin = std::move(code);
  plan.ptxasLog = std::move(text);
  return true;
}

/// Warp-specialised kernels (setmaxnreg) go through the toolkit's ptxas
/// where there is one. The driver's JIT (580 on the H200, ncu's SASS of
/// what ran) kept the multiplying warpgroups of the TMA matmul within the
/// kernel's 168 registers (spills, none above R165), where ptxas gives
/// them the 232 that setmaxnreg allots; given an epilogue that needed a
/// few more registers, it serialised every wgmma. H200, same PTX: the D128
/// FlashAttention 478 -> 606 TFLOP/s. `KFUSE_PTXAS_FOR=all` sends every
/// plan there: ptxas spreads a module's kernels over every CPU
/// (--split-compile), where the driver's JIT takes them one after another
/// (most of GPT-2's cold start after Dynamo's trace); to be measured
/// against the JIT, kernel speeds included, before it is the default.
static bool prefersToolkitPtxas(const Plan &plan) {
  const char *which = std::getenv("KFUSE_PTXAS_FOR");
  if (which && std::string(which) == "all")
    return true;
  return plan.ptx.find("setmaxnreg") != std::string::npos;
}

/// Milliseconds since `start`, logged under KFUSE_DEBUG as `what`.
static void logTime(const char *what,
                    std::chrono::steady_clock::time_point start) {
  if (debugEnabled())
    debugLog(std::string("load: ") + what + " " +
             std::to_string(std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - start)
                                .count()) +
             " ms");
}

Expected<LoadedModule> loadPlan(Driver &d, Plan &plan, bool &jitted) {
  jitted = false;
  bool assembled = false;
  auto start = std::chrono::steady_clock::now();
  if (plan.cubin.empty()) {
    if (prefersToolkitPtxas(plan))
      if (std::string ptxas = findPtxas(); !ptxas.empty())
        assembled = assembleWithPtxas(ptxas, plan);
    if (!assembled)
      KFUSE_RETURN_IF_ERROR(jitLink(d, plan));
    jitted = true;
    logTime(assembled ? "PTX to cubin by the toolkit's ptxas"
                      : "PTX to cubin by the driver's JIT",
            start);
    start = std::chrono::steady_clock::now();
  }
  LoadedModule loaded;
  Status load = d.check(d.cuModuleLoadData(&loaded.module, plan.cubin.data()),
                        "cuModuleLoadData");
  logTime("cuModuleLoadData", start);
  if (!load && assembled) {
    // A toolkit newer than the driver: its JIT then.
    debugLog("cannot load ptxas's cubin (" + load.message() +
             "); the driver's JIT compiles instead");
    plan.cubin.clear();
    KFUSE_RETURN_IF_ERROR(jitLink(d, plan));
    load = d.check(d.cuModuleLoadData(&loaded.module, plan.cubin.data()),
                   "cuModuleLoadData");
  }
  if (!load)
    return load.error();
  for (const LaunchDesc &launch : plan.launches) {
    CUfunction f = nullptr;
    KFUSE_RETURN_IF_ERROR(
        d.check(d.cuModuleGetFunction(&f, loaded.module, launch.kernel.c_str()),
                "cuModuleGetFunction"));
    KernelResources r;
    d.cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    d.cuFuncGetAttribute(&r.localBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    d.cuFuncGetAttribute(&r.sharedBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                         f);
    // Above 48 KiB of shared memory, static and dynamic together, a kernel
    // must opt in to its dynamic part (a row kernel staging 48 KiB of rows
    // beside its reduction's static scratch: CUDA_ERROR_INVALID_VALUE at
    // launch, fuzz seed 3000167).
    if (launch.sharedBytes + uint64_t(std::max(r.sharedBytes, 0)) > 48 * 1024)
      KFUSE_RETURN_IF_ERROR(d.check(
          d.cuFuncSetAttribute(f,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(launch.sharedBytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
    loaded.functions.push_back(f);
    loaded.resources.push_back(r);
  }
  return loaded;
}

std::vector<KernelReport> kernelReports(const Plan &plan,
                                        const LoadedModule *module) {
  std::vector<KernelReport> reports;
  for (const LaunchDesc &launch : plan.launches) {
    reports.push_back({launch.kernel, launch.grid, launch.block});
    reports.back().flops = launch.flops;
    for (uint32_t b : launch.buffers)
      reports.back().bytes += plan.buffers[b].bytes;
  }
  if (module)
    for (size_t i = 0; i < reports.size(); ++i) {
      reports[i].registers = module->resources[i].registers;
      reports[i].localBytes = module->resources[i].localBytes;
      reports[i].sharedBytes = module->resources[i].sharedBytes;
    }
  // ptxas -v prints, per kernel: "Compiling entry function 'NAME'", then
  // "N bytes stack frame, N bytes spill stores, ..." and
  // "Used N registers, ... N bytes smem"; the driver's figures win.
  std::istringstream log(plan.ptxasLog);
  std::string line;
  KernelReport *current = nullptr;
  static const std::regex entry("entry function '([^']+)'");
  static const std::regex spills("([0-9]+) bytes spill stores");
  static const std::regex regs("Used ([0-9]+) registers");
  static const std::regex smem("([0-9]+) bytes smem");
  while (std::getline(log, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      current = nullptr;
      for (KernelReport &r : reports)
        if (r.name == m[1].str())
          current = &r;
      continue;
    }
    if (!current)
      continue;
    if (std::regex_search(line, m, spills))
      current->spillBytes = std::atoi(m[1].str().c_str());
    if (std::regex_search(line, m, regs) && current->registers < 0)
      current->registers = std::atoi(m[1].str().c_str());
    if (std::regex_search(line, m, smem) && current->sharedBytes < 0)
      current->sharedBytes = std::atoi(m[1].str().c_str());
  }
  return reports;
}

} // namespace kfuse::runtime
