// The document-level walk of the Kineto reader. A trace is one JSON object whose traceEvents
// array holds nearly all of its bytes. Indexing the whole document at once would make simdjson
// allocate and fault in ~4 bytes per token (≈ 0.7 GB for a 1 GB trace); instead the array is
// parsed in windows. JSON strings cannot contain a raw newline, so a window cut at a newline never
// splits a string; the window is made a standalone JSON array by writing '[' over the byte before
// its first element (',' or the real '[') and ']' over the newline, both restored afterwards. The
// last element of a window is usually cut short: simdjson then reports an error, and the next
// window starts at that element (or after the last complete one). Only the final verdict on a
// real error comes from a window that reaches the real end of the document.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "trace/kineto_json.h"
#include "trace/kineto_values.h"

namespace powertrain::trace::detail {
namespace {

constexpr std::size_t kSimdjsonPadding = simdjson::SIMDJSON_PADDING;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Writes the window's brackets (and clean padding after the close) and restores the bytes when
// the window is done with.
class WindowBrackets {
 public:
  WindowBrackets(char* open, char open_char, char* close, char close_char)
      : open_(open), close_(close) {
    if (open_ != nullptr) {
      saved_open_ = *open_;
      *open_ = open_char;
    }
    if (close_ != nullptr) {
      saved_close_ = *close_;
      std::memcpy(saved_padding_, close_ + 1, kSimdjsonPadding);
      *close_ = close_char;
      std::memset(close_ + 1, 0, kSimdjsonPadding);
    }
  }
  ~WindowBrackets() {
    if (close_ != nullptr) {
      std::memcpy(close_ + 1, saved_padding_, kSimdjsonPadding);
      *close_ = saved_close_;
    }
    if (open_ != nullptr) *open_ = saved_open_;
  }
  WindowBrackets(const WindowBrackets&) = delete;
  WindowBrackets& operator=(const WindowBrackets&) = delete;

 private:
  char* open_;
  char* close_;
  char saved_open_ = 0;
  char saved_close_ = 0;
  char saved_padding_[kSimdjsonPadding] = {};
};

// The end of a window starting at `from`: the last newline within `window` bytes, else the first
// one after, else the end of the document.
char* window_end(char* from, char* end, std::size_t window) {
  if (static_cast<std::size_t>(end - from) <= window) return end;
  char* limit = from + window;
  if (void* newline = memrchr(from + 1, '\n', static_cast<std::size_t>(limit - from - 1))) {
    return static_cast<char*>(newline);
  }
  if (void* newline = std::memchr(limit, '\n', static_cast<std::size_t>(end - limit))) {
    return static_cast<char*>(newline);
  }
  return end;
}

class DocumentWalk {
 public:
  DocumentWalk(char* data, std::size_t size, std::size_t capacity, ParseState& state)
      : data_(data), end_(data + size), capacity_end_(data + capacity), state_(state) {}

  core::Status run();

 private:
  simdjson::padded_string_view view(char* from, char* to) const {
    return simdjson::padded_string_view(from, static_cast<std::size_t>(to - from),
                                        static_cast<std::size_t>(capacity_end_ - from));
  }
  core::Error json_error(od::document& doc, error_code error) const;
  // Errors of simdjson's indexing pass (bad UTF-8, unclosed string, control characters in a
  // string) come without a position.
  core::Error stage1_error(error_code error) const {
    return core::Error{
        fmt::format("{}: invalid JSON: {}", state_.trace.source, simdjson::error_message(error))};
  }
  // A last window that does not parse: most often the writer stopped mid-event (the profiler
  // died or a copy was cut); say where the readable events end and where the file does.
  core::Error truncation_error(const char* from, error_code error) const {
    if (error == simdjson::UNCLOSED_STRING || error == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
      return core::Error{fmt::format(
          "{}: invalid JSON, truncated: the document ends at byte {} inside an event that starts "
          "after byte {} "
          "(the profiler or a copy stopped mid-write): {}",
          state_.trace.source, end_ - data_, from - data_, simdjson::error_message(error))};
    }
    return core::Error{fmt::format("{}: invalid JSON between byte {} and its end at byte {}: {}",
                                   state_.trace.source, from - data_, end_ - data_,
                                   simdjson::error_message(error))};
  }
  core::Error error_at(const char* where, std::string_view what) const {
    return core::Error{
        fmt::format("{}: invalid JSON at byte {}: {}", state_.trace.source, where - data_, what)};
  }
  std::size_t window() const { return std::max<std::size_t>(state_.options.window_bytes, 64); }
  // Top-level keys besides traceEvents, collected first and applied once the window that read
  // them is known to be complete.
  struct TopLevel {
    std::optional<std::int64_t> base_time_ns;
    std::optional<std::string> bad_base_time;
    std::optional<int> rank;
    std::optional<int> world_size;
  };
  core::Status top_field(od::field& field, TopLevel* top);
  void apply(const TopLevel& top);
  core::Status prologue(char* first, char** events_open);
  core::Status events(char* open, const char** after);
  core::Status epilogue(const char* after);

  char* data_;
  char* end_;
  char* capacity_end_;
  ParseState& state_;
  od::parser parser_;
  bool found_events_ = false;
};

core::Error DocumentWalk::json_error(od::document& doc, error_code error) const {
  const char* location = nullptr;
  if (doc.current_location().get(location) == SUCCESS && location >= data_ && location <= end_) {
    return error_at(location, simdjson::error_message(error));
  }
  return core::Error{fmt::format("{}: invalid JSON (near the end of its {} bytes): {}",
                                 state_.trace.source, end_ - data_,
                                 simdjson::error_message(error))};
}

// Top-level keys other than traceEvents that the trace needs.
core::Status DocumentWalk::top_field(od::field& field, TopLevel* top) {
  const od::raw_json_string key = field.key();
  od::value& value = field.value();
  if (key_is(key, "baseTimeNanoseconds")) {
    std::int64_t base = 0;
    if (parse_integer(value.raw_json_token(), &base)) {
      top->base_time_ns = base;
    } else {
      top->bad_base_time = clip(trim_token(value.raw_json_token()));
    }
  } else if (key_is(key, "distributedInfo")) {
    od::object info;
    if (value.get_object().get(info) != SUCCESS) return core::Ok{};
    for (auto info_result : info) {
      od::field info_field;
      if (const error_code error = std::move(info_result).get(info_field); error != SUCCESS) {
        return core::Error{simdjson::error_message(error)};
      }
      std::int64_t number = 0;
      const bool is_int = parse_integer(info_field.value().raw_json_token(), &number) &&
                          number >= 0 && number < (1 << 30);
      if (key_is(info_field.key(), "rank") && is_int) {
        top->rank = static_cast<int>(number);
      } else if (key_is(info_field.key(), "world_size") && is_int && number > 0) {
        top->world_size = static_cast<int>(number);
      }
    }
  }
  return core::Ok{};
}

void DocumentWalk::apply(const TopLevel& top) {
  if (top.base_time_ns) {
    state_.has_base_time = true;
    state_.base_time_ns = *top.base_time_ns;
  }
  if (top.bad_base_time) {
    state_.warnings.add("baseTimeNanoseconds is not an integer (ignored)",
                        [&] { return *top.bad_base_time; });
  }
  if (top.rank) state_.trace.rank = *top.rank;
  if (top.world_size) state_.trace.world_size = *top.world_size;
}

// The top-level object up to traceEvents' '[' (usually a few kB: deviceProperties and the like).
// Sets *events_open to the '[' or leaves it null when the object has no traceEvents.
core::Status DocumentWalk::prologue(char* first, char** events_open) {
  for (std::size_t size = std::min<std::size_t>(window(), 1 << 16);; size *= 2) {
    char* close = window_end(first, end_, size);
    const bool whole = close == end_;
    // The window gets a '}' (in the padding when it is the whole document) so that its root
    // object closes where simdjson expects it; the events and epilogue walks check the real end.
    WindowBrackets brackets(nullptr, 0, close, '}');
    od::document doc;
    error_code error = parser_.iterate(view(first, close + 1)).get(doc);
    const bool iterated = error == SUCCESS;
    od::object top;
    if (error == SUCCESS) error = doc.get_object().get(top);
    TopLevel fields;
    bool failed = error != SUCCESS;
    if (!failed) {
      for (auto field_result : top) {
        od::field field;
        if ((error = std::move(field_result).get(field)) != SUCCESS) {
          failed = true;
          break;
        }
        if (key_is(field.key(), "traceEvents")) {
          const std::string_view token = field.value().raw_json_token();
          if (token.data() >= close && !whole) {  // the window's own '}': cut too early
            failed = true;
            break;
          }
          if (token.empty() || token.front() != '[') {
            return core::Error{fmt::format("{}: traceEvents is not an array (got {})",
                                           state_.trace.source, clip(trim_token(token)))};
          }
          *events_open = const_cast<char*>(token.data());  // points into data_, which we own
          apply(fields);
          return core::Ok{};
        }
        if (!top_field(field, &fields)) {
          failed = true;
          error = simdjson::TAPE_ERROR;
          break;
        }
      }
    }
    if (whole) {
      if (failed) return iterated ? json_error(doc, error) : truncation_error(first, error);
      apply(fields);
      return core::Ok{};  // an object without traceEvents
    }
    // A cut window that did not reach traceEvents: retry with a larger one (fields are re-read).
  }
}

// traceEvents, window by window, from its '[' at `open`. On success *after points just past the
// array's closing bracket.
core::Status DocumentWalk::events(char* open, const char** after) {
  found_events_ = true;
  bool skip_first = false;
  std::size_t size = window();
  while (true) {
    char* close = window_end(open, end_, size);
    // The final window runs to the end of the document; its ']' goes into the padding. A real
    // closing bracket ends the array before it (checked below), so it never hides truncation.
    WindowBrackets brackets(open, '[', close, ']');
    od::document doc;
    error_code error = parser_.iterate(view(open, close + 1)).get(doc);
    const bool iterated = error == SUCCESS;
    od::array array;
    if (error == SUCCESS) error = doc.get_array().get(array);
    EventsOutcome outcome;
    if (error == SUCCESS) {
      outcome = parse_events(array, state_, skip_first);
      error = outcome.error;
    }
    if (outcome.too_many) {
      return core::Error{fmt::format("{}: more than {} events (ReadOptions::max_events)",
                                     state_.trace.source, state_.options.max_events)};
    }
    if (error == SUCCESS) {
      // Closed by a real ']' exactly when a token follows it (at worst our own ']').
      const char* location = nullptr;
      if (doc.current_location().get(location) == SUCCESS) {
        *after = location;
        return core::Ok{};
      }
      if (close == end_) {
        return core::Error{fmt::format(
            "{}: invalid JSON: the document ends inside the traceEvents array (truncated?)",
            state_.trace.source)};
      }
      // Our ']' closed it: the window ended between two elements; resume after the last one.
      error = simdjson::INCOMPLETE_ARRAY_OR_OBJECT;
    }
    const bool progress = outcome.committed > 0;
    if (!progress) {
      if (close == end_) return iterated ? json_error(doc, error) : truncation_error(open, error);
      size *= 2;  // one element larger than the window (or a real error further on)
      continue;
    }
    const char* restart = outcome.restart;
    skip_first = outcome.restart_skips_first;
    if (restart == nullptr) return json_error(doc, error);
    // Resume with the ',' before the restart element as the new '['.
    char* before = const_cast<char*>(restart);  // points into data_, which we own
    while (before > open + 1 && is_space(before[-1])) --before;
    open = before - 1;
    if (*open != ',' && *open != '[') return error_at(open, "expected ',' between events");
    size = window();
  }
}

// After traceEvents: the rest of the top-level object (traceName, baseTimeNanoseconds, ...).
core::Status DocumentWalk::epilogue(const char* after) {
  const char* p = after;
  while (p < end_ && is_space(*p)) ++p;
  if (p == end_) {
    return core::Error{fmt::format(
        "{}: invalid JSON: the document ends after traceEvents without closing its object "
        "(truncated?)",
        state_.trace.source)};
  }
  if (*p == '}') {
    for (const char* q = p + 1; q < end_; ++q) {
      if (!is_space(*q)) return error_at(q, "unexpected content after the top-level object");
    }
    return core::Ok{};
  }
  if (*p != ',') return error_at(p, "expected ',' or '}' after the traceEvents array");
  char* open = const_cast<char*>(p);  // points into data_, which we own
  WindowBrackets brackets(open, '{', nullptr, 0);
  od::document doc;
  error_code error = parser_.iterate(view(open, end_)).get(doc);
  if (error != SUCCESS) return stage1_error(error);
  od::object rest;
  if ((error = doc.get_object().get(rest)) != SUCCESS) return json_error(doc, error);
  TopLevel fields;
  for (auto field_result : rest) {
    od::field field;
    if ((error = std::move(field_result).get(field)) != SUCCESS) return json_error(doc, error);
    if (key_is(field.key(), "traceEvents")) {  // a second array (not seen in practice): whole
      od::array array;
      if (field.value().get_array().get(array) != SUCCESS) {
        return core::Error{fmt::format("{}: traceEvents is not an array", state_.trace.source)};
      }
      const EventsOutcome outcome = parse_events(array, state_, false);
      if (outcome.too_many) {
        return core::Error{fmt::format("{}: more than {} events (ReadOptions::max_events)",
                                       state_.trace.source, state_.options.max_events)};
      }
      if (outcome.error != SUCCESS) return json_error(doc, outcome.error);
    } else if (!top_field(field, &fields)) {
      return json_error(doc, simdjson::TAPE_ERROR);
    }
  }
  apply(fields);
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == SUCCESS) {
    return error_at(trailing, "unexpected content after the top-level object");
  }
  return core::Ok{};
}

core::Status DocumentWalk::run() {
  char* first = data_;
  while (first < end_ && is_space(*first)) ++first;
  if (first == end_) {
    return core::Error{fmt::format("{}: empty file (no JSON)", state_.trace.source)};
  }
  if (*first == '[') {  // Chrome's "JSON Array Format": the events alone
    const char* after = nullptr;
    if (core::Status status = events(first, &after); !status) return status;
    for (const char* q = after; q < end_; ++q) {
      if (!is_space(*q)) return error_at(q, "unexpected content after the top-level array");
    }
    return core::Ok{};
  }
  if (*first != '{') return error_at(first, "the top-level JSON value is not an object");
  char* events_open = nullptr;
  if (core::Status status = prologue(first, &events_open); !status) return status;
  if (events_open == nullptr) {
    return core::Error{fmt::format("{}: no traceEvents array", state_.trace.source)};
  }
  const char* after = nullptr;
  if (core::Status status = events(events_open, &after); !status) return status;
  return epilogue(after);
}

}  // namespace

core::Status parse_document(char* data, std::size_t size, std::size_t capacity, ParseState& state) {
  if (size > kMaxKinetoJsonBytes) {
    return core::Error{fmt::format("{}: {} bytes of JSON, more than simdjson's limit of {}",
                                   state.trace.source, size, kMaxKinetoJsonBytes)};
  }
  if (capacity < size + 1 + kSimdjsonPadding) {
    return core::Error{
        fmt::format("{}: internal error: buffer without padding", state.trace.source)};
  }
  // Reserve for the densest real traces (~300 bytes per event); untouched capacity costs address
  // space, not memory, and saves the copies of growing a vector of millions of events.
  state.trace.events.reserve(std::min(size / 256, state.options.max_events));
  state.sort_keys.reserve(state.trace.events.capacity());
  DocumentWalk walk(data, size, capacity, state);
  const core::Status status = walk.run();
  if (status) commit_duration_pairs(state);  // while the document's bytes are alive
  return status;
}

}  // namespace powertrain::trace::detail
