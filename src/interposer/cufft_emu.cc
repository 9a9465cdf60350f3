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
// Multi-GPU cufftXt* calls and callback functions are reported unsupported by name (generated stubs
// returning CUFFT_NOT_SUPPORTED).
#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

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
  const std::size_t work = work_bytes_of(shape);
  bool allocate = false;
  {
    std::lock_guard<std::mutex> lock(fft().mutex);
    Plan* p = find(handle);
    if (p == nullptr) return bad_plan(api, handle);
    if (p->made) {
      report_misuse(api, "plan " + std::to_string(handle) + " was already made");
      return CUFFT_INVALID_PLAN;
    }
    allocate = p->auto_allocate && work > 0;
  }
  void* area = nullptr;
  if (allocate && allocate_device_memory(&area, work, api) != 0) return CUFFT_ALLOC_FAILED;
  std::lock_guard<std::mutex> lock(fft().mutex);
  Plan* p = find(handle);
  if (p == nullptr) return bad_plan(api, handle);
  const cudaStream_t stream = p->stream;
  const bool auto_allocate = p->auto_allocate;
  *p = shape;
  p->made = true;
  p->stream = stream;
  p->auto_allocate = auto_allocate;
  p->work_bytes = work;
  p->work_area = area;
  p->own_work_area = area != nullptr;
  if (work_size != nullptr) *work_size = work;
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
  StreamRef ref;
  if (!stream_or_fail(plan.stream, false, api, &ref)) return CUFFT_EXEC_FAILED;

  const double n = static_cast<double>(s.points);
  const double per_transform = (complex_to_complex ? 5.0 : 2.5) * n * std::log2(n);
  const auto flops = static_cast<std::int64_t>(std::llround(per_transform * plan.batch));
  const std::int64_t bytes = s.passes * (in_bytes + out_bytes);
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
  r.field(trace_schema::field::kStream, ref.id);
  end_record(r);

  std::string name = "cufft_";
  for (const char* c = type_name(type); *c != '\0'; ++c) {
    name.push_back(static_cast<char>(*c + ('a' - 'A') * (*c >= 'A' && *c <= 'Z')));
  }
  name.append("_").append(precision);
  return append_sized_kernel(name, static_cast<std::size_t>(bytes), plan.stream, api, start,
                             std::max<std::int64_t>(flops, 1))
             ? CUFFT_SUCCESS
             : CUFFT_EXEC_FAILED;
}

}  // namespace
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
  {
    std::lock_guard<std::mutex> lock(detail::fft().mutex);
    detail::Plan* p = detail::find(plan);
    if (p == nullptr) {
      if (plan == CUFFT_PLAN_NULL) return CUFFT_SUCCESS;  // safe by definition
      return detail::bad_plan("cufftDestroy", plan);
    }
    p->live = false;
    if (p->own_work_area) area = p->work_area;
  }
  if (area != nullptr) powertrain::emu::free_device_memory(area, "cufftDestroy");
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
