// Formatting of the interposer's binary trace records as JSON lines, with the names of
// trace_schema.h. Header-only so that the reader's tests can format every record kind with the
// writer's own code (tests/emulate/trace_schema_test.cc). Keys are compile-time literals
// (`,"stream":`): formatting is most of an intercepted call's cost.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "interposer/emulator.h"
#include "interposer/trace_log.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {

namespace format_detail {

constexpr std::size_t length(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  return n;
}

// `,"key":` for a schema field, built once at compile time.
template <const char* Key>
struct KeyLiteral {
  static constexpr std::size_t kSize = length(Key) + 4;
  static constexpr std::array<char, kSize> kText = [] {
    std::array<char, kSize> text{};
    text[0] = ',';
    text[1] = '"';
    for (std::size_t i = 0; i + 4 < kSize; ++i) text[i + 2] = Key[i];
    text[kSize - 2] = '"';
    text[kSize - 1] = ':';
    return text;
  }();
};

inline void put_int(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

// Appends a string literal without strlen.
template <std::size_t N>
void put_literal(std::string& out, const char (&text)[N]) {
  out.append(text, N - 1);
}

template <const char* Key>
void put_key(std::string& out) {
  out.append(KeyLiteral<Key>::kText.data(), KeyLiteral<Key>::kSize);
}

template <const char* Key>
void put_field(std::string& out, std::int64_t value) {
  put_key<Key>(out);
  put_int(out, value);
}

template <const char* Key>
void put_bool(std::string& out, bool value) {
  put_key<Key>(out);
  if (value) {
    put_literal(out, "true");
  } else {
    put_literal(out, "false");
  }
}

template <const char* Key>
void put_name(std::string& out, std::string_view value) {
  put_key<Key>(out);
  out += '"';
  out += value;  // schema names and exported API names need no escaping
  out += '"';
}

template <const char* Key>
void put_triple(std::string& out, const std::uint32_t* values) {
  put_key<Key>(out);
  out += '[';
  put_int(out, values[0]);
  out += ',';
  put_int(out, values[1]);
  out += ',';
  put_int(out, values[2]);
  out += ']';
}

// t, dt, tid, dev and graph: the fields every formatted record starts with.
inline void put_common(std::string& out, const Record& r) {
  namespace field = trace_schema::field;
  put_field<field::kT>(out, r.t);
  put_field<field::kDt>(out, r.dt);
  put_field<field::kTid>(out, r.tid);
  put_field<field::kDev>(out, r.dev);
  if (r.graph != 0) put_field<field::kGraph>(out, r.graph);
}

inline void put_stream_corr(std::string& out, std::int64_t stream, std::int64_t corr) {
  put_field<trace_schema::field::kStream>(out, stream);
  put_field<trace_schema::field::kCorr>(out, corr);
}

}  // namespace format_detail

/// The trace's `op` for a binary record; "" for kText and kWork (their text names it).
inline const char* op_name(Op op) {
  namespace names = trace_schema::op;
  switch (op) {
    case Op::kText:
    case Op::kWork:
      return "";
    case Op::kKernel:
      return names::kKernel;
    case Op::kMemcpy:
      return names::kMemcpy;
    case Op::kMemset:
      return names::kMemset;
    case Op::kMalloc:
      return names::kMalloc;
    case Op::kFree:
      return names::kFree;
    case Op::kStreamCreate:
      return names::kStreamCreate;
    case Op::kStreamDestroy:
      return names::kStreamDestroy;
    case Op::kEventCreate:
      return names::kEventCreate;
    case Op::kEventDestroy:
      return names::kEventDestroy;
    case Op::kEventRecord:
      return names::kEventRecord;
    case Op::kStreamWaitEvent:
      return names::kStreamWaitEvent;
    case Op::kStreamSync:
      return names::kStreamSync;
    case Op::kEventSync:
      return names::kEventSync;
    case Op::kDeviceSync:
      return names::kDeviceSync;
    case Op::kSetDevice:
      return names::kSetDevice;
    case Op::kHostFunc:
      return names::kHostFunc;
  }
  return "unknown";
}

static_assert(std::size(trace_schema::kCopyKinds) == static_cast<std::size_t>(CopyKind::kPtoP) + 1);
static_assert(std::size(trace_schema::kMemoryKinds) ==
              static_cast<std::size_t>(AllocKind::kAsync) + 1);

inline std::string_view copy_kind_name(CopyKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(trace_schema::kCopyKinds) ? trace_schema::kCopyKinds[index] : "?";
}

inline std::string_view alloc_kind_name(AllocKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(trace_schema::kMemoryKinds) ? trace_schema::kMemoryKinds[index] : "?";
}

/// Appends one record as a JSON line (newline included). `kernel_name(out, index)` appends the
/// JSON string naming kernel `index` (the interposer passes append_kernel_json_name).
template <typename KernelName>
void format_record(const Record& r, std::string& out, KernelName&& kernel_name) {
  namespace field = trace_schema::field;
  using namespace format_detail;
  if (r.op == Op::kText) {
    out += r.text;
    out += '\n';
    return;
  }
  if (r.op == Op::kWork) {
    out += '{';
    out += r.text;
    put_common(out, r);
    put_stream_corr(out, r.a[0], r.a[1]);
    put_literal(out, "}\n");
    return;
  }
  put_literal(out, "{\"op\":\"");
  out += op_name(r.op);
  out += '"';
  put_common(out, r);
  switch (r.op) {
    case Op::kKernel:
      put_stream_corr(out, r.a[0], r.a[1]);
      put_key<field::kName>(out);
      kernel_name(out, r.a[2]);
      put_triple<field::kGrid>(out, r.g);
      put_triple<field::kBlock>(out, r.g + 3);
      put_field<field::kShmem>(out, r.a[3]);
      out += r.text;  // a library kernel's ,"flops":..,"bytes":.. (append_sized_kernel), or ""
      break;
    case Op::kMemcpy:
      put_stream_corr(out, r.a[0], r.a[1]);
      put_name<field::kKind>(out, copy_kind_name(static_cast<CopyKind>(r.sub)));
      put_field<field::kBytes>(out, r.a[2]);
      put_bool<field::kAsync>(out, r.flag);
      break;
    case Op::kMemset:
      put_stream_corr(out, r.a[0], r.a[1]);
      put_field<field::kBytes>(out, r.a[2]);
      put_bool<field::kAsync>(out, r.flag);
      break;
    case Op::kMalloc:
    case Op::kFree:
      put_field<field::kPtr>(out, r.a[0]);
      put_field<field::kBytes>(out, r.a[1]);
      if (r.op == Op::kMalloc) put_bool<field::kOk>(out, r.flag);
      put_name<field::kKind>(out, alloc_kind_name(static_cast<AllocKind>(r.sub)));
      put_field<field::kUsed>(out, r.a[2]);
      if (r.a[3] != kInvalidStream) put_stream_corr(out, r.a[3], r.a[4]);
      break;
    case Op::kStreamCreate:
      put_field<field::kStream>(out, r.a[0]);
      put_field<field::kFlags>(out, r.a[1]);
      put_field<field::kPriority>(out, r.a[2]);
      break;
    case Op::kStreamDestroy:
    case Op::kStreamSync:
      put_field<field::kStream>(out, r.a[0]);
      break;
    case Op::kEventCreate:
      put_field<field::kEvent>(out, r.a[0]);
      put_field<field::kFlags>(out, r.a[1]);
      break;
    case Op::kEventDestroy:
    case Op::kEventSync:
      put_field<field::kEvent>(out, r.a[0]);
      break;
    case Op::kEventRecord:
    case Op::kStreamWaitEvent:
      put_field<field::kStream>(out, r.a[0]);
      put_field<field::kEvent>(out, r.a[1]);
      put_field<field::kCorr>(out, r.a[2]);
      break;
    case Op::kHostFunc:
      put_stream_corr(out, r.a[0], r.a[1]);
      break;
    case Op::kDeviceSync:
    case Op::kSetDevice:
    case Op::kText:
    case Op::kWork:
      break;
  }
  if (r.api != nullptr) put_name<field::kApi>(out, r.api);
  put_literal(out, "}\n");
}

}  // namespace powertrain::emu::detail
