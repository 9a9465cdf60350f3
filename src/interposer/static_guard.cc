// Detects a host program linked with the static CUDA runtime (nvcc's default `-cudart static`):
// its runtime calls are resolved inside the executable, so no interposer can see them and the
// program fails with cudaErrorInsufficientDriver (35). The executable then has device code (an
// `.nv_fatbin` section) but neither imports `__cudaRegisterFatBinary` nor needs `libcudart.so.N`
// (both names are absent from `.dynstr`). Only section headers and `.dynstr` are read.
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

bool read_at(int fd, void* buffer, std::size_t size, off_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, static_cast<char*>(buffer) + done, size - done,
                              offset + static_cast<off_t>(done));
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Returns true when `path` is a 64-bit ELF with an .nv_fatbin section and no dynamic reference
// to __cudaRegisterFatBinary. Any read problem → false (no warning rather than a wrong one).
bool statically_linked_cudart(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool result = false;
  Elf64_Ehdr header;
  constexpr std::size_t kMaxSections = 1 << 16;
  constexpr std::size_t kMaxStringTable = 64u << 20;
  if (read_at(fd, &header, sizeof header, 0) && std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
      header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_shentsize == sizeof(Elf64_Shdr) &&
      header.e_shnum > 0 && header.e_shnum < kMaxSections && header.e_shstrndx < header.e_shnum) {
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    if (read_at(fd, sections.data(), sections.size() * sizeof(Elf64_Shdr),
                static_cast<off_t>(header.e_shoff))) {
      const Elf64_Shdr& names = sections[header.e_shstrndx];
      std::string section_names(names.sh_size < kMaxStringTable ? names.sh_size : 0, '\0');
      if (read_at(fd, section_names.data(), section_names.size(),
                  static_cast<off_t>(names.sh_offset))) {
        bool has_fatbin = false;
        const Elf64_Shdr* dynstr = nullptr;
        for (const Elf64_Shdr& s : sections) {
          if (s.sh_name >= section_names.size()) continue;
          const char* name = section_names.c_str() + s.sh_name;
          if (std::strcmp(name, ".nv_fatbin") == 0) has_fatbin = true;
          if (std::strcmp(name, ".dynstr") == 0) dynstr = &s;
        }
        if (has_fatbin) {
          std::string strings;
          if (dynstr != nullptr && dynstr->sh_size < kMaxStringTable) {
            strings.resize(dynstr->sh_size);
            if (!read_at(fd, strings.data(), strings.size(),
                         static_cast<off_t>(dynstr->sh_offset))) {
              strings.clear();
            }
          }
          // nvcc adds an (empty) .nv_fatbin even to host-only .cpp programs, which register
          // nothing: a DT_NEEDED libcudart.so.N (its name is in .dynstr) means the shared runtime.
          const std::string_view needle("__cudaRegisterFatBinary\0", 24);
          const std::string_view view(strings);
          result = view.find(needle) == std::string_view::npos &&
                   view.find("libcudart.so.") == std::string_view::npos;
        }
      }
    }
  }
  ::close(fd);
  return result;
}

}  // namespace

void check_static_runtime() {
  if (!statically_linked_cudart("/proc/self/exe")) return;
  std::fprintf(stderr,
               "powertrain-emu: this program is linked with the static CUDA runtime "
               "(cudart_static), so its CUDA calls cannot be intercepted and it will see no GPU "
               "(its CUDA calls fail with 801 under the emulator's libcuda.so.1, with 35 where no "
               "driver is found). Rebuild it with `nvcc -cudart shared` (CMake: "
               "CUDA_RUNTIME_LIBRARY Shared) to emulate it.\n");
  // In the trace as an unsupported "API" so the pipeline can explain an empty trace.
  RecordBuilder record = begin_record(trace_schema::op::kUnsupported, now_ns(), 0);
  record.field(trace_schema::field::kApi, "static-cudart");
  end_record(record);
}

}  // namespace powertrain::emu::detail
