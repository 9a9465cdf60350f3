// The Kineto reader against an independent reference reading, event by event and field by field,
// on the real traces in ../shared/data/traces and on every generated shape
// (tests/support/kineto_shapes.h). The reference shares no code with the reader: nlohmann/json's
// SAX parser (which hands float tokens over as their original text), its own gunzip (zlib) and
// ustar walk, exact decimal µs → ns arithmetic, and the format's rules written out again from
// docs/trace.md: X events in (start, longer first, file order) order with baseTimeNanoseconds
// added, exact copies dropped, correlation from args or else from an ac2g flow at the event's own
// (pid, tid, ts), string pids/tids by their text, INVALID runtime calls without usable timing
// dropped. It guards the reader's speed work (simdjson used in place, skipped args, windows): a
// faster walk must still read the same fields.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../support/kineto_shapes.h"
#include "../support/synthetic_trace.h"
#include "trace/kineto_reader.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

// ---- the reference reading ----

struct Token {
  enum Type { kNumber, kString, kOther } type = kOther;
  std::string text;  // a number's original text, a string's unescaped contents
};

struct RawEvent {
  std::map<std::string, Token> fields;  // scalar fields of the event object
  std::map<std::string, Token> args;    // scalar fields of its args object
};

struct RawTrace {
  std::vector<RawEvent> events;  // the objects of traceEvents, in file order
  std::optional<Token> base_time;
  std::optional<Token> rank;
  std::optional<Token> world_size;
};

// Streams the document and keeps only what the comparison needs: depth 1 is the root object,
// 2 traceEvents (or distributedInfo), 3 an event, 4 its args.
class Collector : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Collector(RawTrace* out) : out_(out) {}

  bool null() override { return scalar(Token{}); }
  bool boolean(bool) override { return scalar(Token{}); }
  bool number_integer(number_integer_t v) override {
    return scalar(Token{Token::kNumber, std::to_string(v)});
  }
  bool number_unsigned(number_unsigned_t v) override {
    return scalar(Token{Token::kNumber, std::to_string(v)});
  }
  bool number_float(number_float_t, const string_t& text) override {
    return scalar(Token{Token::kNumber, text});
  }
  bool string(string_t& v) override { return scalar(Token{Token::kString, v}); }
  bool binary(binary_t&) override { return scalar(Token{}); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) override { return open('{'); }
  bool start_array(std::size_t) override { return open('['); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t at, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error = "byte " + std::to_string(at) + ": " + e.what();
    return false;
  }

  std::string error;

 private:
  struct Frame {
    char bracket;
    std::string key;  // the key this container was under
  };
  bool in_events(std::size_t depth) const {
    return stack_.size() >= 2 && stack_[1].bracket == '[' && stack_[1].key == "traceEvents" &&
           stack_.size() == depth;
  }
  bool open(char bracket) {
    const std::string under = stack_.size() >= 1 && stack_.back().bracket == '{' ? key_ : "";
    stack_.push_back(Frame{bracket, under});
    if (bracket == '{' && in_events(3)) out_->events.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  bool scalar(Token t) {
    if (stack_.size() == 1) {
      if (key_ == "baseTimeNanoseconds") out_->base_time = t;
    } else if (stack_.size() == 2 && stack_[1].bracket == '{' &&
               stack_[1].key == "distributedInfo") {
      if (key_ == "rank") out_->rank = t;
      if (key_ == "world_size") out_->world_size = t;
    } else if (in_events(3) && stack_[2].bracket == '{') {
      out_->events.back().fields[key_] = std::move(t);
    } else if (in_events(4) && stack_[2].bracket == '{' && stack_[3].bracket == '{' &&
               stack_[3].key == "args") {
      out_->events.back().args[key_] = std::move(t);
    }
    return true;
  }

  RawTrace* out_;
  std::vector<Frame> stack_;
  std::string key_;
};

// 128 bits, so a 64-bit overflow is seen before it happens (a GCC extension: `__extension__`
// keeps -Wpedantic quiet).
__extension__ typedef __int128 Wide;

// Exact decimal text × 10^scale, rounded half away from zero; nullopt when not a number or out of
// int64 range. "1.5e3", "-12.0005", "17" all work; no binary floating point.
std::optional<std::int64_t> decimal_scaled(std::string_view text, int scale) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  std::string digits;
  int point = -1;  // digits before the decimal point
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == '.' && point < 0) {
      point = static_cast<int>(digits.size());
    } else {
      break;
    }
  }
  if (digits.empty()) return std::nullopt;
  if (point < 0) point = static_cast<int>(digits.size());
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) exp_negative = text[i++] == '-';
    if (i == text.size()) return std::nullopt;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      exponent = std::min(exponent * 10 + (text[i] - '0'), 10000);
    }
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;
  const int integer_digits = point + exponent + scale;  // digits left of the (new) point
  Wide value = 0;
  for (int d = 0; d < integer_digits; ++d) {
    const int digit = d < static_cast<int>(digits.size()) ? digits[d] - '0' : 0;
    value = value * 10 + digit;
    if (value > (static_cast<Wide>(1) << 64)) return std::nullopt;
  }
  const bool round_up = integer_digits >= 0 && integer_digits < static_cast<int>(digits.size()) &&
                        digits[integer_digits] >= '5';
  if (round_up) ++value;
  if (negative) value = -value;
  if (value > INT64_MAX || value < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// A number, or a string holding one.
std::optional<std::int64_t> number_of(const Token* t, int scale) {
  if (t == nullptr || t->type == Token::kOther) return std::nullopt;
  std::string_view text = t->text;
  if (t->type == Token::kString) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  }
  return decimal_scaled(text, scale);
}

const Token* find(const std::map<std::string, Token>& m, const char* key) {
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

// A pid or tid: its integer, or its text when it is a string that holds no number.
struct ThreadId {
  std::int64_t number = 0;
  std::string text;
  bool operator==(const ThreadId&) const = default;
  auto operator<=>(const ThreadId&) const = default;
};

ThreadId thread_of(const Token* t) {
  if (t == nullptr) return {};
  if (const auto n = number_of(t, 0)) return ThreadId{*n, ""};
  if (t->type == Token::kString) return ThreadId{0, t->text};
  return {};
}

struct Expected {
  EventKind kind = EventKind::kOther;
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  ThreadId pid, tid;
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  std::int64_t cuda_event = -1;
  SyncKind sync = SyncKind::kNone;
  std::int64_t wait_on_stream = -1;
  std::int64_t wait_on_event_correlation = -1;
  bool nccl = false;
  std::string collective;  // "Collective name" in lower case, when the args have one
  bool has_collective = false;
  bool operator==(const Expected&) const = default;
};

EventKind kind_of_category(const Token* cat) {
  if (cat == nullptr || cat->type != Token::kString) return EventKind::kOther;
  static const std::map<std::string, EventKind, std::less<>> kinds = {
      {"cpu_op", EventKind::kCpuOp},
      {"Operator", EventKind::kCpuOp},
      {"user_annotation", EventKind::kUserAnnotation},
      {"python_function", EventKind::kPythonFunction},
      {"cuda_runtime", EventKind::kCudaRuntime},
      {"Runtime", EventKind::kCudaRuntime},
      {"cuda_driver", EventKind::kCudaDriver},
      {"kernel", EventKind::kKernel},
      {"Kernel", EventKind::kKernel},
      {"gpu_memcpy", EventKind::kGpuMemcpy},
      {"Memcpy", EventKind::kGpuMemcpy},
      {"gpu_memset", EventKind::kGpuMemset},
      {"Memset", EventKind::kGpuMemset},
      {"gpu_user_annotation", EventKind::kGpuUserAnnotation},
      {"cuda_sync", EventKind::kCudaSync},
  };
  const auto it = kinds.find(cat->text);
  return it == kinds.end() ? EventKind::kOther : it->second;
}

bool needs_correlation(EventKind k) {
  return is_gpu_work(k) || k == EventKind::kCudaRuntime || k == EventKind::kCudaDriver ||
         k == EventKind::kCudaSync;
}

SyncKind sync_of_text(std::string_view text) {
  if (text == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
  if (text == "Event Sync") return SyncKind::kEventSync;
  if (text == "Stream Sync") return SyncKind::kStreamSync;
  if (text == "Context Sync") return SyncKind::kContextSync;
  return SyncKind::kNone;
}

SyncKind sync_of_call(std::string_view name) {
  for (const char* api : {"cuda", "cu", "hip"}) {
    const std::string a(api);
    if (name == a + "StreamWaitEvent") return SyncKind::kStreamWaitEvent;
    if (name == a + "StreamSynchronize") return SyncKind::kStreamSync;
    if (name == a + "EventSynchronize") return SyncKind::kEventSync;
  }
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize" ||
      name == "hipDeviceSynchronize") {
    return SyncKind::kContextSync;
  }
  return SyncKind::kNone;
}

std::string lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

struct Reference {
  std::vector<Expected> events;
  std::vector<std::int64_t> step_starts_ns;
  std::optional<std::int64_t> rank;
};

// Chrome-trace "B"/"E" pairs as the "X" events they describe: an "E" closes the innermost open
// "B" of its thread (pid, tid) with its name when it has one, else the innermost. Unclosed ones
// are not events.
std::vector<RawEvent> with_pairs_closed(const std::vector<RawEvent>& events) {
  std::vector<RawEvent> out;
  std::vector<RawEvent> halves;  // paired in time order (stable), as Chrome's viewer does
  for (const RawEvent& e : events) {
    const Token* ph = find(e.fields, "ph");
    const bool half =
        ph != nullptr && ph->type == Token::kString && (ph->text == "B" || ph->text == "E");
    (half ? halves : out).push_back(e);
  }
  std::stable_sort(halves.begin(), halves.end(), [](const RawEvent& a, const RawEvent& b) {
    const auto ta = number_of(find(a.fields, "ts"), 3).value_or(0);
    const auto tb = number_of(find(b.fields, "ts"), 3).value_or(0);
    if (ta != tb) return ta < tb;
    return find(a.fields, "ph")->text == "E" && find(b.fields, "ph")->text == "B";  // E first
  });
  std::map<std::pair<ThreadId, ThreadId>, std::vector<RawEvent>> open;
  for (const RawEvent& e : halves) {
    const bool begin = find(e.fields, "ph")->text == "B";
    auto& stack = open[{thread_of(find(e.fields, "pid")), thread_of(find(e.fields, "tid"))}];
    if (begin) {
      stack.push_back(e);
      continue;
    }
    std::size_t match = stack.size();
    const Token* name = find(e.fields, "name");
    if (match > 0 && name != nullptr && name->type == Token::kString) {
      while (match > 0) {
        const Token* n = find(stack[match - 1].fields, "name");
        if (n != nullptr && n->text == name->text) break;
        --match;
      }
      if (match == 0) match = stack.size();
    }
    if (match == 0) continue;
    RawEvent x = stack[match - 1];
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(match - 1));
    const auto from = number_of(find(x.fields, "ts"), 3);
    const auto to = number_of(find(e.fields, "ts"), 3);
    if (!from || !to || *to < *from) continue;
    x.fields["ph"] = Token{Token::kString, "X"};
    x.fields["dur"] = Token{Token::kNumber, std::to_string(*to - *from) + "e-3"};
    out.push_back(std::move(x));
  }
  return out;
}

Reference reference_of(const RawTrace& raw_as_written) {
  const bool has_pairs = std::any_of(
      raw_as_written.events.begin(), raw_as_written.events.end(), [](const RawEvent& e) {
        const Token* ph = find(e.fields, "ph");
        return ph != nullptr && ph->type == Token::kString && ph->text == "B";
      });
  RawTrace closed;
  if (has_pairs) {
    closed = raw_as_written;
    closed.events = with_pairs_closed(raw_as_written.events);
  }
  const RawTrace& raw = has_pairs ? closed : raw_as_written;
  Reference ref;
  const std::int64_t base = raw.base_time ? number_of(&*raw.base_time, 0).value_or(0) : 0;
  if (raw.rank) ref.rank = number_of(&*raw.rank, 0);

  // ac2g flow end points at (pid, tid, ts): the first one at a place gives its id.
  std::map<std::tuple<ThreadId, ThreadId, std::int64_t>, std::int64_t> flows;
  for (const RawEvent& e : raw.events) {
    const Token* ph = find(e.fields, "ph");
    const Token* cat = find(e.fields, "cat");
    if (ph == nullptr || ph->type != Token::kString ||
        (ph->text != "s" && ph->text != "f" && ph->text != "t") || cat == nullptr ||
        (cat->text != "ac2g" && cat->text != "async_cpu_to_gpu" && cat->text != "async")) {
      continue;
    }
    const auto id = number_of(find(e.fields, "id"), 0);
    const auto ts = number_of(find(e.fields, "ts"), 3);
    if (!id || !ts) continue;
    flows.emplace(
        std::make_tuple(thread_of(find(e.fields, "pid")), thread_of(find(e.fields, "tid")), *ts),
        *id);
  }

  struct Placed {
    Expected e;
    std::size_t order;
  };
  std::vector<Placed> placed;
  for (const RawEvent& e : raw.events) {
    const Token* ph = find(e.fields, "ph");
    if (ph == nullptr || ph->type != Token::kString || ph->text != "X") continue;
    const auto ts = number_of(find(e.fields, "ts"), 3);
    if (!ts) continue;
    Expected x;
    x.kind = kind_of_category(find(e.fields, "cat"));
    const Token* name = find(e.fields, "name");
    if (name != nullptr && name->type == Token::kString) x.name = name->text;
    const auto dur = number_of(find(e.fields, "dur"), 3);
    if (x.kind == EventKind::kCudaRuntime && x.name == "INVALID" && (!dur || *dur < 0)) continue;
    x.start_ns = *ts + base;
    x.duration_ns = dur && *dur >= 0 ? *dur : 0;
    x.pid = thread_of(find(e.fields, "pid"));
    x.tid = thread_of(find(e.fields, "tid"));
    const auto arg = [&](const char* key) { return number_of(find(e.args, key), 0); };
    if (needs_correlation(x.kind)) {
      x.correlation = arg("correlation").value_or(arg("correlationId").value_or(-1));
      if (x.correlation < 0) {
        const auto it = flows.find(std::make_tuple(x.pid, x.tid, *ts));
        if (it != flows.end()) x.correlation = it->second;
      }
    }
    x.external_id = arg("External id").value_or(arg("external id").value_or(-1));
    x.cuda_event = arg("cuda_event").value_or(-1);
    if (x.kind == EventKind::kCudaSync) {
      const Token* kind = find(e.args, "cuda_sync_kind");
      x.sync = sync_of_text(kind != nullptr && kind->type == Token::kString ? kind->text : x.name);
      x.wait_on_stream = arg("wait_on_stream").value_or(-1);
      x.wait_on_event_correlation = arg("wait_on_cuda_event_record_corr_id").value_or(-1);
      if (x.cuda_event < 0) x.cuda_event = arg("wait_on_cuda_event_id").value_or(-1);
    } else if (x.kind == EventKind::kCudaRuntime || x.kind == EventKind::kCudaDriver) {
      x.sync = sync_of_call(x.name);
    }
    const Token* collective = find(e.args, "Collective name");
    x.has_collective = collective != nullptr;
    if (collective != nullptr && collective->type == Token::kString) {
      x.collective = lower(collective->text);
    }
    const bool host = x.kind == EventKind::kCpuOp || x.kind == EventKind::kUserAnnotation;
    const bool annotation =
        x.kind == EventKind::kUserAnnotation || x.kind == EventKind::kGpuUserAnnotation;
    x.nccl = x.has_collective || (annotation && x.name.starts_with("nccl:")) ||
             (x.kind == EventKind::kKernel && x.name.starts_with("nccl")) ||
             (host && x.name == "record_param_comms");
    if (host && x.name.starts_with("ProfilerStep#")) ref.step_starts_ns.push_back(x.start_ns);
    placed.push_back(Placed{std::move(x), placed.size()});
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    if (a.e.start_ns != b.e.start_ns) return a.e.start_ns < b.e.start_ns;
    return a.e.duration_ns > b.e.duration_ns;
  });
  for (std::size_t i = 0; i < placed.size(); ++i) {
    // Exact copies (a trace written twice) are kept once; they share (start, duration).
    bool copy = false;
    for (std::size_t j = i; j-- > 0;) {
      const Expected& a = placed[j].e;
      if (a.start_ns != placed[i].e.start_ns || a.duration_ns != placed[i].e.duration_ns) break;
      Expected b = placed[i].e;
      b.collective = a.collective;  // the reader compares links and times, not collective args
      b.has_collective = a.has_collective;
      if (a == b) copy = true;
    }
    if (!copy) ref.events.push_back(placed[i].e);
  }
  std::sort(ref.step_starts_ns.begin(), ref.step_starts_ns.end());
  return ref;
}

std::string inflate_gzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 32), Z_OK);
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  char buffer[1 << 16];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) break;
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

std::string plain(const std::string& bytes) {
  const bool gzip = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
                    static_cast<unsigned char>(bytes[1]) == 0x8b;
  return gzip ? inflate_gzip(bytes) : bytes;
}

// The regular *.json members of a ustar archive, in archive order, as (name, bytes).
std::vector<std::pair<std::string, std::string>> tar_members(const std::string& tar) {
  std::vector<std::pair<std::string, std::string>> members;
  for (std::size_t at = 0; at + 512 <= tar.size();) {
    const std::string_view header(tar.data() + at, 512);
    if (header[0] == '\0') break;
    const std::string name(header.data(), strnlen(header.data(), 100));
    const std::size_t size = std::stoull(std::string(header.substr(124, 12)), nullptr, 8);
    const char type = header[156];
    if ((type == '0' || type == '\0') && name.ends_with(".json")) {
      members.emplace_back(name, tar.substr(at + 512, size));
    }
    at += 512 + (size + 511) / 512 * 512;
  }
  return members;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- the comparison ----

ThreadId reader_thread(const RankTrace& t, std::int64_t id) {
  if (id <= kFirstStringId) {
    const auto index = static_cast<std::size_t>(kFirstStringId - id);
    if (index < t.string_ids.size()) return ThreadId{0, t.string_ids[index]};
  }
  return ThreadId{id, ""};
}

// Compares every event; returns the number of events compared. Stops at the first few differences.
std::size_t compare(const std::string& json, const RankTrace& got, const std::string& label) {
  RawTrace raw;
  Collector collector(&raw);
  const bool parsed = nlohmann::json::sax_parse(json, &collector);
  EXPECT_TRUE(parsed) << label << ": the reference parser failed: " << collector.error;
  const Reference want = reference_of(raw);
  if (want.rank) {
    EXPECT_EQ(got.rank, *want.rank) << label;
  }
  EXPECT_EQ(got.events.size(), want.events.size()) << label << ": event count";
  EXPECT_EQ(got.step_starts_ns, want.step_starts_ns) << label << ": ProfilerStep starts";
  int differences = 0;
  const std::size_t n = std::min(got.events.size(), want.events.size());
  for (std::size_t i = 0; i < n && differences < 5; ++i) {
    const TraceEvent& g = got.events[i];
    const Expected& w = want.events[i];
    Expected as_read;
    as_read.kind = g.kind;
    as_read.name = got.name_of(g);
    as_read.start_ns = g.start_ns;
    as_read.duration_ns = g.duration_ns;
    as_read.pid = reader_thread(got, g.pid);
    as_read.tid = reader_thread(got, g.tid);
    // Links are defined for the kinds that carry them; the reader skips other kinds' args.
    as_read.correlation = needs_correlation(g.kind) ? g.correlation : -1;
    const bool has_external = g.kind != EventKind::kPythonFunction && g.kind != EventKind::kOther;
    as_read.external_id = has_external ? g.external_id : w.external_id;
    const bool has_cuda_event = g.kind == EventKind::kCudaRuntime ||
                                g.kind == EventKind::kCudaDriver || g.kind == EventKind::kCudaSync;
    as_read.cuda_event = has_cuda_event ? g.cuda_event : w.cuda_event;
    as_read.sync = g.sync;
    as_read.wait_on_stream = g.wait_on_stream;
    as_read.wait_on_event_correlation = g.wait_on_event_correlation;
    as_read.nccl = g.nccl;
    as_read.has_collective = w.has_collective;
    as_read.collective = w.collective;
    if (w.has_collective) {
      const bool in_range =
          g.collective >= 0 && static_cast<std::size_t>(g.collective) < got.collectives.size();
      EXPECT_TRUE(in_range) << label << ": event " << i << " has no collective entry";
      if (in_range) as_read.collective = got.collectives[g.collective].name;
    }
    if (!(as_read == w)) {
      ++differences;
      ADD_FAILURE() << label << ": event " << i << " differs: reader '" << as_read.name << "' kind "
                    << int(as_read.kind) << " start " << as_read.start_ns << " dur "
                    << as_read.duration_ns << " pid " << as_read.pid.number << as_read.pid.text
                    << " tid " << as_read.tid.number << as_read.tid.text << " corr "
                    << as_read.correlation << " ext " << as_read.external_id << " cuda_event "
                    << as_read.cuda_event << " sync " << int(as_read.sync) << " wait "
                    << as_read.wait_on_stream << "/" << as_read.wait_on_event_correlation
                    << " nccl " << as_read.nccl << " coll '" << as_read.collective
                    << "'; reference '" << w.name << "' kind " << int(w.kind) << " start "
                    << w.start_ns << " dur " << w.duration_ns << " pid " << w.pid.number
                    << w.pid.text << " tid " << w.tid.number << w.tid.text << " corr "
                    << w.correlation << " ext " << w.external_id << " cuda_event " << w.cuda_event
                    << " sync " << int(w.sync) << " wait " << w.wait_on_stream << "/"
                    << w.wait_on_event_correlation << " nccl " << w.nccl << " coll '"
                    << w.collective << "'";
    }
  }
  return n;
}

TEST(KinetoReference, GeneratedShapesMatchEventByEvent) {
  std::size_t compared = 0;
  for (const test_support::Shape shape : test_support::all_shapes()) {
    const test_support::GeneratedTraces generated = test_support::make_shape_traces(shape, 2);
    for (std::size_t f = 0; f < generated.files.size(); ++f) {
      const std::string label =
          std::string(test_support::shape_name(shape)) + "/" + generated.names[f];
      auto got = parse_kineto_bytes(generated.files[f], generated.names[f], static_cast<int>(f));
      ASSERT_TRUE(got.ok()) << label << ": " << got.error().message;
      compared += compare(plain(generated.files[f]), *got, label);
    }
  }
  EXPECT_GT(compared, 1000u);
}

// The benchmark's trace layout (bench/replay_bench.cc: multi-line events, kernels with a dozen
// args, ac2g flows, collectives), read whole and in 4 KiB windows, so that nearly every event
// meets a window boundary somewhere.
TEST(KinetoReference, SyntheticBenchmarkTraceMatchesInAnyWindow) {
  SyntheticTraceSpec spec;
  spec.rank = 1;
  spec.world_size = 2;
  spec.target_events = 20'000;
  const std::string json = make_synthetic_kineto_trace(spec);
  for (const std::size_t window : {std::size_t{1} << 20, std::size_t{4096}}) {
    ReadOptions options;
    options.window_bytes = window;
    auto got = parse_kineto_json(json, "synthetic.json", 0, options);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_GT(compare(json, *got, "synthetic, window " + std::to_string(window)), 10'000u);
  }
}

TEST(KinetoReference, SharedTracesMatchEventByEvent) {
  const fs::path dir = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";
  if (!fs::exists(dir)) GTEST_SKIP() << "no real traces at " << dir << " (needs ../shared/data)";
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() &&
        (name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".tar.gz"))) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::size_t compared = 0;
  for (const fs::path& file : files) {
    auto got = read_kineto_traces({file.string()});
    ASSERT_TRUE(got.ok()) << got.error().message;
    const std::string bytes = plain(read_bytes(file));
    if (file.string().ends_with(".tar.gz")) {
      const auto members = tar_members(bytes);
      ASSERT_EQ(members.size(), got->size()) << file;
      // read_kineto_traces sorts by rank; match each member by its source name.
      for (const auto& [name, json] : members) {
        const auto it = std::find_if(got->begin(), got->end(), [&](const RankTrace& t) {
          return t.source.ends_with(":" + name);
        });
        ASSERT_NE(it, got->end()) << file << ":" << name;
        compared += compare(plain(json), *it, file.filename().string() + ":" + name);
      }
    } else {
      ASSERT_EQ(got->size(), 1u) << file;
      compared += compare(bytes, got->front(), file.filename().string());
    }
  }
  EXPECT_GT(compared, 10000u);
}

}  // namespace
}  // namespace powertrain::trace
