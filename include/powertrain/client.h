/* powertrain training-side client, C ABI (libpowertrain_client.so).
 *
 * A training process (C, C++, Python ctypes, ...) creates one client per rank. The client registers
 * the job and rank with a Perseus/Zeus plan server, fetches this rank's frequency schedule and,
 * around every pipeline instruction, locks the GPU clock to the planned one on a background clock
 * thread through NVML (loaded with dlopen; absent NVML disables clock control with one message).
 * It measures iteration time and GPU energy and posts them to the server every N iterations.
 * No call below waits on the network or on NVML unless its comment says "blocks".
 *
 * Return codes: 0 on success, a POWERTRAIN_CLIENT_E* value otherwise; the message is in
 * powertrain_client_last_error (the calling thread's last failed call).
 */
#ifndef POWERTRAIN_CLIENT_H
#define POWERTRAIN_CLIENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POWERTRAIN_CLIENT_OK 0
#define POWERTRAIN_CLIENT_EINVAL 1    /* bad argument or option */
#define POWERTRAIN_CLIENT_ESCHEDULE 2 /* instruction order differs from the schedule */
#define POWERTRAIN_CLIENT_ETIMEOUT 3  /* a blocking call timed out */
#define POWERTRAIN_CLIENT_ENETWORK 4  /* the server could not be reached or answered an error */

typedef struct powertrain_client powertrain_client;

typedef struct powertrain_client_options {
  size_t struct_size;     /* sizeof(powertrain_client_options), set by _options_init */
  const char* server_url; /* "http://host:port[/prefix]"; NULL or "": no server */
  const char* job_id;     /* NULL or "": rank 0 registers the job; others must pass it */
  int rank, dp_rank, pp_rank, tp_rank;
  int dp_degree, pp_degree, tp_degree, world_size;
  int device_id;                         /* NVML device index */
  const char* job_metadata;              /* optional */
  const char* nvml_library;              /* NULL: $POWERTRAIN_NVML_LIBRARY or libnvidia-ml.so.1 */
  int control_clocks;                    /* 0: measure only */
  int report_every_iterations;           /* post measured results every N iterations; 0: never */
  double request_timeout_s;              /* per HTTP request phase (default 10) */
  double schedule_timeout_s;             /* the schedule poll (default 3600) */
  int quiet;                             /* 1: no stderr line when NVML is missing */
  int refresh_schedule_every_iterations; /* re-fetch the schedule every N steps; 0: never */
  /* In-vivo profiling (docs/client.md): follow the server's clock sweep, post swept iterations,
   * then follow the characterized plan. */
  int profile_in_vivo;
  int num_microbatches; /* sent at job registration when > 0 (powertrain serve extension) */
} powertrain_client_options;

/* Fills defaults: one rank of a 1-GPU job, device 0, clock control on, no reporting. */
void powertrain_client_options_init(powertrain_client_options* options);

/* Creates a client and queues registration and the schedule fetch (does not wait for them).
 * NULL on bad options, with the reason copied into error (if not NULL). */
powertrain_client* powertrain_client_create(const powertrain_client_options* options, char* error,
                                            size_t error_size);
/* Stops the threads, cancels a request in flight, resets locked clocks. NULL is ignored. */
void powertrain_client_destroy(powertrain_client* client);

/* Blocks until the schedule arrived (0) or timeout_s passed (POWERTRAIN_CLIENT_ETIMEOUT). */
int powertrain_client_wait_for_schedule(powertrain_client* client, double timeout_s);
/* Blocks until the job id is known; copies it (NUL-terminated). ETIMEOUT, or EINVAL if it does
 * not fit in size bytes. */
int powertrain_client_job_id(powertrain_client* client, double timeout_s, char* buffer,
                             size_t size);

/* Zeus's pipeline-frequency-optimizer callbacks. */
int powertrain_client_on_step_begin(powertrain_client* client);
int powertrain_client_on_step_end(powertrain_client* client);
int powertrain_client_on_instruction_begin(powertrain_client* client, const char* name);
int powertrain_client_on_instruction_end(powertrain_client* client, const char* name);

/* In-vivo profiling: queues POST /profiling/{job}. p_blocking_w < 0: the server has it measured
 * first; microbatches, iterations_per_clock, stop_after_rises 0 and schedule NULL: server
 * defaults (microbatches are required unless the job was registered with them). Retried while
 * some pipeline stage has no registered rank. Implies profile_in_vivo for this client. */
int powertrain_client_start_profiling(powertrain_client* client, double p_blocking_w,
                                      int microbatches, int iterations_per_clock,
                                      int stop_after_rises, const char* schedule);
/* 1 when the schedule in effect asks this rank to measure P_blocking (and it has not): between
 * two steps call _on_p_blocking_begin, keep the GPU blocked on P2P communication, then
 * _on_p_blocking_end; the window is posted as the P_blocking measurement. 0 otherwise. */
int powertrain_client_p_blocking_requested(powertrain_client* client);
int powertrain_client_on_p_blocking_begin(powertrain_client* client);
int powertrain_client_on_p_blocking_end(powertrain_client* client);
/* The in-vivo profiling phase: "off", "waiting", "p_blocking", "sweep", "characterizing" or
 * "planned" (a static string). */
const char* powertrain_client_profiling_phase(powertrain_client* client);

/* An iteration measured elsewhere (s, J), added to the next posted result. */
int powertrain_client_report_iteration(powertrain_client* client, double time_s, double energy_j);
/* Queues POST /straggler/{job}: exactly one of rank / pipeline (data-parallel index) >= 0 (the
 * other -1) and exactly one of slowdown (T'/T_min >= 1; 0 = not given) / delay_s (T' - T_min,
 * s; < 0 = not given). The server then serves T_opt = min(T*, T'). */
int powertrain_client_report_straggler(powertrain_client* client, int rank, int pipeline,
                                       double slowdown, double delay_s);
/* Queues DELETE /straggler/{job}: back to T_min's plan. */
int powertrain_client_clear_stragglers(powertrain_client* client);
/* Queues a new schedule fetch; the new schedule applies at the next step begin. */
int powertrain_client_refresh_schedule(powertrain_client* client);
/* Blocks: GET /frontier/{job}. Copies the JSON body; returns its length in *length. */
int powertrain_client_fetch_frontier(powertrain_client* client, double timeout_s, char* buffer,
                                     size_t size, size_t* length);
/* Blocks until everything queued so far is done (0) or timeout_s passed (ETIMEOUT). */
int powertrain_client_flush(powertrain_client* client, double timeout_s);

/* Iterations measured so far; the last one's time (s) and energy (J, < 0 when unknown). */
long long powertrain_client_iterations(powertrain_client* client, double* last_time_s,
                                       double* last_energy_j);
/* The message of the calling thread's last failed call ("" if none); valid until its next call. */
const char* powertrain_client_last_error(powertrain_client* client);

#ifdef __cplusplus
}
#endif

#endif /* POWERTRAIN_CLIENT_H */
