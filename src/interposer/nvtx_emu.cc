// NVTX ranges and marks as trace annotations. NVTX v3 is header-only: its first call in a process
// loads the library named by NVTX_INJECTION64_PATH (the launcher sets it to the interposer) and
// calls its InitializeInjectionNvtx2, which fills the function table with the handlers below.
// Records (docs/emulation-trace.md): `nvtx` with `kind` push/pop (nested per thread), start/end
// (process-wide ids), mark; `name` (ASCII or wide messages; registered strings by their text),
// `domain` when not the default domain.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cwchar>
#include <mutex>
#include <string>
#include <unordered_map>

#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct NvtxState {
  std::mutex mutex;
  std::unordered_map<const void*, std::string> names;  // domains and registered strings
  std::atomic<std::uint64_t> next_range{1};
};

NvtxState& nvtx() {
  static NvtxState* s = new NvtxState;  // never destroyed
  return *s;
}

thread_local int t_depth = 0;  // push/pop nesting of the calling thread

std::string narrow(const wchar_t* text) {
  std::string out;
  for (; text != nullptr && *text != 0; ++text) {
    out.push_back(*text < 128 ? static_cast<char>(*text) : '?');
  }
  return out;
}

std::string registered(const void* handle) {
  std::lock_guard<std::mutex> lock(nvtx().mutex);
  const auto it = nvtx().names.find(handle);
  return it != nvtx().names.end() ? it->second : std::string();
}

std::string message(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii != nullptr ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return registered(a->message.registered);
    default:
      return {};
  }
}

void record(std::string_view kind, const std::string& name, nvtxDomainHandle_t domain,
            std::int64_t depth, std::uint64_t id) {
  auto r = begin_record(trace_schema::op::kNvtx, now_ns(), current_device());
  r.field(trace_schema::field::kKind, kind);
  if (kind != "pop" && kind != "end") r.field(trace_schema::field::kName, name);
  if (domain != nullptr) r.field("domain", registered(domain));
  if (depth >= 0) r.field("depth", depth);
  if (id != 0) r.field(trace_schema::field::kId, static_cast<std::int64_t>(id));
  end_record(r);
}

int push(nvtxDomainHandle_t domain, const std::string& name) {
  record("push", name, domain, t_depth, 0);
  return t_depth++;
}

int pop(nvtxDomainHandle_t domain) {
  if (t_depth == 0) return -1;  // as NVTX: popping an empty stack is an error, nothing recorded
  --t_depth;
  record("pop", {}, domain, t_depth, 0);
  return t_depth;
}

nvtxRangeId_t start(nvtxDomainHandle_t domain, const std::string& name) {
  const std::uint64_t id = nvtx().next_range.fetch_add(1);
  record("start", name, domain, -1, id);
  return id;
}

void end(nvtxDomainHandle_t domain, nvtxRangeId_t id) { record("end", {}, domain, -1, id); }

// Core module (nvtxRangePushA, ...).
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  record("mark", message(a), nullptr, -1, 0);
}
void NVTX_API mark_a(const char* m) { record("mark", m != nullptr ? m : "", nullptr, -1, 0); }
void NVTX_API mark_w(const wchar_t* m) { record("mark", narrow(m), nullptr, -1, 0); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  return start(nullptr, message(a));
}
nvtxRangeId_t NVTX_API start_a(const char* m) { return start(nullptr, m != nullptr ? m : ""); }
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) { return start(nullptr, narrow(m)); }
void NVTX_API end_id(nvtxRangeId_t id) { end(nullptr, id); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return push(nullptr, message(a)); }
int NVTX_API push_a(const char* m) { return push(nullptr, m != nullptr ? m : ""); }
int NVTX_API push_w(const wchar_t* m) { return push(nullptr, narrow(m)); }
int NVTX_API pop_core() { return pop(nullptr); }
void NVTX_API ignore_name_a(std::uint32_t, const char*) {}
void NVTX_API ignore_name_w(std::uint32_t, const wchar_t*) {}

// Core2 module (domains: nvtx3::scoped_range<D>, nvtxDomainRangePushEx, ...).
void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  record("mark", message(a), d, -1, 0);
}
nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(d, message(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(d, id); }
int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(d, message(a));
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(d); }

// Domains and registered strings are heap cells whose address is the handle; their text is kept.
const void* remember(std::string text) {
  auto* cell = new char;  // never freed: a handle stays unique for the process
  std::lock_guard<std::mutex> lock(nvtx().mutex);
  nvtx().names[cell] = std::move(text);
  return cell;
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return static_cast<nvtxDomainHandle_t>(const_cast<void*>(remember(name != nullptr ? name : "")));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return static_cast<nvtxDomainHandle_t>(const_cast<void*>(remember(narrow(name))));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t, const char* text) {
  return static_cast<nvtxStringHandle_t>(const_cast<void*>(remember(text != nullptr ? text : "")));
}
nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t, const wchar_t* text) {
  return static_cast<nvtxStringHandle_t>(const_cast<void*>(remember(narrow(text))));
}
void NVTX_API domain_name_category_a(nvtxDomainHandle_t, std::uint32_t, const char*) {}
void NVTX_API domain_name_category_w(nvtxDomainHandle_t, std::uint32_t, const wchar_t*) {}
void NVTX_API initialize(const void*) {}

template <typename F>
void put(NvtxFunctionTable table, unsigned size, unsigned id, F* function) {
  if (id < size && table[id] != nullptr)
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  namespace d = powertrain::emu::detail;
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) != 0 &&
      table != nullptr) {
    d::put(table, size, NVTX_CBID_CORE_MarkEx, &d::mark_ex);
    d::put(table, size, NVTX_CBID_CORE_MarkA, &d::mark_a);
    d::put(table, size, NVTX_CBID_CORE_MarkW, &d::mark_w);
    d::put(table, size, NVTX_CBID_CORE_RangeStartEx, &d::start_ex);
    d::put(table, size, NVTX_CBID_CORE_RangeStartA, &d::start_a);
    d::put(table, size, NVTX_CBID_CORE_RangeStartW, &d::start_w);
    d::put(table, size, NVTX_CBID_CORE_RangeEnd, &d::end_id);
    d::put(table, size, NVTX_CBID_CORE_RangePushEx, &d::push_ex);
    d::put(table, size, NVTX_CBID_CORE_RangePushA, &d::push_a);
    d::put(table, size, NVTX_CBID_CORE_RangePushW, &d::push_w);
    d::put(table, size, NVTX_CBID_CORE_RangePop, &d::pop_core);
    d::put(table, size, NVTX_CBID_CORE_NameCategoryA, &d::ignore_name_a);
    d::put(table, size, NVTX_CBID_CORE_NameCategoryW, &d::ignore_name_w);
  }
  table = nullptr;
  size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) != 0 &&
      table != nullptr) {
    d::put(table, size, NVTX_CBID_CORE2_DomainMarkEx, &d::domain_mark);
    d::put(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, &d::domain_start);
    d::put(table, size, NVTX_CBID_CORE2_DomainRangeEnd, &d::domain_end);
    d::put(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &d::domain_push);
    d::put(table, size, NVTX_CBID_CORE2_DomainRangePop, &d::domain_pop);
    d::put(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &d::domain_name_category_a);
    d::put(table, size, NVTX_CBID_CORE2_DomainNameCategoryW, &d::domain_name_category_w);
    d::put(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &d::register_a);
    d::put(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, &d::register_w);
    d::put(table, size, NVTX_CBID_CORE2_DomainCreateA, &d::domain_create_a);
    d::put(table, size, NVTX_CBID_CORE2_DomainCreateW, &d::domain_create_w);
    d::put(table, size, NVTX_CBID_CORE2_DomainDestroy, &d::domain_destroy);
    d::put(table, size, NVTX_CBID_CORE2_Initialize, &d::initialize);
  }
  return 1;
}
