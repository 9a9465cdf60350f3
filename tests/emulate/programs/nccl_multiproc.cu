// NCCL collectives across processes (run as WORLD_SIZE processes with RANK/LOCAL_RANK set, e.g.
// 8): rank 0's unique id is shared through a file in argv[1] or $POWERTRAIN_EMU_DIR; each rank
// runs allreduce (float32 and bfloat16), allgather, reducescatter, broadcast and reduce on a
// dedicated stream, then splits the communicator into two halves (colour rank % 2, key
// WORLD_SIZE - rank, so the new ranks run in reverse order) and runs an allreduce in each.
// Valid CUDA/NCCL: the same binary runs on real GPUs.
#include "nccl_program_util.h"

int main(int argc, char** argv) {
  const int rank = env_int("RANK", 0);
  const int world = env_int("WORLD_SIZE", 1);
  const int local_rank = env_int("LOCAL_RANK", rank);
  EMU_REQUIRE(world >= 2 && world % 2 == 0 && rank >= 0 && rank < world);
  select_device(local_rank);

  const ncclUniqueId id = exchange_unique_id(exchange_dir(argc, argv), "nccl_multiproc.id", rank);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, world, id, rank));
  int count = 0, user_rank = -1;
  NCCL_CHECK(ncclCommCount(comm, &count));
  NCCL_CHECK(ncclCommUserRank(comm, &user_rank));
  EMU_REQUIRE(count == world && user_rank == rank);

  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  const size_t n = 1 << 18;  // float32 elements per rank
  float* buf = nullptr;
  float* gathered = nullptr;
  EMU_CHECK(cudaMalloc(&buf, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&gathered, n * world * sizeof(float)));
  EMU_CHECK(cudaMemsetAsync(buf, 0, n * sizeof(float), stream));

  NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, stream));
  NCCL_CHECK(ncclAllReduce(buf, buf, 2 * n, ncclBfloat16, ncclSum, comm, stream));
  NCCL_CHECK(ncclAllGather(buf, gathered, n, ncclFloat32, comm, stream));
  NCCL_CHECK(ncclReduceScatter(gathered, buf, n, ncclFloat32, ncclSum, comm, stream));
  NCCL_CHECK(ncclBroadcast(buf, buf, n, ncclFloat32, 0, comm, stream));
  NCCL_CHECK(ncclReduce(buf, buf, n, ncclFloat32, ncclSum, 0, comm, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));

  ncclComm_t half;
  NCCL_CHECK(ncclCommSplit(comm, rank % 2, world - rank, &half, nullptr));
  int half_count = 0, half_rank = -1;
  NCCL_CHECK(ncclCommCount(half, &half_count));
  NCCL_CHECK(ncclCommUserRank(half, &half_rank));
  EMU_REQUIRE(half_count == world / 2);
  EMU_REQUIRE(half_rank == world / 2 - 1 - rank / 2);  // keys sort the members in reverse
  NCCL_CHECK(ncclAllReduce(buf, buf, n / 4, ncclFloat32, ncclMax, half, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));

  NCCL_CHECK(ncclCommDestroy(half));
  NCCL_CHECK(ncclCommDestroy(comm));
  EMU_CHECK(cudaFree(gathered));
  EMU_CHECK(cudaFree(buf));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("rank %d/%d: ok (half rank %d of %d)\n", rank, world, half_rank, half_count);
  return 0;
}
