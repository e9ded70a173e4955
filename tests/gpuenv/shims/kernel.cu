// kernel.cu - a tiny CUDA kernel; the tests compile it with chosen
// -gencode lists and check that the .nv_fatbin walker finds exactly them.
__global__ void gpuenv_add_one(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" void gpuenv_launch(float *x, int n) { gpuenv_add_one<<<(n + 255) / 256, 256>>>(x, n); }
