// CUDA graphs through stream capture. While a stream captures, the records of work enqueued on it
// (kernels, copies, memsets, host functions) become graph nodes instead of trace lines, and event
// records/waits become edges (a stream that waits for an event recorded in a capture joins it).
// cudaGraphInstantiate assigns every node a lane (the launch stream, or an internal non-blocking
// stream for a parallel branch); cudaGraphLaunch writes a `graph_launch` record and replays the
// nodes as ordinary records of that call (same entry time, `graph` = the exec id), with
// event_record / stream_wait_event records for the edges between lanes, so the pipeline predicts
// the kernels with their dependencies and charges one launch for the whole graph.
// Handles are heap objects in a registry, never freed (a destroyed handle stays invalid).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {

std::atomic<int> g_capturing_streams{0};

namespace {

struct Node {
  Record record;
  std::vector<int> deps;
  cudaHostFn_t fn = nullptr;
  void* user = nullptr;
};

struct Graph {
  std::int64_t id = 0;
  int device = 0;
  std::vector<Node> nodes;
  bool live = true;
  bool capturing = false;  // still being captured (not instantiable)
};

struct Exec {
  std::int64_t id = 0;
  int device = 0;
  std::vector<Node> nodes;
  std::vector<int> lane;               // per node
  std::vector<std::int64_t> event_of;  // per node: event recorded after it (0: none)
  int lanes = 1;
  std::vector<std::int64_t> lane_stream;  // lanes 1..: internal streams (index 0 unused)
  std::int64_t start_event = 0;
  std::vector<std::int64_t> end_event;  // per lane ≥ 1
  bool streams_announced = false;
  bool live = true;
};

struct Capture {
  Graph* graph = nullptr;
  std::vector<int> tail;  // nodes the stream's next work depends on
  std::int64_t origin = 0;
  std::uint64_t id = 0;
};

struct State {
  std::mutex mutex;
  std::unordered_set<const Graph*> graphs;
  std::unordered_set<const Exec*> execs;
  std::map<std::int64_t, Capture> capturing;                          // stream id → capture
  std::map<std::int64_t, std::pair<Graph*, std::vector<int>>> marks;  // captured event records
  std::int64_t next_graph = 1;
  std::int64_t next_exec = 1;
  std::uint64_t next_capture = 1;
};

State& state() {
  static State* s = new State;  // never destroyed
  return *s;
}

thread_local cudaHostFn_t t_pending_fn = nullptr;
thread_local void* t_pending_user = nullptr;
thread_local bool t_captured = false;
thread_local bool t_replaying = false;

Graph* live_graph(State& s, cudaGraph_t handle) {
  auto* g = reinterpret_cast<Graph*>(handle);
  return s.graphs.count(g) > 0 && g->live ? g : nullptr;
}

Exec* live_exec(State& s, cudaGraphExec_t handle) {
  auto* e = reinterpret_cast<Exec*>(handle);
  return s.execs.count(e) > 0 && e->live ? e : nullptr;
}

void add_unique(std::vector<int>& to, const std::vector<int>& from) {
  for (int n : from) {
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
  }
}

// Lanes: a node continues the lane of its first dependency whose lane still ends there;
// otherwise it opens a new lane (lane 0 = the launch stream, taken by the first root).
void plan(Exec& e) {
  const int n = static_cast<int>(e.nodes.size());
  e.lane.assign(n, 0);
  e.event_of.assign(n, 0);
  std::vector<int> lane_end;  // last node of each lane
  for (int i = 0; i < n; ++i) {
    int chosen = -1;
    for (int d : e.nodes[i].deps) {
      if (lane_end[e.lane[d]] == d) {
        chosen = e.lane[d];
        break;
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(lane_end.size());
      lane_end.push_back(i);
    }
    e.lane[i] = chosen;
    lane_end[chosen] = i;
  }
  e.lanes = std::max<int>(1, static_cast<int>(lane_end.size()));
}

}  // namespace

bool capture_record(Record& record) {
  if (t_replaying) return false;
  switch (record.op) {
    case Op::kKernel:
    case Op::kMemcpy:
    case Op::kMemset:
    case Op::kHostFunc:
    case Op::kEventRecord:
    case Op::kStreamWaitEvent:
      break;
    default:
      return false;
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::int64_t stream = record.a[0];
  auto it = s.capturing.find(stream);
  if (record.op == Op::kStreamWaitEvent) {
    const auto mark = s.marks.find(record.a[1]);
    if (mark == s.marks.end()) {
      if (it == s.capturing.end()) return false;
      t_captured = true;  // a wait for work from before the capture: already ordered
      return true;
    }
    Graph* graph = mark->second.first;
    if (it == s.capturing.end()) {
      // The stream joins the capture (cross-stream capture through an event).
      Capture joined;
      joined.graph = graph;
      joined.tail = mark->second.second;
      for (const auto& [id, c] : s.capturing) {
        if (c.graph == graph) {
          joined.origin = c.origin;
          joined.id = c.id;
          break;
        }
      }
      s.capturing.emplace(stream, joined);
      g_capturing_streams.fetch_add(1, std::memory_order_relaxed);
    } else {
      add_unique(it->second.tail, mark->second.second);
    }
    t_captured = true;
    return true;
  }
  if (it == s.capturing.end()) return false;
  Capture& c = it->second;
  if (record.op == Op::kEventRecord) {
    s.marks[record.a[1]] = {c.graph, c.tail};
    t_captured = true;
    return true;
  }
  Node node;
  node.record = record;
  node.deps = c.tail;
  if (record.op == Op::kHostFunc) {
    node.fn = t_pending_fn;
    node.user = t_pending_user;
  }
  c.graph->nodes.push_back(std::move(node));
  c.tail = {static_cast<int>(c.graph->nodes.size()) - 1};
  t_captured = true;
  return true;
}

void set_pending_host_fn(cudaHostFn_t fn, void* user) {
  t_pending_fn = fn;
  t_pending_user = user;
  t_captured = false;
}

bool take_captured() {
  const bool captured = t_captured;
  t_captured = false;
  t_pending_fn = nullptr;
  t_pending_user = nullptr;
  return captured;
}

bool stream_capture_status(std::int64_t stream, unsigned long long* id, cudaGraph_t* graph) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.capturing.find(stream);
  if (it == s.capturing.end()) return false;
  if (id != nullptr) *id = it->second.id;
  if (graph != nullptr) *graph = reinterpret_cast<cudaGraph_t>(it->second.graph);
  return true;
}

namespace impl {

cudaError_t begin_capture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread,
                          const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return misuse(api, cudaErrorInvalidValue, "unknown capture mode " + std::to_string(mode));
  }
  if (ref.id == kLegacyDefaultStream) {
    // As the runtime: the legacy NULL stream synchronizes with everything and cannot capture.
    return misuse(api, cudaErrorStreamCaptureUnsupported,
                  "the legacy default stream cannot be captured; use a created stream");
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.capturing.count(ref.id) > 0) {
    return misuse(api, cudaErrorIllegalState,
                  "stream " + std::to_string(ref.id) + " is already capturing");
  }
  auto* graph = new Graph;
  graph->id = s.next_graph++;
  graph->device = ref.device;
  graph->capturing = true;
  s.graphs.insert(graph);
  Capture c;
  c.graph = graph;
  c.origin = ref.id;
  c.id = s.next_capture++;
  s.capturing.emplace(ref.id, c);
  g_capturing_streams.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* out, bool per_thread, const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "pGraph is NULL");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.capturing.find(ref.id);
  if (it == s.capturing.end() || it->second.origin != ref.id) {
    return misuse(api, cudaErrorIllegalState,
                  "stream " + std::to_string(ref.id) + " is not the origin of a capture");
  }
  Graph* graph = it->second.graph;
  for (auto c = s.capturing.begin(); c != s.capturing.end();) {
    if (c->second.graph == graph) {
      c = s.capturing.erase(c);
      g_capturing_streams.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++c;
    }
  }
  for (auto m = s.marks.begin(); m != s.marks.end();) {
    m = m->second.first == graph ? s.marks.erase(m) : std::next(m);
  }
  graph->capturing = false;
  *out = reinterpret_cast<cudaGraph_t>(graph);
  return cudaSuccess;
}

cudaError_t graph_launch(cudaGraphExec_t handle, cudaStream_t stream, bool per_thread,
                         const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  State& s = state();
  std::vector<Node> nodes;
  Exec copy;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    Exec* e = live_exec(s, handle);
    if (e == nullptr) {
      return misuse(api, cudaErrorInvalidResourceHandle,
                    "invalid or destroyed graph exec " + pointer_text(handle));
    }
    if (!e->streams_announced) {
      for (int l = 1; l < e->lanes; ++l) e->lane_stream[l] = reserve_internal_stream(e->device);
    }
    copy = *e;
    e->streams_announced = true;
  }
  const int tid = thread_index();
  const int dev = ref.device;
  RecordBuilder launch = begin_record("graph_launch", start, dev);
  launch.field("stream", ref.id);
  launch.field("corr", next_correlation());
  launch.field("graph", copy.id);
  launch.field("nodes", static_cast<std::int64_t>(copy.nodes.size()));
  launch.field("api", std::string_view(api));
  end_record(launch);

  // Every replayed record carries the launch's entry time: one call, charged once.
  t_replaying = true;
  const auto emit = [&](Record r) {
    r.t = start;
    r.dt = 0;
    r.tid = tid;
    r.dev = dev;
    r.graph = copy.id;
    append(std::move(r));
  };
  const auto lane_stream = [&](int lane) { return lane == 0 ? ref.id : copy.lane_stream[lane]; };
  const auto event_record = [&](std::int64_t on, std::int64_t event) {
    Record r;
    r.op = Op::kEventRecord;
    r.a[0] = on;
    r.a[1] = event;
    r.a[2] = next_correlation();
    r.api = "cudaGraphLaunch";
    emit(r);
  };
  const auto wait = [&](std::int64_t on, std::int64_t event) {
    Record r;
    r.op = Op::kStreamWaitEvent;
    r.a[0] = on;
    r.a[1] = event;
    r.a[2] = next_correlation();
    r.api = "cudaGraphLaunch";
    emit(r);
  };
  if (!copy.streams_announced) {
    for (int l = 1; l < copy.lanes; ++l) {
      Record r;
      r.op = Op::kStreamCreate;
      r.a[0] = copy.lane_stream[l];
      r.a[1] = cudaStreamNonBlocking;
      emit(r);
    }
  }
  if (copy.lanes > 1) {
    event_record(ref.id, copy.start_event);
    for (int l = 1; l < copy.lanes; ++l) wait(copy.lane_stream[l], copy.start_event);
  }
  for (std::size_t i = 0; i < copy.nodes.size(); ++i) {
    const Node& node = copy.nodes[i];
    const std::int64_t on = lane_stream(copy.lane[i]);
    for (int d : node.deps) {
      if (copy.lane[d] != copy.lane[i]) wait(on, copy.event_of[d]);
    }
    Record r = node.record;
    r.a[0] = on;
    r.a[1] = next_correlation();
    emit(r);
    if (node.fn != nullptr) node.fn(node.user);
    if (copy.event_of[i] != 0) event_record(on, copy.event_of[i]);
  }
  for (int l = 1; l < copy.lanes; ++l) {
    event_record(copy.lane_stream[l], copy.end_event[l]);
    wait(ref.id, copy.end_event[l]);
  }
  t_replaying = false;
  return cudaSuccess;
}

}  // namespace impl
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::misuse;

PT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return impl::begin_capture(stream, mode, false, "cudaStreamBeginCapture");
}

PT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return impl::end_capture(stream, pGraph, false, "cudaStreamEndCapture");
}

PT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return impl::graph_launch(graphExec, stream, false, "cudaGraphLaunch");
}

PT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags) {
  const char* api = "cudaGraphInstantiate";
  if (pGraphExec == nullptr) return misuse(api, cudaErrorInvalidValue, "pGraphExec is NULL");
  (void)flags;  // auto-free-on-launch, upload, device launch, priority: no effect here
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid or destroyed graph " + detail::pointer_text(graph));
  }
  if (g->capturing) {
    return misuse(api, cudaErrorStreamCaptureUnjoined, "the graph is still being captured");
  }
  auto* e = new detail::Exec;
  e->id = s.next_exec++;
  e->device = g->device;
  e->nodes = g->nodes;
  detail::plan(*e);
  e->lane_stream.assign(e->lanes, 0);
  if (e->lanes > 1) {
    e->start_event = detail::reserve_internal_event(e->device);
    e->end_event.assign(e->lanes, 0);
    for (int l = 1; l < e->lanes; ++l) e->end_event[l] = detail::reserve_internal_event(e->device);
  }
  for (std::size_t i = 0; i < e->nodes.size(); ++i) {
    for (int d : e->nodes[i].deps) {
      if (e->lane[d] != e->lane[i] && e->event_of[d] == 0) {
        e->event_of[d] = detail::reserve_internal_event(e->device);
      }
    }
  }
  s.execs.insert(e);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags) {
  return cudaGraphInstantiate(pGraphExec, graph, flags);
}

PT_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                          cudaGraphExecUpdateResultInfo* resultInfo) {
  const char* api = "cudaGraphExecUpdate";
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Exec* e = detail::live_exec(s, hGraphExec);
  detail::Graph* g = detail::live_graph(s, hGraph);
  if (e == nullptr || g == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "invalid or destroyed graph or graph exec");
  }
  if (resultInfo != nullptr) *resultInfo = cudaGraphExecUpdateResultInfo{};
  // Parameters may change, the topology and node types may not (as the runtime requires).
  bool same = g->nodes.size() == e->nodes.size();
  for (std::size_t i = 0; same && i < g->nodes.size(); ++i) {
    same = g->nodes[i].record.op == e->nodes[i].record.op && g->nodes[i].deps == e->nodes[i].deps;
  }
  if (!same) {
    if (resultInfo != nullptr) resultInfo->result = cudaGraphExecUpdateErrorTopologyChanged;
    return detail::fail(cudaErrorGraphExecUpdateFailure);
  }
  for (std::size_t i = 0; i < g->nodes.size(); ++i) {
    e->nodes[i].record = g->nodes[i].record;
    e->nodes[i].fn = g->nodes[i].fn;
    e->nodes[i].user = g->nodes[i].user;
  }
  if (resultInfo != nullptr) resultInfo->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Exec* e = detail::live_exec(s, graphExec);
  if (e == nullptr) {
    return misuse("cudaGraphExecDestroy", cudaErrorInvalidValue,
                  "invalid or destroyed graph exec " + detail::pointer_text(graphExec));
  }
  e->live = false;
  e->nodes.clear();
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || g->capturing) {
    return misuse("cudaGraphDestroy", cudaErrorInvalidValue,
                  "invalid, destroyed or capturing graph " + detail::pointer_text(graph));
  }
  g->live = false;
  g->nodes.clear();
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes,
                                        size_t* numNodes) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || numNodes == nullptr) {
    return misuse("cudaGraphGetNodes", cudaErrorInvalidValue, "invalid graph or numNodes NULL");
  }
  if (nodes == nullptr) {
    *numNodes = g->nodes.size();
    return cudaSuccess;
  }
  // Node handles: tagged (graph node index + 1); not dereferenced anywhere.
  const std::size_t n = std::min(*numNodes, g->nodes.size());
  for (std::size_t i = 0; i < n; ++i) {
    nodes[i] = reinterpret_cast<cudaGraphNode_t>((std::uintptr_t{0x4e44} << 48) | (i + 1));
  }
  *numNodes = n;
  return cudaSuccess;
}
