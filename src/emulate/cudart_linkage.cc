// ELF inspection with bounds checks on every offset (the file is untrusted): section headers →
// .dynamic (DT_NEEDED names through its string table), .dynsym and .symtab (defined or imported
// CUDA runtime entry points). A stripped static binary has no .symtab but still carries the
// runtime's registration entry names as strings.
#include "emulate/cudart_linkage.h"

#include <elf.h>
#include <fmt/core.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

namespace powertrain::emulate {
namespace {

constexpr std::string_view kRuntimeSymbols[] = {"__cudaRegisterFatBinary", "cudaLaunchKernel",
                                                "cudaMalloc", "cudaGetDeviceCount",
                                                "__cudaPushCallConfiguration"};

bool is_runtime_symbol(std::string_view name) {
  for (std::string_view s : kRuntimeSymbols) {
    if (name == s) return true;
  }
  return false;
}

class ElfFile {
 public:
  explicit ElfFile(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  bool read(std::uint64_t offset, T& out) const {
    if (offset > bytes_.size() || sizeof(T) > bytes_.size() - offset) return false;
    std::memcpy(&out, bytes_.data() + offset, sizeof(T));
    return true;
  }
  // A NUL-terminated string at table_offset + index, inside the table.
  std::string_view string(const Elf64_Shdr& table, std::uint64_t index) const {
    if (table.sh_offset > bytes_.size() || index >= table.sh_size ||
        table.sh_size > bytes_.size() - table.sh_offset) {
      return {};
    }
    const std::string_view all(bytes_.data() + table.sh_offset, table.sh_size);
    const std::size_t end = all.find('\0', index);
    return end == std::string_view::npos ? std::string_view() : all.substr(index, end - index);
  }
  std::size_t size() const { return bytes_.size(); }
  std::string_view bytes() const { return bytes_; }

 private:
  std::string_view bytes_;
};

}  // namespace

core::Result<CudartInspection> inspect_cudart(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return core::Error{fmt::format("{}: cannot read ({})", path, ec.message())};
  if (size > (std::uint64_t{4} << 30)) return CudartInspection{};  // not a program we can check
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    return core::Error{fmt::format("{}: cannot read", path)};
  }
  CudartInspection out;
  const ElfFile elf(bytes);
  Elf64_Ehdr header{};
  if (!elf.read(0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr)) {
    return out;
  }
  out.linkage = CudartLinkage::kNone;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!elf.read(header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) {
      out.linkage = CudartLinkage::kNotElf;
      return out;
    }
  }
  const auto linked = [&](const Elf64_Shdr& s) -> const Elf64_Shdr* {
    return s.sh_link < sections.size() ? &sections[s.sh_link] : nullptr;
  };
  bool imports = false;
  std::string defined;
  for (const Elf64_Shdr& s : sections) {
    const Elf64_Shdr* strings = linked(s);
    if (strings == nullptr) continue;
    if (s.sh_type == SHT_DYNAMIC) {
      for (std::uint64_t off = 0; off + sizeof(Elf64_Dyn) <= s.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn{};
        if (!elf.read(s.sh_offset + off, dyn) || dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag != DT_NEEDED) continue;
        const std::string_view name = elf.string(*strings, dyn.d_un.d_val);
        if (name.rfind("libcudart.so", 0) == 0) {
          out.linkage = CudartLinkage::kShared;
          out.evidence = fmt::format("DT_NEEDED {}", name);
          return out;
        }
      }
    } else if (s.sh_type == SHT_DYNSYM || s.sh_type == SHT_SYMTAB) {
      for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym{};
        if (!elf.read(s.sh_offset + off, sym)) break;
        const std::string_view name = elf.string(*strings, sym.st_name);
        if (!is_runtime_symbol(name)) continue;
        if (sym.st_shndx == SHN_UNDEF) {
          imports = true;
        } else if (defined.empty()) {
          defined = std::string(name);
        }
      }
    }
  }
  if (!defined.empty()) {
    out.linkage = CudartLinkage::kStatic;
    out.evidence = fmt::format("defines {}", defined);
  } else if (imports) {
    out.linkage = CudartLinkage::kShared;
    out.evidence = "imports CUDA runtime symbols from a shared library";
  } else if (elf.bytes().find("__cudaRegisterFatBinary") != std::string_view::npos) {
    out.linkage = CudartLinkage::kStatic;
    out.evidence = "contains the CUDA runtime's registration entry points (stripped)";
  }
  return out;
}

std::string static_cudart_message(const std::string& program, const CudartInspection& found) {
  return fmt::format(
      "{} is linked with the static CUDA runtime ({}): it was built with -cudart static (nvcc's "
      "default), so LD_PRELOAD cannot intercept it and it would talk to a real GPU; rebuild with "
      "-cudart shared (nvcc -cudart shared ..., or CMake CUDA_RUNTIME_LIBRARY Shared)",
      program, found.evidence);
}

}  // namespace powertrain::emulate
