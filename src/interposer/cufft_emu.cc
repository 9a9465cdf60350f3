// cuFFT's plan and execution API on the emulated devices (the calls NVIDIA's simpleCUFFT sample,
// PyTorch's torch.fft and cuFFT-based convolutions make). A plan is validated and kept with its
// shape; cufftMakePlan* sizes the work area and, with auto-allocation (the default), allocates it
// as device memory (a `malloc` record named after the call, freed by cufftDestroy), so it counts
// in the peak. An execution is recorded as an `fft` record with the transform's shape, dtype,
// direction, FLOPs and bytes, followed by a memory-bound kernel named cufft_<type>_<precision>
// sized to move those bytes (the raw-kernel estimate: 16 bytes per thread). Model, not measured:
//   FLOPs  = 5·N·log2(N) per complex transform of N points (2.5·N·log2(N) real-to-complex and
//            complex-to-real), times the batch: the standard radix-2 operation count.
//   passes = Σ over dimensions of ⌈log2(n_d)/12⌉ (at least 1): a transform of up to 4096 points
//            per dimension runs in one pass through shared memory, larger ones in more.
//   bytes  = passes · batch · (input + output bytes): each pass reads and writes the data once.
//   work area = the output's size when there is more than one pass (the transpose buffer), else 0.
// The kernel record carries both the FLOPs and the bytes, and the estimator takes the roofline of
// the two (FLOPs on the fp32 units); at these intensities (≈ 5·log2(N)/16 flop/byte for C2C fp32)
// the bytes bind on every GPU of the catalog. cufftXtMakePlanMany/cufftXtGetSizeMany/cufftXtExec on
// one GPU (what torch.fft calls, also for fp16 and bf16 transforms) map to the same plans.
// Multi-GPU plans (cufftXtSetGPUs, cufftXtMalloc, cufftXtMemcpy, cufftXtExecDescriptor*) are at
// the end of this file. Callback functions, cufftXtQueryPlan and the guru/64-bit Xt plan are
// reported unsupported by name (generated stubs returning CUFFT_NOT_SUPPORTED).
#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

constexpr int kMaxRank = 3;

struct Plan {
  bool made = false;
  bool live = true;
  cufftType type = CUFFT_C2C;
  int rank = 0;
  std::int64_t n[kMaxRank] = {0, 0, 0};
  std::int64_t batch = 1;
  bool advanced_layout = false;  // inembed/onembed given: pointers are not size-checked
  int real_bytes = 0;  // bytes of one real value: 0 = from the type (4 or 8); 2 = fp16/bf16
  bool bf16 = false;   // with real_bytes 2: bfloat16 rather than float16
  cudaStream_t stream = nullptr;
  bool auto_allocate = true;
  std::size_t work_bytes = 0;
  void* work_area = nullptr;  // ours (auto-allocated) or the program's (cufftSetWorkArea)
  bool own_work_area = false;
  std::vector<int> gpus;        // cufftXtSetGPUs: a multi-GPU plan (empty: one GPU)
  std::vector<void*> gpu_work;  // its per-GPU work areas (ours)
  // Plan properties (cufftSetPlanPropertyInt64): 0 means cuFFT's default.
  long long patient_jit = 0, max_host_threads = 0;
  int work_area_policy = 2;  // CUFFT_WORKAREA_PERFORMANCE
  // Installed callbacks by cufftXtCallbackType (0-7): "" none, "device" (cufftXtSetCallback) or
  // "lto" (cufftXtSetJITCallback).
  std::string callbacks[8];
  std::size_t callback_shared_bytes[8] = {};
};

struct FftState {
  std::mutex mutex;
  std::map<int, Plan> plans;
  int next = 1;  // handles are small integers, never reused
};

FftState& fft() {
  static FftState* s = new FftState;  // never destroyed
  return *s;
}

bool valid_type(cufftType type) {
  switch (type) {
    case CUFFT_R2C:
    case CUFFT_C2R:
    case CUFFT_C2C:
    case CUFFT_D2Z:
    case CUFFT_Z2D:
    case CUFFT_Z2Z:
      return true;
  }
  return false;
}

bool is_double(cufftType t) { return t == CUFFT_D2Z || t == CUFFT_Z2D || t == CUFFT_Z2Z; }

const char* type_name(cufftType t) {
  switch (t) {
    case CUFFT_R2C:
      return "R2C";
    case CUFFT_C2R:
      return "C2R";
    case CUFFT_C2C:
      return "C2C";
    case CUFFT_D2Z:
      return "D2Z";
    case CUFFT_Z2D:
      return "Z2D";
    case CUFFT_Z2Z:
      return "Z2Z";
  }
  return "?";
}

// Points of one transform (product of the dimensions) and of its complex half-spectrum side
// (the last dimension n/2+1 for real transforms).
struct Sizes {
  std::int64_t points = 0;        // N
  std::int64_t complex_side = 0;  // elements of the complex array of a real transform
  std::int64_t in_bytes = 0;      // per transform
  std::int64_t out_bytes = 0;
  int passes = 1;
};

Sizes sizes_of(const Plan& p) {
  Sizes s;
  s.points = 1;
  std::int64_t half = 1;
  int passes = 0;
  for (int i = 0; i < p.rank; ++i) {
    s.points *= p.n[i];
    half *= i + 1 == p.rank ? p.n[i] / 2 + 1 : p.n[i];
    passes += static_cast<int>(std::ceil(std::log2(static_cast<double>(p.n[i])) / 12.0));
  }
  s.passes = std::max(passes, 1);
  s.complex_side = half;
  const std::int64_t real = p.real_bytes > 0 ? p.real_bytes : is_double(p.type) ? 8 : 4;
  const std::int64_t complex = 2 * real;
  switch (p.type) {
    case CUFFT_C2C:
    case CUFFT_Z2Z:
      s.in_bytes = s.out_bytes = s.points * complex;
      break;
    case CUFFT_R2C:
    case CUFFT_D2Z:
      s.in_bytes = s.points * real;
      s.out_bytes = half * complex;
      break;
    case CUFFT_C2R:
    case CUFFT_Z2D:
      s.in_bytes = half * complex;
      s.out_bytes = s.points * real;
      break;
  }
  return s;
}

// Checks the shape (rank 1-3, every dimension ≥ 1, batch ≥ 1, no overflow of the byte counts).
cufftResult check_shape(int rank, const long long* n, long long batch, cufftType type,
                        const char* api) {
  if (!valid_type(type)) {
    report_misuse(api, "unknown transform type " + std::to_string(static_cast<int>(type)));
    return CUFFT_INVALID_TYPE;
  }
  if (rank < 1 || rank > kMaxRank || n == nullptr) {
    report_misuse(api, "rank " + std::to_string(rank) + " is not 1, 2 or 3");
    return CUFFT_INVALID_VALUE;
  }
  long long total = batch;
  if (batch < 1) {
    report_misuse(api, "batch " + std::to_string(batch) + " < 1");
    return CUFFT_INVALID_SIZE;
  }
  for (int i = 0; i < rank; ++i) {
    // At most 2^48 points in all: 16 bytes per point times the passes stays far from overflow.
    if (n[i] < 1 || __builtin_mul_overflow(total, n[i], &total) || total > (1LL << 48)) {
      report_misuse(api, "dimension " + std::to_string(i) + " = " + std::to_string(n[i]) +
                             " is not a valid size");
      return CUFFT_INVALID_SIZE;
    }
  }
  return CUFFT_SUCCESS;
}

constexpr cufftType kC2C = CUFFT_C2C, kZ2Z = CUFFT_Z2Z, kR2C = CUFFT_R2C, kD2Z = CUFFT_D2Z,
                    kC2R = CUFFT_C2R, kZ2D = CUFFT_Z2D;

// The transform of cufftXt's (input, output) data types on one GPU.
struct XtType {
  cufftType type = CUFFT_C2C;
  int real_bytes = 0;  // bytes of one real value (2 for fp16/bf16)
  bool bf16 = false;
};

// nullopt for combinations cuFFT does not transform.

std::optional<XtType> xt_type(cudaDataType in, cudaDataType out) {
  struct Row {
    cudaDataType in, out;
    cufftType type;
    int bytes;
    bool bf16;
  };
  static constexpr Row kRows[] = {
      {CUDA_C_32F, CUDA_C_32F, CUFFT_C2C, 4, false},
      {CUDA_R_32F, CUDA_C_32F, CUFFT_R2C, 4, false},
      {CUDA_C_32F, CUDA_R_32F, CUFFT_C2R, 4, false},
      {CUDA_C_64F, CUDA_C_64F, CUFFT_Z2Z, 8, false},
      {CUDA_R_64F, CUDA_C_64F, CUFFT_D2Z, 8, false},
      {CUDA_C_64F, CUDA_R_64F, CUFFT_Z2D, 8, false},
      {CUDA_C_16F, CUDA_C_16F, CUFFT_C2C, 2, false},
      {CUDA_R_16F, CUDA_C_16F, CUFFT_R2C, 2, false},
      {CUDA_C_16F, CUDA_R_16F, CUFFT_C2R, 2, false},
      {CUDA_C_16BF, CUDA_C_16BF, CUFFT_C2C, 2, true},
      {CUDA_R_16BF, CUDA_C_16BF, CUFFT_R2C, 2, true},
      {CUDA_C_16BF, CUDA_R_16BF, CUFFT_C2R, 2, true},
  };
  for (const Row& row : kRows) {
    if (row.in == in && row.out == out) return XtType{row.type, row.bytes, row.bf16};
  }
  return std::nullopt;
}

Plan* find(int handle) {
  auto it = fft().plans.find(handle);
  return it != fft().plans.end() && it->second.live ? &it->second : nullptr;
}

cufftResult bad_plan(const char* api, int handle) {
  report_misuse(api, "invalid or destroyed cuFFT plan " + std::to_string(handle));
  return CUFFT_INVALID_PLAN;
}

std::size_t work_bytes_of(const Plan& p) {
  const Sizes s = sizes_of(p);
  return s.passes > 1 ? static_cast<std::size_t>(s.out_bytes * p.batch) : 0;
}

// Sets the plan's shape and sizes (and allocates) its work area. `plan` may be a new handle
// (cufftPlan*) or an empty one from cufftCreate (cufftMakePlan*).
cufftResult make_plan(int handle, int rank, const long long* n, bool advanced, long long batch,
                      cufftType type, std::size_t* work_size, const char* api, int real_bytes = 0,
                      bool bf16 = false) {
  if (const cufftResult r = check_shape(rank, n, batch, type, api); r != CUFFT_SUCCESS) return r;
  Plan shape;
  shape.type = type;
  shape.real_bytes = real_bytes;
  shape.bf16 = bf16;
  shape.rank = rank;
  for (int i = 0; i < rank; ++i) shape.n[i] = n[i];
  shape.batch = batch;
  shape.advanced_layout = advanced;
  std::size_t work = work_bytes_of(shape);
  bool allocate = false;
  std::vector<int> gpus;
  {
    std::lock_guard<std::mutex> lock(fft().mutex);
    Plan* p = find(handle);
    if (p == nullptr) return bad_plan(api, handle);
    if (p->made) {
      report_misuse(api, "plan " + std::to_string(handle) + " was already made");
      return CUFFT_INVALID_PLAN;
    }
    gpus = p->gpus;
    allocate = p->auto_allocate;
  }
  // A multi-GPU transform exchanges its data between the GPUs: each keeps a work area of its
  // share of the output for the exchange (workSize is then an array, one entry per GPU).
  const std::size_t per_gpu =
      gpus.size() > 1 ? static_cast<std::size_t>(sizes_of(shape).out_bytes * batch) / gpus.size()
                      : 0;
  std::vector<void*> gpu_work;
  void* area = nullptr;
  if (gpus.size() > 1) {
    work = per_gpu;
    if (allocate && per_gpu > 0) {
      int current = 0;
      cudaGetDevice(&current);
      for (int gpu : gpus) {
        void* part = nullptr;
        cudaSetDevice(gpu);
        if (allocate_device_memory(&part, per_gpu, api) != 0) {
          cudaSetDevice(current);
          for (void* done : gpu_work) free_device_memory(done, api);
          return CUFFT_ALLOC_FAILED;
        }
        gpu_work.push_back(part);
      }
      cudaSetDevice(current);
    }
  } else if (allocate && work > 0 && allocate_device_memory(&area, work, api) != 0) {
    return CUFFT_ALLOC_FAILED;
  }
  std::lock_guard<std::mutex> lock(fft().mutex);
  Plan* p = find(handle);
  if (p == nullptr) return bad_plan(api, handle);
  Plan settings = std::move(*p);  // what was set on the plan before it was made
  *p = shape;
  p->made = true;
  p->stream = settings.stream;
  p->auto_allocate = settings.auto_allocate;
  p->patient_jit = settings.patient_jit;
  p->max_host_threads = settings.max_host_threads;
  p->work_area_policy = settings.work_area_policy;
  for (int t = 0; t < 8; ++t) {
    p->callbacks[t] = std::move(settings.callbacks[t]);
    p->callback_shared_bytes[t] = settings.callback_shared_bytes[t];
  }
  p->work_bytes = work;
  p->work_area = area;
  p->own_work_area = area != nullptr;
  p->gpus = std::move(gpus);
  p->gpu_work = std::move(gpu_work);
  if (work_size != nullptr) {
    for (std::size_t i = 0; i < std::max<std::size_t>(p->gpus.size(), 1); ++i) work_size[i] = work;
  }
  return CUFFT_SUCCESS;
}

int new_handle() {
  std::lock_guard<std::mutex> lock(fft().mutex);
  const int handle = fft().next++;
  fft().plans.emplace(handle, Plan{});
  return handle;
}

cufftResult create_and_make(cufftHandle* out, int rank, const long long* n, bool advanced,
                            long long batch, cufftType type, const char* api) {
  if (out == nullptr) {
    report_misuse(api, "the plan pointer is NULL");
    return CUFFT_INVALID_VALUE;
  }
  const int handle = new_handle();
  const cufftResult r = make_plan(handle, rank, n, advanced, batch, type, nullptr, api);
  if (r != CUFFT_SUCCESS) {
    std::lock_guard<std::mutex> lock(fft().mutex);
    fft().plans.erase(handle);
    return r;
  }
  *out = handle;
  return CUFFT_SUCCESS;
}

// The work size a shape would need (cufftEstimate*, cufftGetSize*), without a plan.
cufftResult estimate(int rank, const long long* n, long long batch, cufftType type,
                     std::size_t* work_size, const char* api, int real_bytes = 0) {
  if (work_size == nullptr) {
    report_misuse(api, "workSize is NULL");
    return CUFFT_INVALID_VALUE;
  }
  if (const cufftResult r = check_shape(rank, n, batch, type, api); r != CUFFT_SUCCESS) return r;
  Plan shape;
  shape.type = type;
  shape.rank = rank;
  for (int i = 0; i < rank; ++i) shape.n[i] = n[i];
  shape.batch = batch;
  shape.real_bytes = real_bytes;
  *work_size = work_bytes_of(shape);
  return CUFFT_SUCCESS;
}

bool device_range(const void* pointer, std::int64_t bytes, bool check_size) {
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.device_side &&
         (!check_size || info.available >= static_cast<std::size_t>(bytes));
}

std::string dims_json(const Plan& p) {
  std::string s = "[";
  for (int i = 0; i < p.rank; ++i) {
    if (i > 0) s += ',';
    s += std::to_string(p.n[i]);
  }
  s += ']';
  return s;
}

cufftResult record_fft(cufftHandle handle, const Plan& plan, cufftType type, int direction,
                       bool in_place, std::int64_t flops, std::int64_t bytes, cudaStream_t stream,
                       const char* api, std::int64_t start);

// `type` nullptr: the plan's own type (cufftXtExec).
cufftResult execute(cufftHandle handle, const void* in, void* out, int direction,
                    const cufftType* requested, const char* api) {
  const std::int64_t start = now_ns();
  Plan plan;
  {
    std::lock_guard<std::mutex> lock(fft().mutex);
    Plan* p = find(handle);
    if (p == nullptr) return bad_plan(api, handle);
    plan = *p;
  }
  const cufftType type = requested != nullptr ? *requested : plan.type;
  if (!plan.made) {
    report_misuse(api, "plan " + std::to_string(handle) + " was created but never made");
    return CUFFT_INVALID_PLAN;
  }
  if (plan.gpus.size() > 1) {
    report_misuse(api, "plan " + std::to_string(handle) + " spans " +
                           std::to_string(plan.gpus.size()) +
                           " GPUs: execute it with cufftXtExecDescriptor on cufftXtMalloc'ed data");
    return CUFFT_INVALID_PLAN;
  }
  if (plan.type != type) {
    report_misuse(api, std::string("plan ") + std::to_string(handle) + " is " +
                           type_name(plan.type) + ", not " + type_name(type));
    return CUFFT_INVALID_TYPE;
  }
  const bool complex_to_complex = type == CUFFT_C2C || type == CUFFT_Z2Z;
  if (complex_to_complex && direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) {
    report_misuse(api, "direction " + std::to_string(direction) + " is not CUFFT_FORWARD (-1) " +
                           "or CUFFT_INVERSE (1)");
    return CUFFT_INVALID_VALUE;
  }
  if (plan.work_bytes > 0 && plan.work_area == nullptr) {
    report_misuse(api, "plan " + std::to_string(handle) + " has no work area " +
                           "(auto-allocation off and cufftSetWorkArea not called)");
    return CUFFT_NO_WORKSPACE;
  }
  const Sizes s = sizes_of(plan);
  const std::int64_t in_bytes = s.in_bytes * plan.batch, out_bytes = s.out_bytes * plan.batch;
  const bool in_place = in == out;
  const bool check = !plan.advanced_layout;
  if (!device_range(in, in_place ? std::max(in_bytes, out_bytes) : in_bytes, check) ||
      !device_range(out, out_bytes, check)) {
    report_misuse(api, "input " + pointer_text(in) + " or output " + pointer_text(out) +
                           " is not device memory holding the transform (" +
                           std::to_string(in_bytes) + " and " + std::to_string(out_bytes) +
                           " bytes)");
    return CUFFT_INVALID_VALUE;
  }
  const double n = static_cast<double>(s.points);
  const double per_transform = (complex_to_complex ? 5.0 : 2.5) * n * std::log2(n);
  const auto flops = static_cast<std::int64_t>(std::llround(per_transform * plan.batch));
  const std::int64_t bytes = s.passes * (in_bytes + out_bytes);
  return record_fft(handle, plan, type, direction, in_place, flops, bytes, plan.stream, api, start);
}

// The `fft` record of (a part of) a transform and its sized kernel on `stream`.
cufftResult record_fft(cufftHandle handle, const Plan& plan, cufftType type, int direction,
                       bool in_place, std::int64_t flops, std::int64_t bytes, cudaStream_t stream,
                       const char* api, std::int64_t start) {
  StreamRef ref;
  if (!stream_or_fail(stream, false, api, &ref)) return CUFFT_EXEC_FAILED;
  const Sizes s = sizes_of(plan);
  const bool complex_to_complex = type == CUFFT_C2C || type == CUFFT_Z2Z;
  const bool half = plan.real_bytes == 2;
  const char* precision = half              ? (plan.bf16 ? "bfloat16" : "float16")
                          : is_double(type) ? "float64"
                                            : "float32";
  const char* dtype = half              ? (plan.bf16 ? "complex_bfloat16" : "complex32")
                      : is_double(type) ? "complex128"
                                        : "complex64";

  auto r = begin_record(trace_schema::op::kFft, start, ref.device);
  r.field(trace_schema::field::kApi, std::string_view(api));
  r.field("plan", static_cast<std::int64_t>(handle));
  r.field("type", std::string_view(type_name(type)));
  if (complex_to_complex) {
    r.field("direction", std::string_view(direction == CUFFT_FORWARD ? "forward" : "inverse"));
  }
  r.field("rank", static_cast<std::int64_t>(plan.rank));
  r.raw("n", dims_json(plan));
  r.field(trace_schema::field::kBatch, plan.batch);
  r.field(trace_schema::field::kDtype, std::string_view(dtype));
  r.field_bool("in_place", in_place);
  r.field(trace_schema::field::kFlops, flops);
  r.field(trace_schema::field::kBytes, bytes);
  r.field("passes", static_cast<std::int64_t>(s.passes));
  std::string callbacks;  // the callbacks that run inside the transform (their work is unknown)
  for (int t = 0; t < 8; ++t) {
    if (plan.callbacks[t].empty()) continue;
    static const char* const kNames[8] = {
        "load_complex",  "load_complex_double",  "load_real",  "load_real_double",
        "store_complex", "store_complex_double", "store_real", "store_real_double"};
    callbacks += std::string(callbacks.empty() ? "[" : ",") + "\"" + kNames[t] + "\"";
  }
  if (!callbacks.empty()) r.raw("callbacks", callbacks + "]");
  r.field(trace_schema::field::kStream, ref.id);
  end_record(r);

  std::string name = "cufft_";
  for (const char* c = type_name(type); *c != '\0'; ++c) {
    name.push_back(static_cast<char>(*c + ('a' - 'A') * (*c >= 'A' && *c <= 'Z')));
  }
  name.append("_").append(precision);
  return append_sized_kernel(name, static_cast<std::size_t>(bytes), stream, api, start,
                             std::max<std::int64_t>(flops, 1))
             ? CUFFT_SUCCESS
             : CUFFT_EXEC_FAILED;
}

}  // namespace

int cufft_execute_as(int handle, const void* in, void* out, int direction, const char* api) {
  return execute(handle, in, out, direction, nullptr, api);
}

}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;

// ---- plans --------------------------------------------------------------------------------

PT_EXPORT cufftResult cufftCreate(cufftHandle* handle) {
  if (handle == nullptr) {
    powertrain::emu::report_misuse("cufftCreate", "the handle pointer is NULL");
    return CUFFT_INVALID_VALUE;
  }
  *handle = detail::new_handle();
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftDestroy(cufftHandle plan) {
  void* area = nullptr;
  std::vector<void*> gpu_work;
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    detail::Plan* p = detail::find(plan);
    if (p == nullptr) {
      if (plan == CUFFT_PLAN_NULL) return CUFFT_SUCCESS;  // safe by definition
      return detail::bad_plan("cufftDestroy", plan);
    }
    p->live = false;
    if (p->own_work_area) area = p->work_area;
    gpu_work.swap(p->gpu_work);
  }
  if (area != nullptr) powertrain::emu::free_device_memory(area, "cufftDestroy");
  for (void* part : gpu_work) powertrain::emu::free_device_memory(part, "cufftDestroy");
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch) {
  const long long n[1] = {nx};
  return detail::create_and_make(plan, 1, n, false, batch, type, "cufftPlan1d");
}

PT_EXPORT cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  const long long n[2] = {nx, ny};
  return detail::create_and_make(plan, 2, n, false, 1, type, "cufftPlan2d");
}

PT_EXPORT cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type) {
  const long long n[3] = {nx, ny, nz};
  return detail::create_and_make(plan, 3, n, false, 1, type, "cufftPlan3d");
}

PT_EXPORT cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride,
                                    int idist, int* onembed, int ostride, int odist, cufftType type,
                                    int batch) {
  (void)istride, (void)idist, (void)ostride, (void)odist;
  long long dims[detail::kMaxRank] = {0, 0, 0};
  for (int i = 0; n != nullptr && i < std::min(rank, detail::kMaxRank); ++i) dims[i] = n[i];
  return detail::create_and_make(plan, rank, n != nullptr ? dims : nullptr,
                                 inembed != nullptr || onembed != nullptr, batch, type,
                                 "cufftPlanMany");
}

PT_EXPORT cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch,
                                      size_t* work_size) {
  const long long n[1] = {nx};
  return detail::make_plan(plan, 1, n, false, batch, type, work_size, "cufftMakePlan1d");
}

PT_EXPORT cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type,
                                      size_t* work_size) {
  const long long n[2] = {nx, ny};
  return detail::make_plan(plan, 2, n, false, 1, type, work_size, "cufftMakePlan2d");
}

PT_EXPORT cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type,
                                      size_t* work_size) {
  const long long n[3] = {nx, ny, nz};
  return detail::make_plan(plan, 3, n, false, 1, type, work_size, "cufftMakePlan3d");
}

PT_EXPORT cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed,
                                        int istride, int idist, int* onembed, int ostride,
                                        int odist, cufftType type, int batch, size_t* work_size) {
  (void)istride, (void)idist, (void)ostride, (void)odist;
  long long dims[detail::kMaxRank] = {0, 0, 0};
  for (int i = 0; n != nullptr && i < std::min(rank, detail::kMaxRank); ++i) dims[i] = n[i];
  return detail::make_plan(plan, rank, n != nullptr ? dims : nullptr,
                           inembed != nullptr || onembed != nullptr, batch, type, work_size,
                           "cufftMakePlanMany");
}

PT_EXPORT cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n,
                                          long long int* inembed, long long int istride,
                                          long long int idist, long long int* onembed,
                                          long long int ostride, long long int odist,
                                          cufftType type, long long int batch, size_t* work_size) {
  (void)istride, (void)idist, (void)ostride, (void)odist;
  return detail::make_plan(plan, rank, n, inembed != nullptr || onembed != nullptr, batch, type,
                           work_size, "cufftMakePlanMany64");
}

// ---- work-area queries --------------------------------------------------------------------

PT_EXPORT cufftResult cufftEstimate1d(int nx, cufftType type, int batch, size_t* work_size) {
  const long long n[1] = {nx};
  return detail::estimate(1, n, batch, type, work_size, "cufftEstimate1d");
}

PT_EXPORT cufftResult cufftEstimate2d(int nx, int ny, cufftType type, size_t* work_size) {
  const long long n[2] = {nx, ny};
  return detail::estimate(2, n, 1, type, work_size, "cufftEstimate2d");
}

PT_EXPORT cufftResult cufftEstimate3d(int nx, int ny, int nz, cufftType type, size_t* work_size) {
  const long long n[3] = {nx, ny, nz};
  return detail::estimate(3, n, 1, type, work_size, "cufftEstimate3d");
}

PT_EXPORT cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist,
                                        int* onembed, int ostride, int odist, cufftType type,
                                        int batch, size_t* work_size) {
  (void)inembed, (void)istride, (void)idist, (void)onembed, (void)ostride, (void)odist;
  long long dims[detail::kMaxRank] = {0, 0, 0};
  for (int i = 0; n != nullptr && i < std::min(rank, detail::kMaxRank); ++i) dims[i] = n[i];
  return detail::estimate(rank, n != nullptr ? dims : nullptr, batch, type, work_size,
                          "cufftEstimateMany");
}

namespace {
// cufftGetSize*: the estimate, for a live handle.
cufftResult get_size(cufftHandle plan, int rank, const long long* n, long long batch,
                     cufftType type, size_t* work_size, const char* api) {
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    if (detail::find(plan) == nullptr) return detail::bad_plan(api, plan);
  }
  return detail::estimate(rank, n, batch, type, work_size, api);
}
}  // namespace

PT_EXPORT cufftResult cufftGetSize1d(cufftHandle plan, int nx, cufftType type, int batch,
                                     size_t* work_size) {
  const long long n[1] = {nx};
  return get_size(plan, 1, n, batch, type, work_size, "cufftGetSize1d");
}

PT_EXPORT cufftResult cufftGetSize2d(cufftHandle plan, int nx, int ny, cufftType type,
                                     size_t* work_size) {
  const long long n[2] = {nx, ny};
  return get_size(plan, 2, n, 1, type, work_size, "cufftGetSize2d");
}

PT_EXPORT cufftResult cufftGetSize3d(cufftHandle plan, int nx, int ny, int nz, cufftType type,
                                     size_t* work_size) {
  const long long n[3] = {nx, ny, nz};
  return get_size(plan, 3, n, 1, type, work_size, "cufftGetSize3d");
}

PT_EXPORT cufftResult cufftGetSizeMany(cufftHandle plan, int rank, int* n, int* inembed,
                                       int istride, int idist, int* onembed, int ostride, int odist,
                                       cufftType type, int batch, size_t* work_size) {
  (void)inembed, (void)istride, (void)idist, (void)onembed, (void)ostride, (void)odist;
  long long dims[detail::kMaxRank] = {0, 0, 0};
  for (int i = 0; n != nullptr && i < std::min(rank, detail::kMaxRank); ++i) dims[i] = n[i];
  return get_size(plan, rank, n != nullptr ? dims : nullptr, batch, type, work_size,
                  "cufftGetSizeMany");
}

PT_EXPORT cufftResult cufftGetSizeMany64(cufftHandle plan, int rank, long long int* n,
                                         long long int* inembed, long long int istride,
                                         long long int idist, long long int* onembed,
                                         long long int ostride, long long int odist, cufftType type,
                                         long long int batch, size_t* work_size) {
  (void)inembed, (void)istride, (void)idist, (void)onembed, (void)ostride, (void)odist;
  return get_size(plan, rank, n, batch, type, work_size, "cufftGetSizeMany64");
}

PT_EXPORT cufftResult cufftGetSize(cufftHandle plan, size_t* work_size) {
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  const detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan("cufftGetSize", plan);
  if (work_size == nullptr) return CUFFT_INVALID_VALUE;
  *work_size = p->work_bytes;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftSetAutoAllocation(cufftHandle plan, int auto_allocate) {
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan("cufftSetAutoAllocation", plan);
  p->auto_allocate = auto_allocate != 0;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftSetWorkArea(cufftHandle plan, void* work_area) {
  const char* api = "cufftSetWorkArea";
  std::size_t needed = 0;
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    const detail::Plan* p = detail::find(plan);
    if (p == nullptr) return detail::bad_plan(api, plan);
    needed = p->work_bytes;
  }
  if (needed > 0 && !detail::device_range(work_area, static_cast<std::int64_t>(needed), true)) {
    powertrain::emu::report_misuse(api, detail::pointer_text(work_area) +
                                            " is not device memory of " + std::to_string(needed) +
                                            " bytes");
    return CUFFT_INVALID_VALUE;
  }
  void* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    detail::Plan* p = detail::find(plan);
    if (p == nullptr) return detail::bad_plan(api, plan);
    if (p->own_work_area) old = p->work_area;
    p->work_area = work_area;
    p->own_work_area = false;
  }
  if (old != nullptr) powertrain::emu::free_device_memory(old, api);
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  const char* api = "cufftSetStream";
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CUFFT_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  p->stream = stream;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftGetVersion(int* version) {
  if (version == nullptr) return CUFFT_INVALID_VALUE;
  *version = CUFFT_VERSION;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUFFT_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUFFT_VER_MAJOR;
      return CUFFT_SUCCESS;
    case MINOR_VERSION:
      *value = CUFFT_VER_MINOR;
      return CUFFT_SUCCESS;
    case PATCH_LEVEL:
      *value = CUFFT_VER_PATCH;
      return CUFFT_SUCCESS;
    default:
      return CUFFT_INVALID_TYPE;
  }
}

// ---- executions -----------------------------------------------------------------------------

PT_EXPORT cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                                   int direction) {
  return detail::execute(plan, idata, odata, direction, &detail::kC2C, "cufftExecC2C");
}

PT_EXPORT cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata,
                                   cufftDoubleComplex* odata, int direction) {
  return detail::execute(plan, idata, odata, direction, &detail::kZ2Z, "cufftExecZ2Z");
}

PT_EXPORT cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return detail::execute(plan, idata, odata, CUFFT_FORWARD, &detail::kR2C, "cufftExecR2C");
}

PT_EXPORT cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata,
                                   cufftDoubleComplex* odata) {
  return detail::execute(plan, idata, odata, CUFFT_FORWARD, &detail::kD2Z, "cufftExecD2Z");
}

PT_EXPORT cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return detail::execute(plan, idata, odata, CUFFT_INVERSE, &detail::kC2R, "cufftExecC2R");
}

PT_EXPORT cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata,
                                   cufftDoubleReal* odata) {
  return detail::execute(plan, idata, odata, CUFFT_INVERSE, &detail::kZ2D, "cufftExecZ2D");
}

// ---- cufftXt on one GPU (torch.fft's calls) ---------------------------------------------------

// Strides and distances do not change the modelled work; the execution type follows the data.
PT_EXPORT cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long int* n,
                                          long long int* inembed, long long int /*istride*/,
                                          long long int /*idist*/, cudaDataType input_type,
                                          long long int* onembed, long long int /*ostride*/,
                                          long long int /*odist*/, cudaDataType output_type,
                                          long long int batch, size_t* work_size,
                                          cudaDataType /*execution_type*/) {
  const char* api = "cufftXtMakePlanMany";
  const std::optional<detail::XtType> xt = detail::xt_type(input_type, output_type);
  if (!xt) {
    powertrain::emu::report_misuse(api, "no transform from data type " +
                                            std::to_string(static_cast<int>(input_type)) + " to " +
                                            std::to_string(static_cast<int>(output_type)));
    return CUFFT_INVALID_TYPE;
  }
  return detail::make_plan(plan, rank, n, inembed != nullptr || onembed != nullptr, batch, xt->type,
                           work_size, api, xt->real_bytes, xt->bf16);
}

// The size estimate depends on the transform's type and dimensions only.
PT_EXPORT cufftResult cufftXtGetSizeMany(cufftHandle plan, int rank, long long int* n,
                                         long long int* /*inembed*/, long long int /*istride*/,
                                         long long int /*idist*/, cudaDataType input_type,
                                         long long int* /*onembed*/, long long int /*ostride*/,
                                         long long int /*odist*/, cudaDataType output_type,
                                         long long int batch, size_t* work_size,
                                         cudaDataType /*execution_type*/) {
  const char* api = "cufftXtGetSizeMany";
  const std::optional<detail::XtType> xt = detail::xt_type(input_type, output_type);
  if (!xt) return CUFFT_INVALID_TYPE;
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    if (detail::find(plan) == nullptr) return detail::bad_plan(api, plan);
  }
  return detail::estimate(rank, n, batch, xt->type, work_size, api, xt->real_bytes);
}

PT_EXPORT cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction) {
  return detail::execute(plan, input, output, direction, nullptr, "cufftXtExec");
}

// ---- cufftXt on several GPUs (simpleCUFFT_MGPU, simpleCUFFT_2d_MGPU) ---------------------------
// cufftXtSetGPUs makes a plan span GPUs; cufftMakePlan* then sizes a work area per GPU (its share
// of the output, for the exchange). cufftXtMalloc gives a cudaLibXtDesc whose data is split in
// equal shares over the plan's GPUs (device memory on each); cufftXtMemcpy copies host data in and
// out share by share, and device data between descriptors: locally, or — from the shuffled order a
// forward transform leaves — as an all-to-all of peer copies back to natural order. An execution
// is, on every GPU, the first half of the transform's FLOPs and bytes on its share, an all-to-all
// exchange of peer copies (each GPU sends a 1/n part of its share to every other), and the second
// half; a forward transform of natural-order data leaves it in CUFFT_XT_FORMAT_INPLACE_SHUFFLED,
// an inverse one returns CUFFT_XT_FORMAT_INPLACE, as cuFFT documents. Nothing is computed (the
// kernels of an emulated run do not run either).

namespace powertrain::emu::detail {
namespace {

struct XtDescriptor {
  cudaLibXtDesc lib{};
  cudaXtDesc desc{};
  cufftHandle plan = 0;
};

std::mutex& xt_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<const void*, XtDescriptor*>& xt_descriptors() {
  static auto* d = new std::map<const void*, XtDescriptor*>;
  return *d;
}

// The plan (a copy), made and spanning GPUs; false after a misuse report.
bool multi_gpu_plan(cufftHandle handle, const char* api, Plan* out) {
  std::lock_guard<std::mutex> lock(fft().mutex);
  Plan* p = find(handle);
  if (p == nullptr) {
    bad_plan(api, handle);
    return false;
  }
  if (!p->made || p->gpus.empty()) {
    report_misuse(
        api, "plan " + std::to_string(handle) +
                 (p->made ? " has no GPUs (cufftXtSetGPUs before making it)" : " was never made"));
    return false;
  }
  *out = *p;
  return true;
}

XtDescriptor* find_descriptor(const void* lib, const char* api) {
  std::lock_guard<std::mutex> lock(xt_mutex());
  const auto it = xt_descriptors().find(lib);
  if (it == xt_descriptors().end()) {
    report_misuse(api, "descriptor " + pointer_text(lib) + " was not made by cufftXtMalloc");
    return nullptr;
  }
  return it->second;
}

bool shuffled(int format) {
  return format == CUFFT_XT_FORMAT_INPLACE_SHUFFLED ||
         format == CUFFT_XT_FORMAT_1D_INPUT_SHUFFLED || format == CUFFT_XT_FORMAT_OUTPUT;
}

// Each GPU sends a 1/n part of its share of `from` to every other GPU's share of `to`.
void all_to_all(const cudaXtDesc& from, const cudaXtDesc& to) {
  const int n = from.nGPUs;
  for (int i = 0; i < n; ++i) {
    const std::size_t part = from.size[i] / static_cast<std::size_t>(n);
    for (int j = 0; j < n; ++j) {
      if (i == j || part == 0) continue;
      cudaSetDevice(from.GPUs[i]);
      cudaMemcpyPeerAsync(static_cast<char*>(to.data[j]) + part * static_cast<std::size_t>(i),
                          to.GPUs[j],
                          static_cast<char*>(from.data[i]) + part * static_cast<std::size_t>(j),
                          from.GPUs[i], part, nullptr);
    }
  }
}

void synchronize_all(const cudaXtDesc& d) {
  for (int i = 0; i < d.nGPUs; ++i) {
    cudaSetDevice(d.GPUs[i]);
    cudaDeviceSynchronize();
  }
}

cufftResult execute_descriptor(cufftHandle handle, cudaLibXtDesc* input, cudaLibXtDesc* output,
                               int direction, const cufftType* requested, const char* api) {
  const std::int64_t start = now_ns();
  Plan plan;
  if (!multi_gpu_plan(handle, api, &plan)) return CUFFT_INVALID_PLAN;
  XtDescriptor* in = find_descriptor(input, api);
  XtDescriptor* out = find_descriptor(output, api);
  if (in == nullptr || out == nullptr) return CUFFT_INVALID_VALUE;
  const cufftType type = requested != nullptr ? *requested : plan.type;
  if (plan.type != type) {
    report_misuse(api, std::string("plan ") + std::to_string(handle) + " is " +
                           type_name(plan.type) + ", not " + type_name(type));
    return CUFFT_INVALID_TYPE;
  }
  const bool complex_to_complex = type == CUFFT_C2C || type == CUFFT_Z2Z;
  if (complex_to_complex && direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) {
    report_misuse(
        api, "direction " + std::to_string(direction) + " is not CUFFT_FORWARD or CUFFT_INVERSE");
    return CUFFT_INVALID_VALUE;
  }
  const Sizes s = sizes_of(plan);
  const double points = static_cast<double>(s.points);
  const double per_transform = (complex_to_complex ? 5.0 : 2.5) * points * std::log2(points);
  const int gpus = in->desc.nGPUs;
  const auto half_flops =
      static_cast<std::int64_t>(std::llround(per_transform * plan.batch / (2.0 * gpus)));
  const std::int64_t half_bytes = s.passes * (s.in_bytes + s.out_bytes) * plan.batch / (2 * gpus);
  int current = 0;
  cudaGetDevice(&current);
  const bool in_place = input == output;
  for (int stage = 0; stage < 2; ++stage) {
    for (int i = 0; i < gpus; ++i) {
      cudaSetDevice(in->desc.GPUs[i]);
      const cufftResult r = record_fft(handle, plan, type, direction, in_place, half_flops,
                                       half_bytes, nullptr, api, stage == 0 ? start : now_ns());
      if (r != CUFFT_SUCCESS) {
        cudaSetDevice(current);
        return r;
      }
    }
    if (stage == 0) all_to_all(in->desc, out->desc);
  }
  {
    std::lock_guard<std::mutex> lock(xt_mutex());
    out->lib.subFormat = direction == CUFFT_INVERSE || type == CUFFT_C2R || type == CUFFT_Z2D
                             ? CUFFT_XT_FORMAT_INPLACE
                             : CUFFT_XT_FORMAT_INPLACE_SHUFFLED;
  }
  cudaSetDevice(current);
  return CUFFT_SUCCESS;
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cufftResult cufftXtSetGPUs(cufftHandle handle, int nGPUs, int* whichGPUs) {
  const char* api = "cufftXtSetGPUs";
  int count = 0;
  cudaGetDeviceCount(&count);
  if (nGPUs < 1 || whichGPUs == nullptr) {
    powertrain::emu::report_misuse(api, "nGPUs " + std::to_string(nGPUs) + " or a NULL list");
    return CUFFT_INVALID_VALUE;
  }
  std::vector<int> gpus(whichGPUs, whichGPUs + nGPUs);
  for (int g : gpus) {
    if (g < 0 || g >= count || std::count(gpus.begin(), gpus.end(), g) > 1) {
      powertrain::emu::report_misuse(api, "GPU " + std::to_string(g) + " is not one of the " +
                                              std::to_string(count) +
                                              " emulated devices, or is listed twice");
      return CUFFT_INVALID_DEVICE;
    }
  }
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(handle);
  if (p == nullptr) return detail::bad_plan(api, handle);
  if (p->made) {
    powertrain::emu::report_misuse(api, "plan " + std::to_string(handle) + " was already made");
    return CUFFT_INVALID_PLAN;
  }
  p->gpus = std::move(gpus);
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtMalloc(cufftHandle handle, cudaLibXtDesc** descriptor,
                                    cufftXtSubFormat format) {
  const char* api = "cufftXtMalloc";
  detail::Plan plan;
  if (!detail::multi_gpu_plan(handle, api, &plan)) return CUFFT_INVALID_PLAN;
  if (descriptor == nullptr || format < CUFFT_XT_FORMAT_INPUT || format >= CUFFT_FORMAT_UNDEFINED) {
    powertrain::emu::report_misuse(api, "a NULL descriptor pointer or an unknown format");
    return CUFFT_INVALID_VALUE;
  }
  const detail::Sizes s = detail::sizes_of(plan);
  const std::size_t total =
      static_cast<std::size_t>(std::max(s.in_bytes, s.out_bytes) * plan.batch);
  const std::size_t count = plan.gpus.size();
  auto* d = new detail::XtDescriptor;
  d->plan = handle;
  d->desc.version = 1;
  d->desc.nGPUs = static_cast<int>(count);
  int current = 0;
  cudaGetDevice(&current);
  for (std::size_t i = 0; i < count; ++i) {
    d->desc.GPUs[i] = plan.gpus[i];
    d->desc.size[i] = total / count + (i < total % count ? 1 : 0);
    cudaSetDevice(plan.gpus[i]);
    if (powertrain::emu::allocate_device_memory(&d->desc.data[i], d->desc.size[i], api) != 0) {
      for (std::size_t j = 0; j < i; ++j) powertrain::emu::free_device_memory(d->desc.data[j], api);
      cudaSetDevice(current);
      delete d;
      return CUFFT_ALLOC_FAILED;
    }
  }
  cudaSetDevice(current);
  d->lib.version = 1;
  d->lib.descriptor = &d->desc;
  d->lib.library = LIB_FORMAT_CUFFT;
  d->lib.subFormat = format;
  {
    std::lock_guard<std::mutex> lock(detail::xt_mutex());
    detail::xt_descriptors()[&d->lib] = d;
  }
  *descriptor = &d->lib;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtFree(cudaLibXtDesc* descriptor) {
  const char* api = "cufftXtFree";
  detail::XtDescriptor* d = nullptr;
  {
    std::lock_guard<std::mutex> lock(detail::xt_mutex());
    const auto it = detail::xt_descriptors().find(descriptor);
    if (it == detail::xt_descriptors().end()) {
      powertrain::emu::report_misuse(api, "descriptor " + detail::pointer_text(descriptor) +
                                              " was not made by cufftXtMalloc (or was freed)");
      return CUFFT_INVALID_VALUE;
    }
    d = it->second;
    detail::xt_descriptors().erase(it);
  }
  for (int i = 0; i < d->desc.nGPUs; ++i) powertrain::emu::free_device_memory(d->desc.data[i], api);
  delete d;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtMemcpy(cufftHandle handle, void* dst, void* src,
                                    cufftXtCopyType type) {
  const char* api = "cufftXtMemcpy";
  detail::Plan plan;
  if (!detail::multi_gpu_plan(handle, api, &plan)) return CUFFT_INVALID_PLAN;
  int current = 0;
  cudaGetDevice(&current);
  if (type == CUFFT_COPY_HOST_TO_DEVICE || type == CUFFT_COPY_DEVICE_TO_HOST) {
    const bool in = type == CUFFT_COPY_HOST_TO_DEVICE;
    detail::XtDescriptor* d = detail::find_descriptor(in ? dst : src, api);
    char* host = static_cast<char*>(in ? src : dst);
    if (d == nullptr || host == nullptr) return CUFFT_INVALID_VALUE;
    std::size_t offset = 0;
    for (int i = 0; i < d->desc.nGPUs; ++i) {
      cudaSetDevice(d->desc.GPUs[i]);
      const cudaError_t e =
          in ? cudaMemcpy(d->desc.data[i], host + offset, d->desc.size[i], cudaMemcpyHostToDevice)
             : cudaMemcpy(host + offset, d->desc.data[i], d->desc.size[i], cudaMemcpyDeviceToHost);
      offset += d->desc.size[i];
      if (e != cudaSuccess) {
        cudaSetDevice(current);
        return CUFFT_EXEC_FAILED;
      }
    }
  } else if (type == CUFFT_COPY_DEVICE_TO_DEVICE) {
    detail::XtDescriptor* to = detail::find_descriptor(dst, api);
    detail::XtDescriptor* from = detail::find_descriptor(src, api);
    if (to == nullptr || from == nullptr) return CUFFT_INVALID_VALUE;
    if (detail::shuffled(from->lib.subFormat)) {
      detail::all_to_all(from->desc, to->desc);  // back to natural order
    } else {
      for (int i = 0; i < from->desc.nGPUs; ++i) {
        cudaSetDevice(from->desc.GPUs[i]);
        cudaMemcpyAsync(to->desc.data[i], from->desc.data[i],
                        std::min(from->desc.size[i], to->desc.size[i]), cudaMemcpyDeviceToDevice,
                        nullptr);
      }
    }
    detail::synchronize_all(from->desc);
    std::lock_guard<std::mutex> lock(detail::xt_mutex());
    to->lib.subFormat = CUFFT_XT_FORMAT_INPLACE;
  } else {
    powertrain::emu::report_misuse(api,
                                   "unknown copy type " + std::to_string(static_cast<int>(type)));
    return CUFFT_INVALID_VALUE;
  }
  cudaSetDevice(current);
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtSetWorkArea(cufftHandle handle, void** workArea) {
  const char* api = "cufftXtSetWorkArea";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(handle);
  if (p == nullptr) return detail::bad_plan(api, handle);
  if (workArea == nullptr || p->gpus.empty()) {
    powertrain::emu::report_misuse(api, "a NULL work-area list, or a plan without cufftXtSetGPUs");
    return CUFFT_INVALID_VALUE;
  }
  // Each area must be device memory on its GPU; they then serve the exchanges instead of ours
  // (kept, as allocated, until cufftDestroy): the modelled traffic is the same.
  for (std::size_t i = 0; i < p->gpus.size(); ++i) {
    const detail::PointerInfo info = detail::lookup_pointer(workArea[i]);
    if (p->work_bytes > 0 && (!info.known || !info.device_side || info.device != p->gpus[i] ||
                              info.available < p->work_bytes)) {
      powertrain::emu::report_misuse(api, "work area " + std::to_string(i) + " " +
                                              detail::pointer_text(workArea[i]) +
                                              " is not device memory of its GPU's work size");
      return CUFFT_INVALID_VALUE;
    }
  }
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtExecDescriptor(cufftHandle plan, cudaLibXtDesc* input,
                                            cudaLibXtDesc* output, int direction) {
  return detail::execute_descriptor(plan, input, output, direction, nullptr,
                                    "cufftXtExecDescriptor");
}

#define PT_XT_EXEC_DIRECTED(NAME, TYPE)                                                     \
  PT_EXPORT cufftResult NAME(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output, \
                             int direction) {                                               \
    const cufftType type = TYPE;                                                            \
    return detail::execute_descriptor(plan, input, output, direction, &type, #NAME);        \
  }
#define PT_XT_EXEC(NAME, TYPE, DIRECTION)                                                     \
  PT_EXPORT cufftResult NAME(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output) { \
    const cufftType type = TYPE;                                                              \
    return detail::execute_descriptor(plan, input, output, DIRECTION, &type, #NAME);          \
  }
PT_XT_EXEC_DIRECTED(cufftXtExecDescriptorC2C, CUFFT_C2C)
PT_XT_EXEC_DIRECTED(cufftXtExecDescriptorZ2Z, CUFFT_Z2Z)
PT_XT_EXEC(cufftXtExecDescriptorR2C, CUFFT_R2C, CUFFT_FORWARD)
PT_XT_EXEC(cufftXtExecDescriptorD2Z, CUFFT_D2Z, CUFFT_FORWARD)
PT_XT_EXEC(cufftXtExecDescriptorC2R, CUFFT_C2R, CUFFT_INVERSE)
PT_XT_EXEC(cufftXtExecDescriptorZ2D, CUFFT_Z2D, CUFFT_INVERSE)
#undef PT_XT_EXEC
#undef PT_XT_EXEC_DIRECTED

// ---- plan properties, work-area policy and callbacks -----------------------------------------
// Properties and the work-area policy are checked and kept (the emulator's work areas do not
// change size: they are already sized from the transform). Callbacks cannot run here — a device
// function pointer (cufftXtSetCallback) or an LTO fatbin (cufftXtSetJITCallback) — so they are
// checked, kept on the plan and named in each execution's `fft` record (`callbacks`); the
// transform's own FLOPs and bytes are recorded as without them.
PT_EXPORT cufftResult cufftSetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                                const long long int value) {
  const char* api = "cufftSetPlanPropertyInt64";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (property == NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT && (value == 0 || value == 1)) {
    p->patient_jit = value;
  } else if (property == NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS && value >= 1) {
    p->max_host_threads = value;
  } else {
    powertrain::emu::report_misuse(api, "property " + std::to_string(property) + " value " +
                                            std::to_string(value) + " is not valid");
    return CUFFT_INVALID_VALUE;
  }
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftGetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                                long long int* value) {
  const char* api = "cufftGetPlanPropertyInt64";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  const detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (value == nullptr || (property != NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT &&
                           property != NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS)) {
    powertrain::emu::report_misuse(api, "unknown property or NULL result");
    return CUFFT_INVALID_VALUE;
  }
  *value = property == NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT ? p->patient_jit : p->max_host_threads;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftResetPlanProperty(cufftHandle plan, cufftProperty property) {
  const char* api = "cufftResetPlanProperty";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (property == NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT) {
    p->patient_jit = 0;
  } else if (property == NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS) {
    p->max_host_threads = 0;
  } else {
    powertrain::emu::report_misuse(api, "unknown property " + std::to_string(property));
    return CUFFT_INVALID_VALUE;
  }
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtSetWorkAreaPolicy(cufftHandle plan, cufftXtWorkAreaPolicy policy,
                                               size_t* work_size) {
  const char* api = "cufftXtSetWorkAreaPolicy";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (policy != CUFFT_WORKAREA_MINIMAL && policy != CUFFT_WORKAREA_USER &&
      policy != CUFFT_WORKAREA_PERFORMANCE) {
    powertrain::emu::report_misuse(api, "unknown policy " + std::to_string(policy));
    return CUFFT_INVALID_VALUE;
  }
  if (policy == CUFFT_WORKAREA_USER && work_size == nullptr) {
    powertrain::emu::report_misuse(api, "CUFFT_WORKAREA_USER needs a workSize");
    return CUFFT_INVALID_VALUE;
  }
  p->work_area_policy = policy;
  return CUFFT_SUCCESS;
}

namespace {
cufftResult set_callback(cufftHandle plan, cufftXtCallbackType type, bool lto, const char* api) {
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (type < CUFFT_CB_LD_COMPLEX || type >= CUFFT_CB_UNDEFINED) {
    powertrain::emu::report_misuse(api, "unknown callback type " + std::to_string(type));
    return CUFFT_INVALID_VALUE;
  }
  // cuFFT links LTO callbacks into the kernels it generates when the plan is made.
  if (lto && p->made) {
    powertrain::emu::report_misuse(api, "an LTO callback must be set before the plan is made");
    return CUFFT_INVALID_PLAN;
  }
  p->callbacks[type] = lto ? "lto" : "device";
  return CUFFT_SUCCESS;
}
}  // namespace

PT_EXPORT cufftResult cufftXtSetCallback(cufftHandle plan, void** callback_routine,
                                         cufftXtCallbackType type, void** caller_info) {
  (void)caller_info;
  if (callback_routine == nullptr || callback_routine[0] == nullptr) {
    powertrain::emu::report_misuse("cufftXtSetCallback", "callback_routine is NULL");
    return CUFFT_INVALID_VALUE;
  }
  return set_callback(plan, type, false, "cufftXtSetCallback");
}

PT_EXPORT cufftResult cufftXtSetJITCallback(cufftHandle plan, const char* symbol_name,
                                            const void* fatbin, size_t fatbin_bytes,
                                            cufftXtCallbackType type, void** caller_info) {
  (void)caller_info;
  if (symbol_name == nullptr || symbol_name[0] == '\0' || fatbin == nullptr || fatbin_bytes == 0) {
    powertrain::emu::report_misuse("cufftXtSetJITCallback",
                                   "the callback's symbol name and LTO fatbin are required");
    return CUFFT_INVALID_VALUE;
  }
  return set_callback(plan, type, true, "cufftXtSetJITCallback");
}

PT_EXPORT cufftResult cufftXtClearCallback(cufftHandle plan, cufftXtCallbackType type) {
  const char* api = "cufftXtClearCallback";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (type < CUFFT_CB_LD_COMPLEX || type >= CUFFT_CB_UNDEFINED) {
    powertrain::emu::report_misuse(api, "unknown callback type " + std::to_string(type));
    return CUFFT_INVALID_VALUE;
  }
  p->callbacks[type].clear();
  p->callback_shared_bytes[type] = 0;
  return CUFFT_SUCCESS;
}

PT_EXPORT cufftResult cufftXtSetCallbackSharedSize(cufftHandle plan, cufftXtCallbackType type,
                                                   size_t shared_bytes) {
  const char* api = "cufftXtSetCallbackSharedSize";
  std::lock_guard<std::mutex> lock(detail::fft().mutex);
  detail::Plan* p = detail::find(plan);
  if (p == nullptr) return detail::bad_plan(api, plan);
  if (type < CUFFT_CB_LD_COMPLEX || type >= CUFFT_CB_UNDEFINED || p->callbacks[type].empty() ||
      shared_bytes > 16384) {  // cuFFT guarantees at most 16 KiB of shared memory to callbacks
    powertrain::emu::report_misuse(api, "no callback of that type, or more than 16 KiB");
    return CUFFT_INVALID_VALUE;
  }
  p->callback_shared_bytes[type] = shared_bytes;
  return CUFFT_SUCCESS;
}
