// The interposer's trace log: records are kept in memory and written as JSON lines to
// $POWERTRAIN_EMU_DIR/trace-<pid>.jsonl in chunks and at exit. Formatting happens here, off the
// intercepted call's fast path. Uses POSIX I/O only (no iostreams: the library must not depend
// on anything the host program might not have initialised).
#include "interposer/trace_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/trace_format.h"

namespace powertrain::emu::detail {
namespace {

// Records kept before a chunk is written (~10 MB); bounds memory of long-running programs.
constexpr std::size_t kChunkRecords = 1 << 16;

struct LogState {
  std::mutex records_mutex;  // guards pending, closed, dropped
  std::vector<Record> pending;
  bool closed = false;  // exit line written
  std::int64_t dropped = 0;

  std::mutex write_mutex;  // serialises formatting + writing so chunks stay in order
  bool header_written = false;
  bool warned = false;
  std::int64_t written = 0;
};

LogState& state() {
  static LogState* log = new LogState;  // never destroyed: records arrive during exit
  return *log;
}

void make_directories(const std::string& dir) {
  // mkdir -p: create each prefix; EEXIST is fine, other errors surface when opening the file.
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0777);
  }
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Formats `records` (and the process/exit lines) and appends them to the trace file. Called
// with write_mutex held.
void write_chunk(LogState& log, std::vector<Record>& records, bool final) {
  std::string text;
  text.reserve(records.size() * 256 + 1024);
  if (!log.header_written) {
    text += process_line_json();
    text += '\n';
  }
  for (const Record& record : records) format_record(record, text, append_kernel_json_name);
  log.written += static_cast<std::int64_t>(records.size());
  if (final) {
    using namespace format_detail;
    put_literal(text, "{\"op\":\"");
    text += trace_schema::op::kExit;
    text += '"';
    put_field<trace_schema::field::kT>(text, now_ns());
    put_field<trace_schema::field::kRecords>(text, log.written);
    text += exit_line_fields();
    text += "}\n";
  }
  const std::string dir = config().dir;
  // POWERTRAIN_EMU_DIR=/dev/null formats everything and keeps nothing (overhead measurements).
  const bool discard = dir == "/dev/null";
  if (!discard) make_directories(dir);
  const std::string path = discard ? dir : dir + "/trace-" + std::to_string(::getpid()) + ".jsonl";
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (log.header_written ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  bool ok = fd >= 0 && write_all(fd, text);
  const int saved_errno = errno;
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  if (!ok && !log.warned) {
    log.warned = true;
    std::fprintf(stderr, "powertrain-emu: cannot write the trace %s: %s (records are lost)\n",
                 path.c_str(), std::strerror(saved_errno));
  }
  log.header_written = true;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Record make_record(Op op, std::int64_t start_ns, int device) {
  Record record;
  record.op = op;
  record.t = start_ns;
  record.dt = now_ns() - start_ns;
  record.tid = thread_index();
  record.dev = device;
  return record;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t clean = 0;  // start of the run of characters that need no escaping
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (c != '"' && c != '\\' && u >= 0x20) continue;
    out.append(text.data() + clean, i - clean);
    clean = i + 1;
    if (u < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
      out += buffer;
    } else {
      out += '\\';
      out += c;
    }
  }
  out.append(text.data() + clean, text.size() - clean);
  out += '"';
}

void append(Record&& record) {
  if (g_capturing_streams.load(std::memory_order_relaxed) > 0 && capture_record(record)) return;
  LogState& log = state();
  std::vector<Record> chunk;
  {
    std::lock_guard<std::mutex> lock(log.records_mutex);
    if (log.closed) {
      ++log.dropped;
      return;
    }
    if (log.pending.capacity() == 0) log.pending.reserve(1024);
    log.pending.push_back(std::move(record));
    if (log.pending.size() < kChunkRecords) return;
    chunk.swap(log.pending);
    log.pending.reserve(kChunkRecords);
  }
  // Write the full chunk outside the records lock; its duration is not the program's time.
  const std::int64_t start = steady_ns();
  {
    std::lock_guard<std::mutex> lock(log.write_mutex);
    write_chunk(log, chunk, false);
  }
  add_paused_ns(steady_ns() - start);
}

void write_log(bool final) {
  LogState& log = state();
  std::lock_guard<std::mutex> write_lock(log.write_mutex);
  std::vector<Record> chunk;
  {
    std::lock_guard<std::mutex> lock(log.records_mutex);
    if (log.closed) return;
    chunk.swap(log.pending);
    if (final) log.closed = true;
  }
  // Nothing new to write; and a process that never called CUDA (a shell or a compiler that
  // inherited LD_PRELOAD) leaves no trace file at all.
  if (chunk.empty() && (!final || !log.header_written)) return;
  write_chunk(log, chunk, final);
}

void reset_after_fork() {
  // The child gets a fresh file; the mutexes were taken by the fork handlers in the parent's
  // forking thread (the child's only thread), so they are released here.
  LogState& log = state();
  log.pending.clear();
  log.closed = false;
  log.dropped = 0;
  log.header_written = false;
  log.written = 0;
}

void lock_for_fork() {
  state().write_mutex.lock();
  state().records_mutex.lock();
}

void unlock_after_fork() {
  state().records_mutex.unlock();
  state().write_mutex.unlock();
}

}  // namespace powertrain::emu::detail
