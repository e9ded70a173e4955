/* nvml_abi.h - the part of NVML's ABI (nvml.h, libnvidia-ml.so.1) that
 * gpuenv reads through dlopen: the structs it fills and the shapes of the
 * entry points. Layouts are NVML's own; the names are ours, since nvml.h is
 * not installed where Lector builds. tests/gpuenv/shims/nvml_shim.c
 * implements the same entry points over these structs. */
#ifndef LECTOR_GPUENV_NVML_ABI_H
#define LECTOR_GPUENV_NVML_ABI_H

typedef void *nvml_dev;

/* nvmlMemory_t */
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

/* nvmlMemory_v2_t: tells the driver's reserve apart; its `used` is what
 * allocations hold, as nvidia-smi shows it (v1's `used` includes the
 * reserve, ~600 MiB on an H200) */
typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} nvml_memory_v2;
#define NVML_MEMORY_V2 ((unsigned)sizeof(nvml_memory_v2) | 2u << 24) /* nvmlMemory_v2 */

/* nvmlUtilization_t */
typedef struct {
    unsigned gpu, memory;
} nvml_utilization;

/* entry point shapes, by argument list */
typedef int (*nvml_fn_void)(void);
typedef int (*nvml_fn_uintp)(unsigned *);
typedef int (*nvml_fn_handle)(unsigned, nvml_dev *);
typedef int (*nvml_fn_dev_str)(nvml_dev, char *, unsigned);
typedef int (*nvml_fn_dev_mem)(nvml_dev, nvml_memory *);
typedef int (*nvml_fn_dev_temp)(nvml_dev, int, unsigned *);
typedef int (*nvml_fn_dev_ull)(nvml_dev, unsigned long long *);
typedef int (*nvml_fn_dev_mem2)(nvml_dev, nvml_memory_v2 *);
typedef int (*nvml_fn_dev_util)(nvml_dev, nvml_utilization *);
typedef int (*nvml_fn_str)(char *, unsigned);
typedef int (*nvml_fn_intp)(int *);
typedef int (*nvml_fn_dev_cc)(nvml_dev, int *, int *);
typedef int (*nvml_fn_dev_int)(nvml_dev, int *);
typedef int (*nvml_fn_dev_ecc)(nvml_dev, int, int, unsigned long long *);

#endif
