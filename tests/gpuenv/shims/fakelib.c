/* fakelib.c - a stand-in CUDA library for L4 and --inspect fixtures.
 * Built many times with -D to choose what it reports:
 *   FAKE_CUDNN=<cudnnGetVersion> FAKE_CUDNN_CUDART=<cudnnGetCudartVersion>
 *   FAKE_CUDART=<cudaRuntimeGetVersion>
 *   FAKE_CUBLAS_MAJOR/MINOR/PATCH (cublasGetProperty, cublasLtGetProperty)
 *   FAKE_PAD=<bytes>  a file that large (a driver's libcuda is tens of MiB;
 *                     the toolkit's stub a few hundred KiB)
 *   FAKE_LT_NEW       defines cublasLtNewFn (a symbol a newer cuBLASLt adds)
 *   FAKE_USES_LT_NEW  calls it (a cuBLAS built against that newer cuBLASLt)
 * SONAME, NEEDED, RPATH and RUNPATH come from the link line. */
#include <stddef.h>

int gpuenv_fake_marker(void);
int gpuenv_fake_marker(void) { return 42; }

#ifdef FAKE_CUDNN
size_t cudnnGetVersion(void);
size_t cudnnGetCudartVersion(void);
size_t cudnnGetVersion(void) { return FAKE_CUDNN; }
size_t cudnnGetCudartVersion(void) { return FAKE_CUDNN_CUDART; }
#endif
#ifdef FAKE_CUDART
int cudaRuntimeGetVersion(int *v);
int cudaRuntimeGetVersion(int *v)
{
    *v = FAKE_CUDART;
    return 0;
}
#endif
#ifdef FAKE_CUBLAS_MAJOR
int cublasGetProperty(int t, int *v);
int cublasLtGetProperty(int t, int *v);
int cublasGetProperty(int t, int *v)
{
    *v = t == 0 ? FAKE_CUBLAS_MAJOR : t == 1 ? FAKE_CUBLAS_MINOR : FAKE_CUBLAS_PATCH;
    return 0;
}
int cublasLtGetProperty(int t, int *v) { return cublasGetProperty(t, v); }
#endif

#ifdef FAKE_PAD
const char gpuenv_fake_pad[FAKE_PAD] = {1};
#endif

#ifdef FAKE_LT_NEW
int cublasLtNewFn(void);
int cublasLtNewFn(void) { return 13; }
#endif
#ifdef FAKE_USES_LT_NEW
int cublasLtNewFn(void);
int gpuenv_fake_uses_lt(void);
int gpuenv_fake_uses_lt(void) { return cublasLtNewFn(); }
#endif
