//===- Module.cpp - a Plan's kernels loaded on the GPU --------------------===//

#include "runtime/Module.h"

#include <cstdlib>
#include <regex>
#include <sstream>

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
  if (Status s = d.check(d.cuLinkCreate_v2(5, options, values, &link),
                         "cuLinkCreate");
      !s)
    return s;
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

Expected<LoadedModule> loadPlan(Driver &d, Plan &plan, bool &jitted) {
  jitted = false;
  if (plan.cubin.empty()) {
    if (Status s = jitLink(d, plan); !s)
      return s.error();
    jitted = true;
  }
  LoadedModule loaded;
  if (Status s = d.check(d.cuModuleLoadData(&loaded.module, plan.cubin.data()),
                         "cuModuleLoadData");
      !s)
    return s.error();
  for (const LaunchDesc &launch : plan.launches) {
    CUfunction f = nullptr;
    if (Status s = d.check(d.cuModuleGetFunction(&f, loaded.module,
                                                 launch.kernel.c_str()),
                           "cuModuleGetFunction");
        !s)
      return s.error();
    // Above 48 KiB a kernel must opt in to its dynamic shared memory.
    if (launch.sharedBytes > 48 * 1024)
      if (Status s = d.check(
              d.cuFuncSetAttribute(
                  f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(launch.sharedBytes)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
          !s)
        return s.error();
    KernelResources r;
    d.cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    d.cuFuncGetAttribute(&r.localBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    d.cuFuncGetAttribute(&r.sharedBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                         f);
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
