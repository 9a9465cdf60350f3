#include "search/batch.h"

#include <utility>

namespace powertrain::search {

BatchEvaluator::BatchEvaluator(const SearchSpec& spec, MpiWorld world, int threads,
                               EmulationRunner emulation, Checkpoint* checkpoint)
    : spec_(spec),
      world_(world),
      threads_(threads),
      emulation_(std::move(emulation)),
      checkpoint_(checkpoint) {}

TrialResult BatchEvaluator::evaluate_one(const TrialResult& fits, const BoundFilter& skip) const {
  if (spec_.emulation.enabled()) return emulation_.evaluate(spec_, fits);
  return evaluate_config(spec_, fits.config, skip);
}

void BatchEvaluator::operator()(const SearchSpec& spec, std::vector<TrialResult>& batch,
                                const BoundFilter& skip) {
  (void)spec;  // the constructor's, which the workers share
  const bool dedup = spec_.emulation.enabled();
  std::vector<std::size_t> todo;
  std::map<std::string, std::size_t> leader;  // key → index in this batch that runs it
  std::vector<std::pair<std::size_t, std::string>> followers;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (checkpoint_ != nullptr) {
      // A bound-pruned trial depends on the frontier found before it (another algorithm's run
      // may have had a different one): plan it again rather than reuse the verdict.
      if (const TrialResult* done = checkpoint_->find(batch[i].config);
          done != nullptr && done->status != TrialStatus::kPrunedBound) {
        batch[i] = *done;
        ++stats_.restored;
        if (dedup) emulated_.emplace(emulation_key(spec_, batch[i]), batch[i]);
        continue;
      }
    }
    if (dedup) {
      std::string key = emulation_key(spec_, batch[i]);
      if (auto it = emulated_.find(key); it != emulated_.end()) {
        batch[i] = reuse_emulation(it->second, batch[i]);
        ++stats_.deduplicated;
        if (checkpoint_ != nullptr)
          if (auto appended = checkpoint_->append(batch[i]); !appended && error_.empty())
            error_ = appended.error().message;
        continue;
      }
      if (leader.count(key) != 0) {
        followers.emplace_back(i, std::move(key));
        continue;
      }
      leader.emplace(key, i);
    }
    todo.push_back(i);
  }
  auto on_done = [&](std::size_t i) {
    ++stats_.evaluated;
    // A bound-pruned verdict is not logged: it is cheap to decide again and depends on the
    // frontier found before it.
    if (checkpoint_ != nullptr && batch[i].status != TrialStatus::kPrunedBound)
      if (auto appended = checkpoint_->append(batch[i]); !appended && error_.empty())
        error_ = appended.error().message;
  };
  distribute_trials(
      world_, batch, todo, threads_,
      [this, &skip](const TrialResult& fits) { return evaluate_one(fits, skip); }, on_done);
  if (dedup) {
    for (const auto& [key, i] : leader) emulated_.emplace(key, batch[i]);
    for (const auto& [i, key] : followers) {
      batch[i] = reuse_emulation(batch[leader.at(key)], batch[i]);
      ++stats_.deduplicated;
      if (checkpoint_ != nullptr)
        if (auto appended = checkpoint_->append(batch[i]); !appended && error_.empty())
          error_ = appended.error().message;
    }
  }
}

}  // namespace powertrain::search
