// Rank classes: equal operation-hash sequences, then partition refinement by the classes seen
// across each collective. The multiset of a group's members is summarized by a commutative sum of
// member hashes, so a round costs O(members) even for a 1,000-rank all-reduce.
#include "emulate/dedup.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

namespace powertrain::emulate {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
std::uint64_t combine(std::uint64_t seed, std::uint64_t value) { return mix(seed ^ mix(value)); }
std::uint64_t combine(std::uint64_t seed, std::int64_t value) {
  return combine(seed, static_cast<std::uint64_t>(value));
}

std::uint64_t text_hash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<std::uint64_t> string_hashes(const ProcessTrace& trace) {
  std::vector<std::uint64_t> out(trace.strings.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = text_hash(trace.strings[i]);
  return out;
}

// Assigns dense ids to keys in the order of `order` (processes by rank), so ids are deterministic.
template <typename Key>
std::vector<std::int32_t> dense_ids(const std::vector<Key>& keys,
                                    const std::vector<std::int32_t>& order) {
  std::map<Key, std::int32_t> ids;
  std::vector<std::int32_t> out(keys.size());
  for (std::int32_t p : order) {
    auto [it, inserted] = ids.try_emplace(keys[p], static_cast<std::int32_t>(ids.size()));
    out[p] = it->second;
  }
  return out;
}

}  // namespace

std::uint64_t operation_hash(const ProcessTrace& trace, const Record& r,
                             const std::vector<std::uint64_t>& string_hash) {
  const auto str = [&](std::uint32_t index) {
    return index < string_hash.size() ? string_hash[index] : std::uint64_t{0};
  };
  std::uint64_t h = combine(static_cast<std::uint64_t>(r.op) + 1, std::int64_t{r.tid});
  h = combine(h, std::int64_t{r.device});
  switch (r.op) {
    case OpKind::kDeviceSync:
    case OpKind::kDeviceReset:
    case OpKind::kSetDevice:
      break;  // nothing beyond the kind, thread and device
    case OpKind::kRegister:
      h = combine(h, str(r.name));
      break;
    case OpKind::kKernel:
      h = combine(h, str(r.name));
      for (int i = 0; i < 3; ++i) h = combine(combine(h, r.grid[i]), r.block[i]);
      h = combine(combine(h, r.shared_bytes), r.stream);
      // A library kernel's own work (cuFFT, cuSPARSE); plain launches hash as before.
      if (r.bytes > 0 || r.flops > 0.0) {
        h = combine(combine(h, r.bytes), static_cast<std::int64_t>(std::min(r.flops, 9.0e18)));
      }
      break;
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      h = combine(h, static_cast<std::int64_t>(r.copy) * 2 + r.async);
      h = combine(combine(h, r.bytes), r.stream);
      break;
    case OpKind::kMalloc:
    case OpKind::kFree:
      h = combine(h, static_cast<std::int64_t>(r.memory) * 2 + r.ok);
      h = combine(combine(h, r.bytes), r.stream);
      break;
    case OpKind::kStreamCreate:
      h = combine(combine(h, r.stream), r.flags);
      break;
    case OpKind::kStreamDestroy:
    case OpKind::kStreamSync:
    case OpKind::kHostFunc:
    case OpKind::kGraphLaunch:
      h = combine(h, r.stream);
      break;
    case OpKind::kEventCreate:
    case OpKind::kEventDestroy:
    case OpKind::kEventSync:
      h = combine(h, r.event);
      break;
    case OpKind::kEventRecord:
    case OpKind::kStreamWaitEvent:
      h = combine(combine(h, r.event), r.stream);
      break;
    case OpKind::kCommInit:
      h = combine(h, std::int64_t{r.comm_size});
      break;
    case OpKind::kNccl: {
      h = combine(h, static_cast<std::int64_t>(r.collective));
      h = combine(combine(h, r.count), static_cast<std::int64_t>(r.dtype));
      h = combine(combine(h, r.bytes), std::int64_t{r.comm_size});
      h = combine(combine(h, r.stream), std::int64_t{r.group != 0});
      h = combine(h, std::int64_t{r.root});
      // A peer as an offset from the own rank: ring neighbours and the same pipeline stage of
      // every data-parallel replica hash alike.
      if (r.peer >= 0 && r.comm_size > 0) {
        h = combine(
            h, std::int64_t{((r.peer - r.comm_rank) % r.comm_size + r.comm_size) % r.comm_size});
      }
      break;
    }
    case OpKind::kClockLock:  // ranks locking different clocks run differently
      h = combine(combine(h, r.m), r.n);
      break;
    case OpKind::kGemm:
      h = combine(combine(combine(h, r.m), r.n), r.k);
      h = combine(combine(combine(h, r.batch), r.stream), r.bytes);
      h = combine(h, static_cast<std::int64_t>(r.dtype_a) << 16 |
                         static_cast<std::int64_t>(r.dtype_b) << 8 |
                         static_cast<std::int64_t>(r.dtype_c));
      h = combine(combine(h, str(r.name)), str(r.compute));
      break;
    case OpKind::kUnsupported:
    case OpKind::kMisuse:
    case OpKind::kAssumption:
      h = combine(combine(h, str(r.name)), str(r.detail));
      break;
  }
  (void)trace;
  return h;
}

std::vector<std::uint64_t> operation_hashes(const ProcessTrace& trace) {
  const std::vector<std::uint64_t> strings = string_hashes(trace);
  std::vector<std::uint64_t> out;
  out.reserve(trace.records.size());
  for (const Record& r : trace.records) out.push_back(operation_hash(trace, r, strings));
  return out;
}

RankClasses find_rank_classes(const std::vector<ProcessTrace>& processes,
                              const Collation& collation, bool enabled) {
  const std::int32_t n = static_cast<std::int32_t>(processes.size());
  RankClasses out;
  out.enabled = enabled;
  std::vector<std::int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::int32_t a, std::int32_t b) { return collation.rank[a] < collation.rank[b]; });

  // Operation sequences: hashed, then compared in full within a hash bucket.
  std::vector<std::vector<std::uint64_t>> sequences(n);
  out.sequence_hash.resize(n);
  for (std::int32_t p = 0; p < n; ++p) {
    sequences[p] = operation_hashes(processes[p]);
    std::uint64_t h = combine(0x5eed, std::int64_t{processes[p].process.devices});
    for (std::uint64_t op : sequences[p]) h = combine(h, op);
    out.sequence_hash[p] = h;
  }
  std::vector<std::int32_t> cls(n);
  if (!enabled) {
    for (std::int32_t i = 0; i < n; ++i) cls[order[i]] = i;
  } else {
    std::unordered_map<std::uint64_t, std::vector<std::int32_t>> bucket;  // hash → classes' reps
    std::vector<std::int32_t> rep_of_class;
    for (std::int32_t p : order) {
      auto& candidates = bucket[out.sequence_hash[p]];
      std::int32_t found = -1;
      for (std::int32_t c : candidates) {
        const std::int32_t rep = rep_of_class[c];
        if (processes[rep].process.devices == processes[p].process.devices &&
            sequences[rep] == sequences[p]) {
          found = c;
          break;
        }
      }
      if (found < 0) {
        found = static_cast<std::int32_t>(rep_of_class.size());
        rep_of_class.push_back(p);
        candidates.push_back(found);
      }
      cls[p] = found;
    }
    // Refinement: a member's signature is its class plus, per collective call in order, the
    // multiset of (class, record) of the other members.
    std::int32_t classes = static_cast<std::int32_t>(rep_of_class.size());
    std::vector<std::uint64_t> group_sum(collation.groups.size());
    for (;;) {
      for (std::size_t g = 0; g < collation.groups.size(); ++g) {
        std::uint64_t sum = 0;
        for (const OpRef& m : collation.groups[g].members) {
          sum += combine(static_cast<std::uint64_t>(cls[m.process]), std::int64_t{m.record});
        }
        group_sum[g] = sum;
      }
      std::vector<std::pair<std::int32_t, std::uint64_t>> keys(n);
      for (std::int32_t p = 0; p < n; ++p) {
        std::uint64_t sig = 0;
        const auto& groups = collation.group_of_record[p];
        for (const std::int32_t i : processes[p].comm_records) {
          if (groups[i] < 0) continue;
          const std::uint64_t self =
              combine(static_cast<std::uint64_t>(cls[p]), static_cast<std::int64_t>(i));
          sig = combine(sig, group_sum[groups[i]] - self);
        }
        keys[p] = {cls[p], sig};
      }
      const std::vector<std::int32_t> refined = dense_ids(keys, order);
      const std::int32_t count = *std::max_element(refined.begin(), refined.end()) + 1;
      ++out.refinement_rounds;
      cls = refined;
      if (count == classes) break;
      classes = count;
    }
  }
  const std::int32_t classes = n == 0 ? 0 : *std::max_element(cls.begin(), cls.end()) + 1;
  out.class_of = cls;
  out.representative.assign(classes, -1);
  out.size.assign(classes, 0);
  for (std::int32_t p : order) {
    if (out.representative[cls[p]] < 0) out.representative[cls[p]] = p;
    ++out.size[cls[p]];
  }
  return out;
}

}  // namespace powertrain::emulate
