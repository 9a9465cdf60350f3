// CUDA's error log (CUDA 12.9+: cudaLogs* and cuLogs*). What the emulator reports as misuse or as
// unsupported goes there too, so a program that dumps the log after a failed call, or registers a
// callback, reads why the call failed. One log serves the runtime and the driver forms, as on a
// GPU. The buffer keeps the newest messages within the driver's documented 25,600 bytes.
// Callbacks run on a delivery thread of their own, in message order: misuse is reported from
// inside calls that hold the emulator's locks, and a callback calling the API from there would
// wait on them.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

constexpr std::size_t kLogBytes = 25600;

struct Callback {
  CUlogsCallback function = nullptr;
  void* data = nullptr;
};

struct ErrorLog {
  std::mutex mutex;
  std::deque<std::string> messages;              // oldest first
  std::size_t bytes = 0;                         // with one newline each
  unsigned first = 0;                            // iterator value of messages.front()
  unsigned next = 0;                             // iterator value of the next message
  std::map<std::uintptr_t, Callback> callbacks;  // by handle, in registration order
  std::uintptr_t next_handle = 1;
  // Delivery to the callbacks.
  std::deque<std::string> undelivered;
  std::condition_variable wake;     // the delivery thread: a message, or the exit
  std::condition_variable settled;  // a delivery ended
  bool delivering = false;
  std::uint64_t deliveries = 0;  // started so far
  bool thread_started = false;
  bool stopping = false;  // the process is exiting: no more callbacks
};

// Never destroyed: misuse is reported during exit. A forked child starts a fresh log (the
// parent's lock may have been held by its delivery thread, which the child does not have).
ErrorLog*& log_pointer() {
  static ErrorLog* log = new ErrorLog;
  return log;
}
ErrorLog& error_log() { return *log_pointer(); }

// Messages logged by a callback (on the delivery thread) are kept but not delivered again.
thread_local bool t_delivery_thread = false;

void deliver() {
  t_delivery_thread = true;
  ErrorLog& log = error_log();
  std::unique_lock<std::mutex> lock(log.mutex);
  for (;;) {
    log.wake.wait(lock, [&] { return log.stopping || !log.undelivered.empty(); });
    if (log.stopping) break;
    std::string message = std::move(log.undelivered.front());
    log.undelivered.pop_front();
    std::vector<Callback> callbacks;
    for (const auto& [id, callback] : log.callbacks) callbacks.push_back(callback);
    log.delivering = true;
    ++log.deliveries;
    lock.unlock();
    for (const Callback& callback : callbacks) {
      std::string copy(message);  // the callback's message is writable
      callback.function(callback.data, CU_LOG_LEVEL_ERROR, copy.data(), copy.size());
    }
    lock.lock();
    log.delivering = false;
    log.settled.notify_all();
  }
  log.delivering = false;
  log.settled.notify_all();
}

// At exit, before the program's earlier static objects are destroyed: no callback runs after.
void stop_delivery() {
  ErrorLog& log = error_log();
  std::unique_lock<std::mutex> lock(log.mutex);
  log.stopping = true;
  log.wake.notify_all();
  if (!t_delivery_thread) log.settled.wait(lock, [&] { return !log.delivering; });
}

// The messages from `iterator` (all kept when NULL), whether older ones were dropped before they
// were read (overwritten in the buffer), and the iterator value past the newest (the caller
// stores it when the dump succeeds).
std::vector<std::string> messages_from(const unsigned* iterator, bool* lost, unsigned* next) {
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  unsigned start = iterator != nullptr ? *iterator : 0;
  *lost = start < log.first;
  if (start < log.first) start = log.first;
  std::vector<std::string> out;
  for (unsigned i = start; i < log.next; ++i) out.push_back(log.messages[i - log.first]);
  *next = log.next;
  return out;
}

std::string lost_notice() { return "[earlier log messages were overwritten before this dump]"; }

cudaError_t dump_to_file(unsigned* iterator, const char* path, unsigned flags, const char* api) {
  if (path == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "pathToFile is NULL or flags is not 0");
  }
  bool lost = false;
  unsigned next = 0;
  const std::vector<std::string> messages = messages_from(iterator, &lost, &next);
  std::FILE* file = std::fopen(path, "w");
  if (file == nullptr) {
    return misuse(api, cudaErrorInvalidValue, std::string("cannot write ") + path);
  }
  if (lost) std::fprintf(file, "%s\n", lost_notice().c_str());
  for (const std::string& m : messages) std::fprintf(file, "%s\n", m.c_str());
  if (std::fclose(file) != 0) {
    return misuse(api, cudaErrorInvalidValue, std::string("cannot write ") + path);
  }
  if (iterator != nullptr) *iterator = next;
  return cudaSuccess;
}

// The newest messages that fit `*size` bytes with the terminating NUL, each ending in a newline;
// a notice first where some did not fit or were overwritten.
cudaError_t dump_to_memory(unsigned* iterator, char* buffer, std::size_t* size, unsigned flags,
                           const char* api) {
  if (buffer == nullptr || size == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "buffer or size is NULL or flags is not 0");
  }
  const std::size_t capacity = *size;
  bool lost = false;
  unsigned next = 0;
  const std::vector<std::string> messages = messages_from(iterator, &lost, &next);
  if (messages.empty()) {
    if (capacity > 0) buffer[0] = '\0';
    *size = 0;
    if (iterator != nullptr) *iterator = next;
    return cudaSuccess;
  }
  std::size_t total = 0;
  for (const std::string& m : messages) total += m.size() + 1;
  std::size_t keep = messages.size();
  std::string head = lost ? lost_notice() + "\n" : "";
  if (total + head.size() + 1 > capacity) {
    std::string notice(1, '[');
    notice += std::to_string(messages.size());
    notice += " log messages did not all fit the buffer: the newest are below]\n";
    head.swap(notice);
    std::size_t used = head.size() + 1;
    keep = 0;
    for (auto m = messages.rbegin(); m != messages.rend() && used + m->size() + 1 <= capacity;
         ++m) {
      used += m->size() + 1;
      ++keep;
    }
    if (keep == 0) {
      *size = 0;
      return misuse(api, cudaErrorInvalidValue,
                    "size " + std::to_string(capacity) + " holds no log message");
    }
  }
  std::string text = head;
  for (std::size_t i = messages.size() - keep; i < messages.size(); ++i) {
    text += messages[i];
    text += '\n';
  }
  text.copy(buffer, text.size());
  buffer[text.size()] = '\0';
  *size = text.size();
  if (iterator != nullptr) *iterator = next;  // only a successful dump consumes the messages
  return cudaSuccess;
}

cudaError_t register_callback(CUlogsCallback function, void* data, CUlogsCallbackHandle* handle,
                              const char* api) {
  if (function == nullptr) return misuse(api, cudaErrorInvalidValue, "callbackFunc is NULL");
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  if (!log.thread_started) {
    log.thread_started = true;
    std::atexit(stop_delivery);
    std::thread(deliver).detach();
  }
  const std::uintptr_t id = log.next_handle++;
  log.callbacks[id] = Callback{function, data};
  if (handle != nullptr) *handle = reinterpret_cast<CUlogsCallbackHandle>(id);
  return cudaSuccess;
}

// Once it returns, the callback is not called again (a delivery that had already started with it
// is waited for, unless the caller is that callback).
cudaError_t unregister_callback(CUlogsCallbackHandle handle, const char* api) {
  ErrorLog& log = error_log();
  std::unique_lock<std::mutex> lock(log.mutex);
  if (log.callbacks.erase(reinterpret_cast<std::uintptr_t>(handle)) == 0) {
    lock.unlock();
    return misuse(api, cudaErrorInvalidValue,
                  pointer_text(handle) + " is not a registered callback");
  }
  if (log.delivering && !t_delivery_thread) {
    const std::uint64_t started = log.deliveries;
    log.settled.wait(lock, [&] { return !log.delivering || log.deliveries != started; });
  }
  return cudaSuccess;
}

cudaError_t current(unsigned* iterator, unsigned flags, const char* api) {
  if (iterator == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "iterator_out is NULL or flags is not 0");
  }
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  *iterator = log.next;
  return cudaSuccess;
}

}  // namespace

void log_error_message(std::string_view message) {
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  log.messages.emplace_back(message);
  log.bytes += message.size() + 1;
  ++log.next;
  while (log.bytes > kLogBytes && log.messages.size() > 1) {
    log.bytes -= log.messages.front().size() + 1;
    log.messages.pop_front();
    ++log.first;
  }
  if (t_delivery_thread || log.stopping || log.callbacks.empty()) return;
  log.undelivered.emplace_back(message);
  log.wake.notify_one();
}

void reset_error_log_after_fork() { log_pointer() = new ErrorLog; }

}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;

PT_EXPORT cudaError_t cudaLogsRegisterCallback(cudaLogsCallback_t callbackFunc, void* userData,
                                               cudaLogsCallbackHandle* callback_out) {
  return detail::register_callback(reinterpret_cast<CUlogsCallback>(callbackFunc), userData,
                                   reinterpret_cast<CUlogsCallbackHandle*>(callback_out),
                                   "cudaLogsRegisterCallback");
}

PT_EXPORT cudaError_t cudaLogsUnregisterCallback(cudaLogsCallbackHandle callback) {
  return detail::unregister_callback(reinterpret_cast<CUlogsCallbackHandle>(callback),
                                     "cudaLogsUnregisterCallback");
}

PT_EXPORT cudaError_t cudaLogsCurrent(cudaLogIterator* iterator_out, unsigned int flags) {
  return detail::current(iterator_out, flags, "cudaLogsCurrent");
}

PT_EXPORT cudaError_t cudaLogsDumpToFile(cudaLogIterator* iterator, const char* pathToFile,
                                         unsigned int flags) {
  return detail::dump_to_file(iterator, pathToFile, flags, "cudaLogsDumpToFile");
}

PT_EXPORT cudaError_t cudaLogsDumpToMemory(cudaLogIterator* iterator, char* buffer, size_t* size,
                                           unsigned int flags) {
  return detail::dump_to_memory(iterator, buffer, size, flags, "cudaLogsDumpToMemory");
}

PT_EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                                          CUlogsCallbackHandle* callback_out) {
  detail::ErrorScope scope;
  return detail::to_driver(
      detail::register_callback(callbackFunc, userData, callback_out, "cuLogsRegisterCallback"));
}

PT_EXPORT CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  detail::ErrorScope scope;
  return detail::to_driver(detail::unregister_callback(callback, "cuLogsUnregisterCallback"));
}

PT_EXPORT CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  detail::ErrorScope scope;
  return detail::to_driver(detail::current(iterator_out, flags, "cuLogsCurrent"));
}

PT_EXPORT CUresult cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile,
                                    unsigned int flags) {
  detail::ErrorScope scope;
  return detail::to_driver(detail::dump_to_file(iterator, pathToFile, flags, "cuLogsDumpToFile"));
}

PT_EXPORT CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size,
                                      unsigned int flags) {
  detail::ErrorScope scope;
  return detail::to_driver(
      detail::dump_to_memory(iterator, buffer, size, flags, "cuLogsDumpToMemory"));
}
