#include "emulate/sequential_processes.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "graph/execution_graph.h"

namespace powertrain::emulate {
namespace {

// Processes of one rank further apart than this (about 52 days; with the reader's 2^53 ns per
// trace their joined times stay below 2^54) are not one run.
constexpr std::int64_t kMaxStartSpreadNs = std::int64_t{1} << 52;

// The process's last moment on its own clock: the end of its last call.
std::int64_t last_end_ns(const ProcessTrace& trace) {
  std::int64_t end = 0;
  for (const Record& r : trace.records) end = std::max(end, r.t_ns + r.dt_ns);
  for (const Annotation& a : trace.annotations) end = std::max(end, a.t_ns);
  return end;
}

std::string describe(const ProcessTrace& trace) {
  return fmt::format("'{}' (pid {}, {})", trace.source, trace.process.pid,
                     trace.process.program.empty() ? "program unknown" : trace.process.program);
}

std::uint32_t rebased(std::uint32_t index, std::uint32_t offset) {
  return index == kNoString ? kNoString : index + offset;
}

// Appends `next` to `into`, whose clock it joins `shift_ns` after `into`'s start.
void append(ProcessTrace& into, ProcessTrace&& next, std::int64_t shift_ns) {
  const auto string_offset = static_cast<std::uint32_t>(into.strings.size());
  const auto record_offset = static_cast<std::int32_t>(into.records.size());
  std::int64_t correlation_offset = 0;
  for (const Record& r : into.records) {
    correlation_offset = std::max(correlation_offset, r.correlation + 1);
  }
  for (std::string& s : next.strings) into.strings.push_back(std::move(s));
  into.records.reserve(into.records.size() + next.records.size());
  for (Record r : next.records) {
    r.t_ns += shift_ns;
    r.name = rebased(r.name, string_offset);
    r.detail = rebased(r.detail, string_offset);
    r.compute = rebased(r.compute, string_offset);
    if (r.correlation >= 0) r.correlation += correlation_offset;
    into.records.push_back(r);
  }
  // NVTX range ids restart in every process; a range the earlier one left open keeps its own.
  std::int64_t range_offset = 0;
  for (const Annotation& a : into.annotations) range_offset = std::max(range_offset, a.id + 1);
  for (Annotation a : next.annotations) {
    a.t_ns += shift_ns;
    a.name = rebased(a.name, string_offset);
    if (a.kind == Annotation::Kind::kStart || a.kind == Annotation::Kind::kEnd)
      a.id += range_offset;
    into.annotations.push_back(a);
  }
  for (std::int32_t i : next.comm_records) into.comm_records.push_back(i + record_offset);
  into.has_exit = into.has_exit && next.has_exit;
  if (into.exit_peak_used_bytes.size() < next.exit_peak_used_bytes.size()) {
    into.exit_peak_used_bytes.resize(next.exit_peak_used_bytes.size(), 0);
  }
  for (std::size_t d = 0; d < next.exit_peak_used_bytes.size(); ++d) {
    into.exit_peak_used_bytes[d] =
        std::max(into.exit_peak_used_bytes[d], next.exit_peak_used_bytes[d]);
  }
  graph::merge_warnings(into.warnings, next.warnings);
  into.source += " then " + next.source;
}

// Process `pid`'s exit as its devices see it: every device's work awaited (context teardown).
void append_exit(ProcessTrace& trace, std::int64_t at_ns, std::int64_t pid) {
  const auto name = static_cast<std::uint32_t>(trace.strings.size());
  trace.strings.push_back(fmt::format("process exit (pid {})", pid));
  const std::int32_t line = trace.records.empty() ? 0 : trace.records.back().line;
  for (int d = 0; d < trace.process.devices; ++d) {
    Record r;
    r.op = OpKind::kDeviceReset;
    r.line = line;
    r.t_ns = at_ns;
    r.device = d;
    r.name = name;
    trace.records.push_back(r);
  }
}

// The devices a process put work or memory on.
std::set<int> devices_used(const ProcessTrace& trace) {
  std::set<int> devices;
  for (const Record& r : trace.records) {
    const bool device_memory =
        (r.op == OpKind::kMalloc || r.op == OpKind::kFree) && r.memory != MemoryKind::kHost;
    if (enqueues_gpu_work(r.op) || device_memory || r.op == OpKind::kCommInit ||
        r.op == OpKind::kGraphLaunch) {
      devices.insert(r.device);
    }
  }
  return devices;
}

// A process that drove one device `d` of a multi-device rank becomes that device's own rank
// (global GPU index rank × devices + d, as before) with one device.
void make_device_rank(ProcessTrace& trace, int device) {
  trace.process.rank = trace.process.rank * trace.process.devices + device;
  trace.process.devices = 1;
  for (Record& r : trace.records) r.device = 0;
  const std::int64_t peak = static_cast<std::size_t>(device) < trace.exit_peak_used_bytes.size()
                                ? trace.exit_peak_used_bytes[device]
                                : 0;
  if (!trace.exit_peak_used_bytes.empty()) trace.exit_peak_used_bytes = {peak};
}

// Joins `members` (indices into `processes`, sorted by start, none overlapping the next) into
// the first and marks the others as joined away.
void join_in_sequence(std::vector<ProcessTrace>& processes, const std::vector<std::size_t>& members,
                      int rank, std::vector<bool>& joined_away,
                      std::vector<trace::TraceWarning>& warnings) {
  ProcessTrace& first = processes[members[0]];
  const std::string first_description = describe(first);
  std::int64_t end_ns = last_end_ns(first);  // on the first process's clock
  std::int64_t exited_pid = first.process.pid;
  for (std::size_t k = 1; k < members.size(); ++k) {
    ProcessTrace& next = processes[members[k]];
    const std::int64_t start_ns = next.process.start_unix_ns - first.process.start_unix_ns;
    graph::add_warning(
        warnings,
        "processes of one rank that ran one after another are joined into one timeline (a "
        "script running several CUDA programs; each exit waits for its GPU work)",
        fmt::format("rank {}: {} then {}, {:.3f} ms later", rank, first_description, describe(next),
                    static_cast<double>(start_ns - end_ns) / 1e6));
    append_exit(first, end_ns, exited_pid);
    const std::int64_t next_end_ns = start_ns + last_end_ns(next);
    exited_pid = next.process.pid;
    append(first, std::move(next), start_ns);
    end_ns = next_end_ns;
    joined_away[members[k]] = true;
  }
}

std::int64_t gpu_work_records(const ProcessTrace& trace) {
  std::int64_t n = 0;
  for (const Record& r : trace.records) n += enqueues_gpu_work(r.op);
  return n;
}

bool overlaps_any(const std::vector<ProcessTrace>& processes,
                  const std::vector<std::size_t>& members) {
  for (std::size_t k = 1; k < members.size(); ++k) {
    const ProcessTrace& before = processes[members[k - 1]];
    const ProcessTrace& after = processes[members[k]];
    if (after.process.start_unix_ns < before.process.start_unix_ns + last_end_ns(before)) {
      return true;
    }
  }
  return false;
}

// The processes of one rank on the same device(s), sorted by start: joined in sequence, or,
// where two ran at the same time (a GPU time-shared by processes, which is not modelled), only
// the one with the most GPU work is kept and the others are left out with a warning. Returns
// the index of the trace that stands for them.
std::size_t resolve_on_one_device(std::vector<ProcessTrace>& processes,
                                  const std::vector<std::size_t>& members, int rank,
                                  std::vector<bool>& joined_away,
                                  std::vector<trace::TraceWarning>& warnings) {
  if (!overlaps_any(processes, members)) {
    join_in_sequence(processes, members, rank, joined_away, warnings);
    return members[0];
  }
  std::map<std::size_t, std::int64_t> work;  // by process index
  std::size_t kept = members[0];
  for (std::size_t i : members) {
    work[i] = gpu_work_records(processes[i]);
    if (work[i] > work[kept]) kept = i;
  }
  for (std::size_t i : members) {
    if (i == kept) continue;
    graph::add_warning(
        warnings,
        "processes of one rank that ran at the same time on the same device(s): only the one "
        "with the most GPU work is modelled, the others are left out (a GPU time-shared by "
        "processes is not modelled; `powertrain emulate --ranks N` gives each process its own "
        "rank)",
        fmt::format("rank {}: {} kept, {} left out ({} GPU task(s))", rank,
                    describe(processes[kept]), describe(processes[i]), work[i]));
    joined_away[i] = true;
  }
  return kept;
}

// Whether two of the processes initialized ranks of one NCCL communicator.
bool shares_a_communicator(const std::vector<ProcessTrace>& processes,
                           const std::vector<std::size_t>& members) {
  std::map<std::string_view, std::size_t> first_member;
  for (std::size_t i : members) {
    const ProcessTrace& trace = processes[i];
    for (std::int32_t c : trace.comm_records) {
      const Record& r = trace.records[c];
      if (r.op != OpKind::kCommInit || r.detail == kNoString) continue;
      const auto [it, inserted] = first_member.emplace(trace.str(r.detail), i);
      if (!inserted && it->second != i) return true;
    }
  }
  return false;
}

}  // namespace

core::Result<std::vector<ProcessTrace>> join_sequential_processes(
    std::vector<ProcessTrace> processes, std::vector<trace::TraceWarning>& warnings) {
  std::map<int, std::vector<std::size_t>> by_rank;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].process.rank >= 0) by_rank[processes[i].process.rank].push_back(i);
  }
  std::vector<bool> joined_away(processes.size(), false);
  std::vector<int> split_ranks, split_devices;  // ranks split into one rank per device
  for (auto& [rank, members] : by_rank) {
    if (members.size() < 2) continue;
    for (std::size_t i : members) {
      if (processes[i].process.start_unix_ns <= 0) {
        return core::Error{fmt::format(
            "traces {} and {} are both rank {}, and {} has no start time (start_unix_ns), so "
            "they cannot be ordered",
            describe(processes[members[0]]), describe(processes[members[1]]), rank,
            processes[i].source)};
      }
    }
    std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      return processes[a].process.start_unix_ns < processes[b].process.start_unix_ns;
    });
    // One run's processes start within days of each other (and a joined trace's times stay below
    // 2^54 ns).
    const ProcessTrace& earliest = processes[members.front()];
    const ProcessTrace& latest = processes[members.back()];
    if (latest.process.start_unix_ns - earliest.process.start_unix_ns > kMaxStartSpreadNs) {
      return core::Error{fmt::format(
          "traces {} and {} are both rank {} but started {:.1f} days apart: not one run",
          describe(earliest), describe(latest), rank,
          static_cast<double>(latest.process.start_unix_ns - earliest.process.start_unix_ns) /
              86'400e9)};
    }
    const ProcessTrace& first = processes[members[0]];
    for (std::size_t k = 1; k < members.size(); ++k) {
      const ProcessTrace& next = processes[members[k]];
      if (next.process.devices != first.process.devices || next.process.gpu != first.process.gpu) {
        return core::Error{fmt::format(
            "traces {} and {} are both rank {} but emulate different GPUs ({} x {} and {} x {})",
            describe(first), describe(next), rank, first.process.devices, first.process.gpu,
            next.process.devices, next.process.gpu)};
      }
    }
    // Workers of one launcher (torch.multiprocessing.spawn): each drives one device of the rank,
    // the devices differ, and they overlap or share a communicator. Sharing one, they ran
    // together even where the host clock shows no overlap (an emulated collective does not wait
    // for its peers).
    std::map<int, std::vector<std::size_t>> by_device;
    std::vector<std::size_t> without_work;
    bool one_device_each = true;
    for (std::size_t i : members) {
      const std::set<int> used = devices_used(processes[i]);
      if (used.size() > 1) one_device_each = false;
      if (used.size() == 1) by_device[*used.begin()].push_back(i);
      if (used.empty()) without_work.push_back(i);
    }
    // On different devices, and together: overlapping on the host clock, or in one communicator.
    const bool workers =
        one_device_each && by_device.size() > 1 &&
        (overlaps_any(processes, members) || shares_a_communicator(processes, members));
    if (!workers) {
      resolve_on_one_device(processes, members, rank, joined_away, warnings);
      continue;
    }
    // One rank per device, the processes on each device resolved as above; those that used no
    // device (the launcher itself) are left out.
    for (std::size_t i : without_work) {
      graph::add_warning(warnings,
                         "a process that ran alongside others of its rank without GPU work is "
                         "left out (e.g. the launcher of multiprocessing workers)",
                         fmt::format("rank {}: {}", rank, describe(processes[i])));
      joined_away[i] = true;
    }
    split_ranks.push_back(rank);
    split_devices.push_back(processes[members.front()].process.devices);
    for (auto& [device, on_device] : by_device) {
      ProcessTrace& kept =
          processes[resolve_on_one_device(processes, on_device, rank, joined_away, warnings)];
      const std::string before = describe(kept);
      make_device_rank(kept, device);
      graph::add_warning(
          warnings,
          "processes of one rank that ran at the same time, each driving a device "
          "of its own (multiprocessing workers), are modelled as one rank per "
          "device",
          fmt::format("rank {} device {}: {} is rank {}", rank, device, before, kept.process.rank));
    }
  }
  std::vector<ProcessTrace> out;
  out.reserve(processes.size());
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (!joined_away[i]) out.push_back(std::move(processes[i]));
  }
  // A split rank's workers are numbered rank × devices + device; a rank of the job that was not
  // split keeps its own number and devices, and the two may meet.
  if (!split_ranks.empty()) {
    std::map<int, const ProcessTrace*> by_number;
    for (const ProcessTrace& p : out) {
      if (p.process.rank < 0) continue;
      const auto [it, fresh] = by_number.emplace(p.process.rank, &p);
      if (!fresh) {
        return core::Error{fmt::format(
            "traces {} and {} are both rank {}: rank {}'s workers, each driving one of its {} "
            "devices, are modelled as one rank per device, and other ranks of the job run one "
            "process each; mixed layouts are not modelled (start every process with its own rank)",
            describe(*it->second), describe(p), p.process.rank, split_ranks.front(),
            split_devices.front())};
      }
    }
  }
  return out;
}

}  // namespace powertrain::emulate
