// The CUDA driver API (`cu*`, libcuda.so.1) on the emulated devices. The functions live in the
// interposer library itself, so they share its state with the runtime emulation: a CUstream is a
// cudaStream_t, a CUevent a cudaEvent_t, a CUdeviceptr a cudaMalloc'ed pointer, a CUfunction a
// cudaFunction_t (kernel handle); work is recorded as by the runtime, with the driver API's name.
// The build also makes a thin `driver/libcuda.so.1` that only depends on the preload library, so
// programs linked with -lcuda find it and dlopen("libcuda.so.1") + dlsym resolve here.
// Functions not written here are generated weak stubs (libcuda_stubs.cc) that report the call.
//
// Driver calls never touch the runtime's per-thread last error (cudaGetLastError): ErrorScope
// restores it around the runtime functions they reuse.
// cuDeviceComputeCapability and friends are deprecated but still exported and called.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {

CUresult driver_misuse(std::string_view api, CUresult error, std::string_view what) {
  report_misuse(api, what);
  return error;
}

bool valid_device(CUdevice device) { return device >= 0 && device < config().devices; }

namespace {

constexpr std::uintptr_t kContextTag = std::uintptr_t{0x4358} << 48;  // "CX"
constexpr std::uintptr_t kIdMask = (std::uintptr_t{1} << 48) - 1;
constexpr std::uintptr_t kFirstCreatedContext = 1 << 20;
constexpr std::size_t kGranularity = 2u << 20;  // VMM granularity of NVIDIA GPUs (2 MiB)
constexpr int kDriverVersion = 13000;

struct Module {
  std::set<std::string> names;                // kernels found in the image
  std::map<std::string, ParamLayout> params;  // kernel → parameter layout, where the image says
  bool names_known = false;  // false: the image could not be read; any name is accepted
  std::string format;        // "ptx", "cubin", "fatbin", "unknown"
  std::map<std::string, std::size_t> globals;         // __device__/__constant__ name → bytes
  std::map<std::string, const void*> global_storage;  // made on first cuModuleGetGlobal
  bool live = true;
};

// A JIT link (cuLinkCreate … cuLinkComplete): the kernels and globals of its inputs.
struct LinkState {
  std::set<std::string> names;
  std::map<std::string, std::size_t> globals;
  bool names_known = true;  // false once an input's kernels could not be read
  int inputs = 0;
  std::string image;  // cuLinkComplete's output, owned until cuLinkDestroy
  char* info_log = nullptr;
  std::size_t info_log_bytes = 0;
  char* error_log = nullptr;
  std::size_t error_log_bytes = 0;
};

struct Physical {
  std::size_t bytes = 0;
  int device = 0;
  CUmemAllocationProp prop{};
  bool imported = false;  // cuMemImportFromShareableHandle's: no memory of this process's own
};

struct Mapping {
  std::size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  int device = 0;
  std::map<int, unsigned long long> access;  // cuMemSetAccess: device → CUmemAccess_flags
};

struct DriverState {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, int> contexts;  // created context id → device
  std::uintptr_t next_context = kFirstCreatedContext;
  std::vector<int> primary_retained;
  std::set<const Module*> modules;
  std::map<std::uintptr_t, std::size_t> reservations;  // cuMemAddressReserve: base → size
  std::map<std::uintptr_t, Mapping> mappings;          // cuMemMap: address → mapping
  std::map<CUmemGenericAllocationHandle, Physical> physicals;
  std::set<const LinkState*> links;
  std::unordered_map<const void*, Module*> function_modules;  // kernel handle → module it came from
  bool initialized = false;
};

DriverState& state() {
  static DriverState* s = [] {
    auto* d = new DriverState;  // never destroyed
    d->primary_retained.assign(config().devices, 0);
    return d;
  }();
  return *s;
}

// The thread's context stack (trivially destructible: see ThreadState).
struct ContextStack {
  static constexpr int kMax = 32;
  CUcontext items[kMax] = {};
  int depth = 0;
};
thread_local ContextStack t_contexts;

CUcontext primary_context(int device) {
  return reinterpret_cast<CUcontext>(kContextTag | static_cast<std::uintptr_t>(device + 1));
}

// Device of a context handle, or -1 when it is not a live context.
int context_device(CUcontext ctx) {
  const auto bits = reinterpret_cast<std::uintptr_t>(ctx);
  if ((bits & ~kIdMask) != kContextTag) return -1;
  const std::uintptr_t id = bits & kIdMask;
  if (id >= 1 && id <= static_cast<std::uintptr_t>(config().devices)) {
    return static_cast<int>(id - 1);
  }
  DriverState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.contexts.find(id);
  return it == s.contexts.end() ? -1 : it->second;
}

CUcontext current_context() {
  if (t_contexts.depth > 0) return t_contexts.items[t_contexts.depth - 1];
  return primary_context(current_device());
}

// Makes `device` the runtime's current device too (as the runtime follows the driver context).
void follow_device(int device) {
  if (device >= 0 && device != current_device()) cudaSetDevice(device);
}

// ---- kernel names from module images ----------------------------------------------------------

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

// `.entry NAME` of every kernel in PTX text.
void ptx_entries(std::string_view ptx, std::set<std::string>* names) {
  std::size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string_view::npos) {
    at += 6;
    if (at < ptx.size() && is_identifier_char(ptx[at])) continue;  // e.g. ".entryx"
    while (at < ptx.size() && (ptx[at] == ' ' || ptx[at] == '\t' || ptx[at] == '\n')) ++at;
    const std::size_t begin = at;
    while (at < ptx.size() && is_identifier_char(ptx[at])) ++at;
    if (at > begin) names->emplace(ptx.substr(begin, at - begin));
  }
}

// Module-scope `.global` / `.const` variables of PTX text with their sizes, e.g.
// `.visible .global .align 4 .b8 table[64];` → table: 64 bytes.
void ptx_globals(std::string_view ptx, std::map<std::string, std::size_t>* globals) {
  std::size_t line_start = 0;
  int depth = 0;  // braces: only module scope counts
  while (line_start < ptx.size()) {
    std::size_t line_end = ptx.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = ptx.size();
    std::string_view line = ptx.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth != 0) continue;
    std::istringstream tokens{std::string(line)};
    std::string token;
    bool space = false;
    std::size_t element = 0;
    while (tokens >> token) {
      if (token == ".visible" || token == ".extern" || token == ".weak") continue;
      if (!space) {
        if (token != ".global" && token != ".const") break;
        space = true;
        continue;
      }
      if (token == ".align") {
        tokens >> token;
        continue;
      }
      if (element == 0) {
        // .b8/.u32/.f64/...: the element size from the bit count
        if (token.size() >= 3 && token[0] == '.' &&
            std::isdigit(static_cast<unsigned char>(token.back()))) {
          std::size_t bits = 0;
          for (std::size_t i = 2;
               i < token.size() && std::isdigit(static_cast<unsigned char>(token[i])); ++i) {
            bits = bits * 10 + static_cast<std::size_t>(token[i] - '0');
          }
          element = std::max<std::size_t>(1, bits / 8);
          continue;
        }
        break;  // .pred, .texref, ...: not a plain variable
      }
      // name[dim][dim]... possibly followed by ';' or '='
      const std::size_t bracket = token.find('[');
      std::string name = token.substr(0, std::min(bracket, token.find_first_of(";=")));
      std::size_t bytes = element;
      for (std::size_t at = bracket; at != std::string::npos; at = token.find('[', at + 1)) {
        bytes *= static_cast<std::size_t>(std::strtoull(token.c_str() + at + 1, nullptr, 10));
      }
      if (!name.empty()) (*globals)[name] = bytes;
      break;
    }
  }
}

template <typename T>
T read_at(const unsigned char* base, std::size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof value);
  return value;
}

// Each `.entry NAME( .param ... )`'s parameters, laid out as the PTX ABI does: each at the next
// multiple of its alignment (`.align N`, else its element size; a `.ptr .align N` names the
// pointee's alignment, not the parameter's).
void ptx_params(std::string_view ptx, std::map<std::string, ParamLayout>* out) {
  std::size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string_view::npos) {
    at += 6;
    if (at < ptx.size() && is_identifier_char(ptx[at])) continue;
    while (at < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[at]))) ++at;
    const std::size_t begin = at;
    while (at < ptx.size() && is_identifier_char(ptx[at])) ++at;
    const std::string name(ptx.substr(begin, at - begin));
    while (at < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[at]))) ++at;
    ParamLayout layout;
    if (at < ptx.size() && ptx[at] == '(') {
      const std::size_t close = ptx.find(')', at);
      if (close == std::string_view::npos) return;
      std::string list(ptx.substr(at + 1, close - at - 1));
      for (char& c : list) c = c == ',' ? '\n' : c;
      std::istringstream declarations(list);
      std::string declaration;
      std::size_t end = 0;
      while (std::getline(declarations, declaration)) {
        std::istringstream tokens(declaration);
        std::string token;
        std::size_t element = 0, align = 0, count = 1;
        bool pointer = false, any = false;
        while (tokens >> token) {
          if (token == ".param") {
            any = true;
          } else if (token == ".ptr") {
            pointer = true;
          } else if (token == ".align") {
            std::size_t n = 0;
            tokens >> n;
            if (!pointer) align = n;
          } else if (token.size() > 2 && token[0] == '.' &&
                     std::isdigit(static_cast<unsigned char>(token.back()))) {
            // .b8 .u16 .s32 .f64 ...: the element size from the bit count
            std::size_t digits = token.size();
            while (digits > 0 && std::isdigit(static_cast<unsigned char>(token[digits - 1])))
              --digits;
            if (element == 0) element = std::strtoull(token.c_str() + digits, nullptr, 10) / 8;
          } else if (token == ".pred") {
            element = 1;
          } else if (const std::size_t bracket = token.find('['); bracket != std::string::npos) {
            count = std::strtoull(token.c_str() + bracket + 1, nullptr, 10);
          }
        }
        if (!any || element == 0) continue;
        if (align == 0) align = element;
        const std::size_t offset = (end + align - 1) / align * align;
        layout.emplace_back(offset, element * count);
        end = offset + element * count;
      }
      at = close;
    }
    if (!name.empty()) (*out)[name] = std::move(layout);
  }
}

// A kernel's parameters from its `.nv.info.<kernel>` section (`bytes` long): EIATTR_KPARAM_INFO
// (0x17) attributes, each an ordinal, an offset and (bits 18–31 of its last word) a size in
// bytes. Parameters after a missing ordinal are dropped.
ParamLayout kparam_layout(const unsigned char* info, std::uint64_t bytes) {
  std::map<std::size_t, std::pair<std::size_t, std::size_t>> by_ordinal;
  for (std::uint64_t at = 0; at + 4 <= bytes;) {
    const unsigned char* attribute = info + at;
    if (attribute[0] != 4) {  // EIFMT_NVAL/BVAL/HVAL: 4 bytes in all
      at += 4;
      continue;
    }
    const auto length = read_at<std::uint16_t>(attribute, 2);  // EIFMT_SVAL
    if (attribute[1] == 0x17 && length >= 12 && at + 4 + length <= bytes) {
      const auto ordinal = read_at<std::uint16_t>(attribute, 8);
      const auto offset = read_at<std::uint16_t>(attribute, 10);
      const auto flags = read_at<std::uint32_t>(attribute, 12);
      by_ordinal[ordinal] = {offset, (flags >> 18) & 0x3fff};
    }
    at += 4 + std::uint64_t{length};
  }
  ParamLayout layout;
  for (const auto& [ordinal, slot] : by_ordinal) {
    if (ordinal != layout.size()) break;
    layout.push_back(slot);
  }
  return layout;
}

// Kernels of an ELF64 cubin: its `.text.<kernel>` sections, and with `params` their parameter
// layouts (`.nv.info.<kernel>`). `size` bounds the reads when known (0: trust the headers, as the
// driver does for cuModuleLoadData).
bool cubin_entries(const unsigned char* elf, std::size_t size, std::set<std::string>* names,
                   std::map<std::string, std::size_t>* globals = nullptr,
                   std::map<std::string, ParamLayout>* params = nullptr) {
  if (std::memcmp(elf,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      elf[4] != 2)
    return false;  // ELFCLASS64 only
  const auto shoff = read_at<std::uint64_t>(elf, 0x28);
  const auto shentsize = read_at<std::uint16_t>(elf, 0x3A);
  const auto shnum = read_at<std::uint16_t>(elf, 0x3C);
  const auto shstrndx = read_at<std::uint16_t>(elf, 0x3E);
  if (shentsize < 0x40 || shstrndx >= shnum) return false;
  if (size != 0 && shoff + std::uint64_t{shnum} * shentsize > size) return false;
  const unsigned char* strtab_header = elf + shoff + std::size_t{shstrndx} * shentsize;
  const auto strtab = read_at<std::uint64_t>(strtab_header, 0x18);
  const auto strtab_size = read_at<std::uint64_t>(strtab_header, 0x20);
  if (size != 0 && strtab + strtab_size > size) return false;
  const char* strings = reinterpret_cast<const char*>(elf + strtab);
  std::vector<std::string_view> section_names(shnum);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* header = elf + shoff + std::size_t{i} * shentsize;
    const auto name = read_at<std::uint32_t>(header, 0);
    if (name >= strtab_size) continue;
    const std::string_view section(strings + name, ::strnlen(strings + name, strtab_size - name));
    section_names[i] = section;
    if (section.rfind(".text.", 0) == 0 && section.size() > 6) {
      names->emplace(section.substr(6));
    }
    constexpr std::string_view kInfo = ".nv.info.";
    if (params != nullptr && section.rfind(kInfo, 0) == 0 && section.size() > kInfo.size()) {
      const auto offset = read_at<std::uint64_t>(header, 0x18);
      const auto bytes = read_at<std::uint64_t>(header, 0x20);
      if (size == 0 || offset + bytes <= size) {
        (*params)[std::string(section.substr(kInfo.size()))] = kparam_layout(elf + offset, bytes);
      }
    }
  }
  if (globals == nullptr) return true;
  // Variables: the symbol table's objects in .nv.global* / .nv.constant* sections.
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* header = elf + shoff + std::size_t{i} * shentsize;
    if (read_at<std::uint32_t>(header, 4) != 2) continue;  // SHT_SYMTAB
    const auto offset = read_at<std::uint64_t>(header, 0x18);
    const auto bytes = read_at<std::uint64_t>(header, 0x20);
    const auto link = read_at<std::uint32_t>(header, 0x28);
    if (link >= shnum || (size != 0 && offset + bytes > size)) continue;
    const unsigned char* names_header = elf + shoff + std::size_t{link} * shentsize;
    const auto names_offset = read_at<std::uint64_t>(names_header, 0x18);
    const auto names_size = read_at<std::uint64_t>(names_header, 0x20);
    if (size != 0 && names_offset + names_size > size) continue;
    const char* symbol_names = reinterpret_cast<const char*>(elf + names_offset);
    for (std::uint64_t at = 0; at + 24 <= bytes; at += 24) {
      const unsigned char* symbol = elf + offset + at;
      const auto name = read_at<std::uint32_t>(symbol, 0);
      const auto info = read_at<std::uint8_t>(symbol, 4);
      const auto index = read_at<std::uint16_t>(symbol, 6);
      const auto length = read_at<std::uint64_t>(symbol, 16);
      if ((info & 0xf) != 1 || index >= shnum || name >= names_size) continue;  // STT_OBJECT
      const std::string_view section = section_names[index];
      if (section.rfind(".nv.global", 0) != 0 && section.rfind(".nv.constant", 0) != 0) continue;
      (*globals)[std::string(symbol_names + name,
                             ::strnlen(symbol_names + name, names_size - name))] = length;
    }
  }
  return true;
}

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1;

// Kernels of a fat binary: every uncompressed ELF entry's sections and PTX entry's `.entry`s
// (compressed entries are skipped: their names stay unknown unless another entry has them); with
// `params`, their parameter layouts (a cubin's where one has the kernel, else the PTX's).
bool fatbin_entries(const unsigned char* fatbin, std::size_t size, std::set<std::string>* names,
                    std::map<std::string, std::size_t>* globals,
                    std::map<std::string, ParamLayout>* params = nullptr) {
  if (read_at<std::uint32_t>(fatbin, 0) != kFatbinMagic) return false;
  const auto header_size = read_at<std::uint16_t>(fatbin, 6);
  const auto fat_size = read_at<std::uint64_t>(fatbin, 8);
  std::size_t at = header_size;
  const std::size_t end = header_size + fat_size;
  if (size != 0 && end > size) return false;  // a file shorter than its header says
  bool any = false;
  std::map<std::string, ParamLayout> from_ptx;
  while (at + 64 <= end) {
    const unsigned char* entry = fatbin + at;
    const auto kind = read_at<std::uint16_t>(entry, 0);
    const auto entry_header = read_at<std::uint32_t>(entry, 4);
    const auto payload = read_at<std::uint64_t>(entry, 8);
    const auto flags = read_at<std::uint64_t>(entry, 0x30);
    if (entry_header < 64 || at + entry_header + payload > end) break;
    const unsigned char* data = entry + entry_header;
    const bool compressed = (flags & 0x2000) != 0;
    if (!compressed && kind == 2) {
      any = cubin_entries(data, payload, names, globals, params) || any;
    } else if (!compressed && kind == 1) {
      const std::string_view text(reinterpret_cast<const char*>(data),
                                  ::strnlen(reinterpret_cast<const char*>(data), payload));
      ptx_entries(text, names);
      ptx_globals(text, globals);
      if (params != nullptr) ptx_params(text, &from_ptx);
      any = true;
    }
    at += entry_header + payload;
  }
  if (params != nullptr) params->insert(from_ptx.begin(), from_ptx.end());  // cubins' first
  return any;
}

// The image cuLinkComplete hands out: PTX text that declares every kernel and global of the
// linked inputs (nothing is compiled), recognised by load_image by its first line.
constexpr std::string_view kLinkedImageHeader = "// powertrain emulated link";
constexpr std::string_view kLinkedNamesUnknown = "// kernel names unknown";

// An image's kernels, globals and parameter layouts into `module`.
void read_image(const void* image, std::size_t size, Module* module) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (read_at<std::uint32_t>(bytes, 0) == kFatbinWrapperMagic) {
    bytes = read_at<const unsigned char*>(bytes, 8);  // __fatBinC_Wrapper_t::data
    size = 0;
  }
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    module->format = "cubin";
    module->names_known =
        cubin_entries(bytes, size, &module->names, &module->globals, &module->params);
  } else if (read_at<std::uint32_t>(bytes, 0) == kFatbinMagic) {
    module->format = "fatbin";
    module->names_known =
        fatbin_entries(bytes, size, &module->names, &module->globals, &module->params);
  } else {
    const char* text = reinterpret_cast<const char*>(bytes);
    const std::string_view ptx(text, size != 0 ? ::strnlen(text, size) : std::strlen(text));
    if (ptx.rfind(kLinkedImageHeader, 0) == 0) {
      // cuLinkComplete's image: the linked inputs' kernels and globals as PTX declarations
      // (without their parameters, so no layouts).
      module->format = "linked";
      ptx_entries(ptx, &module->names);
      ptx_globals(ptx, &module->globals);
      module->names_known = ptx.find(kLinkedNamesUnknown) == std::string_view::npos;
    } else if (ptx.find(".version") != std::string_view::npos ||
               ptx.find(".entry") != std::string_view::npos) {
      module->format = "ptx";
      ptx_entries(ptx, &module->names);
      ptx_globals(ptx, &module->globals);
      ptx_params(ptx, &module->params);
      module->names_known = true;
    } else {
      module->format = "unknown";
    }
  }
}

Module* load_image(const void* image, std::size_t size) {
  auto* module = new Module;  // never freed: a destroyed handle stays recognisable
  read_image(image, size, module);
  return module;
}

}  // namespace

int driver_context_device(CUcontext ctx) { return context_device(ctx); }
CUcontext driver_primary_context(int device) { return primary_context(device); }

bool image_param_layout(const void* image, const std::string& name, ParamLayout* out) {
  // A registered fat binary (or a bare one): never read as text of unknown length.
  const auto magic = read_at<std::uint32_t>(static_cast<const unsigned char*>(image), 0);
  if (magic != kFatbinWrapperMagic && magic != kFatbinMagic) return false;
  Module contents;
  read_image(image, 0, &contents);
  const auto it = contents.params.find(name);
  if (it == contents.params.end()) return false;
  *out = it->second;
  return true;
}

bool module_function_params(const void* function, const std::string& name, ParamLayout* out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto owner = state().function_modules.find(function);
  if (owner == state().function_modules.end()) return false;
  const auto it = owner->second->params.find(name);
  if (it == owner->second->params.end()) return false;
  *out = it->second;
  return true;
}

namespace {

CUresult finish_load(CUmodule* out, Module* module, const char* api, std::int64_t start) {
  {
    DriverState& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.modules.insert(module);
  }
  auto record = begin_record(trace_schema::op::kModuleLoad, start, current_device());
  record.field(trace_schema::field::kApi, std::string_view(api));
  record.field("format", std::string_view(module->format));
  std::string names = "[";
  for (const std::string& name : module->names) {
    if (names.size() > 1) names += ",";
    append_json_string(names, name);
  }
  names += "]";
  record.raw("kernels", names);
  if (!module->globals.empty()) {
    std::string globals = "{";
    for (const auto& [name, bytes] : module->globals) {
      if (globals.size() > 1) globals += ",";
      append_json_string(globals, name);
      globals += ':';
      globals += std::to_string(bytes);
    }
    globals += "}";
    record.raw("globals", globals);
  }
  record.field_bool("names_known", module->names_known);
  end_record(record);
  *out = reinterpret_cast<CUmodule>(module);
  return CUDA_SUCCESS;
}

Module* live_module(CUmodule handle) {
  DriverState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* m = reinterpret_cast<Module*>(handle);
  return s.modules.count(m) > 0 && m->live ? m : nullptr;
}

// ---- error texts --------------------------------------------------------------------------

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
namespace trace_schema = powertrain::trace_schema;
namespace impl = powertrain::emu::detail::impl;
using detail::as_pointer;
using detail::ErrorScope;
using detail::per_thread;
using detail::to_driver;

// ---- initialization, versions, errors -------------------------------------------------------

PT_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return detail::driver_misuse("cuInit", CUDA_ERROR_INVALID_VALUE, "flags != 0");
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  detail::state().initialized = true;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = detail::kDriverVersion;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& e : detail::kErrors) {
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

PT_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& e : detail::kErrors) {
    if (e.code == error) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// ---- devices ---------------------------------------------------------------------------------

PT_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = detail::config().devices;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", detail::config().gpu_name.c_str());
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = static_cast<size_t>(detail::config().memory_bytes);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (attribute == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) {
    // A driver-only attribute: the VMM calls are emulated (cuMemCreate, cuMemMap, ...).
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *value = 1;
    return CUDA_SUCCESS;
  }
  ErrorScope scope;
  // CUdevice_attribute and cudaDeviceAttr share their numbering.
  return to_driver(cudaDeviceGetAttribute(value, static_cast<cudaDeviceAttr>(attribute), device));
}

PT_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice device) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *major = detail::config().cc_major;
  *minor = detail::config().cc_minor;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaDeviceProp prop{};
  const cudaError_t error = cudaGetDeviceProperties(&prop, device);
  if (error != cudaSuccess) return to_driver(error);
  std::memcpy(uuid->bytes, prop.uuid.bytes, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceGetPCIBusId(char* id, int length, CUdevice device) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetPCIBusId(id, length, device));
}

PT_EXPORT CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  if (can == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device) || !detail::valid_device(peer)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *can = device != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

// ---- contexts --------------------------------------------------------------------------------

PT_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    ++detail::state().primary_retained[device];
  }
  *ctx = detail::primary_context(device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  int& retained = detail::state().primary_retained[device];
  if (retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --retained;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) {
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  ErrorScope scope;
  const int previous = powertrain::emu::current_device();
  cudaSetDevice(device);
  const cudaError_t error = cudaDeviceReset();
  cudaSetDevice(previous);
  return to_driver(error);
}

PT_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice device, unsigned int flags) {
  (void)flags;  // scheduling policy: nothing to emulate
  return detail::valid_device(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

PT_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  *flags = 0;
  // The runtime's primary context is active once the runtime has been used on the device; the
  // emulator does not track that, so a retained or current primary context counts as active.
  *active =
      detail::state().primary_retained[device] > 0 || powertrain::emu::current_device() == device
          ? 1
          : 0;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxCreate(CUcontext* ctx, CUctxCreateParams* params, unsigned int flags,
                               CUdevice device) {
  (void)params;
  (void)flags;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::uintptr_t id = 0;
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    id = detail::state().next_context++;
    detail::state().contexts[id] = device;
  }
  *ctx = reinterpret_cast<CUcontext>(detail::kContextTag | id);
  // A new context becomes current (pushed on the thread's stack).
  detail::ContextStack& stack = detail::t_contexts;
  if (stack.depth < detail::ContextStack::kMax) stack.items[stack.depth++] = *ctx;
  ErrorScope scope;
  detail::follow_device(device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice device) {
  return cuCtxCreate(ctx, nullptr, flags, device);
}

PT_EXPORT CUresult cuCtxDestroy(CUcontext ctx) {
  if (detail::context_device(ctx) < 0) {
    return detail::driver_misuse("cuCtxDestroy_v2", CUDA_ERROR_INVALID_CONTEXT,
                                 "invalid context " + detail::pointer_text(ctx));
  }
  const std::uintptr_t id = reinterpret_cast<std::uintptr_t>(ctx) & detail::kIdMask;
  if (id < detail::kFirstCreatedContext) {
    return detail::driver_misuse("cuCtxDestroy_v2", CUDA_ERROR_INVALID_CONTEXT,
                                 "a primary context cannot be destroyed; release it");
  }
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    detail::state().contexts.erase(id);
  }
  detail::ContextStack& stack = detail::t_contexts;
  int kept = 0;
  for (int i = 0; i < stack.depth; ++i) {
    if (stack.items[i] != ctx) stack.items[kept++] = stack.items[i];
  }
  stack.depth = kept;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = detail::current_context();
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  detail::ContextStack& stack = detail::t_contexts;
  if (ctx == nullptr) {
    if (stack.depth > 0) --stack.depth;
    return CUDA_SUCCESS;
  }
  const int device = detail::context_device(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.depth == 0) stack.depth = 1;
  stack.items[stack.depth - 1] = ctx;
  ErrorScope scope;
  detail::follow_device(device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  const int device = detail::context_device(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  detail::ContextStack& stack = detail::t_contexts;
  if (stack.depth >= detail::ContextStack::kMax) return CUDA_ERROR_INVALID_VALUE;
  stack.items[stack.depth++] = ctx;
  ErrorScope scope;
  detail::follow_device(device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxPopCurrent(CUcontext* ctx) {
  detail::ContextStack& stack = detail::t_contexts;
  if (stack.depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != nullptr) *ctx = stack.items[stack.depth - 1];
  --stack.depth;
  ErrorScope scope;
  detail::follow_device(detail::context_device(detail::current_context()));
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = detail::context_device(detail::current_context());
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxSynchronize() {
  ErrorScope scope;
  return to_driver(cudaDeviceSynchronize());
}

PT_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr && detail::context_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // the context API version every context since CUDA 3.2 reports
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = detail::current_context();
  if (detail::context_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *id = reinterpret_cast<std::uintptr_t>(ctx) & detail::kIdMask;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetLimit(value, static_cast<cudaLimit>(limit)));
}

PT_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  ErrorScope scope;
  return to_driver(cudaDeviceSetLimit(static_cast<cudaLimit>(limit), value));
}

PT_EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetStreamPriorityRange(least, greatest));
}

// ---- modules and functions -----------------------------------------------------------------

PT_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return detail::finish_load(module, detail::load_image(image, 0), "cuModuleLoadData", start);
}

PT_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int options,
                                      CUjit_option* keys, void** values) {
  (void)options;  // JIT options (log buffers, optimisation level): nothing is compiled
  (void)keys;
  (void)values;
  const std::int64_t start = powertrain::emu::now_ns();
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return detail::finish_load(module, detail::load_image(image, 0), "cuModuleLoadDataEx", start);
}

PT_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (module == nullptr || fatbin == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return detail::finish_load(module, detail::load_image(fatbin, 0), "cuModuleLoadFatBinary", start);
}

PT_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* path) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (module == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');  // PTX text is read as a C string
  if (bytes.size() < 8) return CUDA_ERROR_INVALID_IMAGE;
  return detail::finish_load(module, detail::load_image(bytes.data(), bytes.size()), "cuModuleLoad",
                             start);
}

PT_EXPORT CUresult cuModuleUnload(CUmodule handle) {
  detail::Module* m = detail::live_module(handle);
  if (m == nullptr) {
    return detail::driver_misuse("cuModuleUnload", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or unloaded module " + detail::pointer_text(handle));
  }
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  m->live = false;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule handle, const char* name) {
  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  detail::Module* m = detail::live_module(handle);
  if (m == nullptr) {
    return detail::driver_misuse("cuModuleGetFunction", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or unloaded module " + detail::pointer_text(handle));
  }
  if (m->names_known && m->names.count(name) == 0) return CUDA_ERROR_NOT_FOUND;
  void* kernel = detail::register_module_kernel(name);
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    detail::state().function_modules[kernel] = m;
  }
  *function = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int count,
                                              CUmodule handle) {
  if (functions == nullptr && count > 0) return CUDA_ERROR_INVALID_VALUE;
  detail::Module* m = detail::live_module(handle);
  if (m == nullptr) {
    return detail::driver_misuse("cuModuleEnumerateFunctions", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or unloaded module " + detail::pointer_text(handle));
  }
  unsigned i = 0;
  for (auto it = m->names.begin(); it != m->names.end() && i < count; ++it, ++i) {
    if (const CUresult r = cuModuleGetFunction(&functions[i], handle, it->c_str());
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuFuncGetModule(CUmodule* module, CUfunction function) {
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  const auto& owners = detail::state().function_modules;
  const auto it = owners.find(reinterpret_cast<const void*>(function));
  // Kernels of the program's own fat binary belong to no module the driver API loaded here
  // (the driver has an implicit one for them): not found. A kernel handle is shared by name, so
  // a kernel in several modules answers the one it was last looked up in.
  if (it == owners.end()) return CUDA_ERROR_NOT_FOUND;
  if (!it->second->live) return CUDA_ERROR_INVALID_HANDLE;  // its module was unloaded
  *module = reinterpret_cast<CUmodule>(it->second);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState* loading, CUfunction function) {
  if (loading == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (detail::kernel_name(function).empty()) return CUDA_ERROR_INVALID_HANDLE;
  *loading = CU_FUNCTION_LOADING_STATE_LOADED;  // nothing to load lazily on an emulated device
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuFuncLoad(CUfunction function) {
  return detail::kernel_name(function).empty() ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

// ---- JIT linking (cuLink*: Numba, CuPy, NVIDIA's ptxjit sample) --------------------------------
// Nothing is compiled: the link collects its inputs' kernel and global names, and
// cuLinkComplete hands out PTX text declaring them, which cuModuleLoadData reads back.

namespace powertrain::emu::detail {
namespace {

// A live link state (the caller holds state().mutex).
LinkState* live_link_locked(CUlinkState handle) {
  auto* link = reinterpret_cast<LinkState*>(handle);
  return state().links.count(link) > 0 ? link : nullptr;
}

LinkState* live_link(CUlinkState handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return live_link_locked(handle);
}

// Host objects and archives (CU_JIT_INPUT_OBJECT / LIBRARY) carry their device code as embedded
// fat binaries: every one found is read. False when none is.
bool embedded_fatbin_entries(const unsigned char* bytes, std::size_t size,
                             std::set<std::string>* names,
                             std::map<std::string, std::size_t>* globals) {
  bool any = false;
  for (std::size_t at = 0; at + 16 <= size; at += 4) {
    if (read_at<std::uint32_t>(bytes, at) != kFatbinMagic) continue;
    any = fatbin_entries(bytes + at, size - at, names, globals) || any;
  }
  return any;
}

CUresult link_add(LinkState* link, CUjitInputType type, const void* data, std::size_t size,
                  const char* api) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::set<std::string> names;
  std::map<std::string, std::size_t> globals;
  bool known = true;
  switch (type) {
    case CU_JIT_INPUT_PTX: {
      const char* text = static_cast<const char*>(data);
      const std::string_view ptx(text, ::strnlen(text, size));
      if (ptx.find(".version") == std::string_view::npos) {
        return driver_misuse(api, CUDA_ERROR_INVALID_PTX, "the PTX input has no .version line");
      }
      ptx_entries(ptx, &names);
      ptx_globals(ptx, &globals);
      break;
    }
    case CU_JIT_INPUT_CUBIN:
      if (size < 64 || std::memcmp(bytes,
                                   "\x7f"
                                   "ELF",
                                   4) != 0) {
        return driver_misuse(api, CUDA_ERROR_INVALID_IMAGE, "the cubin input is not an ELF image");
      }
      known = cubin_entries(bytes, size, &names, &globals);
      break;
    case CU_JIT_INPUT_FATBINARY:
      if (size < 16 || read_at<std::uint32_t>(bytes, 0) != kFatbinMagic) {
        return driver_misuse(api, CUDA_ERROR_INVALID_IMAGE,
                             "the fat binary input does not start with its magic number");
      }
      known = fatbin_entries(bytes, size, &names, &globals);
      break;
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY:
      known = embedded_fatbin_entries(bytes, size, &names, &globals);
      break;
    case CU_JIT_INPUT_NVVM:  // LTO IR: its kernels are named only after compilation
      known = false;
      break;
    default:
      return driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                           "unknown input type " + std::to_string(static_cast<int>(type)));
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  // Destroyed while its input was being read: the handle is gone.
  if (live_link_locked(reinterpret_cast<CUlinkState>(link)) == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  link->names.insert(names.begin(), names.end());
  link->globals.insert(globals.begin(), globals.end());
  link->names_known = link->names_known && known;
  ++link->inputs;
  return CUDA_SUCCESS;
}

// A log buffer option's text: empty (nothing is compiled), its size set to the bytes written.
void empty_log(char* buffer, std::size_t bytes) {
  if (buffer != nullptr && bytes > 0) buffer[0] = '\0';
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT CUresult cuLinkCreate(unsigned int count, CUjit_option* options, void** values,
                                CUlinkState* out) {
  if (out == nullptr || (count > 0 && (options == nullptr || values == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto link = std::make_unique<detail::LinkState>();
  for (unsigned i = 0; i < count; ++i) {
    const auto as_size = reinterpret_cast<std::uintptr_t>(values[i]);
    switch (options[i]) {
      case CU_JIT_INFO_LOG_BUFFER:
        link->info_log = static_cast<char*>(values[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        link->info_log_bytes = as_size;
        values[i] = nullptr;  // in/out: bytes written
        break;
      case CU_JIT_ERROR_LOG_BUFFER:
        link->error_log = static_cast<char*>(values[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        link->error_log_bytes = as_size;
        values[i] = nullptr;
        break;
      case CU_JIT_WALL_TIME: {
        const float zero_ms = 0.0f;  // written into the option's slot, as the driver does
        std::memcpy(&values[i], &zero_ms, sizeof zero_ms);
        break;
      }
      default:
        break;  // optimisation level, target, caching, ...: nothing is compiled
    }
  }
  detail::empty_log(link->info_log, link->info_log_bytes);
  detail::empty_log(link->error_log, link->error_log_bytes);
  detail::LinkState* raw = link.release();  // owned by the state until cuLinkDestroy
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    detail::state().links.insert(raw);
  }
  *out = reinterpret_cast<CUlinkState>(raw);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                 const char* name, unsigned int, CUjit_option*, void**) {
  (void)name;  // the input's name appears only in the driver's log
  detail::LinkState* link = detail::live_link(state);
  if (link == nullptr) {
    return detail::driver_misuse("cuLinkAddData_v2", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or destroyed link state " + detail::pointer_text(state));
  }
  if (data == nullptr || size == 0) {
    return detail::driver_misuse("cuLinkAddData_v2", CUDA_ERROR_INVALID_VALUE,
                                 "data is NULL or size is 0");
  }
  return detail::link_add(link, type, data, size, "cuLinkAddData_v2");
}

PT_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                                 unsigned int, CUjit_option*, void**) {
  detail::LinkState* link = detail::live_link(state);
  if (link == nullptr) {
    return detail::driver_misuse("cuLinkAddFile_v2", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or destroyed link state " + detail::pointer_text(state));
  }
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    return detail::driver_misuse("cuLinkAddFile_v2", CUDA_ERROR_INVALID_IMAGE,
                                 std::string("the input file '") + path + "' is empty");
  }
  return detail::link_add(link, type, bytes.data(), bytes.size(), "cuLinkAddFile_v2");
}

PT_EXPORT CUresult cuLinkComplete(CUlinkState state, void** image, size_t* size) {
  if (image == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock<std::mutex> lock(detail::state().mutex);
  detail::LinkState* link = detail::live_link_locked(state);
  if (link == nullptr) {
    lock.unlock();
    return detail::driver_misuse("cuLinkComplete", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or destroyed link state " + detail::pointer_text(state));
  }
  if (link->inputs == 0) {
    lock.unlock();
    return detail::driver_misuse("cuLinkComplete", CUDA_ERROR_INVALID_VALUE,
                                 "the link has no inputs");
  }
  std::string text(detail::kLinkedImageHeader);
  text += " of " + std::to_string(link->inputs) + " input(s)\n";
  if (!link->names_known) text += std::string(detail::kLinkedNamesUnknown) + "\n";
  text += ".version 8.0\n.target sm_90\n.address_size 64\n";
  for (const auto& [global, bytes] : link->globals) {
    text += ".visible .global .align 8 .b8 " + global + "[" + std::to_string(bytes) + "];\n";
  }
  for (const std::string& kernel : link->names) {
    text += ".visible .entry " + kernel + "()\n{\n\tret;\n}\n";
  }
  link->image = std::move(text);
  *image = link->image.data();
  *size = link->image.size() + 1;  // with its terminating NUL, as PTX images are read
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuLinkDestroy(CUlinkState state) {
  auto* link = reinterpret_cast<detail::LinkState*>(state);
  bool erased = false;
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    erased = detail::state().links.erase(link) > 0;
  }
  if (!erased) {
    return detail::driver_misuse("cuLinkDestroy", CUDA_ERROR_INVALID_HANDLE,
                                 "invalid or destroyed link state " + detail::pointer_text(state));
  }
  delete link;  // no other call can reach it now: every use finds it in `links` under the lock
  return CUDA_SUCCESS;
}

// Libraries (context-independent loading, CUDA 12+): a library is a module, a CUkernel the same
// kernel handle as a CUfunction (the driver also accepts a CUkernel where a CUfunction goes).
namespace {
CUresult load_file(const char* path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  bytes->assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes->push_back('\0');  // PTX text is read as a C string
  return bytes->size() < 8 ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}
}  // namespace

PT_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                                     unsigned int, CUlibraryOption*, void**, unsigned int) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUmodule module = nullptr;
  const CUresult result =
      detail::finish_load(&module, detail::load_image(code, 0), "cuLibraryLoadData", start);
  *library = reinterpret_cast<CUlibrary>(module);
  return result;
}

PT_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option*,
                                         void**, unsigned int, CUlibraryOption*, void**,
                                         unsigned int) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (library == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::string bytes;
  if (const CUresult r = load_file(path, &bytes); r != CUDA_SUCCESS) return r;
  CUmodule module = nullptr;
  const CUresult result = detail::finish_load(
      &module, detail::load_image(bytes.data(), bytes.size()), "cuLibraryLoadFromFile", start);
  *library = reinterpret_cast<CUlibrary>(module);
  return result;
}

PT_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  return cuModuleUnload(reinterpret_cast<CUmodule>(library));
}

PT_EXPORT CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (detail::live_module(reinterpret_cast<CUmodule>(library)) == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  return cuModuleGetFunction(reinterpret_cast<CUfunction*>(kernel),
                             reinterpret_cast<CUmodule>(library), name);
}

PT_EXPORT CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  return cuModuleGetFunctionCount(count, reinterpret_cast<CUmodule>(library));
}

PT_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int count,
                                             CUlibrary library) {
  return cuModuleEnumerateFunctions(reinterpret_cast<CUfunction*>(kernels), count,
                                    reinterpret_cast<CUmodule>(library));
}

PT_EXPORT CUresult cuKernelGetLibrary(CUlibrary* library, CUkernel kernel) {
  return cuFuncGetModule(reinterpret_cast<CUmodule*>(library),
                         reinterpret_cast<CUfunction>(kernel));
}

PT_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* pointer, size_t* bytes, CUlibrary library,
                                      const char* name) {
  return cuModuleGetGlobal(pointer, bytes, reinterpret_cast<CUmodule>(library), name);
}

PT_EXPORT CUresult cuKernelGetFunction(CUfunction* function, CUkernel kernel) {
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (detail::kernel_name(kernel).empty()) return CUDA_ERROR_INVALID_HANDLE;
  *function = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(kernel));
}

PT_EXPORT CUresult cuKernelGetAttribute(int* value, CUfunction_attribute attribute, CUkernel kernel,
                                        CUdevice device) {
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncGetAttribute(value, attribute, reinterpret_cast<CUfunction>(kernel));
}

PT_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attribute, int value, CUkernel kernel,
                                        CUdevice device) {
  if (!detail::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(kernel), attribute, value);
}

PT_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr* pointer, size_t* bytes, CUmodule handle,
                                     const char* name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  detail::Module* m = detail::live_module(handle);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const void* storage = nullptr;
  std::size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    const auto it = m->globals.find(name);
    if (it == m->globals.end()) return CUDA_ERROR_NOT_FOUND;
    size = it->second;
    auto& slot = m->global_storage[name];
    if (slot == nullptr) {
      // Device storage like a __device__ variable's (zero-initialised: the image's initial
      // values are not read), keyed by a host cell of its own.
      const char* shadow = new char[std::max<std::size_t>(size, 1)]();  // never freed
      detail::register_variable(shadow, name, size, false, nullptr);
      slot = detail::lookup_variable(shadow).storage;
    }
    storage = slot;
  }
  if (storage == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  if (pointer != nullptr) *pointer = reinterpret_cast<CUdeviceptr>(storage);
  if (bytes != nullptr) *bytes = size;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule handle) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  detail::Module* m = detail::live_module(handle);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(m->names.size());
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;  // CUDA 12.2+ default
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuFuncGetParamInfo(CUfunction function, size_t index, size_t* offset,
                                      size_t* bytes) {
  ErrorScope scope;
  return to_driver(
      cudaFuncGetParamInfo(reinterpret_cast<const void*>(function), index, offset, bytes));
}

// A CUkernel is a function handle here (cuLibraryGetKernel).
PT_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset,
                                        size_t* bytes) {
  return cuFuncGetParamInfo(reinterpret_cast<CUfunction>(kernel), index, offset, bytes);
}

PT_EXPORT CUresult cuFuncGetName(const char** name, CUfunction function) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  return to_driver(cudaFuncGetName(name, reinterpret_cast<const void*>(function)));
}

PT_EXPORT CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute,
                                      CUfunction function) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaFuncAttributes a{};
  const cudaError_t error = cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(function));
  if (error != cudaSuccess) return to_driver(error);
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = a.maxThreadsPerBlock;
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = static_cast<int>(a.sharedSizeBytes);
      break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *value = static_cast<int>(a.constSizeBytes);
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = static_cast<int>(a.localSizeBytes);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = a.numRegs;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *value = a.ptxVersion;
      break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = a.binaryVersion;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = a.maxDynamicSharedSizeBytes;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute,
                                      int value) {
  ErrorScope scope;
  // The settable attributes share their numbers with cudaFuncAttribute (8 and 9).
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
      attribute != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
    return detail::kernel_name(function).empty() ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
  }
  const cudaFuncAttribute runtime_attribute =
      attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
          ? cudaFuncAttributeMaxDynamicSharedMemorySize
          : cudaFuncAttributePreferredSharedMemoryCarveout;
  return to_driver(
      cudaFuncSetAttribute(reinterpret_cast<const void*>(function), runtime_attribute, value));
}

PT_EXPORT CUresult cuFuncSetCacheConfig(CUfunction function, CUfunc_cache config) {
  (void)config;
  return detail::kernel_name(function).empty() ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

PT_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction function,
                                                               int block_size, size_t shared) {
  ErrorScope scope;
  return to_driver(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      blocks, reinterpret_cast<const void*>(function), block_size, shared));
}

PT_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                  void** params, void** extra) {
  (void)params;  // arguments are not needed: nothing executes
  (void)extra;
  ErrorScope scope;
  return to_driver(impl::launch(reinterpret_cast<const void*>(f), dim3(gx, gy, gz),
                                dim3(bx, by, bz), shared, stream, false, "cuLaunchKernel"));
}

namespace {
// cuLaunchKernelEx[_ptsz]: the configuration's shape, shared memory and stream.
CUresult launch_with_config(const CUlaunchConfig* config, CUfunction f, bool per_thread,
                            const char* api) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  return to_driver(impl::launch(reinterpret_cast<const void*>(f),
                                dim3(config->gridDimX, config->gridDimY, config->gridDimZ),
                                dim3(config->blockDimX, config->blockDimY, config->blockDimZ),
                                config->sharedMemBytes, config->hStream, per_thread, api));
}
}  // namespace

PT_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                    void** extra) {
  (void)params;
  (void)extra;
  return launch_with_config(config, f, false, "cuLaunchKernelEx");
}

PT_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                             CUstream stream, void** params) {
  (void)params;
  ErrorScope scope;
  return to_driver(impl::launch_cooperative(reinterpret_cast<const void*>(f), dim3(gx, gy, gz),
                                            dim3(bx, by, bz), shared, stream, false,
                                            "cuLaunchCooperativeKernel"));
}

PT_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* user) {
  ErrorScope scope;
  return to_driver(impl::launch_host_func(stream, fn, user, false, "cuLaunchHostFunc"));
}

// ---- memory ------------------------------------------------------------------------------------

PT_EXPORT CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  if (pointer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;  // unlike cudaMalloc
  ErrorScope scope;
  void* p = nullptr;
  const int error = powertrain::emu::allocate_device_memory(&p, bytes, "cuMemAlloc_v2");
  if (error != 0) return to_driver(static_cast<cudaError_t>(error));
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemFree(CUdeviceptr pointer) {
  ErrorScope scope;
  return to_driver(static_cast<cudaError_t>(
      powertrain::emu::free_device_memory(reinterpret_cast<void*>(pointer), "cuMemFree_v2")));
}

PT_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* pointer, size_t bytes, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::malloc_async(reinterpret_cast<void**>(pointer), bytes, stream, false,
                                      "cuMemAllocAsync"));
}

PT_EXPORT CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  ErrorScope scope;
  return to_driver(
      impl::free_async(reinterpret_cast<void*>(pointer), stream, false, "cuMemFreeAsync"));
}

PT_EXPORT CUresult cuMemAllocHost(void** pointer, size_t bytes) {
  ErrorScope scope;
  return to_driver(cudaMallocHost(pointer, bytes));
}

PT_EXPORT CUresult cuMemHostAlloc(void** pointer, size_t bytes, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaHostAlloc(pointer, bytes, flags));
}

PT_EXPORT CUresult cuMemFreeHost(void* pointer) {
  ErrorScope scope;
  return to_driver(cudaFreeHost(pointer));
}

PT_EXPORT CUresult cuMemGetInfo(size_t* free, size_t* total) {
  ErrorScope scope;
  return to_driver(cudaMemGetInfo(free, total));
}

PT_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr pointer) {
  const detail::PointerInfo info = detail::lookup_pointer(reinterpret_cast<void*>(pointer));
  if (!info.known) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = static_cast<CUdeviceptr>(info.base);
  if (size != nullptr) *size = info.bytes;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                         CUdeviceptr pointer) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const detail::PointerInfo info = detail::lookup_pointer(reinterpret_cast<void*>(pointer));
  if (!info.known) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = detail::primary_context(info.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = info.device_side ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<CUdeviceptr*>(data) = pointer;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = info.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = static_cast<CUdeviceptr>(info.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = info.bytes;
      return CUDA_SUCCESS;
    default:
      return static_cast<CUresult>(powertrain::emu::report_unsupported("cuPointerGetAttribute"));
  }
}

namespace {
CUresult copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, CUstream stream,
              bool async, const char* api) {
  ErrorScope scope;
  return to_driver(impl::memcpy_1d(dst, src, bytes, kind, stream, async, false, api));
}
void* device_pointer(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
}  // namespace

PT_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  return copy(device_pointer(dst), src, bytes, cudaMemcpyHostToDevice, nullptr, false,
              "cuMemcpyHtoD_v2");
}
PT_EXPORT CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  return copy(dst, device_pointer(src), bytes, cudaMemcpyDeviceToHost, nullptr, false,
              "cuMemcpyDtoH_v2");
}
PT_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDeviceToDevice, nullptr,
              false, "cuMemcpyDtoD_v2");
}
PT_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                     CUstream stream) {
  return copy(device_pointer(dst), src, bytes, cudaMemcpyHostToDevice, stream, true,
              "cuMemcpyHtoDAsync_v2");
}
PT_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return copy(dst, device_pointer(src), bytes, cudaMemcpyDeviceToHost, stream, true,
              "cuMemcpyDtoHAsync_v2");
}
PT_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                     CUstream stream) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDeviceToDevice, stream,
              true, "cuMemcpyDtoDAsync_v2");
}
PT_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDefault, nullptr, false,
              "cuMemcpy");
}
PT_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDefault, stream, true,
              "cuMemcpyAsync");
}

namespace {
// cuMemsetD8/16/32: `count` elements of `width` bytes, the element pattern written where the
// memory is backed.
CUresult memset_elements(CUdeviceptr dst, unsigned value, size_t count, int width, CUstream stream,
                         bool async, const char* api) {
  return detail::driver_memset_2d(dst, count * static_cast<size_t>(width), value, count, 1, width,
                                  stream, async, api);
}
}  // namespace

namespace powertrain::emu::detail {
CUresult driver_memset_2d(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
                          size_t height, int element_bytes, CUstream stream, bool async,
                          const char* api) {
  ErrorScope scope;
  size_t row_bytes = 0;
  if (__builtin_mul_overflow(width, static_cast<size_t>(element_bytes), &row_bytes)) {
    return driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                         std::to_string(width) + " elements of " + std::to_string(element_bytes) +
                             " bytes overflow the address range");
  }
  const cudaError_t error =
      height == 1 ? impl::memset_1d(device_pointer(dst), static_cast<int>(value & 0xff), row_bytes,
                                    stream, async, false, api)
                  : impl::memset_2d(device_pointer(dst), pitch, static_cast<int>(value & 0xff),
                                    row_bytes, height, stream, async, false, api);
  if (error != cudaSuccess || element_bytes == 1 || row_bytes == 0) return to_driver(error);
  if (!lookup_pointer(device_pointer(dst)).backed) return CUDA_SUCCESS;
  // The fill wrote the low byte everywhere; the element pattern goes over it.
  auto* base = static_cast<unsigned char*>(device_pointer(dst));
  const auto element = static_cast<std::uint32_t>(value);
  for (size_t row = 0; row < height; ++row) {
    unsigned char* at = base + row * pitch;
    for (size_t i = 0; i < width; ++i) {
      std::memcpy(at + i * static_cast<size_t>(element_bytes), &element,
                  static_cast<size_t>(element_bytes));
    }
  }
  return CUDA_SUCCESS;
}
}  // namespace powertrain::emu::detail

PT_EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  return memset_elements(dst, value, count, 1, nullptr, false, "cuMemsetD8_v2");
}
PT_EXPORT CUresult cuMemsetD16(CUdeviceptr dst, unsigned short value, size_t count) {
  return memset_elements(dst, value, count, 2, nullptr, false, "cuMemsetD16_v2");
}
PT_EXPORT CUresult cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  return memset_elements(dst, value, count, 4, nullptr, false, "cuMemsetD32_v2");
}
PT_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count,
                                   CUstream stream) {
  return memset_elements(dst, value, count, 1, stream, true, "cuMemsetD8Async");
}
PT_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                                    CUstream stream) {
  return memset_elements(dst, value, count, 2, stream, true, "cuMemsetD16Async");
}
PT_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                                    CUstream stream) {
  return memset_elements(dst, value, count, 4, stream, true, "cuMemsetD32Async");
}

// ---- virtual memory management -------------------------------------------------------------

PT_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                 const CUmemAllocationProp* prop,
                                                 CUmemAllocationGranularity_flags option) {
  (void)option;  // minimum and recommended are both 2 MiB on NVIDIA GPUs
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !detail::valid_device(prop->location.id)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *granularity = detail::kGranularity;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* pointer, size_t bytes, size_t alignment,
                                       CUdeviceptr address, unsigned long long flags) {
  (void)flags;
  const char* api = "cuMemAddressReserve";
  if (pointer == nullptr || bytes == 0 || bytes % detail::kGranularity != 0) {
    return detail::driver_misuse(
        api, CUDA_ERROR_INVALID_VALUE,
        "size " + std::to_string(bytes) + " is not a non-zero multiple of the 2 MiB granularity");
  }
  const std::size_t align = std::max<std::size_t>(alignment, detail::kGranularity);
  void* raw = ::mmap(reinterpret_cast<void*>(address), bytes + align, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t base = (begin + align - 1) / align * align;
  // Trim the alignment slack on both sides.
  if (base > begin) ::munmap(raw, base - begin);
  const std::uintptr_t end = begin + bytes + align;
  if (end > base + bytes) ::munmap(reinterpret_cast<void*>(base + bytes), end - (base + bytes));
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    detail::state().reservations[base] = bytes;
  }
  *pointer = static_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemAddressFree(CUdeviceptr pointer, size_t bytes) {
  const char* api = "cuMemAddressFree";
  detail::DriverState& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.reservations.find(static_cast<std::uintptr_t>(pointer));
  if (it == s.reservations.end() || it->second != bytes) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 detail::pointer_text(reinterpret_cast<void*>(pointer)) +
                                     " with size " + std::to_string(bytes) +
                                     " is not a reservation of cuMemAddressReserve");
  }
  const auto mapped = s.mappings.lower_bound(it->first);
  if (mapped != s.mappings.end() && mapped->first < it->first + bytes) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "the reservation still has mappings; cuMemUnmap them first");
  }
  ::munmap(reinterpret_cast<void*>(it->first), bytes);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                               const CUmemAllocationProp* prop, unsigned long long flags) {
  (void)flags;
  const char* api = "cuMemCreate";
  if (handle == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "only pinned device allocations are emulated");
  }
  if (!detail::valid_device(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == 0 || bytes % detail::kGranularity != 0) {
    return detail::driver_misuse(
        api, CUDA_ERROR_INVALID_VALUE,
        "size " + std::to_string(bytes) + " is not a non-zero multiple of the 2 MiB granularity");
  }
  ErrorScope scope;
  void* physical = nullptr;
  const cudaError_t error = detail::allocate_physical(&physical, bytes, prop->location.id, api);
  if (error != cudaSuccess) return to_driver(error);
  const auto id =
      static_cast<CUmemGenericAllocationHandle>(reinterpret_cast<std::uintptr_t>(physical));
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    detail::state().physicals[id] = detail::Physical{bytes, prop->location.id, *prop};
  }
  *handle = id;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    const auto it = detail::state().physicals.find(handle);
    if (it == detail::state().physicals.end()) {
      return detail::driver_misuse(
          "cuMemRelease", CUDA_ERROR_INVALID_VALUE,
          "invalid or released allocation handle " + std::to_string(handle));
    }
    const bool imported = it->second.imported;
    detail::state().physicals.erase(it);
    if (imported) return CUDA_SUCCESS;  // another allocation's handle: nothing of ours to free
  }
  // The memory is accounted as released here (the driver keeps it until its last unmap).
  ErrorScope scope;
  return to_driver(detail::release_physical(
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(handle)), "cuMemRelease"));
}

// ---- shareable handles (memMapIPCDrv, PyTorch's expandable segments shared between processes):
// an exported allocation is described by {magic, exporting process, handle, size, device}, in a
// memfd for a POSIX file descriptor and in the 64 bytes of a fabric handle. Imported in the same
// process it names the same memory (a second handle to it); in another process of the job, whose
// memory this one cannot reach, it opens a stand-in of the same size that maps like the original
// (as the runtime's IPC handles do). Windows handles are refused.
namespace powertrain::emu::detail {
namespace {

constexpr char kShareMagic[8] = {'P', 'T', 'E', 'M', 'U', 'V', 'M', 'M'};

struct ShareDescriptor {
  char magic[8];
  std::int64_t process = 0;
  std::uint64_t handle = 0;
  std::uint64_t bytes = 0;
  std::int32_t device = 0;
  std::uint32_t handle_types = 0;  // the allocation's requestedHandleTypes
};
static_assert(sizeof(ShareDescriptor) <= sizeof(CUmemFabricHandle));

CUmemGenericAllocationHandle next_imported_handle() {
  static std::atomic<std::uint64_t> next{1};
  return 0xE000'0000'0000'0000ULL | next.fetch_add(1);
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT CUresult cuMemExportToShareableHandle(void* shareable,
                                                CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType type,
                                                unsigned long long flags) {
  const char* api = "cuMemExportToShareableHandle";
  if (shareable == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  detail::ShareDescriptor d{};
  std::memcpy(d.magic, detail::kShareMagic, sizeof(d.magic));
  d.process = static_cast<std::int64_t>(::getpid());
  d.handle = handle;
  {
    std::lock_guard<std::mutex> lock(detail::state().mutex);
    const auto it = detail::state().physicals.find(handle);
    if (it == detail::state().physicals.end()) {
      return detail::driver_misuse(
          api, CUDA_ERROR_INVALID_VALUE,
          "invalid or released allocation handle " + std::to_string(handle));
    }
    if ((it->second.prop.requestedHandleTypes & type) == 0) {
      return detail::driver_misuse(api, CUDA_ERROR_NOT_PERMITTED,
                                   "the allocation was not created with this handle type in "
                                   "requestedHandleTypes (" +
                                       std::to_string(static_cast<int>(type)) + ")");
    }
    d.bytes = it->second.bytes;
    d.device = it->second.device;
    d.handle_types = static_cast<std::uint32_t>(it->second.prop.requestedHandleTypes);
  }
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    const int fd = detail::share_through_fd(&d, sizeof(d), "powertrain-emu-vmm");
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    *static_cast<int*>(shareable) = fd;
    return CUDA_SUCCESS;
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    auto* fabric = static_cast<CUmemFabricHandle*>(shareable);
    std::memset(fabric, 0, sizeof(*fabric));
    std::memcpy(fabric, &d, sizeof(d));
    return CUDA_SUCCESS;
  }
  return detail::driver_misuse(api, CUDA_ERROR_NOT_SUPPORTED,
                               "handle type " + std::to_string(static_cast<int>(type)) +
                                   " (only POSIX file descriptors and fabric handles on Linux)");
}

PT_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                  void* os_handle, CUmemAllocationHandleType type) {
  const char* api = "cuMemImportFromShareableHandle";
  // A POSIX file descriptor arrives as the handle's value (0 is a valid descriptor).
  if (handle == nullptr ||
      (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && os_handle == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  detail::ShareDescriptor d{};
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(os_handle));
    if (!detail::read_shared_fd(fd, &d, sizeof(d))) {
      return detail::driver_misuse(
          api, CUDA_ERROR_INVALID_VALUE,
          "file descriptor " + std::to_string(fd) + " does not hold an exported allocation");
    }
  } else if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    std::memcpy(&d, os_handle, sizeof(d));
  } else {
    return detail::driver_misuse(api, CUDA_ERROR_NOT_SUPPORTED,
                                 "handle type " + std::to_string(static_cast<int>(type)) +
                                     " (only POSIX file descriptors and fabric handles on Linux)");
  }
  if (std::memcmp(d.magic, detail::kShareMagic, sizeof(d.magic)) != 0 || d.bytes == 0 ||
      !detail::valid_device(d.device)) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "not a handle exported by the emulated driver");
  }
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  if (d.process == static_cast<std::int64_t>(::getpid()) &&
      detail::state().physicals.count(d.handle) == 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "the exported allocation was released");
  }
  const CUmemGenericAllocationHandle id = detail::next_imported_handle();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = d.device;
  prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(d.handle_types);
  detail::Physical alias{static_cast<std::size_t>(d.bytes), d.device, prop};
  alias.imported = true;
  detail::state().physicals[id] = alias;
  *handle = id;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                          CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  const auto it = detail::state().physicals.find(handle);
  if (it == detail::state().physicals.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemMap(CUdeviceptr pointer, size_t bytes, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags) {
  const std::int64_t start = powertrain::emu::now_ns();
  const char* api = "cuMemMap";
  if (flags != 0) return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE, "flags != 0");
  const auto address = static_cast<std::uintptr_t>(pointer);
  int device = 0;
  {
    detail::DriverState& s = detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto physical = s.physicals.find(handle);
    if (physical == s.physicals.end()) {
      return detail::driver_misuse(
          api, CUDA_ERROR_INVALID_VALUE,
          "invalid or released allocation handle " + std::to_string(handle));
    }
    if (bytes == 0 || bytes % detail::kGranularity != 0 || offset % detail::kGranularity != 0 ||
        offset + bytes > physical->second.bytes) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                   "size " + std::to_string(bytes) + " at offset " +
                                       std::to_string(offset) +
                                       " is not granular or exceeds the allocation's " +
                                       std::to_string(physical->second.bytes) + " bytes");
    }
    auto reservation = s.reservations.upper_bound(address);
    if (reservation == s.reservations.begin() ||
        address + bytes > std::prev(reservation)->first + std::prev(reservation)->second) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                   "the range is not inside a cuMemAddressReserve reservation");
    }
    device = physical->second.device;
    const bool backed =
        static_cast<std::int64_t>(bytes) <= detail::config().backed_limit &&
        ::mmap(reinterpret_cast<void*>(address), bytes, PROT_READ | PROT_WRITE,
               MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED;
    if (!detail::add_mapping(reinterpret_cast<void*>(address), bytes, device, backed)) {
      if (backed) {
        ::mmap(reinterpret_cast<void*>(address), bytes, PROT_NONE,
               MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      }
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                   "the range overlaps an existing mapping");
    }
    s.mappings[address] = detail::Mapping{bytes, handle, device, {}};
  }
  auto record = powertrain::emu::begin_record(trace_schema::op::kMemMap, start, device);
  record.field("ptr", static_cast<std::int64_t>(address));
  record.field(trace_schema::field::kBytes, static_cast<std::int64_t>(bytes));
  record.field("offset", static_cast<std::int64_t>(offset));
  record.field("handle", static_cast<std::int64_t>(handle));
  record.field(trace_schema::field::kApi, std::string_view(api));
  powertrain::emu::end_record(record);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemUnmap(CUdeviceptr pointer, size_t bytes) {
  const std::int64_t start = powertrain::emu::now_ns();
  const char* api = "cuMemUnmap";
  const auto address = static_cast<std::uintptr_t>(pointer);
  int device = 0;
  {
    detail::DriverState& s = detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto first = s.mappings.lower_bound(address);
    auto last = first;
    while (last != s.mappings.end() && last->first < address + bytes) ++last;
    bool exact = first != last && first->first == address;
    std::uintptr_t expected = address;
    for (auto it = first; exact && it != last; ++it) {
      exact = it->first == expected;
      expected = it->first + it->second.bytes;
    }
    if (!exact || expected != address + bytes) {
      return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                   "the range is not exactly covered by cuMemMap mappings");
    }
    device = first->second.device;
    for (auto it = first; it != last; ++it) {
      detail::remove_mapping(reinterpret_cast<void*>(it->first));
      ::mmap(reinterpret_cast<void*>(it->first), it->second.bytes, PROT_NONE,
             MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    s.mappings.erase(first, last);
  }
  auto record = powertrain::emu::begin_record(trace_schema::op::kMemUnmap, start, device);
  record.field("ptr", static_cast<std::int64_t>(address));
  record.field(trace_schema::field::kBytes, static_cast<std::int64_t>(bytes));
  record.field(trace_schema::field::kApi, std::string_view(api));
  powertrain::emu::end_record(record);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemSetAccess(CUdeviceptr pointer, size_t bytes, const CUmemAccessDesc* desc,
                                  size_t count) {
  const char* api = "cuMemSetAccess";
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !detail::valid_device(desc[i].location.id)) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
  }
  const auto address = static_cast<std::uintptr_t>(pointer);
  detail::DriverState& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // Every byte of the range must be mapped.
  std::uintptr_t covered = address;
  auto it = s.mappings.upper_bound(address);
  if (it != s.mappings.begin()) --it;
  for (; it != s.mappings.end() && it->first <= covered && covered < address + bytes; ++it) {
    covered = std::max(covered, it->first + it->second.bytes);
  }
  if (bytes == 0 || covered < address + bytes) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "the range is not entirely mapped (cuMemMap first)");
  }
  // Remembered per mapping for cuMemGetAccess (emulated memory is host memory: every device
  // reads it whatever the flags say).
  it = s.mappings.upper_bound(address);
  if (it != s.mappings.begin()) --it;
  for (; it != s.mappings.end() && it->first < address + bytes; ++it) {
    if (it->first + it->second.bytes <= address) continue;
    for (size_t i = 0; i < count; ++i) it->second.access[desc[i].location.id] = desc[i].flags;
  }
  return CUDA_SUCCESS;
}

// The access `location` has to the mapping holding `pointer`, as cuMemSetAccess last set it
// (none before).
PT_EXPORT CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                  CUdeviceptr pointer) {
  if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || !detail::valid_device(location->id)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  const auto address = static_cast<std::uintptr_t>(pointer);
  detail::DriverState& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.mappings.upper_bound(address);
  if (it == s.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (address >= it->first + it->second.bytes) {
    return detail::driver_misuse("cuMemGetAccess", CUDA_ERROR_INVALID_VALUE,
                                 detail::pointer_text(reinterpret_cast<void*>(address)) +
                                     " is not in a range mapped by cuMemMap");
  }
  const auto access = it->second.access.find(location->id);
  *flags = access != it->second.access.end()
               ? access->second
               : static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                               void* address) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  detail::DriverState& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.mappings.upper_bound(reinterpret_cast<std::uintptr_t>(address));
  if (it == s.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (reinterpret_cast<std::uintptr_t>(address) >= it->first + it->second.bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *handle = it->second.handle;
  return CUDA_SUCCESS;
}

// ---- tensor maps (TMA descriptors: Triton and CUTLASS on Hopper) -----------------------------

namespace {
// The descriptor is opaque and only read by device code, which does not run: it is checked like
// the driver does (rank, alignment, a device address) and zeroed except for a tag.
CUresult encode_tensor_map(CUtensorMap* map, cuuint32_t rank, void* address, const char* api) {
  if (map == nullptr || rank == 0 || rank > 5) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "tensorMap is NULL or the rank is outside [1, 5]");
  }
  if (reinterpret_cast<std::uintptr_t>(map) % 64 != 0 ||
      reinterpret_cast<std::uintptr_t>(address) % 16 != 0) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 "tensorMap must be 64-byte and globalAddress 16-byte aligned");
  }
  const detail::PointerInfo info = detail::lookup_pointer(address);
  if (!info.known || !info.device_side) {
    return detail::driver_misuse(api, CUDA_ERROR_INVALID_VALUE,
                                 detail::pointer_text(address) + " is not device memory");
  }
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, "powertrain-tma", 14);
  return CUDA_SUCCESS;
}
}  // namespace

PT_EXPORT CUresult cuTensorMapEncodeTiled(
    CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
    const cuuint32_t* element_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion promotion, CUtensorMapFloatOOBfill fill) {
  (void)dtype, (void)dims, (void)strides, (void)box, (void)element_strides, (void)interleave,
      (void)swizzle, (void)promotion, (void)fill;
  return encode_tensor_map(map, rank, address, "cuTensorMapEncodeTiled");
}

PT_EXPORT CUresult cuTensorMapEncodeIm2col(
    CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
    const cuuint64_t* dims, const cuuint64_t* strides, const int* lower, const int* upper,
    cuuint32_t channels, cuuint32_t pixels, const cuuint32_t* element_strides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion,
    CUtensorMapFloatOOBfill fill) {
  (void)dtype, (void)dims, (void)strides, (void)lower, (void)upper, (void)channels, (void)pixels,
      (void)element_strides, (void)interleave, (void)swizzle, (void)promotion, (void)fill;
  return encode_tensor_map(map, rank, address, "cuTensorMapEncodeIm2col");
}

PT_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap* map, void* address) {
  return encode_tensor_map(map, 1, address, "cuTensorMapReplaceAddress");
}

// ---- streams and events --------------------------------------------------------------------

PT_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(stream), flags));
}

PT_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  ErrorScope scope;
  return to_driver(
      cudaStreamCreateWithPriority(reinterpret_cast<cudaStream_t*>(stream), flags, priority));
}

PT_EXPORT CUresult cuStreamDestroy(CUstream stream) {
  ErrorScope scope;
  return to_driver(cudaStreamDestroy(stream));
}

PT_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::stream_synchronize(stream, false, "cuStreamSynchronize"));
}

PT_EXPORT CUresult cuStreamQuery(CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::stream_query(stream, false, "cuStreamQuery"));
}

PT_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::stream_wait_event(stream, event, flags, false, "cuStreamWaitEvent"));
}

PT_EXPORT CUresult cuStreamGetPriority(CUstream stream, int* priority) {
  ErrorScope scope;
  return to_driver(impl::stream_get_priority(stream, priority, false, "cuStreamGetPriority"));
}

PT_EXPORT CUresult cuStreamGetFlags(CUstream stream, unsigned int* flags) {
  ErrorScope scope;
  return to_driver(impl::stream_get_flags(stream, flags, false, "cuStreamGetFlags"));
}

PT_EXPORT CUresult cuStreamGetId(CUstream stream, unsigned long long* id) {
  ErrorScope scope;
  return to_driver(impl::stream_get_id(stream, id, false, "cuStreamGetId"));
}

PT_EXPORT CUresult cuStreamGetCtx(CUstream stream, CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  int device = 0;
  const cudaError_t error = impl::stream_get_device(stream, &device, false, "cuStreamGetCtx");
  if (error != cudaSuccess) return to_driver(error);
  *ctx = detail::primary_context(device);
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  ErrorScope scope;
  return to_driver(impl::begin_capture(stream, static_cast<cudaStreamCaptureMode>(mode), false,
                                       "cuStreamBeginCapture_v2"));
}

PT_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  ErrorScope scope;
  return to_driver(impl::end_capture(stream, reinterpret_cast<cudaGraph_t*>(graph), false,
                                     "cuStreamEndCapture"));
}

PT_EXPORT CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  ErrorScope scope;
  return to_driver(impl::stream_is_capturing(
      stream, reinterpret_cast<cudaStreamCaptureStatus*>(status), false, "cuStreamIsCapturing"));
}

PT_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                               unsigned long long flags) {
  ErrorScope scope;
  return to_driver(cudaGraphInstantiateWithFlags(reinterpret_cast<cudaGraphExec_t*>(exec),
                                                 reinterpret_cast<cudaGraph_t>(graph), flags));
}

PT_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  ErrorScope scope;
  return to_driver(
      impl::graph_launch(reinterpret_cast<cudaGraphExec_t>(exec), stream, false, "cuGraphLaunch"));
}

PT_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  ErrorScope scope;
  return to_driver(cudaGraphExecDestroy(reinterpret_cast<cudaGraphExec_t>(exec)));
}

PT_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  ErrorScope scope;
  return to_driver(cudaGraphDestroy(reinterpret_cast<cudaGraph_t>(graph)));
}

PT_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(event), flags));
}

PT_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::event_record(event, stream, 0, false, "cuEventRecord"));
}

PT_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::event_record(event, stream, flags, false, "cuEventRecordWithFlags"));
}

PT_EXPORT CUresult cuEventQuery(CUevent event) {
  ErrorScope scope;
  return to_driver(cudaEventQuery(event));
}

PT_EXPORT CUresult cuEventSynchronize(CUevent event) {
  ErrorScope scope;
  return to_driver(cudaEventSynchronize(event));
}

PT_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  ErrorScope scope;
  return to_driver(cudaEventElapsedTime(ms, start, end));
}

PT_EXPORT CUresult cuEventDestroy(CUevent event) {
  ErrorScope scope;
  return to_driver(cudaEventDestroy(event));
}

// ---- private tables
// ------------------------------------------------------------------------------

// The driver's undocumented export tables. NVRTC and nvJitLink (host-only compilers) dlopen
// libcuda.so.1 and ask for one, and compile without it when it is refused, so their question is
// answered quietly; anyone else (the real runtime, linked statically) is reported as unsupported.
PT_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  Dl_info caller{};
  std::string by;
  if (::dladdr(__builtin_return_address(0), &caller) != 0 && caller.dli_fname != nullptr) {
    std::string_view file(caller.dli_fname);
    file = file.substr(file.rfind('/') + 1);
    if (file.rfind("libnvrtc", 0) == 0 || file.rfind("libnvJitLink", 0) == 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    // A shared library asking is one with its own static runtime (a vendor's plugin): naming
    // it tells the user which library's CUDA work is missing and what to do.
    if (!file.empty() && file.find(".so") != std::string_view::npos) {
      by = " from " + std::string(file);
      static std::once_flag once;
      // NVIDIA's own libraries cannot be rebuilt by the user: say what is missing instead.
      const bool toolkit = file.rfind("libnv", 0) == 0 || file.rfind("libcu", 0) == 0 ||
                           file.rfind("libnpp", 0) == 0;
      std::call_once(once, [&] {
        std::fprintf(stderr,
                     "powertrain-emu: %s carries its own static CUDA runtime, so its CUDA calls "
                     "cannot be intercepted; %s\n",
                     std::string(file).c_str(),
                     toolkit ? "it is a CUDA library the emulator does not emulate at its API, "
                               "so its GPU work is missing from the trace"
                             : "rebuild it with `nvcc -cudart shared` (CMake: "
                               "CUDA_RUNTIME_LIBRARY Shared) to emulate it");
      });
    }
  }
  powertrain::emu::report_unsupported("cuGetExportTable" + by);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// ---- per-thread default stream (`--default-stream per-thread`) ---------------------------------
// The *_ptsz (stream-ordered) and *_ptds (synchronous) entry points the CUDA header substitutes
// under CUDA_API_PER_THREAD_DEFAULT_STREAM: a NULL stream is the calling thread's default stream.
// Each is the call above with that stream and its own name.

PT_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                       CUstream stream, void** params, void** extra) {
  (void)params;
  (void)extra;
  ErrorScope scope;
  return to_driver(impl::launch(reinterpret_cast<const void*>(f), dim3(gx, gy, gz),
                                dim3(bx, by, bz), shared, stream, true, "cuLaunchKernel_ptsz"));
}

PT_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                         void** extra) {
  (void)params;
  (void)extra;
  return launch_with_config(config, f, true, "cuLaunchKernelEx_ptsz");
}

PT_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shared, CUstream stream,
                                                  void** params) {
  (void)params;
  ErrorScope scope;
  return to_driver(impl::launch_cooperative(reinterpret_cast<const void*>(f), dim3(gx, gy, gz),
                                            dim3(bx, by, bz), shared, stream, true,
                                            "cuLaunchCooperativeKernel_ptsz"));
}

PT_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void* user) {
  ErrorScope scope;
  return to_driver(impl::launch_host_func(stream, fn, user, true, "cuLaunchHostFunc_ptsz"));
}

PT_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t bytes) {
  return copy(device_pointer(dst), src, bytes, cudaMemcpyHostToDevice, CU_STREAM_PER_THREAD, false,
              "cuMemcpyHtoD_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t bytes) {
  return copy(dst, device_pointer(src), bytes, cudaMemcpyDeviceToHost, CU_STREAM_PER_THREAD, false,
              "cuMemcpyDtoH_v2_ptds");
}
PT_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDeviceToDevice,
              CU_STREAM_PER_THREAD, false, "cuMemcpyDtoD_v2_ptds");
}
PT_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDefault,
              CU_STREAM_PER_THREAD, false, "cuMemcpy_ptds");
}
PT_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t bytes,
                                             CUstream stream) {
  return copy(device_pointer(dst), src, bytes, cudaMemcpyHostToDevice, per_thread(stream), true,
              "cuMemcpyHtoDAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t bytes,
                                             CUstream stream) {
  return copy(dst, device_pointer(src), bytes, cudaMemcpyDeviceToHost, per_thread(stream), true,
              "cuMemcpyDtoHAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                             CUstream stream) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDeviceToDevice,
              per_thread(stream), true, "cuMemcpyDtoDAsync_v2_ptsz");
}
PT_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                      CUstream stream) {
  return copy(device_pointer(dst), device_pointer(src), bytes, cudaMemcpyDefault,
              per_thread(stream), true, "cuMemcpyAsync_ptsz");
}

PT_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value, size_t count) {
  return memset_elements(dst, value, count, 1, CU_STREAM_PER_THREAD, false, "cuMemsetD8_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short value, size_t count) {
  return memset_elements(dst, value, count, 2, CU_STREAM_PER_THREAD, false, "cuMemsetD16_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int value, size_t count) {
  return memset_elements(dst, value, count, 4, CU_STREAM_PER_THREAD, false, "cuMemsetD32_v2_ptds");
}
PT_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value, size_t count,
                                        CUstream stream) {
  return memset_elements(dst, value, count, 1, per_thread(stream), true, "cuMemsetD8Async_ptsz");
}
PT_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short value, size_t count,
                                         CUstream stream) {
  return memset_elements(dst, value, count, 2, per_thread(stream), true, "cuMemsetD16Async_ptsz");
}
PT_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t count,
                                         CUstream stream) {
  return memset_elements(dst, value, count, 4, per_thread(stream), true, "cuMemsetD32Async_ptsz");
}

PT_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* pointer, size_t bytes, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::malloc_async(reinterpret_cast<void**>(pointer), bytes, stream, true,
                                      "cuMemAllocAsync_ptsz"));
}
PT_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr pointer, CUstream stream) {
  ErrorScope scope;
  return to_driver(
      impl::free_async(reinterpret_cast<void*>(pointer), stream, true, "cuMemFreeAsync_ptsz"));
}

PT_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::stream_synchronize(stream, true, "cuStreamSynchronize_ptsz"));
}
PT_EXPORT CUresult cuStreamQuery_ptsz(CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::stream_query(stream, true, "cuStreamQuery_ptsz"));
}
PT_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::stream_wait_event(stream, event, flags, true, "cuStreamWaitEvent_ptsz"));
}
PT_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream stream, int* priority) {
  ErrorScope scope;
  return to_driver(impl::stream_get_priority(stream, priority, true, "cuStreamGetPriority_ptsz"));
}
PT_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream stream, unsigned int* flags) {
  ErrorScope scope;
  return to_driver(impl::stream_get_flags(stream, flags, true, "cuStreamGetFlags_ptsz"));
}
PT_EXPORT CUresult cuStreamGetId_ptsz(CUstream stream, unsigned long long* id) {
  ErrorScope scope;
  return to_driver(impl::stream_get_id(stream, id, true, "cuStreamGetId_ptsz"));
}
PT_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream stream, CUcontext* ctx) {
  return cuStreamGetCtx(per_thread(stream), ctx);
}
PT_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  ErrorScope scope;
  return to_driver(impl::begin_capture(stream, static_cast<cudaStreamCaptureMode>(mode), true,
                                       "cuStreamBeginCapture_v2_ptsz"));
}
PT_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  ErrorScope scope;
  return to_driver(impl::end_capture(stream, reinterpret_cast<cudaGraph_t*>(graph), true,
                                     "cuStreamEndCapture_ptsz"));
}
PT_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status) {
  ErrorScope scope;
  return to_driver(impl::stream_is_capturing(stream,
                                             reinterpret_cast<cudaStreamCaptureStatus*>(status),
                                             true, "cuStreamIsCapturing_ptsz"));
}
PT_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::graph_launch(reinterpret_cast<cudaGraphExec_t>(exec), stream, true,
                                      "cuGraphLaunch_ptsz"));
}
PT_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  ErrorScope scope;
  return to_driver(impl::event_record(event, stream, 0, true, "cuEventRecord_ptsz"));
}
PT_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::event_record(event, stream, flags, true, "cuEventRecordWithFlags_ptsz"));
}

// ---- entry points ------------------------------------------------------------------------------

namespace powertrain::emu::detail {
namespace {

struct EntryPoint {
  const char* name;  // the name cuGetProcAddress is asked for (without _vN)
  void* function;    // the newest version, as the CUDA 13 headers map the name
};

#define PT_ENTRY(name) \
  { #name, reinterpret_cast < void*>(&name) }
const EntryPoint kEntryPoints[] = {
    PT_ENTRY(cuInit),
    PT_ENTRY(cuDriverGetVersion),
    PT_ENTRY(cuGetErrorName),
    PT_ENTRY(cuGetErrorString),
    PT_ENTRY(cuDeviceGetCount),
    PT_ENTRY(cuDeviceGet),
    PT_ENTRY(cuDeviceGetName),
    PT_ENTRY(cuDeviceTotalMem),
    PT_ENTRY(cuDeviceGetAttribute),
    PT_ENTRY(cuDeviceComputeCapability),
    PT_ENTRY(cuDeviceGetUuid),
    PT_ENTRY(cuDeviceGetPCIBusId),
    PT_ENTRY(cuDeviceCanAccessPeer),
    PT_ENTRY(cuDevicePrimaryCtxRetain),
    PT_ENTRY(cuDevicePrimaryCtxRelease),
    PT_ENTRY(cuDevicePrimaryCtxReset),
    PT_ENTRY(cuDevicePrimaryCtxSetFlags),
    PT_ENTRY(cuDevicePrimaryCtxGetState),
    PT_ENTRY(cuCtxCreate),
    PT_ENTRY(cuCtxDestroy),
    PT_ENTRY(cuCtxGetCurrent),
    PT_ENTRY(cuCtxSetCurrent),
    PT_ENTRY(cuCtxPushCurrent),
    PT_ENTRY(cuCtxPopCurrent),
    PT_ENTRY(cuCtxGetDevice),
    PT_ENTRY(cuCtxSynchronize),
    PT_ENTRY(cuCtxGetApiVersion),
    PT_ENTRY(cuCtxGetFlags),
    PT_ENTRY(cuCtxGetId),
    PT_ENTRY(cuCtxGetLimit),
    PT_ENTRY(cuCtxSetLimit),
    PT_ENTRY(cuCtxGetStreamPriorityRange),
    PT_ENTRY(cuModuleLoadData),
    PT_ENTRY(cuModuleLoadDataEx),
    PT_ENTRY(cuModuleLoadFatBinary),
    PT_ENTRY(cuModuleLoad),
    PT_ENTRY(cuModuleUnload),
    PT_ENTRY(cuModuleGetFunction),
    PT_ENTRY(cuModuleGetFunctionCount),
    PT_ENTRY(cuModuleGetGlobal),
    PT_ENTRY(cuModuleGetLoadingMode),
    PT_ENTRY(cuLinkCreate),
    PT_ENTRY(cuLinkAddData),
    PT_ENTRY(cuLinkAddFile),
    PT_ENTRY(cuLinkComplete),
    PT_ENTRY(cuLinkDestroy),
    PT_ENTRY(cuFuncGetName),
    PT_ENTRY(cuLibraryLoadData),
    PT_ENTRY(cuLibraryLoadFromFile),
    PT_ENTRY(cuLibraryUnload),
    PT_ENTRY(cuLibraryGetModule),
    PT_ENTRY(cuLibraryGetKernel),
    PT_ENTRY(cuLibraryGetKernelCount),
    PT_ENTRY(cuLibraryEnumerateKernels),
    PT_ENTRY(cuLibraryGetGlobal),
    PT_ENTRY(cuKernelGetLibrary),
    PT_ENTRY(cuModuleEnumerateFunctions),
    PT_ENTRY(cuFuncGetModule),
    PT_ENTRY(cuFuncIsLoaded),
    PT_ENTRY(cuFuncLoad),
    PT_ENTRY(cuKernelGetFunction),
    PT_ENTRY(cuKernelGetName),
    PT_ENTRY(cuKernelGetAttribute),
    PT_ENTRY(cuKernelSetAttribute),
    PT_ENTRY(cuFuncGetAttribute),
    PT_ENTRY(cuFuncSetAttribute),
    PT_ENTRY(cuFuncSetCacheConfig),
    PT_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    PT_ENTRY(cuLaunchKernel),
    PT_ENTRY(cuLaunchKernelEx),
    PT_ENTRY(cuLaunchCooperativeKernel),
    PT_ENTRY(cuLaunchHostFunc),
    PT_ENTRY(cuMemAlloc),
    PT_ENTRY(cuMemFree),
    PT_ENTRY(cuMemAllocAsync),
    PT_ENTRY(cuMemFreeAsync),
    PT_ENTRY(cuMemAllocHost),
    PT_ENTRY(cuMemHostAlloc),
    PT_ENTRY(cuMemFreeHost),
    PT_ENTRY(cuMemGetInfo),
    PT_ENTRY(cuMemGetAddressRange),
    PT_ENTRY(cuPointerGetAttribute),
    PT_ENTRY(cuMemcpyHtoD),
    PT_ENTRY(cuMemcpyDtoH),
    PT_ENTRY(cuMemcpyDtoD),
    PT_ENTRY(cuMemcpyHtoDAsync),
    PT_ENTRY(cuMemcpyDtoHAsync),
    PT_ENTRY(cuMemcpyDtoDAsync),
    PT_ENTRY(cuMemcpy),
    PT_ENTRY(cuMemcpyAsync),
    PT_ENTRY(cuMemsetD8),
    PT_ENTRY(cuMemsetD16),
    PT_ENTRY(cuMemsetD32),
    PT_ENTRY(cuMemsetD8Async),
    PT_ENTRY(cuMemsetD16Async),
    PT_ENTRY(cuMemsetD32Async),
    PT_ENTRY(cuMemGetAllocationGranularity),
    PT_ENTRY(cuMemAddressReserve),
    PT_ENTRY(cuMemAddressFree),
    PT_ENTRY(cuMemCreate),
    PT_ENTRY(cuMemRelease),
    PT_ENTRY(cuMemGetAllocationPropertiesFromHandle),
    PT_ENTRY(cuMemMap),
    PT_ENTRY(cuMemUnmap),
    PT_ENTRY(cuMemSetAccess),
    PT_ENTRY(cuMemRetainAllocationHandle),
    PT_ENTRY(cuTensorMapEncodeTiled),
    PT_ENTRY(cuTensorMapEncodeIm2col),
    PT_ENTRY(cuTensorMapReplaceAddress),
    PT_ENTRY(cuStreamCreate),
    PT_ENTRY(cuStreamCreateWithPriority),
    PT_ENTRY(cuStreamDestroy),
    PT_ENTRY(cuStreamSynchronize),
    PT_ENTRY(cuStreamQuery),
    PT_ENTRY(cuStreamWaitEvent),
    PT_ENTRY(cuStreamGetPriority),
    PT_ENTRY(cuStreamGetFlags),
    PT_ENTRY(cuStreamGetId),
    PT_ENTRY(cuStreamGetCtx),
    PT_ENTRY(cuStreamBeginCapture),
    PT_ENTRY(cuStreamEndCapture),
    PT_ENTRY(cuStreamIsCapturing),
    PT_ENTRY(cuGraphInstantiateWithFlags),
    PT_ENTRY(cuGraphLaunch),
    PT_ENTRY(cuGraphExecDestroy),
    PT_ENTRY(cuGraphDestroy),
    PT_ENTRY(cuEventCreate),
    PT_ENTRY(cuEventRecord),
    PT_ENTRY(cuEventRecordWithFlags),
    PT_ENTRY(cuEventQuery),
    PT_ENTRY(cuEventSynchronize),
    PT_ENTRY(cuEventElapsedTime),
    PT_ENTRY(cuEventDestroy),
    PT_ENTRY(cuGetProcAddress),
};
#undef PT_ENTRY

// Every driver function whose name cuGetProcAddress resolves to different exported functions by
// the version asked for: the CUDA versions (1000 × major + 10 × minor) that introduced its
// first, second, ... form, exported as NAME, NAME_v2, NAME_v3, NAME_v4. From the PFN_NAME_vVERSION
// typedefs of CUDA 13's cudaTypedefs.h (every name with more than one; checked against the
// exports of the toolkit's stubs/libcuda.so). A caller that asks for an older version gets the
// older signature: NCCL asks for cuCtxCreate at 11040 (the _v3 form), vLLM for
// cuMemcpyBatchAsync at 12080 (the form with failIdx).
struct VersionedName {
  std::string_view name;
  std::array<int, 4> versions;  // ascending, 0 after the last
};
constexpr VersionedName kVersionedNames[] = {
    {"cuArray3DCreate", {2000, 3020}},
    {"cuArray3DGetDescriptor", {2000, 3020}},
    {"cuArrayCreate", {2000, 3020}},
    {"cuArrayGetDescriptor", {2000, 3020}},
    {"cuCtxCreate", {2000, 3020, 11040, 12050}},
    {"cuCtxDestroy", {2000, 4000}},
    {"cuCtxGetDevice", {2000, 13000}},
    {"cuCtxPopCurrent", {2000, 4000}},
    {"cuCtxPushCurrent", {2000, 4000}},
    {"cuCtxSynchronize", {2000, 13000}},
    {"cuDeviceGetUuid", {9020, 11040}},
    {"cuDevicePrimaryCtxRelease", {7000, 11000}},
    {"cuDevicePrimaryCtxReset", {7000, 11000}},
    {"cuDevicePrimaryCtxSetFlags", {7000, 11000}},
    {"cuDeviceTotalMem", {2000, 3020}},
    {"cuEventDestroy", {2000, 4000}},
    {"cuEventElapsedTime", {2000, 12080}},
    {"cuGetProcAddress", {11030, 12000}},
    {"cuGraphAddDependencies", {10000, 12030}},
    {"cuGraphAddKernelNode", {10000, 12000}},
    {"cuGraphAddNode", {12020, 12030}},
    {"cuGraphExecKernelNodeSetParams", {10010, 12000}},
    {"cuGraphExecUpdate", {10020, 12000}},
    {"cuGraphGetEdges", {10000, 12030}},
    {"cuGraphInstantiate", {10000, 11000}},
    {"cuGraphKernelNodeGetParams", {10000, 12000}},
    {"cuGraphKernelNodeSetParams", {10000, 12000}},
    {"cuGraphNodeGetDependencies", {10000, 12030}},
    {"cuGraphNodeGetDependentNodes", {10000, 12030}},
    {"cuGraphRemoveDependencies", {10000, 12030}},
    {"cuGraphicsResourceGetMappedPointer", {3000, 3020}},
    {"cuGraphicsResourceSetMapFlags", {3000, 6050}},
    {"cuIpcOpenMemHandle", {4010, 11000}},
    {"cuLinkAddData", {5050, 6050}},
    {"cuLinkAddFile", {5050, 6050}},
    {"cuLinkCreate", {5050, 6050}},
    {"cuMemAdvise", {8000, 12020}},
    {"cuMemAlloc", {2000, 3020}},
    {"cuMemAllocHost", {2000, 3020}},
    {"cuMemAllocPitch", {2000, 3020}},
    {"cuMemFree", {2000, 3020}},
    {"cuMemGetAddressRange", {2000, 3020}},
    {"cuMemGetInfo", {2000, 3020}},
    {"cuMemHostGetDevicePointer", {2020, 3020}},
    {"cuMemHostRegister", {4000, 6050}},
    {"cuMemPrefetchAsync", {8000, 12020}},
    {"cuMemcpy2D", {2000, 3020}},
    {"cuMemcpy2DAsync", {2000, 3020}},
    {"cuMemcpy2DUnaligned", {2000, 3020}},
    {"cuMemcpy3D", {2000, 3020}},
    {"cuMemcpy3DAsync", {2000, 3020}},
    {"cuMemcpy3DBatchAsync", {12080, 13000}},
    {"cuMemcpyAtoA", {2000, 3020}},
    {"cuMemcpyAtoD", {2000, 3020}},
    {"cuMemcpyAtoH", {2000, 3020}},
    {"cuMemcpyAtoHAsync", {2000, 3020}},
    {"cuMemcpyBatchAsync", {12080, 13000}},
    {"cuMemcpyDtoA", {2000, 3020}},
    {"cuMemcpyDtoD", {2000, 3020}},
    {"cuMemcpyDtoDAsync", {3000, 3020}},
    {"cuMemcpyDtoH", {2000, 3020}},
    {"cuMemcpyDtoHAsync", {2000, 3020}},
    {"cuMemcpyHtoA", {2000, 3020}},
    {"cuMemcpyHtoAAsync", {2000, 3020}},
    {"cuMemcpyHtoD", {2000, 3020}},
    {"cuMemcpyHtoDAsync", {2000, 3020}},
    {"cuMemsetD16", {2000, 3020}},
    {"cuMemsetD2D16", {2000, 3020}},
    {"cuMemsetD2D32", {2000, 3020}},
    {"cuMemsetD2D8", {2000, 3020}},
    {"cuMemsetD32", {2000, 3020}},
    {"cuMemsetD8", {2000, 3020}},
    {"cuModuleGetGlobal", {2000, 3020}},
    {"cuStreamBatchMemOp", {8000, 11070}},
    {"cuStreamBeginCapture", {10000, 10010}},
    {"cuStreamDestroy", {2000, 4000}},
    {"cuStreamGetCaptureInfo", {10010, 11030, 12030}},
    {"cuStreamGetCtx", {9020, 12050}},
    {"cuStreamUpdateCaptureDependencies", {11030, 12030}},
    {"cuStreamWaitValue32", {8000, 11070}},
    {"cuStreamWaitValue64", {9000, 11070}},
    {"cuStreamWriteValue32", {8000, 11070}},
    {"cuStreamWriteValue64", {9000, 11070}},
    {"cuTexRefGetAddress", {2000, 3020}},
    {"cuTexRefSetAddress", {2000, 3020}},
    {"cuTexRefSetAddress2D", {2020, 3020, 4010}},
};

// The exported name for `name` asked for at `version`; empty when the name's first form is
// newer than `version`; `name` itself when the name has one form only. CUDA 12 gave
// cuGraphInstantiate cuGraphInstantiateWithFlags' arguments (cuda.h maps the name to it), so a
// CUDA 12 or later caller gets that function.
std::string versioned_symbol(std::string_view name, int version) {
  if (name == "cuGraphInstantiate" && version >= 12000) return "cuGraphInstantiateWithFlags";
  for (const auto& entry : kVersionedNames) {
    if (entry.name != name) continue;
    int chosen = -1;
    int forms = 0;
    for (int v : entry.versions) {
      if (v == 0) break;
      if (v <= version) chosen = forms;
      ++forms;
    }
    if (chosen < 0) return {};
    return chosen == 0 ? std::string(name) : std::string(name) + "_v" + std::to_string(chosen + 1);
  }
  return std::string(name);
}

// Another exported function of this library by its exact name (a generated stub for driver
// functions not written here), or nullptr.
void* own_symbol(const char* name) {
  static void* self = [] {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&cuInit), &info) == 0 || info.dli_fname == nullptr) {
      return static_cast<void*>(nullptr);
    }
    return ::dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return self == nullptr ? nullptr : ::dlsym(self, name);
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT CUresult cuGetProcAddress(const char* symbol, void** function, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::string_view name(symbol);
  const auto found = [&](void* f) {
    *function = f;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  };
  const std::string exported = detail::versioned_symbol(name, version);
  if (exported.empty()) {  // the caller's CUDA predates the function
    *function = nullptr;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  // Per-thread default stream: the form's *_ptsz (stream-taking) or *_ptds (synchronous copy)
  // variant when this library has one, as the driver names them (cuLaunchKernel →
  // cuLaunchKernel_ptsz, cuMemcpyHtoD at 3020 → cuMemcpyHtoD_v2_ptds, cuStreamGetCtx at 12000 →
  // cuStreamGetCtx_ptsz); forms without one get the form below.
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0 && name.rfind("cu", 0) == 0) {
    for (const char* suffix : {"_ptsz", "_ptds"}) {
      if (void* f = detail::own_symbol((exported + suffix).c_str()); f != nullptr) return found(f);
    }
  }
  if (exported != name) {  // an older or newer form of a renamed function
    if (void* f = detail::own_symbol(exported.c_str()); f != nullptr) return found(f);
  }
  for (const auto& entry : detail::kEntryPoints) {
    if (name == entry.name) return found(entry.function);
  }
  // Not written here: the exported function by that name, which is a stub reporting the call.
  if (name.rfind("cu", 0) == 0) {
    if (void* f = detail::own_symbol(symbol); f != nullptr) return found(f);
  }
  *function = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

PT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function,
                                                       unsigned int version,
                                                       unsigned long long flags,
                                                       cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || function == nullptr) {
    return detail::fail(cudaErrorInvalidValue);
  }
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SUCCESS;
  cuGetProcAddress(symbol, function, static_cast<int>(version), flags, &result);
  if (status != nullptr) *status = static_cast<cudaDriverEntryPointQueryResult>(result);
  return cudaSuccess;
}

namespace {
// The CUDA version cudaGetDriverEntryPoint asks for: the runtime's (cudaRuntimeGetVersion), so a
// program on libcudart.so.12 gets CUDA 12.8's forms (cuMemcpyBatchAsync with failIdx).
int runtime_version() { return detail::cudart_abi() == 12 ? 12080 : 13000; }
}  // namespace

PT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** function,
                                              unsigned long long flags,
                                              cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, function, runtime_version(), flags, status);
}

// --default-stream per-thread programs call these: cudaEnableDefault then means the per-thread
// forms of the stream-taking driver functions.
PT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** function, unsigned int version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  if (flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
  return cudaGetDriverEntryPointByVersion(symbol, function, version, flags, status);
}

PT_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** function,
                                                   unsigned long long flags,
                                                   cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion_ptsz(symbol, function, runtime_version(), flags, status);
}

// ---- the first versions of renamed functions, where their signature is unchanged ---------------

namespace {
CUresult get_uuid(CUuuid* uuid, CUdevice device) { return cuDeviceGetUuid(uuid, device); }
CUresult elapsed(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime(ms, start, end);
}
CUresult proc_address(const char* symbol, void** function, int version, cuuint64_t flags) {
  return cuGetProcAddress(symbol, function, version, flags, nullptr);
}
}  // namespace

#undef cuDeviceGetUuid
#undef cuEventElapsedTime
#undef cuGetProcAddress
#undef cuLinkCreate
#undef cuLinkAddData
#undef cuLinkAddFile
PT_EXPORT CUresult cuLinkCreate(unsigned int count, CUjit_option* options, void** values,
                                CUlinkState* out) {
  return cuLinkCreate_v2(count, options, values, out);
}
PT_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                 const char* name, unsigned int count, CUjit_option* options,
                                 void** values) {
  return cuLinkAddData_v2(state, type, data, size, name, count, options, values);
}
PT_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                                 unsigned int count, CUjit_option* options, void** values) {
  return cuLinkAddFile_v2(state, type, path, count, options, values);
}
PT_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) { return get_uuid(uuid, device); }
PT_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return elapsed(ms, start, end);
}
PT_EXPORT CUresult cuGetProcAddress(const char* symbol, void** function, int version,
                                    cuuint64_t flags) {
  return proc_address(symbol, function, version, flags);
}

// CUDA 10's and 11's forms of graph instantiation (the headers now map the name to
// cuGraphInstantiateWithFlags): no error node and an empty log, as for a graph that instantiates.
namespace {
CUresult instantiate_with_log(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node, char* log,
                              size_t log_size) {
  if (error_node != nullptr) *error_node = nullptr;
  if (log != nullptr && log_size > 0) log[0] = '\0';
  return cuGraphInstantiateWithFlags(exec, graph, 0);
}
}  // namespace
#undef cuGraphInstantiate
PT_EXPORT CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode,
                                      char* logBuffer, size_t bufferSize) {
  return instantiate_with_log(exec, graph, errorNode, logBuffer, bufferSize);
}
PT_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode,
                                         char* logBuffer, size_t bufferSize) {
  return instantiate_with_log(exec, graph, errorNode, logBuffer, bufferSize);
}

// ---- CUDA 12.5 and 13 context queries that name the context ------------------------------------

PT_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int d = detail::context_device(ctx == nullptr ? detail::current_context() : ctx);
  if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = d;
  return CUDA_SUCCESS;
}

// Waits for the work of `ctx` (NULL: the current context) without changing the current one.
PT_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (ctx == nullptr || ctx == detail::current_context()) return cuCtxSynchronize();
  if (const CUresult pushed = cuCtxPushCurrent(ctx); pushed != CUDA_SUCCESS) return pushed;
  const CUresult result = cuCtxSynchronize();
  cuCtxPopCurrent(nullptr);
  return result;
}

// The stream's context, and its green context if cuGreenCtxStreamCreate made it
// (cuda_driver_green.cc).
PT_EXPORT CUresult cuStreamGetCtx_v2(CUstream stream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  if (pCtx == nullptr || pGreenCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult status = cuStreamGetCtx(stream, pCtx);
  if (status == CUDA_SUCCESS) cuStreamGetGreenCtx(stream, pGreenCtx);
  return status;
}
PT_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream stream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  if (pCtx == nullptr || pGreenCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult status = cuStreamGetCtx_ptsz(stream, pCtx);
  if (status == CUDA_SUCCESS) cuStreamGetGreenCtx(stream, pGreenCtx);
  return status;
}

PT_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  ErrorScope scope;
  return to_driver(
      cudaThreadExchangeStreamCaptureMode(reinterpret_cast<cudaStreamCaptureMode*>(mode)));
}

// No profiler runs under the emulator (CUPTI answers "no profiler"); the range markers succeed,
// as they do on a GPU when no profiler is attached.
PT_EXPORT CUresult cuProfilerStart() { return CUDA_SUCCESS; }
PT_EXPORT CUresult cuProfilerStop() { return CUDA_SUCCESS; }

// ---- the runtime's library API (cudaLibrary*): the same libraries ------------------------------

PT_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                          enum cudaJitOption*, void**, unsigned int,
                                          enum cudaLibraryOption*, void**, unsigned int) {
  const CUresult r = cuLibraryLoadData(reinterpret_cast<CUlibrary*>(library), code, nullptr,
                                       nullptr, 0, nullptr, nullptr, 0);
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(static_cast<cudaError_t>(r));
}

PT_EXPORT cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* path,
                                              enum cudaJitOption*, void**, unsigned int,
                                              enum cudaLibraryOption*, void**, unsigned int) {
  const CUresult r = cuLibraryLoadFromFile(reinterpret_cast<CUlibrary*>(library), path, nullptr,
                                           nullptr, 0, nullptr, nullptr, 0);
  if (r == CUDA_ERROR_FILE_NOT_FOUND) return detail::fail(cudaErrorFileNotFound);
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(static_cast<cudaError_t>(r));
}

PT_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  const CUresult r = cuLibraryUnload(reinterpret_cast<CUlibrary>(library));
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(cudaErrorInvalidResourceHandle);
}

PT_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library,
                                           const char* name) {
  const CUresult r = cuLibraryGetKernel(reinterpret_cast<CUkernel*>(kernel),
                                        reinterpret_cast<CUlibrary>(library), name);
  if (r == CUDA_ERROR_NOT_FOUND) return detail::fail(cudaErrorSymbolNotFound);
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(cudaErrorInvalidResourceHandle);
}

PT_EXPORT cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t* kernels, unsigned int numKernels,
                                                  cudaLibrary_t lib) {
  const CUresult r = cuLibraryEnumerateKernels(reinterpret_cast<CUkernel*>(kernels), numKernels,
                                               reinterpret_cast<CUlibrary>(lib));
  if (r == CUDA_ERROR_INVALID_VALUE) return detail::fail(cudaErrorInvalidValue);
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(cudaErrorInvalidResourceHandle);
}

PT_EXPORT cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                           const char* name) {
  const CUresult r = cuLibraryGetGlobal(reinterpret_cast<CUdeviceptr*>(dptr), bytes,
                                        reinterpret_cast<CUlibrary>(library), name);
  if (r == CUDA_ERROR_NOT_FOUND) return detail::fail(cudaErrorSymbolNotFound);
  if (r == CUDA_ERROR_INVALID_VALUE) return detail::fail(cudaErrorInvalidValue);
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(cudaErrorInvalidResourceHandle);
}

PT_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t library) {
  const CUresult r = cuLibraryGetKernelCount(count, reinterpret_cast<CUlibrary>(library));
  return r == CUDA_SUCCESS ? cudaSuccess : detail::fail(cudaErrorInvalidResourceHandle);
}
