// One step window per training step, as the user means it. Profilers write a step twice (again
// inside a torch.compile region, or two profilers' schedules over the same steps), leave one
// step's span out, or stop in the middle of the first or last step.
#include "graph/step_windows.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

namespace powertrain::graph {
namespace {

using trace::EventKind;
using trace::RankTrace;
using trace::TraceEvent;

constexpr std::string_view kPrefix = "ProfilerStep#";

bool is_host_kind(EventKind kind) {
  return kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation ||
         kind == EventKind::kPythonFunction || kind == EventKind::kCudaRuntime ||
         kind == EventKind::kCudaDriver;
}

std::int64_t begin_of(const TraceEvent& e) { return e.start_ns; }
std::int64_t dur_of(const TraceEvent& e) { return std::max<std::int64_t>(0, e.duration_ns); }
std::int64_t end_of(const TraceEvent& e) { return e.start_ns + dur_of(e); }

std::int64_t median_of(std::vector<std::int64_t> d) {
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

class ThreadSteps {
 public:
  ThreadSteps(const RankTrace& trace, std::vector<std::uint32_t>& steps, StepWindows& out)
      : trace_(trace), steps_(steps), out_(out) {}

  // Normalizes the thread's spans in place; returns the steps they stand for.
  std::int32_t run() {
    if (steps_.size() < 2) return static_cast<std::int32_t>(steps_.size());
    std::stable_sort(steps_.begin(), steps_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return begin_of(ev(a)) < begin_of(ev(b));
    });
    merge_overlapping();
    drop_cut_edges();
    const std::int64_t missing = count_missing();
    return static_cast<std::int32_t>(steps_.size() + static_cast<std::size_t>(missing));
  }

 private:
  const TraceEvent& ev(std::uint32_t i) const { return trace_.events[i]; }

  // Spans sharing most of their time are one step (adjacent steps share at most a rounding
  // error): the longest stands for it.
  void merge_overlapping() {
    std::vector<std::uint32_t> kept;
    std::int64_t group_begin = 0, group_end = 0, merged = 0;
    for (std::uint32_t s : steps_) {
      if (!kept.empty()) {
        const std::int64_t overlap =
            std::min(group_end, end_of(ev(s))) - std::max(group_begin, begin_of(ev(s)));
        if (overlap > 0 && overlap > std::min(dur_of(ev(s)), dur_of(ev(kept.back()))) / 2) {
          if (dur_of(ev(s)) > dur_of(ev(kept.back()))) kept.back() = s;
          group_end = std::max(group_end, end_of(ev(s)));
          ++merged;
          continue;
        }
      }
      kept.push_back(s);
      group_begin = begin_of(ev(s));
      group_end = end_of(ev(s));
    }
    if (merged > 0) {
      out_.notes.emplace_back("ProfilerStep spans over the same step counted once",
                              fmt::format("{}: {} span(s) nested in or overlapping another step's",
                                          trace_.source, merged));
    }
    steps_ = std::move(kept);
  }

  std::int64_t median_duration() const {
    std::vector<std::int64_t> d;
    for (std::uint32_t s : steps_) d.push_back(dur_of(ev(s)));
    return median_of(std::move(d));
  }

  // Per span: the names of the first and the last host event of its thread that start inside it
  // (step spans not counted), kNoName when none does.
  static constexpr std::uint32_t kNoName = ~0u;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edge_op_names() const {
    const TraceEvent& first = ev(steps_.front());
    std::vector<std::pair<std::int64_t, std::uint32_t>> ops;  // (start, name), file order on ties
    for (const TraceEvent& e : trace_.events) {
      if (e.pid != first.pid || e.tid != first.tid || !is_host_kind(e.kind)) continue;
      if (is_step_span(trace_, e)) continue;
      ops.emplace_back(e.start_ns, e.name);
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<std::uint32_t, std::uint32_t>> names;
    for (std::uint32_t s : steps_) {
      const auto lo = std::lower_bound(ops.begin(), ops.end(), begin_of(ev(s)),
                                       [](const auto& o, std::int64_t t) { return o.first < t; });
      const auto hi = std::lower_bound(ops.begin(), ops.end(), end_of(ev(s)),
                                       [](const auto& o, std::int64_t t) { return o.first < t; });
      names.emplace_back(lo == hi ? kNoName : lo->second, lo == hi ? kNoName : (hi - 1)->second);
    }
    return names;
  }

  // Whether the thread's host activity reaches past the span's edge: some host event (step spans
  // not counted) ends at or before its start (`last` false), or starts at or after its end
  // (`last` true). A window that cut the span has nothing of the thread beyond that edge.
  bool activity_beyond(std::uint32_t span, bool last) const {
    const TraceEvent& s = ev(span);
    for (const TraceEvent& e : trace_.events) {
      if (e.pid != s.pid || e.tid != s.tid || !is_host_kind(e.kind)) continue;
      if (is_step_span(trace_, e)) continue;
      if (last ? begin_of(e) >= end_of(s) : end_of(e) <= begin_of(s)) return true;
    }
    return false;
  }

  // A step at either end shorter than half the median step may be one the profiler's window cut
  // (started or stopped mid-step): a part of a step, not a step. Length alone cannot tell it from
  // a genuinely short step (an epoch's last, smaller batch), so a cut needs positive evidence: the
  // span is at the window's edge (the thread did nothing beyond it), and its structure is not the
  // others' (a window that stopped mid-step left out the step's closing ops: the op that ends the
  // other steps is not the one that ends it; one that started mid-step its opening ops). A short
  // batch runs them all, faster. An op that ends more than half of the other steps is theirs.
  void drop_cut_edges() {
    if (steps_.size() < 3) return;
    const std::int64_t median = median_duration();
    const bool first_short = dur_of(ev(steps_.front())) < median / 2;
    const bool last_short = dur_of(ev(steps_.back())) < median / 2;
    if (!first_short && !last_short) return;
    // Work of the thread beyond a short edge span: the window did not cut it (issue 13).
    const bool first_inside = first_short && activity_beyond(steps_.front(), false);
    const bool last_inside = last_short && activity_beyond(steps_.back(), true);
    const auto names = edge_op_names();
    auto like_the_others = [&](std::size_t k, bool last) {
      const std::uint32_t name = last ? names[k].second : names[k].first;
      if (name == kNoName) return false;
      std::size_t same = 0;
      for (std::size_t j = 0; j < names.size(); ++j)
        same += j != k && (last ? names[j].second : names[j].first) == name;
      return 2 * same > names.size() - 1;
    };
    const bool cut_last = last_short && !last_inside && !like_the_others(steps_.size() - 1, true);
    const bool cut_first = first_short && !first_inside && !like_the_others(0, false);
    const std::int64_t kept_short = (first_short && !cut_first) + (last_short && !cut_last);
    const std::size_t before = steps_.size();
    if (cut_last) steps_.pop_back();
    if (cut_first) steps_.erase(steps_.begin());
    if (steps_.size() < before) {
      out_.notes.emplace_back(
          "ProfilerStep span cut by the trace window, not counted",
          fmt::format("{}: {} edge span(s) shorter than half the median step {} ns, at the "
                      "window's edge and without the op that opens or closes the other steps",
                      trace_.source, before - steps_.size(), median));
    }
    if (kept_short > 0) {
      out_.notes.emplace_back(
          "short ProfilerStep span at the trace edge kept: the thread works beyond it, or it "
          "opens and closes as the others do",
          fmt::format("{}: {} edge span(s) shorter than half the median step {} ns", trace_.source,
                      kept_short, median));
    }
  }

  // Numbers that skip with the skipped steps' time between the spans: steps whose span is
  // missing. Only when every number reads and they rise with time.
  std::int64_t count_missing() {
    if (steps_.size() < 2) return 0;
    const std::int64_t median = median_duration();
    std::vector<std::int64_t> numbers;
    for (std::uint32_t s : steps_) {
      const std::string_view name = trace_.names[ev(s).name];
      std::int64_t n = -1;
      const char* last = name.data() + name.size();
      const auto [ptr, ec] = std::from_chars(name.data() + kPrefix.size(), last, n);
      if (ec != std::errc() || ptr != last || n < 0) break;
      if (!numbers.empty() && n <= numbers.back()) break;
      numbers.push_back(n);
    }
    std::int64_t missing = 0;
    for (std::size_t k = 1; numbers.size() == steps_.size() && k < steps_.size(); ++k) {
      const std::int64_t skipped = numbers[k] - numbers[k - 1] - 1;
      const std::int64_t gap = begin_of(ev(steps_[k])) - end_of(ev(steps_[k - 1]));
      // Each missing step took at least half a median step between its neighbours.
      // (in double: skipped × median can pass 2^63 on a malformed trace)
      if (skipped > 0 && skipped <= 1'000'000 &&
          2.0 * static_cast<double>(gap) >=
              static_cast<double>(skipped) * static_cast<double>(median)) {
        missing += skipped;
      }
    }
    missing = std::min<std::int64_t>(missing, 1'000'000);
    if (missing > 0) {
      out_.notes.emplace_back("ProfilerStep numbers skip: steps without a span counted",
                              fmt::format("{}: {} step(s) between spans #{} and #{}", trace_.source,
                                          missing, numbers.front(), numbers.back()));
    }
    return missing;
  }

  const RankTrace& trace_;
  std::vector<std::uint32_t>& steps_;
  StepWindows& out_;
};

}  // namespace

bool is_step_span(const RankTrace& trace, const TraceEvent& e) {
  if (e.kind != EventKind::kUserAnnotation && e.kind != EventKind::kCpuOp) return false;
  if (e.name >= trace.names.size()) return false;
  return trace.names[e.name].rfind(kPrefix, 0) == 0;
}

StepWindows step_windows(const RankTrace& trace) {
  StepWindows out;
  // Per host thread: several processes in one file (or threads) run their steps at the same time.
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint32_t>> by_thread;
  std::vector<std::uint8_t> step_name(trace.names.size());
  for (std::size_t i = 0; i < trace.names.size(); ++i)
    step_name[i] = trace.names[i].rfind(kPrefix, 0) == 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if ((e.kind != EventKind::kUserAnnotation && e.kind != EventKind::kCpuOp) ||
        e.name >= step_name.size() || step_name[e.name] == 0) {
      continue;
    }
    by_thread[{e.pid, e.tid}].push_back(static_cast<std::uint32_t>(i));
  }
  for (auto& [thread, steps] : by_thread) {
    out.step_count = std::max(out.step_count, ThreadSteps(trace, steps, out).run());
    out.events.insert(out.events.end(), steps.begin(), steps.end());
  }
  std::stable_sort(out.events.begin(), out.events.end(), [&](std::uint32_t a, std::uint32_t b) {
    return trace.events[a].start_ns < trace.events[b].start_ns;
  });
  return out;
}

}  // namespace powertrain::graph
