// CUDA's error log (CUDA 12.9+: cudaLogs* and cuLogs*). What the emulator reports as misuse or as
// unsupported goes there too, so a program that dumps the log after a failed call, or registers a
// callback, reads why the call failed. One log serves the runtime and the driver forms, as on a
// GPU. The buffer keeps the newest messages within the driver's documented 25,600 bytes.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
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
};

ErrorLog& error_log() {
  static ErrorLog* log = new ErrorLog;  // never destroyed: misuse is reported during exit
  return *log;
}

// A callback that itself misuses the API is not called again from inside itself.
thread_local bool t_in_callback = false;

// The messages from `iterator` (all kept when NULL) and whether older ones were dropped before
// they were read. Advances the iterator past the newest.
std::vector<std::string> messages_from(unsigned* iterator, bool* lost) {
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  unsigned start = iterator != nullptr ? *iterator : log.first;
  *lost = start < log.first;
  if (start < log.first) start = log.first;
  std::vector<std::string> out;
  for (unsigned i = start; i < log.next; ++i) out.push_back(log.messages[i - log.first]);
  if (iterator != nullptr) *iterator = log.next;
  return out;
}

std::string lost_notice() { return "[earlier log messages were overwritten before this dump]"; }

cudaError_t dump_to_file(unsigned* iterator, const char* path, unsigned flags, const char* api) {
  if (path == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "pathToFile is NULL or flags is not 0");
  }
  bool lost = false;
  const std::vector<std::string> messages = messages_from(iterator, &lost);
  std::FILE* file = std::fopen(path, "w");
  if (file == nullptr) {
    return misuse(api, cudaErrorInvalidValue, std::string("cannot write ") + path);
  }
  if (lost) std::fprintf(file, "%s\n", lost_notice().c_str());
  for (const std::string& m : messages) std::fprintf(file, "%s\n", m.c_str());
  const bool written = std::fclose(file) == 0;
  return written ? cudaSuccess
                 : misuse(api, cudaErrorInvalidValue, std::string("cannot write ") + path);
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
  const std::vector<std::string> messages = messages_from(iterator, &lost);
  if (messages.empty()) {
    if (capacity > 0) buffer[0] = '\0';
    *size = 0;
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
  return cudaSuccess;
}

cudaError_t register_callback(CUlogsCallback function, void* data, CUlogsCallbackHandle* handle,
                              const char* api) {
  if (function == nullptr) return misuse(api, cudaErrorInvalidValue, "callbackFunc is NULL");
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  const std::uintptr_t id = log.next_handle++;
  log.callbacks[id] = Callback{function, data};
  if (handle != nullptr) *handle = reinterpret_cast<CUlogsCallbackHandle>(id);
  return cudaSuccess;
}

cudaError_t unregister_callback(CUlogsCallbackHandle handle, const char* api) {
  ErrorLog& log = error_log();
  std::unique_lock<std::mutex> lock(log.mutex);
  if (log.callbacks.erase(reinterpret_cast<std::uintptr_t>(handle)) == 0) {
    lock.unlock();
    return misuse(api, cudaErrorInvalidValue,
                  pointer_text(handle) + " is not a registered callback");
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
  std::vector<Callback> callbacks;
  {
    std::lock_guard<std::mutex> lock(log.mutex);
    log.messages.emplace_back(message);
    log.bytes += message.size() + 1;
    ++log.next;
    while (log.bytes > kLogBytes && log.messages.size() > 1) {
      log.bytes -= log.messages.front().size() + 1;
      log.messages.pop_front();
      ++log.first;
    }
    if (t_in_callback) return;
    for (const auto& [id, callback] : log.callbacks) callbacks.push_back(callback);
  }
  t_in_callback = true;
  for (const Callback& callback : callbacks) {
    std::string copy(message);  // the callback's message is writable
    callback.function(callback.data, CU_LOG_LEVEL_ERROR, copy.data(), copy.size());
  }
  t_in_callback = false;
}

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
