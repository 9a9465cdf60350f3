#include "core/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace powertrain::core {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0) return "?";
  const long long s = std::llround(seconds);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02d} s", s / 60, s % 60);
  return fmt::format("{} h {:02d} min", s / 3600, (s % 3600) / 60);
}

ProgressLine::ProgressLine(std::string label, std::string unit, bool enabled)
    : ProgressLine(std::move(label), std::move(unit), enabled, ::isatty(STDERR_FILENO) != 0, stderr,
                   5.0) {}

ProgressLine::ProgressLine(std::string label, std::string unit, bool enabled, bool terminal,
                           std::FILE* stream, double plain_interval_s)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      enabled_(enabled),
      terminal_(terminal),
      stream_(stream),
      plain_interval_s_(plain_interval_s),
      started_(Clock::now()),
      last_print_(started_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(long long done, long long total) {
  if (!enabled_ || finished_) return;
  last_done_ = done;
  last_total_ = total;
  const auto now = Clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  // A terminal redraws at most 10 times a second; a log gets a line every few seconds.
  if (since_print < (terminal_ ? 0.1 : plain_interval_s_)) return;
  last_print_ = now;
  print(done, total, false);
}

void ProgressLine::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (terminal_) {
    if (printed_) {
      print(last_done_, last_total_, true);
      std::fputc('\n', stream_);
    }
  } else if (printed_) {
    print(last_done_, last_total_, true);
  }
  std::fflush(stream_);
}

void ProgressLine::print(long long done, long long total, bool final_line) {
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - started_).count();
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 0.0;
  const double rate = elapsed_s > 0.0 ? static_cast<double>(done) / elapsed_s : 0.0;
  std::string eta;
  if (final_line) {
    eta = fmt::format("done in {}", format_duration(elapsed_s));
  } else if (fraction > 0.0) {
    eta = fmt::format("ETA {}", format_duration(elapsed_s * (1.0 - fraction) / fraction));
  } else {
    eta = "ETA ?";
  }
  const std::string text = fmt::format("{}: {:3.0f}% ({} of {} {}, {:.0f}/s, {})", label_,
                                       100.0 * fraction, done, total, unit_, rate, eta);
  if (terminal_) {
    // \r and clear to the end of the line: the line is rewritten in place.
    fmt::print(stream_, "\r{}\x1b[K", text);
  } else {
    fmt::print(stream_, "{}\n", text);
  }
  std::fflush(stream_);
  printed_ = true;
}

}  // namespace powertrain::core
