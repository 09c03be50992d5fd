//===- Main.cpp - kfuse-bench ---------------------------------------------===//
//
//   kfuse-bench costs [--json FILE]   compile, cache and launch costs
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace kfuse::bench {

void Table::print() const {
  std::printf("%-66s %12s  %s\n", "measure", "median", "target");
  for (const Row &r : rows)
    std::printf("%-66s %9.3f %-2s  %s\n", r.what.c_str(), r.value,
                r.unit.c_str(), r.target.c_str());
}

std::string Table::json() const {
  std::string out = "[\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out += "  {\"measure\": \"" + rows[i].what + "\", \"median\": " +
           std::to_string(rows[i].value) + ", \"unit\": \"" + rows[i].unit +
           "\"}" + (i + 1 < rows.size() ? ",\n" : "\n");
  return out + "]\n";
}

} // namespace kfuse::bench

int main(int argc, char **argv) {
  using namespace kfuse::bench;
  if (argc >= 4 && std::strcmp(argv[1], "--child-load") == 0)
    return childLoad(argv[2], std::atoll(argv[3]));
  if (argc < 2 || std::strcmp(argv[1], "costs") != 0) {
    std::fprintf(stderr, "usage: kfuse-bench costs [--json FILE]\n");
    return 2;
  }
  kfuse::Expected<kfuse::DeviceInfo> gpu = kfuse::device();
  if (!gpu) {
    std::fprintf(stderr, "kfuse-bench: %s\n", gpu.error().message().c_str());
    return 1;
  }
  std::printf("GPU: %s, %d SMs, sm_%d%d\n", gpu->name.c_str(),
              gpu->multiprocessors, gpu->computeMajor, gpu->computeMinor);
  Table table;
  // The child processes run this binary again (popen goes through a shell,
  // so /proc/self/exe must be resolved here).
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0)
    return 1;
  if (int rc = runCosts(self, table))
    return rc;
  table.print();
  if (argc >= 4 && std::strcmp(argv[2], "--json") == 0)
    std::ofstream(argv[3]) << table.json();
  return 0;
}
