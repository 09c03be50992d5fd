//===- Version.cpp - kfuse's and LLVM's versions, and the build -----------===//
//
// All three are part of every kernel-cache key: a kernel compiled by
// another kfuse, another LLVM or another build of this version (a fix in
// code generation with no version bump) is never loaded.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include "llvm/Config/llvm-config.h"

#include <cstring>
#include <elf.h>
#include <link.h>
#include <string>

namespace kfuse {
const char *version() { return KFUSE_VERSION; }
const char *llvmVersion() { return LLVM_VERSION_STRING; }

namespace {

/// The NT_GNU_BUILD_ID note of the loaded object that holds `address`.
struct BuildIdSearch {
  uintptr_t address;
  std::string hex;
};

int findBuildId(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &p = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + p.p_vaddr;
    holds |= p.p_type == PT_LOAD && search->address >= start &&
             search->address < start + p.p_memsz;
  }
  if (!holds)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &p = info->dlpi_phdr[i];
    if (p.p_type != PT_NOTE)
      continue;
    const char *at = reinterpret_cast<const char *>(info->dlpi_addr + p.p_vaddr);
    const char *end = at + p.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
      const char *name = at + sizeof(ElfW(Nhdr));
      const auto *desc = reinterpret_cast<const unsigned char *>(
          name + ((note->n_namesz + 3) & ~3u));
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        for (unsigned k = 0; k < note->n_descsz; ++k) {
          search->hex += digits[desc[k] >> 4];
          search->hex += digits[desc[k] & 15];
        }
        return 1;
      }
      at = reinterpret_cast<const char *>(desc) + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

} // namespace

const char *compilerBuildId() {
  static const std::string id = [] {
    BuildIdSearch search{reinterpret_cast<uintptr_t>(&compilerBuildId), {}};
    dl_iterate_phdr(findBuildId, &search);
    return search.hex;
  }();
  return id.c_str();
}
} // namespace kfuse
