// CUDA graphs through stream capture. While a stream captures, the records of work enqueued on it
// (kernels, copies, memsets, host functions) become graph nodes instead of trace lines, and event
// records/waits become edges (a stream that waits for an event recorded in a capture joins it).
// cudaGraphInstantiate assigns every node a lane (the launch stream, or an internal non-blocking
// stream for a parallel branch); cudaGraphLaunch writes a `graph_launch` record and replays the
// nodes as ordinary records of that call (same entry time, `graph` = the exec id), with
// event_record / stream_wait_event records for the edges between lanes, so the pipeline predicts
// the kernels with their dependencies and charges one launch for the whole graph.
// Handles are heap objects in a registry, never freed (a destroyed handle stays invalid).
#include <driver_functions.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {

std::atomic<int> g_capturing_streams{0};

namespace {

struct Graph;

struct Node {
  Record record;
  std::vector<int> deps;
  cudaHostFn_t fn = nullptr;
  void* user = nullptr;
  bool empty = false;    // no work: an empty node or a child graph's join (dependencies only)
  bool inlined = false;  // copied from a child graph: not one of the graph's own nodes
  std::vector<int> outer_deps;  // a child graph node: its dependencies in the parent (the
                                // inlined roots carry them; `deps` are the child's sinks)
  cudaGraphNodeType type = cudaGraphNodeTypeKernel;
  cudaKernelNodeParams kernel{};   // explicit kernel nodes: the parameters as given
  cudaMemAllocNodeParams alloc{};  // memory alloc nodes: the parameters with dptr filled in
  void* free_ptr = nullptr;        // memory free nodes
  cudaMemcpy3DParms copy{};        // explicit copy nodes: the parameters as given
  cudaMemsetParams memset{};       // explicit memset nodes
  cudaEvent_t event = nullptr;     // event record and wait nodes
  bool disabled = false;           // in an exec: cudaGraphNodeSetEnabled(..., 0), runs as empty
  bool destroyed = false;          // cudaGraphDestroyNode: an empty slot, its handle invalid
  std::map<int, cudaLaunchAttributeValue> attributes;  // kernel nodes: as set (hints, kept)
  int child_first = -1;       // a child graph node: index of its first inlined node
  Graph* embedded = nullptr;  // a child graph node: the copy cudaGraphChildGraphNodeGetGraph gives
  // A conditional node: its handle, kind and body graphs (owned by the node, editable; the
  // array is the one phGraph_out points to, stable while the node lives).
  cudaGraphConditionalHandle cond_handle = 0;
  cudaGraphConditionalNodeType cond_type = cudaGraphCondTypeIf;
  std::shared_ptr<std::vector<cudaGraph_t>> bodies;
};

struct UserObject;                                 // cudaUserObject_t (below)
using UserRefs = std::map<UserObject*, unsigned>;  // user object → references held

// A node's work taken from another node of the same kind (its dependencies stay): parameter
// edits and an exec's child graph given new work.
void assign_work(Node& to, const Node& from) {
  to.record = from.record;
  to.fn = from.fn;
  to.user = from.user;
  to.kernel = from.kernel;
  to.copy = from.copy;
  to.memset = from.memset;
  to.event = from.event;
}

// A node handle (cudaGraphNode_t) points to one of these; never freed.
struct NodeRef {
  Graph* graph = nullptr;
  int index = 0;
};

struct Graph {
  std::int64_t id = 0;
  int device = 0;
  std::vector<Node> nodes;
  std::vector<NodeRef*> handles;  // per node, created on demand
  bool live = true;
  bool capturing = false;              // still being captured (not instantiable)
  const Graph* cloned_from = nullptr;  // cudaGraphClone's original (cudaGraphNodeFindInClone)
  bool embedded = false;               // a child graph node's graph: read only here
  bool conditional_body = false;       // a conditional node's body: destroyed with the node
  UserRefs user_refs;                  // cudaGraphRetainUserObject
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
  const void* source = nullptr;  // the graph it was instantiated from
  std::vector<int> node_of;      // per node of the source graph: its index here (-1: none)
  std::vector<void*> allocs;     // the source graph's memory alloc nodes (mapped at launch)
  std::vector<void*> frees;      // and free nodes (unmapped at launch)
  unsigned long long flags = 0;  // as instantiated (cudaGraphExecGetFlags)
  UserRefs user_refs;            // the graph's, retained at instantiation
};

// ---- user objects (cudaUserObjectCreate): reference-counted host resources whose destructor
// runs when the last reference, the caller's or a graph's or an exec's, is released.
struct UserObject {
  void* ptr = nullptr;
  cudaHostFn_t destroy = nullptr;
  unsigned refs = 0;
};

struct UserObjects {
  std::mutex mutex;  // taken after State::mutex when both are held
  std::unordered_set<const UserObject*> live;
};

UserObjects& user_objects() {
  static auto* u = new UserObjects;  // never destroyed
  return *u;
}

using Destructors = std::vector<std::pair<cudaHostFn_t, void*>>;

// Adds `count` references; false when the object is not live.
bool retain_user_object(UserObject* object, unsigned count) {
  UserObjects& u = user_objects();
  std::lock_guard<std::mutex> lock(u.mutex);
  if (u.live.count(object) == 0) return false;
  object->refs += count;
  return true;
}

// Drops `count` references; a destructor whose object reached zero is appended to `run`, to be
// called once no lock is held. False when the object is not live or has fewer references.
bool release_user_object(UserObject* object, unsigned count, Destructors* run) {
  UserObjects& u = user_objects();
  std::lock_guard<std::mutex> lock(u.mutex);
  if (u.live.count(object) == 0 || object->refs < count) return false;
  object->refs -= count;
  if (object->refs == 0) {
    u.live.erase(object);
    run->emplace_back(object->destroy, object->ptr);
  }
  return true;
}

void release_all(UserRefs& refs, Destructors* run) {
  for (auto& [object, count] : refs) release_user_object(object, count, run);
  refs.clear();
}

// Copies of a holder's references (a clone, an exec, a parent of a child graph) are new references.
void retain_all(const UserRefs& from, UserRefs& to) {
  for (const auto& [object, count] : from) {
    if (retain_user_object(object, count)) to[object] += count;
  }
}

void run_destructors(const Destructors& run) {
  for (const auto& [destroy, ptr] : run) destroy(ptr);
}

struct Capture {
  Graph* graph = nullptr;
  std::vector<int> tail;                      // nodes the stream's next work depends on
  std::vector<cudaGraphNode_t> tail_handles;  // cudaStreamGetCaptureInfo's answer (kept alive)
  std::int64_t origin = 0;
  std::uint64_t id = 0;
  bool into_existing = false;  // cudaStreamBeginCaptureToGraph: the caller has the graph already
};

struct State {
  std::mutex mutex;
  std::unordered_set<const Graph*> graphs;
  std::unordered_set<const NodeRef*> node_refs;
  std::unordered_set<const Exec*> execs;
  std::map<std::int64_t, Capture> capturing;                          // stream id → capture
  std::map<std::int64_t, std::pair<Graph*, std::vector<int>>> marks;  // captured event records
  std::int64_t next_graph = 1;
  std::int64_t next_exec = 1;
  std::uint64_t next_capture = 1;
  // cudaGraphConditionalHandleCreate: handle → (graph, default value, flags).
  struct Conditional {
    const Graph* graph = nullptr;
    unsigned int default_value = 0;
    unsigned int flags = 0;
  };
  std::map<cudaGraphConditionalHandle, Conditional> conditionals;
  cudaGraphConditionalHandle next_conditional = 1;
};

State& state() {
  static State* s = new State;  // never destroyed
  return *s;
}

// Graph memory (alloc/free nodes, graphMemoryNodes). An alloc node's memory is allocated and
// counted against the device when the node is added (its address is fixed for the graph's life,
// as the runtime's graph pool gives a fixed virtual address): the pool's *reserved* bytes. A
// launch maps every alloc node of the graph (*used* bytes) and then unmaps what its free nodes
// free. When the last graph or exec holding an alloc node is destroyed and the memory is not
// mapped (freed by a free node, or never launched), it stays in the pool, still reserved and
// still allocated on the device, as the runtime keeps it for reuse, until cudaDeviceGraphMemTrim
// gives it back (a `free` record named cudaDeviceGraphMemTrim). Memory left mapped belongs to
// the program (cudaFree).
struct GraphAlloc {
  int device = 0;
  std::uint64_t bytes = 0;
  int refs = 0;  // graphs and execs holding the alloc node (0: pooled, waiting for a trim)
  bool mapped = false;
};
struct GraphMemory {
  std::mutex mutex;  // taken after State::mutex when both are held
  std::map<const void*, GraphAlloc> allocs;
  std::map<int, std::uint64_t> used, reserved, used_high, reserved_high;  // by device
};
GraphMemory& graph_memory() {
  static GraphMemory* m = new GraphMemory;  // never destroyed
  return *m;
}

void graph_mem_retain(const std::vector<Node>& nodes) {
  GraphMemory& m = graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (const Node& n : nodes) {
    if (n.type != cudaGraphNodeTypeMemAlloc) continue;
    const auto it = m.allocs.find(n.alloc.dptr);
    if (it != m.allocs.end()) ++it->second.refs;
  }
}

// Drops one hold of each alloc node of `nodes`. Unmapped memory nobody holds stays reserved in
// the pool (refs 0) for cudaDeviceGraphMemTrim; mapped memory is the program's to cudaFree.
void graph_mem_release(const std::vector<void*>& allocs) {
  GraphMemory& m = graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (void* p : allocs) {
    const auto it = m.allocs.find(p);
    if (it == m.allocs.end() || --it->second.refs > 0) continue;
    const GraphAlloc& a = it->second;
    if (!a.mapped) continue;  // pooled
    m.reserved[a.device] -= std::min(m.reserved[a.device], a.bytes);
    m.used[a.device] -= std::min(m.used[a.device], a.bytes);
    m.allocs.erase(it);
  }
}

std::vector<void*> alloc_pointers(const std::vector<Node>& nodes) {
  std::vector<void*> out;
  for (const Node& n : nodes) {
    if (n.type == cudaGraphNodeTypeMemAlloc && n.alloc.dptr != nullptr) out.push_back(n.alloc.dptr);
  }
  return out;
}

// A launch: its alloc nodes map their memory, then its free nodes unmap theirs.
void graph_mem_launch(const std::vector<void*>& allocs, const std::vector<void*>& frees) {
  if (allocs.empty() && frees.empty()) return;
  GraphMemory& m = graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (void* p : allocs) {
    const auto it = m.allocs.find(p);
    if (it == m.allocs.end() || it->second.mapped) continue;
    it->second.mapped = true;
    std::uint64_t& used = m.used[it->second.device];
    used += it->second.bytes;
    m.used_high[it->second.device] = std::max(m.used_high[it->second.device], used);
  }
  for (void* p : frees) {
    const auto it = m.allocs.find(p);
    if (it == m.allocs.end() || !it->second.mapped) continue;
    it->second.mapped = false;
    m.used[it->second.device] -= std::min(m.used[it->second.device], it->second.bytes);
  }
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

// NODE's copy inside exec E when NODE belongs to the graph E was instantiated from and has TYPE;
// nullptr otherwise.
Node* exec_node(State& s, Exec* e, cudaGraphNode_t node, cudaGraphNodeType type) {
  const auto* ref = reinterpret_cast<const NodeRef*>(node);
  if (e == nullptr || s.node_refs.count(ref) == 0 || ref->graph != e->source ||
      ref->index >= static_cast<int>(e->node_of.size()) || e->node_of[ref->index] < 0) {
    return nullptr;
  }
  Node& n = e->nodes[e->node_of[ref->index]];
  return n.type == type ? &n : nullptr;
}

void add_unique(std::vector<int>& to, const std::vector<int>& from) {
  for (int n : from) {
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
  }
}

NodeRef* node_handle(State& s, Graph* g, int index) {
  if (g->handles.size() < g->nodes.size()) g->handles.resize(g->nodes.size(), nullptr);
  if (g->handles[index] == nullptr) {
    auto* ref = new NodeRef{g, index};
    g->handles[index] = ref;
    s.node_refs.insert(ref);
  }
  return g->handles[index];
}

// The node index of handle `node` in `g`, or -1.
int node_index(State& s, const Graph* g, cudaGraphNode_t node) {
  const auto* ref = reinterpret_cast<const NodeRef*>(node);
  if (s.node_refs.count(ref) == 0 || ref->graph != g) return -1;
  if (ref->index >= static_cast<int>(g->nodes.size()) ||
      g->nodes[static_cast<std::size_t>(ref->index)].destroyed) {
    return -1;  // destroyed, or its graph's nodes are gone (a retired conditional body)
  }
  return ref->index;
}

// The graph's work in dependency order, without empty nodes (their dependencies pass through):
// what an exec runs. False when the dependencies have a cycle.
bool executable_nodes(const Graph& g, std::vector<Node>* out,
                      std::vector<int>* positions = nullptr) {
  const int n = static_cast<int>(g.nodes.size());
  // Topological order (Kahn, smallest index first: captured graphs keep their order).
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    for (int d : g.nodes[i].deps) {
      ++pending[i];
      users[d].push_back(i);
    }
  }
  std::set<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.insert(u);
    }
  }
  if (static_cast<int>(order.size()) != n) return false;
  // Dependencies on empty nodes become dependencies on what those depend on.
  std::vector<std::vector<int>> real_deps(n);  // in original indices
  std::vector<int> position(n, -1);            // original index → output index
  out->clear();
  for (int i : order) {
    std::vector<int> deps;
    for (int d : g.nodes[i].deps) {
      if (g.nodes[d].empty) {
        add_unique(deps, real_deps[d]);
      } else {
        add_unique(deps, {d});
      }
    }
    real_deps[i] = deps;
    if (g.nodes[i].empty) continue;
    Node node = g.nodes[i];
    node.deps.clear();
    for (int d : deps) node.deps.push_back(position[d]);
    std::sort(node.deps.begin(), node.deps.end());
    position[i] = static_cast<int>(out->size());
    out->push_back(std::move(node));
  }
  if (positions != nullptr) *positions = std::move(position);
  return true;
}

// The body a conditional node runs at a launch, or -1 for none. The emulator never runs device
// code, so a kernel's cudaGraphSetConditional does not happen: the condition is the handle's
// default value when cudaGraphCondAssignDefault applies it at each launch, else 0 (nothing sets
// it). IF: body 0 when nonzero, else body 1 if there is one; SWITCH: body[value] if there is
// one; WHILE: body 0 once when nonzero (a loop that device code ends cannot be counted here).
int conditional_body(const Node& node, unsigned int value) {
  const int bodies = node.bodies != nullptr ? static_cast<int>(node.bodies->size()) : 0;
  switch (node.cond_type) {
    case cudaGraphCondTypeIf:
      return value != 0 ? 0 : (bodies > 1 ? 1 : -1);
    case cudaGraphCondTypeSwitch:
      return value < static_cast<unsigned int>(bodies) ? static_cast<int>(value) : -1;
    case cudaGraphCondTypeWhile:
    default:
      return value != 0 ? 0 : -1;
  }
}

std::string conditional_note(const Node& node, unsigned int value, bool assigned, int body) {
  const char* kind = node.cond_type == cudaGraphCondTypeIf       ? "IF"
                     : node.cond_type == cudaGraphCondTypeSwitch ? "SWITCH"
                                                                 : "WHILE";
  std::string ran = body < 0                                   ? "ran no body"
                    : node.cond_type == cudaGraphCondTypeWhile ? "ran its body once per launch"
                                                               : "ran body " + std::to_string(body);
  const std::string taken = assigned ? "the handle's default value " + std::to_string(value) +
                                           " (assigned at each launch)"
                                     : "0 (no cudaGraphCondAssignDefault)";
  return std::string("conditional ") + kind + " node " + ran + ": its condition is taken as " +
         taken + "; device code that sets it does not run under the emulator";
}

// Node kinds CUDA allows in a conditional body (cudaConditionalNodeParams), recursively.
bool allowed_in_body(cudaGraphNodeType type) {
  return type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeEmpty ||
         type == cudaGraphNodeTypeGraph || type == cudaGraphNodeTypeMemset ||
         type == cudaGraphNodeTypeMemcpy || type == cudaGraphNodeTypeConditional;
}

// Every body of every conditional node of `g`, at every depth and on every branch (the device
// chooses the branch at run time): not still being captured, and only node kinds CUDA allows.
// An empty `error` means all are valid.
void validate_bodies(const Graph& g, std::string* error, int depth = 0) {
  if (depth > 64) {
    *error = "conditional bodies nest more than 64 deep";
    return;
  }
  for (const Node& node : g.nodes) {
    if (node.type != cudaGraphNodeTypeConditional || node.destroyed || node.bodies == nullptr) {
      continue;
    }
    for (cudaGraph_t b : *node.bodies) {
      const auto* body = reinterpret_cast<const Graph*>(b);
      if (body->capturing) *error = "a conditional body is still being captured";
      for (const Node& n : body->nodes) {
        if (!n.destroyed && !allowed_in_body(n.type)) {
          *error = "a conditional body holds a node of type " + std::to_string(n.type) +
                   " (bodies take kernel, empty, child graph, memset, memcpy and conditional "
                   "nodes)";
        }
      }
      if (!error->empty()) return;
      validate_bodies(*body, error, depth + 1);
      if (!error->empty()) return;
    }
  }
}

// True when a body of `node`, at any depth, is the target of a capture in progress.
bool body_capturing(const Node& node) {
  if (node.bodies == nullptr) return false;
  for (cudaGraph_t b : *node.bodies) {
    const auto* body = reinterpret_cast<const Graph*>(b);
    if (body->capturing) return true;
    for (const Node& n : body->nodes) {
      if (body_capturing(n)) return true;
    }
  }
  return false;
}

// `g` with each conditional node replaced by the body it runs (bodies expanded the same way):
// the body's nodes are appended, so every other node keeps its index, after the conditional's
// dependencies, and the conditional node becomes an empty join after the body. One note per
// conditional node that runs goes to `notes`; an invalid body anywhere (validate_bodies) sets
// `error` and nothing is expanded.
Graph expand_conditionals(const State& s, const Graph& g, std::vector<std::string>* notes,
                          std::string* error, int depth = 0) {
  Graph out;
  out.device = g.device;
  out.nodes = g.nodes;
  if (depth == 0) validate_bodies(g, error);
  if (!error->empty()) return out;  // validation also bounds the nesting depth
  const std::size_t own = g.nodes.size();
  for (std::size_t i = 0; i < own && error->empty(); ++i) {
    if (out.nodes[i].type != cudaGraphNodeTypeConditional || out.nodes[i].destroyed) continue;
    const auto handle = s.conditionals.find(out.nodes[i].cond_handle);
    const bool assigned =
        handle != s.conditionals.end() && (handle->second.flags & cudaGraphCondAssignDefault) != 0;
    const unsigned int value = assigned ? handle->second.default_value : 0;
    const int body = conditional_body(out.nodes[i], value);
    notes->push_back(conditional_note(out.nodes[i], value, assigned, body));
    out.nodes[i].empty = true;
    if (body < 0) continue;  // a join on the conditional's own dependencies
    const auto* source = reinterpret_cast<const Graph*>((*out.nodes[i].bodies)[body]);
    if (s.graphs.count(source) == 0 || !source->live) continue;
    const Graph inner = expand_conditionals(s, *source, notes, error, depth + 1);
    if (inner.nodes.empty()) continue;
    const std::vector<int> before = out.nodes[i].deps;
    const int offset = static_cast<int>(out.nodes.size());
    std::vector<bool> has_users(inner.nodes.size(), false);
    for (const Node& n : inner.nodes) {
      for (int d : n.deps) has_users[d] = true;
    }
    std::vector<int> sinks;
    for (std::size_t k = 0; k < inner.nodes.size(); ++k) {
      Node n = inner.nodes[k];
      for (int& d : n.deps) d += offset;
      if (n.child_first >= 0) n.child_first += offset;
      if (n.deps.empty()) n.deps = before;
      n.inlined = true;
      out.nodes.push_back(std::move(n));
      if (!has_users[k]) sinks.push_back(offset + static_cast<int>(k));
    }
    out.nodes[i].deps = sinks;
  }
  return out;
}

// A conditional node's body graphs, and theirs, end with the node: no longer live, their nodes
// gone, their graph memory and user-object references given back (destructors to `run` once no
// lock is held).
void retire_bodies(const Node& node, Destructors* run) {
  if (node.bodies == nullptr) return;
  for (cudaGraph_t handle : *node.bodies) {
    auto* body = reinterpret_cast<Graph*>(handle);
    if (!body->live) continue;
    body->live = false;
    for (const Node& n : body->nodes) {
      if (n.embedded != nullptr) n.embedded->live = false;
      retire_bodies(n, run);
    }
    graph_mem_release(alloc_pointers(body->nodes));
    body->nodes.clear();
    release_all(body->user_refs, run);
  }
}

bool has_conditionals(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.type == cudaGraphNodeTypeConditional) return true;
  }
  return false;
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
    case Op::kWork:
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
  node.type = record.op == Op::kMemcpy     ? cudaGraphNodeTypeMemcpy
              : record.op == Op::kMemset   ? cudaGraphNodeTypeMemset
              : record.op == Op::kHostFunc ? cudaGraphNodeTypeHost
                                           : cudaGraphNodeTypeKernel;
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

bool capture_dependencies(std::int64_t stream, const cudaGraphNode_t** nodes, std::size_t* count) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.capturing.find(stream);
  if (it == s.capturing.end()) return false;
  Capture& c = it->second;
  c.tail_handles.clear();
  for (int n : c.tail) {
    c.tail_handles.push_back(reinterpret_cast<cudaGraphNode_t>(node_handle(s, c.graph, n)));
  }
  if (nodes != nullptr) *nodes = c.tail_handles.empty() ? nullptr : c.tail_handles.data();
  if (count != nullptr) *count = c.tail_handles.size();
  return true;
}

cudaError_t update_capture_dependencies(std::int64_t stream, const cudaGraphNode_t* nodes,
                                        std::size_t count, unsigned flags, const char* api) {
  if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies) {
    return misuse(api, cudaErrorInvalidValue, "unknown flags " + std::to_string(flags));
  }
  if (count > 0 && nodes == nullptr) return misuse(api, cudaErrorInvalidValue, "nodes is NULL");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.capturing.find(stream);
  if (it == s.capturing.end()) {
    return misuse(api, cudaErrorIllegalState,
                  "stream " + std::to_string(stream) + " is not capturing");
  }
  Capture& c = it->second;
  std::vector<int> deps;
  for (std::size_t i = 0; i < count; ++i) {
    const int d = node_index(s, c.graph, nodes[i]);
    if (d < 0) {
      return misuse(
          api, cudaErrorInvalidValue,
          "dependency " + pointer_text(nodes[i]) + " is not a node of the capture's graph");
    }
    add_unique(deps, {d});
  }
  if (flags == cudaStreamSetCaptureDependencies) c.tail.clear();
  add_unique(c.tail, deps);
  return cudaSuccess;
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
                          const char* api, cudaGraph_t into, const cudaGraphNode_t* deps,
                          std::size_t count) {
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
  Capture c;
  Graph* graph = nullptr;
  if (into != nullptr) {
    // cudaStreamBeginCaptureToGraph: the work is added to an existing graph, after `deps`.
    graph = live_graph(s, into);
    if (graph == nullptr || graph->capturing) {
      return misuse(api, cudaErrorInvalidValue,
                    "invalid, destroyed or capturing graph " + pointer_text(into));
    }
    if (count > 0 && deps == nullptr) {
      return misuse(api, cudaErrorInvalidValue, "dependencies is NULL");
    }
    for (std::size_t i = 0; i < count; ++i) {
      const int d = node_index(s, graph, deps[i]);
      if (d < 0) {
        return misuse(api, cudaErrorInvalidValue,
                      "dependency " + pointer_text(deps[i]) + " is not a node of this graph");
      }
      add_unique(c.tail, {d});
    }
    c.into_existing = true;
  } else {
    graph = new Graph;
    graph->id = s.next_graph++;
    graph->device = ref.device;
    s.graphs.insert(graph);
  }
  graph->capturing = true;
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
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.capturing.find(ref.id);
  if (it == s.capturing.end() || it->second.origin != ref.id) {
    return misuse(api, cudaErrorIllegalState,
                  "stream " + std::to_string(ref.id) + " is not the origin of a capture");
  }
  // A capture into an existing graph may end without asking for it (it is the caller's).
  if (out == nullptr && !it->second.into_existing) {
    return misuse(api, cudaErrorInvalidValue, "pGraph is NULL");
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
  if (out != nullptr) *out = reinterpret_cast<cudaGraph_t>(graph);
  return cudaSuccess;
}

cudaError_t graph_upload(cudaGraphExec_t handle, cudaStream_t stream, bool per_thread,
                         const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (live_exec(s, handle) == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid or destroyed graph exec " + pointer_text(handle));
  }
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
  graph_mem_launch(copy.allocs, copy.frees);
  const int tid = thread_index();
  const int dev = ref.device;
  RecordBuilder launch = begin_record(trace_schema::op::kGraphLaunch, start, dev);
  launch.field(trace_schema::field::kStream, ref.id);
  launch.field(trace_schema::field::kCorr, next_correlation());
  launch.field(trace_schema::field::kGraph, copy.id);
  launch.field("nodes", static_cast<std::int64_t>(copy.nodes.size()));
  launch.field(trace_schema::field::kApi, std::string_view(api));
  end_record(launch);

  // Every replayed record carries the launch's entry time: one call, charged once.
  static std::atomic<std::int64_t> launches{0};
  const std::int64_t launch_serial = ++launches;
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
    if (node.disabled) {  // runs as an empty node: orders its dependents only
      if (copy.event_of[i] != 0) event_record(on, copy.event_of[i]);
      continue;
    }
    Record r = node.record;
    r.a[0] = on;
    // Event records and waits keep their event in a[1]; their correlation is a[2].
    const bool event_op = r.op == Op::kEventRecord || r.op == Op::kStreamWaitEvent;
    r.a[event_op ? 2 : 1] = next_correlation();
    if (r.on_replay != nullptr) r.on_replay(r, launch_serial);
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

PT_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                    const cudaGraphNode_t* dependencies,
                                                    const cudaGraphEdgeData* dependencyData,
                                                    size_t numDependencies,
                                                    enum cudaStreamCaptureMode mode) {
  (void)dependencyData;  // edge data (programmatic dependent launch ports) orders nothing here
  const char* api = "cudaStreamBeginCaptureToGraph";
  if (graph == nullptr) return misuse(api, cudaErrorInvalidValue, "graph is NULL");
  return impl::begin_capture(stream, mode, false, api, graph, dependencies, numDependencies);
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
  // Auto-free-on-launch, upload, device launch, priority: no effect here beyond being kept.
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
  std::vector<detail::Node> nodes;
  std::vector<int> positions;
  // Conditional nodes run the body their handle's default value selects (expand_conditionals);
  // each is reported as an assumption.
  std::vector<std::string> notes;
  std::string refused;
  detail::Graph expanded;
  const detail::Graph* source = g;
  if (detail::has_conditionals(*g)) {
    expanded = detail::expand_conditionals(s, *g, &notes, &refused);
    if (!refused.empty()) return misuse(api, cudaErrorInvalidValue, refused);
    source = &expanded;
  }
  if (!detail::executable_nodes(*source, &nodes, &positions)) {
    return misuse(api, cudaErrorInvalidValue, "the graph's dependencies form a cycle");
  }
  for (const std::string& note : notes) powertrain::emu::report_assumption(api, note);
  auto* e = new detail::Exec;
  e->id = s.next_exec++;
  e->device = g->device;
  e->nodes = std::move(nodes);
  e->source = g;
  e->flags = flags;
  e->node_of = std::move(positions);
  e->allocs = detail::alloc_pointers(g->nodes);
  for (const detail::Node& n : g->nodes) {
    if (n.type == cudaGraphNodeTypeMemFree) e->frees.push_back(n.free_ptr);
  }
  detail::graph_mem_retain(g->nodes);
  detail::retain_all(g->user_refs, e->user_refs);
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

PT_EXPORT cudaError_t cudaGraphInstantiateWithParams(
    cudaGraphExec_t* pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams* instantiateParams) {
  if (instantiateParams == nullptr) {
    return misuse("cudaGraphInstantiateWithParams", cudaErrorInvalidValue,
                  "instantiateParams is NULL");
  }
  instantiateParams->errNode_out = nullptr;
  cudaError_t error = cudaGraphInstantiate(pGraphExec, graph, instantiateParams->flags);
  if (error == cudaSuccess && (instantiateParams->flags & cudaGraphInstantiateFlagUpload) != 0) {
    error = cudaGraphUpload(*pGraphExec, instantiateParams->uploadStream);
  }
  instantiateParams->result_out =
      error == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  return error;
}

// --default-stream per-thread: a NULL upload stream is the calling thread's.
PT_EXPORT cudaError_t cudaGraphInstantiateWithParams_ptsz(
    cudaGraphExec_t* pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams* instantiateParams) {
  if (instantiateParams != nullptr && instantiateParams->uploadStream == nullptr) {
    cudaGraphInstantiateParams per_thread = *instantiateParams;
    per_thread.uploadStream = cudaStreamPerThread;
    const cudaError_t error = cudaGraphInstantiateWithParams(pGraphExec, graph, &per_thread);
    instantiateParams->errNode_out = per_thread.errNode_out;
    instantiateParams->result_out = per_thread.result_out;
    return error;
  }
  return cudaGraphInstantiateWithParams(pGraphExec, graph, instantiateParams);
}

PT_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Exec* e = detail::live_exec(s, graphExec);
  if (e == nullptr || flags == nullptr) {
    return misuse("cudaGraphExecGetFlags", cudaErrorInvalidValue,
                  "invalid or destroyed graph exec, or flags NULL");
  }
  *flags = e->flags;
  return cudaSuccess;
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
  std::vector<detail::Node> nodes;
  std::vector<std::string> notes;  // reported at instantiation already
  std::string refused;
  detail::Graph expanded;
  const bool conditionals = detail::has_conditionals(*g);
  if (conditionals) expanded = detail::expand_conditionals(s, *g, &notes, &refused);
  bool same = refused.empty() && detail::executable_nodes(conditionals ? expanded : *g, &nodes) &&
              nodes.size() == e->nodes.size();
  for (std::size_t i = 0; same && i < nodes.size(); ++i) {
    same = nodes[i].record.op == e->nodes[i].record.op && nodes[i].deps == e->nodes[i].deps;
  }
  if (!same) {
    if (resultInfo != nullptr) resultInfo->result = cudaGraphExecUpdateErrorTopologyChanged;
    return detail::fail(cudaErrorGraphExecUpdateFailure);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    e->nodes[i].record = nodes[i].record;
    e->nodes[i].fn = nodes[i].fn;
    e->nodes[i].user = nodes[i].user;
  }
  if (resultInfo != nullptr) resultInfo->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  detail::State& s = detail::state();
  detail::Destructors run;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    detail::Exec* e = detail::live_exec(s, graphExec);
    if (e == nullptr) {
      return misuse("cudaGraphExecDestroy", cudaErrorInvalidValue,
                    "invalid or destroyed graph exec " + detail::pointer_text(graphExec));
    }
    e->live = false;
    e->nodes.clear();
    detail::graph_mem_release(e->allocs);
    detail::release_all(e->user_refs, &run);
  }
  detail::run_destructors(run);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  detail::State& s = detail::state();
  std::unique_lock<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || g->capturing || g->embedded || g->conditional_body) {
    return misuse("cudaGraphDestroy", cudaErrorInvalidValue,
                  "invalid, destroyed or capturing graph, or a child or conditional node's graph " +
                      detail::pointer_text(graph));
  }
  for (const detail::Node& n : g->nodes) {
    if (detail::body_capturing(n)) {
      return misuse("cudaGraphDestroy", cudaErrorInvalidValue,
                    "a conditional body of the graph is still being captured");
    }
  }
  g->live = false;
  detail::Destructors run;
  for (const detail::Node& n : g->nodes) {
    if (n.embedded != nullptr) n.embedded->live = false;  // owned by its child graph node
    detail::retire_bodies(n, &run);                       // owned by the conditional node
  }
  detail::graph_mem_release(detail::alloc_pointers(g->nodes));
  g->nodes.clear();
  detail::release_all(g->user_refs, &run);
  lock.unlock();
  detail::run_destructors(run);
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
  // The graph's own nodes (a child graph counts as its one node, as in the runtime).
  std::vector<int> own;
  for (std::size_t i = 0; i < g->nodes.size(); ++i) {
    if (!g->nodes[i].inlined) own.push_back(static_cast<int>(i));
  }
  if (nodes == nullptr) {
    *numNodes = own.size();
    return cudaSuccess;
  }
  const std::size_t n = std::min(*numNodes, own.size());
  for (std::size_t i = 0; i < n; ++i) {
    nodes[i] = reinterpret_cast<cudaGraphNode_t>(detail::node_handle(s, g, own[i]));
  }
  *numNodes = n;
  return cudaSuccess;
}

// ---- graph structure queries (the samples print their graphs with these) ----------------------

namespace powertrain::emu::detail {
namespace {

// A node's dependencies as the program sees them: among the graph's own nodes (a child graph
// node's are those it was added after; inlined child nodes are not the parent's).
std::vector<int> own_dependencies(const Graph& g, int i) {
  const Node& node = g.nodes[static_cast<std::size_t>(i)];
  std::vector<int> deps =
      node.type == cudaGraphNodeTypeGraph && node.empty ? node.outer_deps : std::vector<int>{};
  for (int d : node.deps) {
    if (!g.nodes[static_cast<std::size_t>(d)].inlined) add_unique(deps, {d});
  }
  return deps;
}

// Every edge (from, to) between own nodes, in node order then dependency order.
std::vector<std::pair<int, int>> own_edges(const Graph& g) {
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (g.nodes[static_cast<std::size_t>(i)].inlined) continue;
    for (int d : own_dependencies(g, i)) edges.emplace_back(d, i);
  }
  return edges;
}

// The runtime's convention for node lists: `out` NULL asks for the count; otherwise up to
// *count entries are written, the rest of a longer array set to NULL, and *count becomes the
// number written. Edge data (all default here) is zeroed where asked for.
void write_nodes(State& s, Graph* g, const std::vector<int>& list, cudaGraphNode_t* out,
                 cudaGraphEdgeData* edge_data, std::size_t* count) {
  if (out == nullptr) {
    *count = list.size();
    return;
  }
  const std::size_t n = std::min(*count, list.size());
  for (std::size_t k = 0; k < *count; ++k) {
    out[k] = k < n ? reinterpret_cast<cudaGraphNode_t>(node_handle(s, g, list[k])) : nullptr;
    if (edge_data != nullptr) edge_data[k] = cudaGraphEdgeData{};
  }
  *count = n;
}

// The graph and index behind a node handle of a live graph (lock held), or false.
bool live_node(State& s, cudaGraphNode_t node, Graph** g, int* index) {
  const auto* ref = reinterpret_cast<const NodeRef*>(node);
  if (s.node_refs.count(ref) == 0 || !ref->graph->live) return false;
  if (ref->graph->nodes[static_cast<std::size_t>(ref->index)].destroyed) return false;
  *g = ref->graph;
  *index = ref->index;
  return true;
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes,
                                            size_t* pNumRootNodes) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || pNumRootNodes == nullptr) {
    return misuse("cudaGraphGetRootNodes", cudaErrorInvalidValue,
                  "invalid graph or pNumRootNodes NULL");
  }
  std::vector<int> roots;
  for (int i = 0; i < static_cast<int>(g->nodes.size()); ++i) {
    if (!g->nodes[static_cast<std::size_t>(i)].inlined && detail::own_dependencies(*g, i).empty())
      roots.push_back(i);
  }
  detail::write_nodes(s, g, roots, pRootNodes, nullptr, pNumRootNodes);
  return cudaSuccess;
}

namespace {
cudaError_t graph_get_edges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                            cudaGraphEdgeData* edgeData, size_t* numEdges, const char* api) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || numEdges == nullptr || ((from == nullptr) != (to == nullptr))) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid graph, numEdges NULL, or only one of from and to given");
  }
  const std::vector<std::pair<int, int>> edges = detail::own_edges(*g);
  if (from == nullptr) {
    *numEdges = edges.size();
    return cudaSuccess;
  }
  const std::size_t n = std::min(*numEdges, edges.size());
  for (std::size_t k = 0; k < *numEdges; ++k) {
    from[k] = k < n ? reinterpret_cast<cudaGraphNode_t>(detail::node_handle(s, g, edges[k].first))
                    : nullptr;
    to[k] = k < n ? reinterpret_cast<cudaGraphNode_t>(detail::node_handle(s, g, edges[k].second))
                  : nullptr;
    if (edgeData != nullptr) edgeData[k] = cudaGraphEdgeData{};
  }
  *numEdges = n;
  return cudaSuccess;
}

// NODE's dependencies (or, with `dependents`, the nodes that depend on it) written to OUT.
cudaError_t write_neighbours(cudaGraphNode_t node, cudaGraphNode_t* out,
                             cudaGraphEdgeData* edgeData, size_t* count, bool dependents,
                             const char* api) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = nullptr;
  int index = 0;
  if (!detail::live_node(s, node, &g, &index) || count == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  dependents ? "invalid node or pNumDependentNodes NULL"
                             : "invalid node or pNumDependencies NULL");
  }
  std::vector<int> neighbours;
  if (dependents) {
    for (const auto& [a, b] : detail::own_edges(*g)) {
      if (a == index) detail::add_unique(neighbours, {b});
    }
  } else {
    neighbours = detail::own_dependencies(*g, index);
  }
  detail::write_nodes(s, g, neighbours, out, edgeData, count);
  return cudaSuccess;
}

cudaError_t node_get_dependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                  cudaGraphEdgeData* edgeData, size_t* pNumDependencies,
                                  const char* api) {
  return write_neighbours(node, pDependencies, edgeData, pNumDependencies, false, api);
}

cudaError_t node_get_dependent_nodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                     cudaGraphEdgeData* edgeData, size_t* pNumDependentNodes,
                                     const char* api) {
  return write_neighbours(node, pDependentNodes, edgeData, pNumDependentNodes, true, api);
}
}  // namespace

// CUDA 13 signatures (with edge data). CUDA 12 has the same names without the edge data and the
// edge-data forms as `_v2`: the CUDA 12 drop-in reads its calls with CUDA 12's parameters (the
// count is then in the edge-data slot).
PT_EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from,
                                        cudaGraphNode_t* to, cudaGraphEdgeData* edgeData,
                                        size_t* numEdges) {
  if (detail::cudart_abi() == 12) {
    return graph_get_edges(graph, from, to, nullptr, reinterpret_cast<size_t*>(edgeData),
                           "cudaGraphGetEdges");
  }
  return graph_get_edges(graph, from, to, edgeData, numEdges, "cudaGraphGetEdges");
}

PT_EXPORT cudaError_t cudaGraphGetEdges_v2(cudaGraph_t graph, cudaGraphNode_t* from,
                                           cudaGraphNode_t* to, cudaGraphEdgeData* edgeData,
                                           size_t* numEdges) {
  return graph_get_edges(graph, from, to, edgeData, numEdges, "cudaGraphGetEdges_v2");
}

PT_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                   cudaGraphNode_t* pDependencies,
                                                   cudaGraphEdgeData* edgeData,
                                                   size_t* pNumDependencies) {
  if (detail::cudart_abi() == 12) {
    return node_get_dependencies(node, pDependencies, nullptr, reinterpret_cast<size_t*>(edgeData),
                                 "cudaGraphNodeGetDependencies");
  }
  return node_get_dependencies(node, pDependencies, edgeData, pNumDependencies,
                               "cudaGraphNodeGetDependencies");
}

PT_EXPORT cudaError_t cudaGraphNodeGetDependencies_v2(cudaGraphNode_t node,
                                                      cudaGraphNode_t* pDependencies,
                                                      cudaGraphEdgeData* edgeData,
                                                      size_t* pNumDependencies) {
  return node_get_dependencies(node, pDependencies, edgeData, pNumDependencies,
                               "cudaGraphNodeGetDependencies_v2");
}

PT_EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node,
                                                     cudaGraphNode_t* pDependentNodes,
                                                     cudaGraphEdgeData* edgeData,
                                                     size_t* pNumDependentNodes) {
  if (detail::cudart_abi() == 12) {
    return node_get_dependent_nodes(node, pDependentNodes, nullptr,
                                    reinterpret_cast<size_t*>(edgeData),
                                    "cudaGraphNodeGetDependentNodes");
  }
  return node_get_dependent_nodes(node, pDependentNodes, edgeData, pNumDependentNodes,
                                  "cudaGraphNodeGetDependentNodes");
}

PT_EXPORT cudaError_t cudaGraphNodeGetDependentNodes_v2(cudaGraphNode_t node,
                                                        cudaGraphNode_t* pDependentNodes,
                                                        cudaGraphEdgeData* edgeData,
                                                        size_t* pNumDependentNodes) {
  return node_get_dependent_nodes(node, pDependentNodes, edgeData, pNumDependentNodes,
                                  "cudaGraphNodeGetDependentNodes_v2");
}

namespace {
const char* node_type_name(cudaGraphNodeType type) {
  switch (type) {
    case cudaGraphNodeTypeKernel:
      return "KERNEL";
    case cudaGraphNodeTypeMemcpy:
      return "MEMCPY";
    case cudaGraphNodeTypeMemset:
      return "MEMSET";
    case cudaGraphNodeTypeHost:
      return "HOST";
    case cudaGraphNodeTypeGraph:
      return "GRAPH";
    case cudaGraphNodeTypeEmpty:
      return "EMPTY";
    case cudaGraphNodeTypeWaitEvent:
      return "WAIT_EVENT";
    case cudaGraphNodeTypeEventRecord:
      return "EVENT_RECORD";
    case cudaGraphNodeTypeMemAlloc:
      return "MEM_ALLOC";
    case cudaGraphNodeTypeMemFree:
      return "MEM_FREE";
    default:
      return "NODE";
  }
}
}  // namespace

// A Graphviz drawing of the graph's own nodes (type and index) and edges, as PyTorch's
// CUDAGraph::debug_dump and the samples write it; the flags' extra detail is not drawn.
PT_EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path,
                                             unsigned int flags) {
  (void)flags;
  const char* api = "cudaGraphDebugDotPrint";
  if (path == nullptr) return misuse(api, cudaErrorInvalidValue, "path is NULL");
  std::string text;
  {
    detail::State& s = detail::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const detail::Graph* g = detail::live_graph(s, graph);
    if (g == nullptr) {
      return misuse(api, cudaErrorInvalidValue,
                    "invalid or destroyed graph " + detail::pointer_text(graph));
    }
    text = "digraph dot {\n  label=\"graph " + std::to_string(g->id) + "\";\n";
    for (std::size_t i = 0; i < g->nodes.size(); ++i) {
      if (g->nodes[i].inlined) continue;
      text += "  node" + std::to_string(i) + " [label=\"" + node_type_name(g->nodes[i].type) + " " +
              std::to_string(i) + "\"];\n";
    }
    for (const auto& [from, to] : detail::own_edges(*g)) {
      text += "  node" + std::to_string(from) + " -> node" + std::to_string(to) + ";\n";
    }
    text += "}\n";
  }
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    return misuse(api, cudaErrorOperatingSystem, std::string("cannot write ") + path);
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    return misuse(api, cudaErrorOperatingSystem, std::string("cannot write ") + path);
  }
  return cudaSuccess;
}

// ---- explicit graph construction ------------------------------------------------------------

namespace powertrain::emu::detail {
namespace {

// Whether `node` is a node of a child graph node's graph (lock held).
bool in_embedded_graph(State& s, cudaGraphNode_t node) {
  const auto* ref = reinterpret_cast<const NodeRef*>(node);
  return s.node_refs.count(ref) != 0 && ref->graph->embedded;
}

// A child graph node's graph (cudaGraphChildGraphNodeGetGraph) is a copy made when the node was
// added (the node's work is inlined into its parent then), so edits of it would not reach the
// node: they are reported by name instead of silently lost.
cudaError_t embedded_edit(const char* api) {
  powertrain::emu::report_unsupported(std::string(api) + " (editing a child graph node's graph)");
  return fail(cudaErrorNotSupported);
}

// The output and dependency pointers every cudaGraphAdd*Node takes.
cudaError_t check_add_arguments(const cudaGraphNode_t* out, const cudaGraphNode_t* deps,
                                std::size_t count, const char* api) {
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "pGraphNode is NULL");
  if (count > 0 && deps == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pDependencies is NULL");
  }
  return cudaSuccess;
}

// Adds `node` to `graph` after `deps`; the common part of every cudaGraphAdd*Node.
cudaError_t add_node(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                     std::size_t count, Node node, const char* api) {
  if (const cudaError_t error = check_add_arguments(out, deps, count, api); error != cudaSuccess)
    return error;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Graph* g = live_graph(s, graph);
  // A graph under capture takes nodes too (cudaStreamGetCaptureInfo hands it out for that; the
  // capture continues after them once cudaStreamUpdateCaptureDependencies says so).
  if (g == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "invalid or destroyed graph " + pointer_text(graph));
  }
  if (g->embedded) return embedded_edit(api);
  node.deps.clear();
  for (std::size_t i = 0; i < count; ++i) {
    const int d = node_index(s, g, deps[i]);
    if (d < 0) {
      return misuse(api, cudaErrorInvalidValue,
                    "dependency " + pointer_text(deps[i]) + " is not a node of this graph");
    }
    add_unique(node.deps, {d});
  }
  g->nodes.push_back(std::move(node));
  *out =
      reinterpret_cast<cudaGraphNode_t>(node_handle(s, g, static_cast<int>(g->nodes.size()) - 1));
  return cudaSuccess;
}

// add_node for a node that `build(api, &node)` makes from the call's parameters (its error, when
// they are invalid, is the call's).
template <typename Build>
cudaError_t add_built_node(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                           std::size_t count, const char* api, Build&& build) {
  Node node;
  const cudaError_t error = build(api, &node);
  if (error != cudaSuccess) return error;
  return add_node(out, graph, deps, count, std::move(node), api);
}

Node work_node(Op op, cudaGraphNodeType type, const char* api) {
  Node node;
  node.record = make_record(op, now_ns(), current_device());
  node.record.api = api;
  node.type = type;
  return node;
}

cudaError_t kernel_node(const cudaKernelNodeParams* p, const char* api, Node* out) {
  if (p == nullptr) return misuse(api, cudaErrorInvalidValue, "pNodeParams is NULL");
  Node node;
  node.type = cudaGraphNodeTypeKernel;
  node.kernel = *p;
  const cudaError_t error =
      make_kernel_record(p->func, p->gridDim, p->blockDim, p->sharedMemBytes, api, &node.record);
  if (error != cudaSuccess) return error;
  *out = std::move(node);
  return cudaSuccess;
}

CopyKind copy_kind(cudaMemcpyKind kind, const void* dst, const void* src) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return CopyKind::kHtoD;
    case cudaMemcpyDeviceToHost:
      return CopyKind::kDtoH;
    case cudaMemcpyDeviceToDevice:
      return CopyKind::kDtoD;
    case cudaMemcpyHostToHost:
      return CopyKind::kHtoH;
    default:
      break;
  }
  const PointerInfo d = lookup_pointer(dst);
  const PointerInfo s = lookup_pointer(src);
  const bool dd = d.known && d.device_side;
  const bool sd = s.known && s.device_side;
  if (dd && sd) return d.device == s.device ? CopyKind::kDtoD : CopyKind::kPtoP;
  if (dd) return CopyKind::kHtoD;
  if (sd) return CopyKind::kDtoH;
  return CopyKind::kHtoH;
}

Node copy_node(std::size_t bytes, CopyKind kind, const char* api) {
  Node node = work_node(Op::kMemcpy, cudaGraphNodeTypeMemcpy, api);
  node.record.a[2] = static_cast<std::int64_t>(bytes);
  node.record.sub = static_cast<std::uint8_t>(kind);
  node.record.flag = true;  // graph copies are asynchronous
  return node;
}

cudaError_t memcpy3d_node(const cudaMemcpy3DParms* p, const char* api, Node* out) {
  if (p == nullptr) return misuse(api, cudaErrorInvalidValue, "pCopyParams is NULL");
  if (p->srcArray != nullptr || p->dstArray != nullptr) {
    report_unsupported(std::string(api) + "(CUDA arrays)");
    return fail(cudaErrorNotSupported);
  }
  const std::size_t bytes = p->extent.width * std::max<std::size_t>(p->extent.height, 1) *
                            std::max<std::size_t>(p->extent.depth, 1);
  *out = copy_node(bytes, copy_kind(p->kind, p->dstPtr.ptr, p->srcPtr.ptr), api);
  out->copy = *p;
  return cudaSuccess;
}

// A 1D copy as the 3D parameters cudaGraphMemcpyNodeGetParams reports for it.
cudaMemcpy3DParms linear_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), count, count, 1);
  p.dstPtr = make_cudaPitchedPtr(dst, count, count, 1);
  p.extent = make_cudaExtent(count, 1, 1);
  p.kind = kind;
  return p;
}

cudaError_t memset_node(const cudaMemsetParams* p, const char* api, Node* out) {
  if (p == nullptr) return misuse(api, cudaErrorInvalidValue, "pMemsetParams is NULL");
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) {
    return misuse(api, cudaErrorInvalidValue,
                  "elementSize " + std::to_string(p->elementSize) + " is not 1, 2 or 4");
  }
  const PointerInfo info = lookup_pointer(p->dst);
  if (!info.known || !info.device_side) {
    return misuse(api, cudaErrorInvalidValue,
                  pointer_text(p->dst) + " is not device memory allocated through the runtime");
  }
  Node node = work_node(Op::kMemset, cudaGraphNodeTypeMemset, api);
  node.record.a[2] =
      static_cast<std::int64_t>(p->elementSize * p->width * std::max<std::size_t>(p->height, 1));
  node.record.flag = true;
  node.memset = *p;
  *out = std::move(node);
  return cudaSuccess;
}

cudaError_t host_node(const cudaHostNodeParams* p, const char* api, Node* out) {
  if (p == nullptr || p->fn == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pNodeParams or its fn is NULL");
  }
  Node node = work_node(Op::kHostFunc, cudaGraphNodeTypeHost, api);
  node.fn = p->fn;
  node.user = p->userData;
  *out = std::move(node);
  return cudaSuccess;
}

cudaError_t event_node(cudaEvent_t event, bool record, const char* api, Node* out) {
  const std::int64_t id = event_id(event);
  if (id < 0) {
    return misuse(api, cudaErrorInvalidResourceHandle,
                  "invalid or destroyed event " + pointer_text(event));
  }
  Node node = work_node(record ? Op::kEventRecord : Op::kStreamWaitEvent,
                        record ? cudaGraphNodeTypeEventRecord : cudaGraphNodeTypeWaitEvent, api);
  node.record.a[1] = id;
  node.event = event;
  *out = std::move(node);
  return cudaSuccess;
}

// A child graph is copied into the parent: its roots depend on `deps`, and the returned node
// (empty) on its sinks, so what follows the child node waits for the whole child.
cudaError_t add_child(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                      std::size_t count, cudaGraph_t child, const char* api) {
  if (const cudaError_t error = check_add_arguments(out, deps, count, api); error != cudaSuccess)
    return error;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Graph* g = live_graph(s, graph);
  Graph* c = live_graph(s, child);
  if (g == nullptr || c == nullptr || g == c || g->capturing || c->capturing) {
    return misuse(api, cudaErrorInvalidValue, "invalid, destroyed or capturing graph");
  }
  if (g->embedded) return embedded_edit(api);
  if (has_conditionals(*c)) {
    return misuse(api, cudaErrorInvalidValue,
                  "a graph with conditional nodes cannot be a child graph");
  }
  std::vector<int> before;
  for (std::size_t i = 0; i < count; ++i) {
    const int d = node_index(s, g, deps[i]);
    if (d < 0) {
      return misuse(api, cudaErrorInvalidValue,
                    "dependency " + pointer_text(deps[i]) + " is not a node of this graph");
    }
    add_unique(before, {d});
  }
  const int offset = static_cast<int>(g->nodes.size());
  Node join;
  join.empty = true;
  join.type = cudaGraphNodeTypeGraph;
  join.child_first = offset;
  join.embedded = new Graph;
  join.embedded->id = s.next_graph++;
  join.embedded->device = c->device;
  join.embedded->nodes = c->nodes;
  join.embedded->embedded = true;
  s.graphs.insert(join.embedded);
  std::vector<bool> has_users(c->nodes.size(), false);
  for (const Node& node : c->nodes) {
    for (int d : node.deps) has_users[d] = true;
  }
  for (std::size_t i = 0; i < c->nodes.size(); ++i) {
    Node node = c->nodes[i];  // the child is copied, as the runtime does (later edits of it
                              // do not change the parent)
    for (int& d : node.deps) d += offset;
    if (node.child_first >= 0) node.child_first += offset;
    if (node.deps.empty()) node.deps = before;
    node.inlined = true;
    if (node.type == cudaGraphNodeTypeMemAlloc) graph_mem_retain({node});
    g->nodes.push_back(std::move(node));
    if (!has_users[i]) join.deps.push_back(offset + static_cast<int>(i));  // the child's sinks
  }
  if (c->nodes.empty()) join.deps = before;
  join.outer_deps = before;
  retain_all(c->user_refs, g->user_refs);
  g->nodes.push_back(std::move(join));
  *out =
      reinterpret_cast<cudaGraphNode_t>(node_handle(s, g, static_cast<int>(g->nodes.size()) - 1));
  return cudaSuccess;
}

// A conditional node: `size` body graphs made now, owned by the node (phGraph_out points to
// them; they are filled by node calls or cudaStreamBeginCaptureToGraph before instantiation).
cudaError_t add_conditional(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                            std::size_t count, cudaConditionalNodeParams* params, const char* api) {
  Node node;
  node.type = cudaGraphNodeTypeConditional;
  node.empty = true;
  node.cond_handle = params->handle;
  node.cond_type = params->type;
  const unsigned int size = params->size;
  const bool size_ok = params->type == cudaGraphCondTypeIf       ? size == 1 || size == 2
                       : params->type == cudaGraphCondTypeWhile  ? size == 1
                       : params->type == cudaGraphCondTypeSwitch ? size >= 1 && size <= 4096
                                                                 : false;
  if (!size_ok) {
    return misuse(api, cudaErrorInvalidValue,
                  "conditional node type " + std::to_string(static_cast<int>(params->type)) +
                      " with size " + std::to_string(size) +
                      " (IF takes 1 or 2 bodies, WHILE 1, SWITCH 1 to 4096: the emulator's "
                      "bound on bodies made at once)");
  }
  int device = 0;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const Graph* g = live_graph(s, graph);
    if (g == nullptr) {
      return misuse(api, cudaErrorInvalidValue,
                    "invalid or destroyed graph " + pointer_text(graph));
    }
    if (s.conditionals.count(params->handle) == 0) {
      return misuse(api, cudaErrorInvalidValue,
                    "conditional handle " + std::to_string(params->handle) +
                        " was not made by cudaGraphConditionalHandleCreate");
    }
    device = g->device;
    node.bodies = std::make_shared<std::vector<cudaGraph_t>>();
    for (unsigned int b = 0; b < size; ++b) {
      auto* body = new Graph;
      body->id = s.next_graph++;
      body->device = device;
      body->conditional_body = true;
      s.graphs.insert(body);
      node.bodies->push_back(reinterpret_cast<cudaGraph_t>(body));
    }
  }
  cudaGraph_t* bodies = node.bodies->data();
  std::vector<cudaGraph_t> made = *node.bodies;
  const cudaError_t error = add_node(out, graph, deps, count, std::move(node), api);
  if (error != cudaSuccess) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (cudaGraph_t b : made) reinterpret_cast<Graph*>(b)->live = false;
    return error;
  }
  params->phGraph_out = bodies;
  return cudaSuccess;
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (pGraph == nullptr) return misuse("cudaGraphCreate", cudaErrorInvalidValue, "pGraph is NULL");
  if (flags != 0) return misuse("cudaGraphCreate", cudaErrorInvalidValue, "flags must be 0");
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* graph = new detail::Graph;
  graph->id = s.next_graph++;
  graph->device = powertrain::emu::current_device();
  s.graphs.insert(graph);
  *pGraph = reinterpret_cast<cudaGraph_t>(graph);
  return cudaSuccess;
}

// A handle for conditional nodes of `graph` (also a graph under capture). Its default value is
// what the condition holds at each launch under the emulator (see expand_conditionals).
PT_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                                       cudaGraph_t graph,
                                                       unsigned int defaultLaunchValue,
                                                       unsigned int flags) {
  const char* api = "cudaGraphConditionalHandleCreate";
  if (pHandle_out == nullptr) return misuse(api, cudaErrorInvalidValue, "pHandle_out is NULL");
  if ((flags & ~static_cast<unsigned int>(cudaGraphCondAssignDefault)) != 0) {
    return misuse(api, cudaErrorInvalidValue, "unknown flags " + std::to_string(flags));
  }
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid or destroyed graph " + detail::pointer_text(graph));
  }
  const cudaGraphConditionalHandle handle = s.next_conditional++;
  s.conditionals[handle] = detail::State::Conditional{g, defaultLaunchValue, flags};
  *pHandle_out = handle;
  return cudaSuccess;
}

// A cudaGraphAdd*Node entry point whose node is built from one kind-specific parameter by
// BUILD (an expression of `api` and `node`); the first four parameters are every kind's.
#define PT_GRAPH_ADD_BUILT_NODE(NAME, PARAMETER, BUILD)                                        \
  PT_EXPORT cudaError_t NAME(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,                   \
                             const cudaGraphNode_t* pDependencies, size_t numDependencies,     \
                             PARAMETER) {                                                      \
    return detail::add_built_node(pGraphNode, graph, pDependencies, numDependencies, #NAME,    \
                                  [&](const char* api, detail::Node* node) { return BUILD; }); \
  }

PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddKernelNode, const struct cudaKernelNodeParams* pNodeParams,
                        detail::kernel_node(pNodeParams, api, node))
PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddMemcpyNode, const struct cudaMemcpy3DParms* pCopyParams,
                        detail::memcpy3d_node(pCopyParams, api, node))
PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddMemsetNode, const struct cudaMemsetParams* pMemsetParams,
                        detail::memset_node(pMemsetParams, api, node))
PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddHostNode, const struct cudaHostNodeParams* pNodeParams,
                        detail::host_node(pNodeParams, api, node))
PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddEventRecordNode, cudaEvent_t event,
                        detail::event_node(event, true, api, node))
PT_GRAPH_ADD_BUILT_NODE(cudaGraphAddEventWaitNode, cudaEvent_t event,
                        detail::event_node(event, false, api, node))
#undef PT_GRAPH_ADD_BUILT_NODE

PT_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t* pDependencies,
                                               size_t numDependencies, void* dst, const void* src,
                                               size_t count, enum cudaMemcpyKind kind) {
  const char* api = "cudaGraphAddMemcpyNode1D";
  detail::Node node = detail::copy_node(count, detail::copy_kind(kind, dst, src), api);
  node.copy = detail::linear_copy(dst, src, count, kind);
  return detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node), api);
}

PT_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t* pDependencies,
                                            size_t numDependencies) {
  detail::Node node;
  node.empty = true;
  node.type = cudaGraphNodeTypeEmpty;
  return detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node),
                          "cudaGraphAddEmptyNode");
}

PT_EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t* pDependencies,
                                                 size_t numDependencies, cudaGraph_t childGraph) {
  return detail::add_child(pGraphNode, graph, pDependencies, numDependencies, childGraph,
                           "cudaGraphAddChildGraphNode");
}

namespace {
cudaError_t add_node_v2(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                        const cudaGraphNode_t* pDependencies, size_t numDependencies,
                        cudaGraphNodeParams* nodeParams, const char* api);

// The typed parameters inside the generic node parameters (cudaGraphAddNode, *NodeSetParams).
cudaKernelNodeParams kernel_params_of(const cudaGraphNodeParams& n) {
  return {n.kernel.func,           n.kernel.gridDim,      n.kernel.blockDim,
          n.kernel.sharedMemBytes, n.kernel.kernelParams, n.kernel.extra};
}
cudaMemsetParams memset_params_of(const cudaGraphNodeParams& n) {
  return {n.memset.dst,         n.memset.pitch, n.memset.value,
          n.memset.elementSize, n.memset.width, n.memset.height};
}
cudaHostNodeParams host_params_of(const cudaGraphNodeParams& n) {
  return {n.host.fn, n.host.userData};
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies,
                                       const cudaGraphEdgeData* dependencyData,
                                       size_t numDependencies,
                                       struct cudaGraphNodeParams* nodeParams) {
  const char* api = "cudaGraphAddNode";
  // CUDA 12's has no edge data (its count is in that slot, the parameters in the next: see
  // cudaGraphAddDependencies) and names the edge-data form `_v2`.
  if (detail::cudart_abi() == 12) {
    nodeParams = reinterpret_cast<cudaGraphNodeParams*>(numDependencies);
    numDependencies = static_cast<size_t>(reinterpret_cast<std::uintptr_t>(dependencyData));
  }
  return add_node_v2(pGraphNode, graph, pDependencies, numDependencies, nodeParams, api);
}

// Edge types other than the default are programmatic-launch hints: the edge data is not kept.
PT_EXPORT cudaError_t cudaGraphAddNode_v2(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                          const cudaGraphNode_t* pDependencies,
                                          const cudaGraphEdgeData* dependencyData,
                                          size_t numDependencies,
                                          struct cudaGraphNodeParams* nodeParams) {
  (void)dependencyData;
  return add_node_v2(pGraphNode, graph, pDependencies, numDependencies, nodeParams,
                     "cudaGraphAddNode_v2");
}

namespace {
cudaError_t add_node_v2(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                        const cudaGraphNode_t* pDependencies, size_t numDependencies,
                        cudaGraphNodeParams* nodeParams, const char* api) {
  if (nodeParams == nullptr) return misuse(api, cudaErrorInvalidValue, "nodeParams is NULL");
  detail::Node node;
  cudaError_t error = cudaSuccess;
  switch (nodeParams->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams p = kernel_params_of(*nodeParams);
      error = detail::kernel_node(&p, api, &node);
      break;
    }
    case cudaGraphNodeTypeMemcpy:
      error = detail::memcpy3d_node(&nodeParams->memcpy.copyParams, api, &node);
      break;
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams p = memset_params_of(*nodeParams);
      error = detail::memset_node(&p, api, &node);
      break;
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams p = host_params_of(*nodeParams);
      error = detail::host_node(&p, api, &node);
      break;
    }
    case cudaGraphNodeTypeEventRecord:
      error = detail::event_node(nodeParams->eventRecord.event, true, api, &node);
      break;
    case cudaGraphNodeTypeWaitEvent:
      error = detail::event_node(nodeParams->eventWait.event, false, api, &node);
      break;
    case cudaGraphNodeTypeEmpty:
      node.empty = true;
      node.type = cudaGraphNodeTypeEmpty;
      break;
    case cudaGraphNodeTypeGraph:
      return detail::add_child(pGraphNode, graph, pDependencies, numDependencies,
                               nodeParams->graph.graph, api);
    case cudaGraphNodeTypeMemAlloc: {
      cudaMemAllocNodeParams p{nodeParams->alloc.poolProps, nodeParams->alloc.accessDescs,
                               nodeParams->alloc.accessDescCount, nodeParams->alloc.bytesize,
                               nullptr};
      error = cudaGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &p);
      if (error == cudaSuccess) nodeParams->alloc.dptr = p.dptr;
      return error;
    }
    case cudaGraphNodeTypeMemFree:
      return cudaGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                     nodeParams->free.dptr);
    case cudaGraphNodeTypeConditional:
      return detail::add_conditional(pGraphNode, graph, pDependencies, numDependencies,
                                     &nodeParams->conditional, api);
    default:
      return detail::fail(static_cast<cudaError_t>(powertrain::emu::report_unsupported(
          "cudaGraphAddNode(node type " + std::to_string(nodeParams->type) + ")")));
  }
  if (error != cudaSuccess) return error;
  return detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node), api);
}
}  // namespace

namespace {
// Adds the edges from[i] → to[i], or removes them (all or nothing: every edge must exist as
// given; a child graph's own edges are inside it).
cudaError_t edit_dependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                              const cudaGraphNode_t* to, size_t count, const char* api,
                              bool remove) {
  if (count > 0 && (from == nullptr || to == nullptr)) {
    return misuse(api, cudaErrorInvalidValue, "from or to is NULL");
  }
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  if (g == nullptr || g->capturing) {
    return misuse(api, cudaErrorInvalidValue, "invalid, destroyed or capturing graph");
  }
  if (g->embedded) return detail::embedded_edit(api);
  for (size_t i = 0; i < count; ++i) {
    const int a = detail::node_index(s, g, from[i]);
    const int b = detail::node_index(s, g, to[i]);
    if (a < 0 || b < 0 || a == b) {
      return misuse(api, cudaErrorInvalidValue, "an edge names a node of another graph");
    }
    if (!remove) continue;
    const std::vector<int> own = detail::own_dependencies(*g, b);
    if (std::find(own.begin(), own.end(), a) == own.end() ||
        g->nodes[static_cast<std::size_t>(b)].type == cudaGraphNodeTypeGraph) {
      return misuse(api, cudaErrorInvalidValue,
                    "no such edge (or it ends at a child graph node) in the graph");
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const int a = detail::node_index(s, g, from[i]);
    auto& deps = g->nodes[static_cast<std::size_t>(detail::node_index(s, g, to[i]))].deps;
    if (remove) {
      deps.erase(std::remove(deps.begin(), deps.end(), a), deps.end());
    } else {
      detail::add_unique(deps, {a});
    }
  }
  return cudaSuccess;
}

cudaError_t add_dependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                             const cudaGraphNode_t* to, size_t count, const char* api) {
  return edit_dependencies(graph, from, to, count, api, false);
}
}  // namespace

// CUDA 13's signature; CUDA 12's has no edge data (its count is in that slot: see
// cudaGraphGetEdges) and names the edge-data form `_v2`. Edge data orders nothing here.
PT_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                               const cudaGraphNode_t* to,
                                               const cudaGraphEdgeData* edgeData,
                                               size_t numDependencies) {
  if (detail::cudart_abi() == 12) {
    numDependencies = static_cast<size_t>(reinterpret_cast<std::uintptr_t>(edgeData));
  }
  return add_dependencies(graph, from, to, numDependencies, "cudaGraphAddDependencies");
}

PT_EXPORT cudaError_t cudaGraphAddDependencies_v2(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                  const cudaGraphNode_t* to,
                                                  const cudaGraphEdgeData* edgeData,
                                                  size_t numDependencies) {
  (void)edgeData;
  return add_dependencies(graph, from, to, numDependencies, "cudaGraphAddDependencies_v2");
}

// Removes a node and every edge to and from it; a child graph node takes its inlined work with
// it, a memory alloc node its allocation. The handle is invalid afterwards.
PT_EXPORT cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  const char* api = "cudaGraphDestroyNode";
  detail::State& s = detail::state();
  detail::Destructors run;
  const cudaError_t status = [&] {
    std::lock_guard<std::mutex> lock(s.mutex);
    detail::Graph* g = nullptr;
    int index = -1;
    if (!detail::live_node(s, node, &g, &index) || g->capturing ||
        g->nodes[static_cast<std::size_t>(index)].inlined) {
      return misuse(api, cudaErrorInvalidValue,
                    "invalid or destroyed node, or a node of a capturing graph " +
                        detail::pointer_text(node));
    }
    if (g->embedded) return detail::embedded_edit(api);
    if (detail::body_capturing(g->nodes[static_cast<std::size_t>(index)])) {
      return misuse(api, cudaErrorInvalidValue,
                    "the conditional node's body is still being captured");
    }
    std::vector<int> gone = {index};
    const detail::Node& target = g->nodes[static_cast<std::size_t>(index)];
    if (target.embedded != nullptr) target.embedded->live = false;
    detail::retire_bodies(target, &run);
    for (int i = target.child_first; i >= 0 && i < index; ++i) gone.push_back(i);
    std::vector<void*> released;
    for (int i : gone) {
      detail::Node& n = g->nodes[static_cast<std::size_t>(i)];
      if (n.type == cudaGraphNodeTypeMemAlloc) released.push_back(n.alloc.dptr);
      n = detail::Node{};
      n.type = cudaGraphNodeTypeEmpty;
      n.empty = n.inlined = n.destroyed = true;
    }
    for (detail::Node& n : g->nodes) {
      for (std::vector<int>* list : {&n.deps, &n.outer_deps}) {
        list->erase(std::remove_if(list->begin(), list->end(),
                                   [&](int d) {
                                     return std::find(gone.begin(), gone.end(), d) != gone.end();
                                   }),
                    list->end());
      }
    }
    detail::graph_mem_release(released);
    return cudaSuccess;
  }();
  detail::run_destructors(run);
  return status;
}

// The child graph node's graph, for reading: the copy made when the node was added (its work was
// inlined into the parent then); edits of it are reported as unsupported.
PT_EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  const char* api = "cudaGraphChildGraphNodeGetGraph";
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = nullptr;
  int index = -1;
  if (pGraph == nullptr || !detail::live_node(s, node, &g, &index) ||
      g->nodes[static_cast<std::size_t>(index)].type != cudaGraphNodeTypeGraph ||
      g->nodes[static_cast<std::size_t>(index)].embedded == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "not a child graph node, or pGraph NULL: " + detail::pointer_text(node));
  }
  *pGraph = reinterpret_cast<cudaGraph_t>(g->nodes[static_cast<std::size_t>(index)].embedded);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* pType) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (pType == nullptr || s.node_refs.count(ref) == 0 || !ref->graph->live ||
      ref->graph->nodes[ref->index].destroyed) {
    return misuse("cudaGraphNodeGetType", cudaErrorInvalidValue, "invalid node or pType NULL");
  }
  *pType = ref->graph->nodes[ref->index].type;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                                   const struct cudaKernelNodeParams* pNodeParams) {
  const char* api = "cudaGraphKernelNodeSetParams";
  detail::Node replacement;
  const cudaError_t error = detail::kernel_node(pNodeParams, api, &replacement);
  if (error != cudaSuccess) return error;
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (detail::in_embedded_graph(s, node)) return detail::embedded_edit(api);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (s.node_refs.count(ref) == 0 || !ref->graph->live ||
      ref->graph->nodes[ref->index].type != cudaGraphNodeTypeKernel) {
    return misuse(api, cudaErrorInvalidValue, "not a kernel node " + detail::pointer_text(node));
  }
  ref->graph->nodes[ref->index].record = replacement.record;
  ref->graph->nodes[ref->index].kernel = replacement.kernel;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node,
                                                   struct cudaKernelNodeParams* pNodeParams) {
  const char* api = "cudaGraphKernelNodeGetParams";
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (pNodeParams == nullptr || s.node_refs.count(ref) == 0 || !ref->graph->live ||
      ref->graph->nodes[ref->index].type != cudaGraphNodeTypeKernel) {
    return misuse(api, cudaErrorInvalidValue, "not a kernel node " + detail::pointer_text(node));
  }
  const detail::Node& n = ref->graph->nodes[ref->index];
  *pNodeParams = n.kernel;
  if (pNodeParams->func == nullptr) {
    // A captured launch: its kernel handle and configuration (the arguments were not kept).
    pNodeParams->func = detail::kernel_handle(n.record.a[2]);
    pNodeParams->gridDim = dim3(n.record.g[0], n.record.g[1], n.record.g[2]);
    pNodeParams->blockDim = dim3(n.record.g[3], n.record.g[4], n.record.g[5]);
    pNodeParams->sharedMemBytes = static_cast<unsigned>(n.record.a[3]);
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t
cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                 const struct cudaKernelNodeParams* pNodeParams) {
  const char* api = "cudaGraphExecKernelNodeSetParams";
  detail::Node replacement;
  const cudaError_t error = detail::kernel_node(pNodeParams, api, &replacement);
  if (error != cudaSuccess) return error;
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Node* target =
      detail::exec_node(s, detail::live_exec(s, hGraphExec), node, cudaGraphNodeTypeKernel);
  if (target == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "not a kernel node of the graph this exec was instantiated from");
  }
  target->record = replacement.record;
  target->kernel = replacement.kernel;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  const char* api = "cudaGraphClone";
  if (pGraphClone == nullptr) return misuse(api, cudaErrorInvalidValue, "pGraphClone is NULL");
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, originalGraph);
  if (g == nullptr || g->capturing) {
    return misuse(api, cudaErrorInvalidValue, "invalid, destroyed or capturing graph");
  }
  if (detail::has_conditionals(*g)) {
    return misuse(api, cudaErrorInvalidValue, "a graph with conditional nodes cannot be cloned");
  }
  auto* clone = new detail::Graph;
  clone->id = s.next_graph++;
  clone->device = g->device;
  clone->nodes = g->nodes;  // node handles are per graph: the clone's are made on demand
  for (detail::Node& n : clone->nodes) {
    if (n.embedded == nullptr) continue;
    // Each child graph node owns its graph: the clone's nodes get their own copies.
    auto* copy = new detail::Graph(*n.embedded);
    copy->id = s.next_graph++;
    copy->handles.clear();
    s.graphs.insert(copy);
    n.embedded = copy;
  }
  clone->cloned_from = g;
  detail::retain_all(g->user_refs, clone->user_refs);
  detail::graph_mem_retain(clone->nodes);
  s.graphs.insert(clone);
  *pGraphClone = reinterpret_cast<cudaGraph_t>(clone);
  return cudaSuccess;
}

// ---- memory nodes (graphMemoryNodes) ---------------------------------------------------------
// Reserved at add time, mapped/unmapped at launch, given back when the last graph or exec holding
// the alloc node is destroyed (GraphMemory above). At launch both node kinds only order their
// dependencies otherwise (empty nodes).

PT_EXPORT cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t* pDependencies,
                                               size_t numDependencies,
                                               struct cudaMemAllocNodeParams* nodeParams) {
  const char* api = "cudaGraphAddMemAllocNode";
  if (nodeParams == nullptr) return misuse(api, cudaErrorInvalidValue, "nodeParams is NULL");
  if (nodeParams->bytesize == 0) return misuse(api, cudaErrorInvalidValue, "bytesize is 0");
  if (nodeParams->poolProps.allocType != cudaMemAllocationTypePinned ||
      nodeParams->poolProps.location.type != cudaMemLocationTypeDevice ||
      nodeParams->poolProps.location.id < 0 ||
      nodeParams->poolProps.location.id >= detail::config().devices) {
    return misuse(api, cudaErrorInvalidValue,
                  "poolProps must be pinned memory on a valid device (location id " +
                      std::to_string(nodeParams->poolProps.location.id) + ")");
  }
  const int device = nodeParams->poolProps.location.id;
  void* pointer = nullptr;
  const cudaError_t allocated =
      detail::allocate_on_device(&pointer, nodeParams->bytesize, device, api);
  if (allocated != cudaSuccess) return allocated;
  detail::Node node;
  node.empty = true;
  node.type = cudaGraphNodeTypeMemAlloc;
  node.alloc = *nodeParams;
  node.alloc.dptr = pointer;
  node.alloc.accessDescs = nullptr;  // the caller's array is not kept
  const cudaError_t error =
      detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node), api);
  if (error != cudaSuccess) {
    powertrain::emu::free_device_memory(pointer, api);  // the graph was invalid
    return error;
  }
  nodeParams->dptr = pointer;
  detail::GraphMemory& m = detail::graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  detail::GraphAlloc& a = m.allocs[pointer];
  a.device = device;
  a.bytes = nodeParams->bytesize;
  a.refs = 1;  // the graph
  std::uint64_t& reserved = m.reserved[device];
  reserved += nodeParams->bytesize;
  m.reserved_high[device] = std::max(m.reserved_high[device], reserved);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t* pDependencies,
                                              size_t numDependencies, void* dptr) {
  const char* api = "cudaGraphAddMemFreeNode";
  const detail::PointerInfo info = detail::lookup_pointer(dptr);
  if (!info.known || !info.device_side || info.base != reinterpret_cast<std::uintptr_t>(dptr)) {
    return misuse(
        api, cudaErrorInvalidValue,
        "dptr " + detail::pointer_text(dptr) + " is not the start of a device allocation");
  }
  detail::Node node;
  node.empty = true;
  node.type = cudaGraphNodeTypeMemFree;
  node.free_ptr = dptr;
  return detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node), api);
}

namespace {
// The node behind a handle, if it is of `type` (lock held by the caller).
detail::Node* typed_node(detail::State& s, cudaGraphNode_t node, cudaGraphNodeType type) {
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (s.node_refs.count(ref) == 0 || !ref->graph->live) return nullptr;
  detail::Node& n = ref->graph->nodes[static_cast<std::size_t>(ref->index)];
  return n.type == type ? &n : nullptr;
}
}  // namespace

// Host nodes: the function and its argument, read and replaced (in the graph, or in an exec's
// copy of the node; the graph's later launches run the new function).
PT_EXPORT cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node,
                                                 struct cudaHostNodeParams* pNodeParams) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, cudaGraphNodeTypeHost);
  if (n == nullptr || pNodeParams == nullptr) {
    return misuse("cudaGraphHostNodeGetParams", cudaErrorInvalidValue,
                  "not a host node, or pNodeParams NULL");
  }
  pNodeParams->fn = n->fn;
  pNodeParams->userData = n->user;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node,
                                                 const struct cudaHostNodeParams* pNodeParams) {
  const char* api = "cudaGraphHostNodeSetParams";
  if (pNodeParams == nullptr || pNodeParams->fn == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pNodeParams or its fn is NULL");
  }
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (detail::in_embedded_graph(s, node)) return detail::embedded_edit(api);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (typed_node(s, node, cudaGraphNodeTypeHost) == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "not a host node " + detail::pointer_text(node));
  }
  detail::Node& n = ref->graph->nodes[static_cast<std::size_t>(ref->index)];
  n.fn = pNodeParams->fn;
  n.user = pNodeParams->userData;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec,
                                                     cudaGraphNode_t node,
                                                     const struct cudaHostNodeParams* pNodeParams) {
  const char* api = "cudaGraphExecHostNodeSetParams";
  if (pNodeParams == nullptr || pNodeParams->fn == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "pNodeParams or its fn is NULL");
  }
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Node* target =
      detail::exec_node(s, detail::live_exec(s, hGraphExec), node, cudaGraphNodeTypeHost);
  if (target == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  "not a host node of the graph this exec was instantiated from");
  }
  target->fn = pNodeParams->fn;
  target->user = pNodeParams->userData;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                                     struct cudaMemAllocNodeParams* params_out) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, cudaGraphNodeTypeMemAlloc);
  if (n == nullptr || params_out == nullptr) {
    return misuse("cudaGraphMemAllocNodeGetParams", cudaErrorInvalidValue,
                  "not a memory alloc node, or params_out NULL");
  }
  *params_out = n->alloc;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, cudaGraphNodeTypeMemFree);
  if (n == nullptr || dptr_out == nullptr) {
    return misuse("cudaGraphMemFreeNodeGetParams", cudaErrorInvalidValue,
                  "not a memory free node, or dptr_out NULL");
  }
  *static_cast<void**>(dptr_out) = n->free_ptr;
  return cudaSuccess;
}

namespace {
bool graph_mem_device(int device, const char* api) {
  if (device >= 0 && device < detail::config().devices) return true;
  misuse(api, cudaErrorInvalidDevice, "device " + std::to_string(device) + " does not exist");
  return false;
}
}  // namespace

// Gives back the pooled memory of the device: alloc nodes no live graph or exec holds and that are
// not mapped. Memory a live graph holds keeps its fixed address for the next launch (the runtime
// may also unmap the physical pages of its unmapped allocations; not modelled).
PT_EXPORT cudaError_t cudaDeviceGraphMemTrim(int device) {
  const char* api = "cudaDeviceGraphMemTrim";
  if (!graph_mem_device(device, api)) return cudaErrorInvalidDevice;
  std::vector<void*> give_back;
  {
    detail::GraphMemory& m = detail::graph_memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    for (auto it = m.allocs.begin(); it != m.allocs.end();) {
      const detail::GraphAlloc& a = it->second;
      if (a.device != device || a.refs > 0 || a.mapped) {
        ++it;
        continue;
      }
      m.reserved[device] -= std::min(m.reserved[device], a.bytes);
      give_back.push_back(const_cast<void*>(it->first));
      it = m.allocs.erase(it);
    }
  }
  for (void* p : give_back) powertrain::emu::free_device_memory(p, api);
  return cudaSuccess;
}

// Used (mapped by launches, not yet freed by a free node) and reserved (alloc nodes not given
// back) graph memory, current and high watermarks.
PT_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void* value) {
  const char* api = "cudaDeviceGetGraphMemAttribute";
  if (!graph_mem_device(device, api)) return cudaErrorInvalidDevice;
  if (value == nullptr) return misuse(api, cudaErrorInvalidValue, "value is NULL");
  if (attr < cudaGraphMemAttrUsedMemCurrent || attr > cudaGraphMemAttrReservedMemHigh) {
    return misuse(api, cudaErrorInvalidValue,
                  "unknown attribute " + std::to_string(static_cast<int>(attr)));
  }
  detail::GraphMemory& m = detail::graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::map<int, std::uint64_t>& source = attr == cudaGraphMemAttrUsedMemCurrent ? m.used
                                         : attr == cudaGraphMemAttrUsedMemHigh  ? m.used_high
                                         : attr == cudaGraphMemAttrReservedMemCurrent
                                             ? m.reserved
                                             : m.reserved_high;
  *static_cast<std::uint64_t*>(value) = source[device];
  return cudaSuccess;
}

// Only the high watermarks can be set, and only to 0 (as the runtime): they restart from the
// current value.
PT_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void* value) {
  const char* api = "cudaDeviceSetGraphMemAttribute";
  if (!graph_mem_device(device, api)) return cudaErrorInvalidDevice;
  if (value == nullptr ||
      (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh) ||
      *static_cast<const std::uint64_t*>(value) != 0) {
    return misuse(api, cudaErrorInvalidValue, "only a high watermark can be reset, to 0");
  }
  detail::GraphMemory& m = detail::graph_memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (attr == cudaGraphMemAttrUsedMemHigh) {
    m.used_high[device] = m.used[device];
  } else {
    m.reserved_high[device] = m.reserved[device];
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return powertrain::emu::detail::impl::graph_upload(graphExec, stream, false, "cudaGraphUpload");
}

// ---- node parameters read and replaced (copies, memsets, events), enabling, clones -----------
// A graph node's parameters are replaced in the graph (later instantiations see them); an exec's
// copy of a node is replaced in the exec only (its next launches run it), as CUDA does.

namespace {

// Replaces the work of `node` (in the graph, or in `exec`'s copy when exec is not NULL) by
// `replacement`, built for the node's type; keeps the node's dependencies.
cudaError_t replace_node(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeType type,
                         const char* api, const char* what, cudaError_t built,
                         detail::Node&& replacement) {
  if (built != cudaSuccess) return built;
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (exec == nullptr && detail::in_embedded_graph(s, node)) return detail::embedded_edit(api);
  detail::Node* target = exec != nullptr
                             ? detail::exec_node(s, detail::live_exec(s, exec), node, type)
                             : typed_node(s, node, type);
  if (target == nullptr) {
    return misuse(api, cudaErrorInvalidValue,
                  std::string("not a ") + what + " node" +
                      (exec != nullptr ? " of the graph this exec was instantiated from" : "") +
                      ": " + detail::pointer_text(node));
  }
  detail::assign_work(*target, replacement);
  return cudaSuccess;
}

cudaError_t memcpy_1d_node(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                           const char* api, detail::Node* out) {
  *out = detail::copy_node(count, detail::copy_kind(kind, dst, src), api);
  out->copy = detail::linear_copy(dst, src, count, kind);
  return cudaSuccess;
}

}  // namespace

PT_EXPORT cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node,
                                                   struct cudaMemcpy3DParms* pNodeParams) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, cudaGraphNodeTypeMemcpy);
  if (n == nullptr || pNodeParams == nullptr) {
    return misuse("cudaGraphMemcpyNodeGetParams", cudaErrorInvalidValue,
                  "not a memcpy node, or pNodeParams NULL");
  }
  *pNodeParams = n->copy;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node,
                                                   const struct cudaMemcpy3DParms* pNodeParams) {
  const char* api = "cudaGraphMemcpyNodeSetParams";
  detail::Node built;
  const cudaError_t error = detail::memcpy3d_node(pNodeParams, api, &built);
  return replace_node(nullptr, node, cudaGraphNodeTypeMemcpy, api, "memcpy", error,
                      std::move(built));
}

PT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst,
                                                     const void* src, size_t count,
                                                     enum cudaMemcpyKind kind) {
  const char* api = "cudaGraphMemcpyNodeSetParams1D";
  detail::Node built;
  const cudaError_t error = memcpy_1d_node(dst, src, count, kind, api, &built);
  return replace_node(nullptr, node, cudaGraphNodeTypeMemcpy, api, "memcpy", error,
                      std::move(built));
}

PT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams(
    cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaMemcpy3DParms* pNodeParams) {
  const char* api = "cudaGraphExecMemcpyNodeSetParams";
  if (hGraphExec == nullptr) return misuse(api, cudaErrorInvalidValue, "hGraphExec is NULL");
  detail::Node built;
  const cudaError_t error = detail::memcpy3d_node(pNodeParams, api, &built);
  return replace_node(hGraphExec, node, cudaGraphNodeTypeMemcpy, api, "memcpy", error,
                      std::move(built));
}

PT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec,
                                                         cudaGraphNode_t node, void* dst,
                                                         const void* src, size_t count,
                                                         enum cudaMemcpyKind kind) {
  const char* api = "cudaGraphExecMemcpyNodeSetParams1D";
  if (hGraphExec == nullptr) return misuse(api, cudaErrorInvalidValue, "hGraphExec is NULL");
  detail::Node built;
  const cudaError_t error = memcpy_1d_node(dst, src, count, kind, api, &built);
  return replace_node(hGraphExec, node, cudaGraphNodeTypeMemcpy, api, "memcpy", error,
                      std::move(built));
}

namespace {
// A copy node to or from a __device__/__constant__ variable: the variable's storage is resolved
// when the node is made (as the runtime does), then it is an ordinary 1D copy node.
cudaError_t symbol_copy_node(bool to_symbol, const void* symbol, void* other, size_t count,
                             size_t offset, cudaMemcpyKind kind, const char* api,
                             detail::Node* out) {
  if (const cudaError_t error = impl::symbol_copy_direction(to_symbol, kind, api);
      error != cudaSuccess) {
    return error;
  }
  unsigned char* storage = nullptr;
  if (const cudaError_t error = impl::symbol_range(symbol, count, offset, api, &storage);
      error != cudaSuccess) {
    return error;
  }
  return to_symbol ? memcpy_1d_node(storage, other, count, kind, api, out)
                   : memcpy_1d_node(other, storage, count, kind, api, out);
}

cudaError_t add_symbol_copy_node(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                 const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                 bool to_symbol, const void* symbol, void* other, size_t count,
                                 size_t offset, cudaMemcpyKind kind, const char* api) {
  detail::Node node;
  if (const cudaError_t error =
          symbol_copy_node(to_symbol, symbol, other, count, offset, kind, api, &node);
      error != cudaSuccess) {
    return error;
  }
  return detail::add_node(pGraphNode, graph, pDependencies, numDependencies, std::move(node), api);
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                     const cudaGraphNode_t* pDependencies,
                                                     size_t numDependencies, const void* symbol,
                                                     const void* src, size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind) {
  return add_symbol_copy_node(pGraphNode, graph, pDependencies, numDependencies, true, symbol,
                              const_cast<void*>(src), count, offset, kind,
                              "cudaGraphAddMemcpyNodeToSymbol");
}

PT_EXPORT cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pGraphNode,
                                                       cudaGraph_t graph,
                                                       const cudaGraphNode_t* pDependencies,
                                                       size_t numDependencies, void* dst,
                                                       const void* symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind) {
  return add_symbol_copy_node(pGraphNode, graph, pDependencies, numDependencies, false, symbol, dst,
                              count, offset, kind, "cudaGraphAddMemcpyNodeFromSymbol");
}

namespace {
// A copy node's parameters replaced by a copy to (`to_symbol`) or from a variable, in the graph
// or, when `exec` is not NULL, in the exec's copy of the node.
cudaError_t set_symbol_copy(cudaGraphExec_t exec, bool exec_form, cudaGraphNode_t node,
                            bool to_symbol, const void* symbol, void* other, size_t count,
                            size_t offset, cudaMemcpyKind kind, const char* api) {
  if (exec_form && exec == nullptr) return misuse(api, cudaErrorInvalidValue, "hGraphExec is NULL");
  detail::Node built;
  const cudaError_t error =
      symbol_copy_node(to_symbol, symbol, other, count, offset, kind, api, &built);
  return replace_node(exec, node, cudaGraphNodeTypeMemcpy, api, "memcpy", error, std::move(built));
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void* symbol,
                                                           const void* src, size_t count,
                                                           size_t offset,
                                                           enum cudaMemcpyKind kind) {
  return set_symbol_copy(nullptr, false, node, true, symbol, const_cast<void*>(src), count, offset,
                         kind, "cudaGraphMemcpyNodeSetParamsToSymbol");
}

PT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void* dst,
                                                             const void* symbol, size_t count,
                                                             size_t offset,
                                                             enum cudaMemcpyKind kind) {
  return set_symbol_copy(nullptr, false, node, false, symbol, dst, count, offset, kind,
                         "cudaGraphMemcpyNodeSetParamsFromSymbol");
}

PT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec,
                                                               cudaGraphNode_t node,
                                                               const void* symbol, const void* src,
                                                               size_t count, size_t offset,
                                                               enum cudaMemcpyKind kind) {
  return set_symbol_copy(hGraphExec, true, node, true, symbol, const_cast<void*>(src), count,
                         offset, kind, "cudaGraphExecMemcpyNodeSetParamsToSymbol");
}

PT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec,
                                                                 cudaGraphNode_t node, void* dst,
                                                                 const void* symbol, size_t count,
                                                                 size_t offset,
                                                                 enum cudaMemcpyKind kind) {
  return set_symbol_copy(hGraphExec, true, node, false, symbol, dst, count, offset, kind,
                         "cudaGraphExecMemcpyNodeSetParamsFromSymbol");
}

// The exec's copy of a child graph node runs `childGraph`'s work from now on. As CUDA requires,
// `childGraph` has the topology of the node's graph: the same nodes in the same order, of the same
// kinds, with the same dependencies; otherwise nothing changes and the call fails.
PT_EXPORT cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec,
                                                           cudaGraphNode_t node,
                                                           cudaGraph_t childGraph) {
  const char* api = "cudaGraphExecChildGraphNodeSetParams";
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Exec* e = detail::live_exec(s, hGraphExec);
  const detail::Graph* child = detail::live_graph(s, childGraph);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(node);
  if (e == nullptr || child == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "invalid or destroyed graph exec or child graph");
  }
  if (s.node_refs.count(ref) == 0 || ref->graph != e->source || !ref->graph->live ||
      ref->index >= static_cast<int>(ref->graph->nodes.size()) ||
      ref->graph->nodes[ref->index].type != cudaGraphNodeTypeGraph) {
    return misuse(api, cudaErrorInvalidValue,
                  "not a child graph node of the graph this exec was instantiated from: " +
                      detail::pointer_text(node));
  }
  if (child->capturing) {
    return misuse(api, cudaErrorStreamCaptureUnjoined, "the child graph is still being captured");
  }
  const detail::Graph& source = *ref->graph;
  const int first = source.nodes[ref->index].child_first;
  const int count = ref->index - first;  // the inlined nodes sit just before the child node
  bool same = static_cast<int>(child->nodes.size()) == count;
  for (int i = 0; same && i < count; ++i) {
    const detail::Node& old_node = source.nodes[first + i];
    const detail::Node& new_node = child->nodes[i];
    std::vector<int> deps = new_node.deps;
    for (int& d : deps) d += first;
    same = old_node.type == new_node.type && old_node.record.op == new_node.record.op &&
           (new_node.deps.empty() ? old_node.deps == source.nodes[ref->index].outer_deps
                                  : old_node.deps == deps);
  }
  if (!same) {
    return misuse(api, cudaErrorInvalidValue,
                  "childGraph's topology differs from the child graph node's graph (" +
                      std::to_string(child->nodes.size()) + " nodes against " +
                      std::to_string(count) + ")");
  }
  for (int i = 0; i < count; ++i) {
    const int at = first + i < static_cast<int>(e->node_of.size()) ? e->node_of[first + i] : -1;
    if (at >= 0) detail::assign_work(e->nodes[at], child->nodes[i]);  // empty nodes: not there
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node,
                                                   struct cudaMemsetParams* pNodeParams) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, cudaGraphNodeTypeMemset);
  if (n == nullptr || pNodeParams == nullptr) {
    return misuse("cudaGraphMemsetNodeGetParams", cudaErrorInvalidValue,
                  "not a memset node, or pNodeParams NULL");
  }
  *pNodeParams = n->memset;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node,
                                                   const struct cudaMemsetParams* pNodeParams) {
  const char* api = "cudaGraphMemsetNodeSetParams";
  detail::Node built;
  const cudaError_t error = detail::memset_node(pNodeParams, api, &built);
  return replace_node(nullptr, node, cudaGraphNodeTypeMemset, api, "memset", error,
                      std::move(built));
}

PT_EXPORT cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec,
                                                       cudaGraphNode_t node,
                                                       const struct cudaMemsetParams* pNodeParams) {
  const char* api = "cudaGraphExecMemsetNodeSetParams";
  if (hGraphExec == nullptr) return misuse(api, cudaErrorInvalidValue, "hGraphExec is NULL");
  detail::Node built;
  const cudaError_t error = detail::memset_node(pNodeParams, api, &built);
  return replace_node(hGraphExec, node, cudaGraphNodeTypeMemset, api, "memset", error,
                      std::move(built));
}

namespace {
cudaError_t event_node_get(cudaGraphNode_t node, cudaGraphNodeType type, cudaEvent_t* event_out,
                           const char* api) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = typed_node(s, node, type);
  if (n == nullptr || event_out == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "not an event node of that kind, or event_out NULL");
  }
  *event_out = n->event;
  return cudaSuccess;
}

cudaError_t event_node_set(cudaGraphExec_t exec, cudaGraphNode_t node, bool record,
                           cudaEvent_t event, const char* api) {
  detail::Node built;
  const cudaError_t error = detail::event_node(event, record, api, &built);
  return replace_node(exec, node,
                      record ? cudaGraphNodeTypeEventRecord : cudaGraphNodeTypeWaitEvent, api,
                      record ? "event record" : "event wait", error, std::move(built));
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node,
                                                       cudaEvent_t* event_out) {
  return event_node_get(node, cudaGraphNodeTypeEventRecord, event_out,
                        "cudaGraphEventRecordNodeGetEvent");
}

PT_EXPORT cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event_out) {
  return event_node_get(node, cudaGraphNodeTypeWaitEvent, event_out,
                        "cudaGraphEventWaitNodeGetEvent");
}

PT_EXPORT cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return event_node_set(nullptr, node, true, event, "cudaGraphEventRecordNodeSetEvent");
}

PT_EXPORT cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return event_node_set(nullptr, node, false, event, "cudaGraphEventWaitNodeSetEvent");
}

PT_EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec,
                                                           cudaGraphNode_t hNode,
                                                           cudaEvent_t event) {
  if (hGraphExec == nullptr) {
    return misuse("cudaGraphExecEventRecordNodeSetEvent", cudaErrorInvalidValue,
                  "hGraphExec is NULL");
  }
  return event_node_set(hGraphExec, hNode, true, event, "cudaGraphExecEventRecordNodeSetEvent");
}

PT_EXPORT cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec,
                                                         cudaGraphNode_t hNode, cudaEvent_t event) {
  if (hGraphExec == nullptr) {
    return misuse("cudaGraphExecEventWaitNodeSetEvent", cudaErrorInvalidValue,
                  "hGraphExec is NULL");
  }
  return event_node_set(hGraphExec, hNode, false, event, "cudaGraphExecEventWaitNodeSetEvent");
}

namespace {
// The exec's copy of a work node (kernel, copy, memset: the kinds CUDA lets one disable).
detail::Node* exec_work_node(detail::State& s, cudaGraphExec_t exec, cudaGraphNode_t node) {
  detail::Exec* e = detail::live_exec(s, exec);
  for (cudaGraphNodeType type :
       {cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeMemset}) {
    if (detail::Node* n = detail::exec_node(s, e, node, type); n != nullptr) return n;
  }
  return nullptr;
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                              unsigned int isEnabled) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Node* n = exec_work_node(s, hGraphExec, hNode);
  if (n == nullptr) {
    return misuse("cudaGraphNodeSetEnabled", cudaErrorInvalidValue,
                  "not a kernel, memcpy or memset node of the graph this exec was instantiated "
                  "from");
  }
  n->disabled = isEnabled == 0;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                              unsigned int* isEnabled) {
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const detail::Node* n = exec_work_node(s, hGraphExec, hNode);
  if (n == nullptr || isEnabled == nullptr) {
    return misuse("cudaGraphNodeGetEnabled", cudaErrorInvalidValue,
                  "not a kernel, memcpy or memset node of the exec's graph, or isEnabled NULL");
  }
  *isEnabled = n->disabled ? 0 : 1;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode,
                                               cudaGraph_t clonedGraph) {
  const char* api = "cudaGraphNodeFindInClone";
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* clone = detail::live_graph(s, clonedGraph);
  const auto* ref = reinterpret_cast<const detail::NodeRef*>(originalNode);
  if (pNode == nullptr || clone == nullptr || s.node_refs.count(ref) == 0 ||
      clone->cloned_from != ref->graph || ref->index >= static_cast<int>(clone->nodes.size())) {
    return misuse(api, cudaErrorInvalidValue,
                  "the graph is not a clone of the node's graph, or pNode is NULL");
  }
  *pNode = reinterpret_cast<cudaGraphNode_t>(detail::node_handle(s, clone, ref->index));
  return cudaSuccess;
}

namespace {
cudaError_t remove_dependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                const cudaGraphNode_t* to, size_t count, const char* api) {
  return edit_dependencies(graph, from, to, count, api, true);
}
}  // namespace

// CUDA 13's signature; CUDA 12's has no edge data (as cudaGraphAddDependencies).
PT_EXPORT cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                  const cudaGraphNode_t* to,
                                                  const cudaGraphEdgeData* edgeData,
                                                  size_t numDependencies) {
  if (detail::cudart_abi() == 12) {
    numDependencies = static_cast<size_t>(reinterpret_cast<std::uintptr_t>(edgeData));
  }
  return remove_dependencies(graph, from, to, numDependencies, "cudaGraphRemoveDependencies");
}

PT_EXPORT cudaError_t cudaGraphRemoveDependencies_v2(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                     const cudaGraphNode_t* to,
                                                     const cudaGraphEdgeData* edgeData,
                                                     size_t numDependencies) {
  (void)edgeData;
  return remove_dependencies(graph, from, to, numDependencies, "cudaGraphRemoveDependencies_v2");
}

// ---- user objects ----------------------------------------------------------------------------

PT_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr,
                                           cudaHostFn_t destroy, unsigned int initialRefcount,
                                           unsigned int flags) {
  const char* api = "cudaUserObjectCreate";
  if (object_out == nullptr || destroy == nullptr || initialRefcount == 0) {
    return misuse(api, cudaErrorInvalidValue, "object_out or destroy NULL, or refcount 0");
  }
  if (flags != cudaUserObjectNoDestructorSync) {
    return misuse(api, cudaErrorInvalidValue,
                  "flags must be cudaUserObjectNoDestructorSync (the only supported mode)");
  }
  auto* object = new detail::UserObject{ptr, destroy, initialRefcount};  // freed never: a stale
  detail::UserObjects& u = detail::user_objects();                       // handle stays invalid
  std::lock_guard<std::mutex> lock(u.mutex);
  u.live.insert(object);
  *object_out = reinterpret_cast<cudaUserObject_t>(object);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  if (count == 0 ||
      !detail::retain_user_object(reinterpret_cast<detail::UserObject*>(object), count)) {
    return misuse(
        "cudaUserObjectRetain", cudaErrorInvalidValue,
        "invalid or released user object " + detail::pointer_text(object) + ", or count 0");
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  detail::Destructors run;
  if (count == 0 ||
      !detail::release_user_object(reinterpret_cast<detail::UserObject*>(object), count, &run)) {
    return misuse("cudaUserObjectRelease", cudaErrorInvalidValue,
                  "invalid user object " + detail::pointer_text(object) +
                      ", count 0, or more references released than held");
  }
  detail::run_destructors(run);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                unsigned int count, unsigned int flags) {
  const char* api = "cudaGraphRetainUserObject";
  if (count == 0 || (flags & ~static_cast<unsigned>(cudaGraphUserObjectMove)) != 0) {
    return misuse(api, cudaErrorInvalidValue, "count 0 or unknown flags");
  }
  detail::State& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::Graph* g = detail::live_graph(s, graph);
  auto* o = reinterpret_cast<detail::UserObject*>(object);
  if (g == nullptr) return misuse(api, cudaErrorInvalidValue, "invalid or destroyed graph");
  // cudaGraphUserObjectMove: the caller's references move to the graph (no new ones).
  if ((flags & cudaGraphUserObjectMove) != 0) {
    detail::UserObjects& u = detail::user_objects();
    std::lock_guard<std::mutex> objects(u.mutex);
    if (u.live.count(o) == 0 || o->refs < count) {
      return misuse(api, cudaErrorInvalidValue, "invalid user object or too few references");
    }
  } else if (!detail::retain_user_object(o, count)) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid or released user object " + detail::pointer_text(object));
  }
  g->user_refs[o] += count;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                 unsigned int count) {
  const char* api = "cudaGraphReleaseUserObject";
  detail::State& s = detail::state();
  detail::Destructors run;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    detail::Graph* g = detail::live_graph(s, graph);
    auto* o = reinterpret_cast<detail::UserObject*>(object);
    const auto it = g != nullptr ? g->user_refs.find(o) : detail::UserRefs::iterator{};
    if (g == nullptr || count == 0 || it == g->user_refs.end() || it->second < count) {
      return misuse(api, cudaErrorInvalidValue,
                    "the graph holds fewer references to the user object, or count 0");
    }
    if ((it->second -= count) == 0) g->user_refs.erase(it);
    detail::release_user_object(o, count, &run);
  }
  detail::run_destructors(run);
  return cudaSuccess;
}

// ---- kernel node attributes (access policy window, priority, cluster shape: hints, kept) ---

namespace {
cudaError_t kernel_node_attribute(cudaGraphNode_t node, const char* api, detail::Node** out) {
  detail::State& s = detail::state();
  *out = typed_node(s, node, cudaGraphNodeTypeKernel);
  if (*out == nullptr) return misuse(api, cudaErrorInvalidValue, "not a kernel node");
  return cudaSuccess;
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode,
                                                      cudaLaunchAttributeID attr,
                                                      const cudaLaunchAttributeValue* value) {
  const char* api = "cudaGraphKernelNodeSetAttribute";
  if (value == nullptr) return misuse(api, cudaErrorInvalidValue, "value is NULL");
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  detail::Node* n = nullptr;
  if (const cudaError_t e = kernel_node_attribute(hNode, api, &n); e != cudaSuccess) return e;
  n->attributes[static_cast<int>(attr)] = *value;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode,
                                                      cudaLaunchAttributeID attr,
                                                      cudaLaunchAttributeValue* value_out) {
  const char* api = "cudaGraphKernelNodeGetAttribute";
  if (value_out == nullptr) return misuse(api, cudaErrorInvalidValue, "value_out is NULL");
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  detail::Node* n = nullptr;
  if (const cudaError_t e = kernel_node_attribute(hNode, api, &n); e != cudaSuccess) return e;
  const auto it = n->attributes.find(static_cast<int>(attr));
  *value_out = it != n->attributes.end() ? it->second : cudaLaunchAttributeValue{};
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst,
                                                        cudaGraphNode_t hSrc) {
  const char* api = "cudaGraphKernelNodeCopyAttributes";
  std::lock_guard<std::mutex> lock(detail::state().mutex);
  detail::Node* dst = nullptr;
  detail::Node* src = nullptr;
  if (const cudaError_t e = kernel_node_attribute(hDst, api, &dst); e != cudaSuccess) return e;
  if (const cudaError_t e = kernel_node_attribute(hSrc, api, &src); e != cudaSuccess) return e;
  dst->attributes = src->attributes;
  return cudaSuccess;
}

// ---- the generic node parameters (cudaGraphNodeSetParams, cudaGraphExecNodeSetParams) ---------
// Dispatched by the node type to the typed setters above; child-graph, memory and conditional
// nodes cannot be changed this way (as in CUDA for the first two; the last is not emulated).

namespace {
cudaError_t set_node_params(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeParams* params,
                            const char* api) {
  if (params == nullptr) return misuse(api, cudaErrorInvalidValue, "nodeParams is NULL");
  switch (params->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParams p = kernel_params_of(*params);
      return exec != nullptr ? cudaGraphExecKernelNodeSetParams(exec, node, &p)
                             : cudaGraphKernelNodeSetParams(node, &p);
    }
    case cudaGraphNodeTypeMemcpy:
      return exec != nullptr
                 ? cudaGraphExecMemcpyNodeSetParams(exec, node, &params->memcpy.copyParams)
                 : cudaGraphMemcpyNodeSetParams(node, &params->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
      const cudaMemsetParams p = memset_params_of(*params);
      return exec != nullptr ? cudaGraphExecMemsetNodeSetParams(exec, node, &p)
                             : cudaGraphMemsetNodeSetParams(node, &p);
    }
    case cudaGraphNodeTypeHost: {
      const cudaHostNodeParams p = host_params_of(*params);
      return exec != nullptr ? cudaGraphExecHostNodeSetParams(exec, node, &p)
                             : cudaGraphHostNodeSetParams(node, &p);
    }
    case cudaGraphNodeTypeEventRecord:
      return exec != nullptr
                 ? cudaGraphExecEventRecordNodeSetEvent(exec, node, params->eventRecord.event)
                 : cudaGraphEventRecordNodeSetEvent(node, params->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
      return exec != nullptr
                 ? cudaGraphExecEventWaitNodeSetEvent(exec, node, params->eventWait.event)
                 : cudaGraphEventWaitNodeSetEvent(node, params->eventWait.event);
    default:
      return misuse(api, cudaErrorInvalidValue,
                    "node type " + std::to_string(params->type) +
                        " cannot be changed through the generic parameters");
  }
}
}  // namespace

PT_EXPORT cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node,
                                             struct cudaGraphNodeParams* nodeParams) {
  return set_node_params(nullptr, node, nodeParams, "cudaGraphNodeSetParams");
}

PT_EXPORT cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                                 struct cudaGraphNodeParams* nodeParams) {
  if (graphExec == nullptr) {
    return misuse("cudaGraphExecNodeSetParams", cudaErrorInvalidValue, "graphExec is NULL");
  }
  return set_node_params(graphExec, node, nodeParams, "cudaGraphExecNodeSetParams");
}
