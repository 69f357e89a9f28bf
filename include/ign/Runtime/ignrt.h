/*===- ignrt.h - the ignc runtime: load and run kernel bundles ----*- C -*-===*
 *
 * libignrt loads a bundle (.ignb) written by ignc, validates it, and runs it.
 * It links neither LLVM nor MLIR. Every call returns a status; on failure
 * ignrt_last_error() says what went wrong (per thread).
 *
 *===----------------------------------------------------------------------===*/

#ifndef IGN_RUNTIME_IGNRT_H
#define IGN_RUNTIME_IGNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ignrt_status {
  IGNRT_OK = 0,
  IGNRT_ERROR_IO = 1,       /* cannot open or map the file */
  IGNRT_ERROR_FORMAT = 2,   /* not a bundle, truncated, bad manifest */
  IGNRT_ERROR_CHECKSUM = 3, /* a section does not match its checksum */
  IGNRT_ERROR_TARGET = 4,   /* built for another target or CPU */
  IGNRT_ERROR_ARGUMENT = 5, /* wrong input name, dtype, shape or size */
  IGNRT_ERROR_RUNTIME = 6,  /* loading or running the kernels failed */
} ignrt_status;

typedef enum ignrt_dtype {
  IGNRT_F32 = 1,
  IGNRT_F64,
  IGNRT_F16,
  IGNRT_BF16,
  IGNRT_I8,
  IGNRT_I16,
  IGNRT_I32,
  IGNRT_I64,
  IGNRT_U8,
  IGNRT_U16,
  IGNRT_U32,
  IGNRT_U64,
  IGNRT_BOOL,
} ignrt_dtype;

#define IGNRT_MAX_RANK 16

typedef struct ignrt_tensor_info {
  const char *name;
  ignrt_dtype dtype;
  size_t rank;
  int64_t dims[IGNRT_MAX_RANK];
  size_t bytes;
} ignrt_tensor_info;

typedef struct ignrt_bundle ignrt_bundle;
typedef struct ignrt_session ignrt_session;

/* The message of the last failed call on this thread ("" if none). */
#if defined(IGNRT_BUILDING)
#define IGNRT_API __attribute__((visibility("default")))
#else
#define IGNRT_API
#endif

IGNRT_API const char *ignrt_last_error(void);
/* Size in bytes of one element of `dtype` (0 if unknown). */
IGNRT_API size_t ignrt_dtype_size(ignrt_dtype dtype);
/* "f32", "i64", ... */
IGNRT_API const char *ignrt_dtype_name(ignrt_dtype dtype);

/* Maps and validates a bundle (header, checksums, manifest, target). */
IGNRT_API ignrt_status ignrt_bundle_open(const char *path,
                                         ignrt_bundle **bundle);
IGNRT_API void ignrt_bundle_close(ignrt_bundle *bundle);
/* The manifest, as JSON text (owned by the bundle). */
IGNRT_API const char *ignrt_bundle_manifest(const ignrt_bundle *bundle);
/* Where the bundle's weights section lies in memory, for as long as the
 * bundle is open (NULL and 0 when it has none). Measurements evict it from
 * the caches to time kernels as a model whose data outgrows the caches runs
 * them. */
IGNRT_API ignrt_status ignrt_bundle_weights(const ignrt_bundle *bundle,
                                            const void **data, size_t *bytes);
IGNRT_API size_t ignrt_bundle_num_inputs(const ignrt_bundle *bundle);
IGNRT_API size_t ignrt_bundle_num_outputs(const ignrt_bundle *bundle);
IGNRT_API ignrt_status ignrt_bundle_input(const ignrt_bundle *bundle,
                                          size_t index,
                                          ignrt_tensor_info *info);
IGNRT_API ignrt_status ignrt_bundle_output(const ignrt_bundle *bundle,
                                           size_t index,
                                           ignrt_tensor_info *info);

/* A session owns the buffers for one run at a time and a pool of `threads`
 * threads (the caller's included) that kernels split their workgroups over;
 * threads <= 0 means one per core, and at most 256 are started. */
IGNRT_API ignrt_status ignrt_session_create(ignrt_bundle *bundle, int threads,
                                            ignrt_session **session);
IGNRT_API void ignrt_session_destroy(ignrt_session *session);
/* Copies an input in; dtype, shape and size must match the bundle's. */
IGNRT_API ignrt_status ignrt_session_set_input(ignrt_session *session,
                                               const char *name,
                                               ignrt_dtype dtype,
                                               const int64_t *dims, size_t rank,
                                               const void *data, size_t bytes);
IGNRT_API ignrt_status ignrt_session_run(ignrt_session *session);
/* Fills every output buffer with `byte` (0..255). Validation poisons the
 * outputs before a run (0xFF: NaN for floats) so that an element no kernel
 * writes shows up as wrong instead of keeping an earlier run's value. */
IGNRT_API ignrt_status ignrt_session_fill_outputs(ignrt_session *session,
                                                  int byte);
/* Output data stays valid until the next run or the session's end.
 * An output whose size depends on the data (NonZero, Unique, Compress, ...)
 * has at most the dims ignrt_bundle_output gives (an upper bound): after a
 * run, `bytes` and ignrt_session_output_at give its actual size and shape,
 * and its data is packed row-major for that shape. */
IGNRT_API ignrt_status ignrt_session_output(ignrt_session *session,
                                            const char *name, const void **data,
                                            size_t *bytes);
/* Output `index` (as ignrt_bundle_output numbers them) of the last run: its
 * name, dtype, actual shape and bytes, and its data. */
IGNRT_API ignrt_status ignrt_session_output_at(ignrt_session *session,
                                               size_t index,
                                               ignrt_tensor_info *info,
                                               const void **data);
/* Per-kernel wall time of the last run, in nanoseconds. */
IGNRT_API size_t ignrt_session_num_kernels(const ignrt_session *session);
IGNRT_API ignrt_status ignrt_session_kernel_timing(const ignrt_session *session,
                                                   size_t index,
                                                   const char **name,
                                                   double *nanoseconds);

/* Devices. A bundle compiled for an accelerator target (e.g. "systolic")
 * runs its device kernels through a driver the application registers for
 * that target: ignc's own tools register the systolic simulator. The other
 * kernels run on the host as usual. A bundle for a target with no
 * registered driver is refused at open (IGNRT_ERROR_TARGET). */
typedef struct ignrt_device_call {
  const char *kernel;     /* the kernel's name */
  const char *descriptor; /* its manifest "device" object, as JSON text */
  const void *blob;       /* its bytes in the bundle's device section */
  size_t blob_bytes;
  size_t num_args; /* inputs first; the last `results` are outputs */
  size_t results;
  void *const *data;             /* each argument's first element */
  const ignrt_tensor_info *args; /* dtype, shape and bytes of each */
  /* Per argument, 1 for one of the bundle's weights: its bytes at this
   * address stay the same for as long as the bundle is open, so a driver
   * may copy it to the device once (NULL: no argument is). */
  const unsigned char *weights;
  /* Unique per opened bundle in the process (never 0, never reused): keys
   * such copies, since an address may hold another bundle's weights after
   * this one is closed. */
  uint64_t weights_epoch;
  /* Per argument (NULL: every one on the host), where its data is between
   * this driver's launches of one run: IGNRT_RESIDENT_HOST, or
   * IGNRT_RESIDENT for an intermediate only this driver's launches use: as
   * an output the driver may keep it on the device instead of copying it
   * back (the host bytes are then stale), as an input it reads the copy it
   * kept (the host bytes are stale); IGNRT_RESIDENT_LAST for an input's
   * last use (the driver may release its copy after the launch). Keyed by
   * the argument's address and bytes, which stay fixed for a session. A
   * driver that keeps nothing ignores the flags: every producer then
   * copies back and every reader copies in, as before. */
  const unsigned char *resident;
  /* 1 when every output stays on the device (`resident`), so a later
   * launch of this driver in the same run reads them: the driver may then
   * record the launch and return before it has run, setting *deferred to 1
   * (a driver that ignores the flag runs the launch as any other). Its
   * `stats` stay valid until the run ends and are filled by the time the
   * driver's next call returns; a launch with outputs on the host always
   * runs everything deferred before it. A run that stops while a driver
   * holds deferred launches ends with a call whose `kernel` is NULL (no
   * arguments): the driver finishes or drops them. */
  int may_defer;
  int *deferred;
} ignrt_device_call;

#define IGNRT_RESIDENT_HOST 0
#define IGNRT_RESIDENT 1
#define IGNRT_RESIDENT_LAST 2

typedef struct ignrt_device_stats {
  int64_t cycles;     /* device cycles of this launch */
  double device_ns;   /* its time on the device (at the device's clock) */
  double utilization; /* 0..1, as the device reports it */
} ignrt_device_stats;

/* Runs one launch (or, with `kernel` NULL, finishes the driver's deferred
 * launches: ignrt_device_call::may_defer); returns 0 on success, else
 * writes a message into `error` (at most error_size bytes,
 * NUL-terminated). */
typedef int (*ignrt_device_fn)(void *user, const ignrt_device_call *call,
                               ignrt_device_stats *stats, char *error,
                               size_t error_size);

/* Registers (or, with fn NULL, removes) the driver for `target`;
 * process-wide. "host" cannot be registered. */
IGNRT_API ignrt_status ignrt_register_device(const char *target,
                                             ignrt_device_fn fn, void *user);

/* The device statistics of launch `index` of the last run: IGNRT_OK with
 * the stats for a device kernel; IGNRT_ERROR_ARGUMENT for a host launch or
 * an index out of range. */
IGNRT_API ignrt_status ignrt_session_kernel_device(const ignrt_session *session,
                                                   size_t index,
                                                   ignrt_device_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* IGN_RUNTIME_IGNRT_H */
