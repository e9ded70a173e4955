/* explain_table.c - real error messages users paste, with what they mean.
 * Messages and sources: ../shared/knowledge/gpu-stack-facts.md section 8
 * (rows 1-30) and the PaddleOCR complaint list (ppocr-pipeline.md) for the
 * three after them; the last four are Lector's own (src/rt/cuda_loader.c,
 * src/backend/cuda/). Keys are lower-case fragments distinctive of each message;
 * matching counts the characters of the keys found. */
#include <stddef.h>

#include "doctor/doctor.h"

#define K(...) ((const char *const[]){__VA_ARGS__, NULL})

const doctor_explain_entry doctor_explain_table[] = {
    {"paddle-cudnn-dso",
     "(PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method "
     "cudnnGetVersion. [Hint: cudnn_dso_handle should not be null.]",
     K("cannot load cudnn shared library", "cudnn_dso_handle should not be null",
       "cannot invoke method cudnngetversion"),
     "L4 libraries",
     "Paddle's dlopen of cuDNN failed: no cuDNN on the search path, or one of "
     "another major",
     "install cuDNN for the CUDA major of the Paddle wheel and put its lib "
     "directory on the search path; `lector doctor` names the file it would load",
     "l4.cudnn", "PaddlePaddle/PaddleOCR#11659, #7300"},
    {"paddle-libcudnn-unversioned",
     "The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured "
     "correctly. (error code is libcudnn.so: cannot open shared object file: No such file or "
     "directory)",
     K("(libcudnn.so)", "libcudnn.so: cannot open shared object file",
       "that paddle depends on is not configured correctly"),
     "L4 libraries",
     "The unversioned dev symlink libcudnn.so is absent (runtime images and pip "
     "wheels ship only libcudnn.so.N)",
     "ln -s libcudnn.so.N libcudnn.so in the cuDNN lib "
     "directory, then ldconfig (the doctor prints the exact command)",
     "l4.cudnn_unversioned", "PaddlePaddle/PaddleOCR#1304; PaddlePaddle/Paddle#30841"},
    {"paddle-libcublas-unversioned",
     "The third-party dynamic library (libcublas.so) that Paddle depends on is not configured "
     "correctly. (error code is libcublas.so: cannot open shared object file: No such file or "
     "directory)",
     K("(libcublas.so)", "libcublas.so: cannot open shared object file",
       "that paddle depends on is not configured correctly"),
     "L4 libraries", "The unversioned libcublas.so symlink is absent",
     "ln -s libcublas.so.N libcublas.so next to it (or install the -dev package), then ldconfig", "l4.cublas",
     "PaddlePaddle/PaddleNLP#2980"},
    {"paddle-libcuda-unversioned",
     "The third-party dynamic library (libcuda.so) that Paddle depends on is not configured "
     "correctly. (error code is libcuda.so: cannot open shared object file: No such file or "
     "directory)",
     K("(libcuda.so)", "libcuda.so: cannot open shared object file",
       "that paddle depends on is not configured correctly"),
     "L3 CUDA driver", "Only libcuda.so.1 is present (driver without the dev symlink)",
     "ln -s libcuda.so.1 libcuda.so in the driver's lib directory, then ldconfig", "l3.libcuda",
     "PaddlePaddle/PaddleDetection#7089"},
    {"paddle-cuda-35",
     "OSError: (External) CUDA error(35), CUDA driver version is insufficient for CUDA runtime "
     "version. [Hint: 'cudaErrorInsufficientDriver'. This indicates that the installed NVIDIA "
     "CUDA driver is older than the CUDA runtime library.]",
     K("cuda error(35)", "cuda driver version is insufficient for cuda runtime version", "cudaerrorinsufficientdriver"),
     "L4 libraries",
     "The wheel's CUDA runtime is newer than the driver supports (or libcuda "
     "is absent)",
     "upgrade the driver to the minimum for that CUDA (doctor prints it) or install "
     "a wheel built for an older CUDA",
     "l4.cudart", "PaddlePaddle/Paddle#50747; PaddleDetection#8493"},
    {"paddle-cuda-999",
     "OSError: (External) CUDA error(999), unknown error. [Hint: 'cudaErrorUnknown'. This "
     "indicates that an unknown internal error has occurred.]",
     K("cuda error(999)", "cudaerrorunknown", "unknown error"), "L3 CUDA driver",
     "Driver/UVM state: a stale or missing nvidia_uvm (e.g. after suspend)",
     "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm (or reboot)", "l3.cuinit", "baidu/DDParser#67"},
    {"paddle-device-not-set",
     "You are using GPU version Paddle, but your CUDA device is not set properly. CPU device "
     "will be used by default.",
     K("your cuda device is not set properly", "cpu device will be used by default",
       "you are using gpu version paddle"),
     "L3 CUDA driver",
     "CUDA reports zero devices (no GPU runtime in the container, "
     "CUDA_VISIBLE_DEVICES empty, or an init error swallowed)",
     "run `lector doctor`: L3 shows the cuInit/cuDeviceGetCount result; in Docker use --gpus all", "l3.devices",
     "PaddlePaddle/Paddle#33540; PaddleOCR#4307"},
    {"paddle-no-kernel-image",
     "parallel_for failed: cudaErrorNoKernelImageForDevice: no kernel image is available for "
     "execution on the device",
     K("parallel_for failed", "cudaerrornokernelimagefordevice",
       "no kernel image is available for execution on the device"),
     "inspect (GPU code)",
     "The wheel's compiled architectures exclude this GPU (e.g. Pascal vs "
     "\"arch: 70 75 80 86\")",
     "install a build that includes this GPU's sm_XY; check with "
     "`lector doctor --inspect <the framework's .so>`",
     "inspect.N.archs", "PaddlePaddle/Paddle#56683, #70902"},
    {"paddle-cudnn-not-initialized", "OSError: (External) CUDNN error(1), CUDNN_STATUS_NOT_INITIALIZED.",
     K("cudnn_status_not_initialized", "cudnn error(1)"), "L4 libraries",
     "cuDNN / CUDA / driver mismatch makes cudnnCreate fail",
     "make cuDNN's CUDA major match the runtime and the driver (doctor L4 shows each)", "l4.cudnn",
     "PaddlePaddle/Paddle#52250, #52181"},
    {"ort-cublaslt11-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: "
     "cannot open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcublaslt.so.11: cannot open shared object file"), "L4 libraries",
     "A CUDA 11 onnxruntime-gpu on a CUDA 12/13 system",
     "install the onnxruntime-gpu build for the installed CUDA major (or the CUDA 11 libraries)", "inspect.N.deps",
     "microsoft/onnxruntime#21684; PaddleNLP#8195"},
    {"ort-cudnn9-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot "
     "open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcudnn.so.9: cannot open shared object file"), "L4 libraries",
     "ONNX Runtime >= 1.18.1 needs cuDNN 9, which is not on the search path",
     "pip install nvidia-cudnn-cu12 (or cu13) or apt install libcudnn9-cuda-12, then retry", "l4.cudnn",
     "Gourieff/sd-webui-reactor#503"},
    {"ort-cublaslt12-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: "
     "cannot open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcublaslt.so.12: cannot open shared object file"), "L4 libraries",
     "CUDA major mismatch: the ORT build wants CUDA 12, only CUDA 13 is installed",
     "install the CUDA 12 cuBLAS (pip install nvidia-cublas-cu12) or an ORT build for CUDA 13", "inspect.N.deps",
     "pykeio/ort#548; microsoft/onnxruntime#22968"},
    {"ort-create-cuda-ep",
     "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest "
     "MSVC runtime.",
     K("failed to create cudaexecutionprovider", "require cudnn 9.* and cuda 12.*"), "L4 libraries",
     "One of the CUDA EP's libraries failed to load (then ORT silently falls "
     "back to the CPU)",
     "run `lector doctor --inspect .../libonnxruntime_providers_cuda.so` to "
     "see which",
     "inspect.N.deps", "microsoft/onnxruntime#21825, #22930"},
    {"ort-cuda-100",
     "CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; hostname=… ; "
     "expr=cudaSetDevice(info_.device_id);",
     K("cuda failure 100", "no cuda-capable device is detected", "cudasetdevice"), "L3 CUDA driver",
     "No visible GPU (container without GPUs, CUDA_VISIBLE_DEVICES empty)",
     "docker run --gpus all …; unset CUDA_VISIBLE_DEVICES", "l3.devices",
     "microsoft/onnxruntime#11561; deepinsight/insightface#2524"},
    {"ort-cuda-35", "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0",
     K("cuda failure 35", "cuda driver version is insufficient for cuda runtime version"), "L4 libraries",
     "The driver is older than the CUDA runtime ORT was built with",
     "upgrade the NVIDIA driver (doctor L4 prints the minimum)", "l4.cudart", "C0untFloyd/roop-unleashed#465"},
    {"ort-cuda-804", "CUDA failure 804: forward compatibility was attempted on non supported HW ; GPU=0",
     K("cuda failure 804", "forward compatibility was attempted on non supported hw"), "L3 CUDA driver",
     "A cuda-compat libcuda on a GPU without forward compatibility, or an old "
     "host driver under a newer container",
     "remove /usr/local/cuda/compat from the library path "
     "or upgrade the host driver",
     "l3.cuinit", "microsoft/onnxruntime#21435; NVIDIA/nvidia-docker#1294"},
    {"cublas-symbol-version",
     "libcublas.so.11: symbol free_gemm_select version libcublasLt.so.11 not defined in file "
     "libcublasLt.so.11 with link time reference",
     K("symbol free_gemm_select", "not defined in file libcublaslt", "with link time reference"), "L4 libraries",
     "Two cuBLAS copies mixed: libcublas from one release, libcublasLt from "
     "another",
     "load both from one install (remove the other from LD_LIBRARY_PATH)", "l4.cublas_pair",
     "microsoft/onnxruntime#8594"},
    {"cublas-undefined-symbol",
     ".../nvidia/cublas/lib/libcublas.so.11: undefined symbol: cublasLtGetStatusString, version "
     "libcublasLt.so.11",
     K("undefined symbol: cublasltgetstatusstring", "version libcublaslt.so"), "L4 libraries",
     "An older system libcublasLt shadows the wheel's newer one",
     "remove the system CUDA directory from LD_LIBRARY_PATH, or preload the wheel's "
     "libcublasLt",
     "l4.cublas_pair", "hcnoh/gail-pytorch#5; NVlabs/tiny-cuda-nn#222"},
    {"torch-driver-too-old", "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
     K("the nvidia driver on your system is too old", "found version"), "L2 NVML",
     "A wheel for a newer CUDA (e.g. cu12x) on an older driver branch (R470 = CUDA 11.4)",
     "upgrade the driver, or install the torch wheel for the driver's CUDA (doctor L2 shows it)", "l2.nvml",
     "lllyasviel/Fooocus#1313"},
    {"torch-cuda-unknown",
     "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly "
     "set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start.",
     K("cuda initialization: cuda unknown error", "changing env variable cuda_visible_devices after program start"),
     "L3 CUDA driver", "cuInit returned 999: nvidia_uvm stale or missing",
     "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm", "l3.cuinit", "pytorch/pytorch#159954"},
    {"torch-sm-not-compatible",
     "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
     "PyTorch installation. … CUDA error: no kernel image is available for execution on the "
     "device",
     K("is not compatible with the current pytorch installation", "with cuda capability sm_",
       "no kernel image is available"),
     "inspect (GPU code)",
     "The torch wheel has no kernels for this GPU (e.g. pre-cu128 wheels and "
     "Blackwell sm_120)",
     "install a wheel whose arch list includes the GPU (cu128+ for sm_120)", "inspect.N.archs",
     "pytorch/pytorch#150733; Janrupf/stable-diffusion-webui-nix#9"},
    {"torch-cudnn-incompatible",
     "cuDNN version incompatibility: PyTorch was compiled against (8, 7, 0) but found runtime "
     "version (8, 2, 4). … Looks like your LD_LIBRARY_PATH contains incompatible version of cudnn",
     K("cudnn version incompatibility", "pytorch was compiled against",
       "ld_library_path contains incompatible version of cudnn"),
     "L4 libraries", "A cuDNN in LD_LIBRARY_PATH shadows the one bundled with the framework",
     "remove that directory from LD_LIBRARY_PATH", "l4.cudnn", "bmaltais/kohya_ss#1096; pytorch/pytorch#81881"},
    {"cudnn8-nvrtc-unversioned",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared "
     "object file: No such file or directory",
     K("could not load library libcudnn_cnn_infer.so.8", "libnvrtc.so: cannot open shared object file"), "L4 libraries",
     "cuDNN 8's sub-library dlopens the unversioned libnvrtc.so",
     "ln -s libnvrtc.so.N libnvrtc.so next to it (or install cuda-nvrtc-dev), then ldconfig", "l4.nvrtc",
     "AUTOMATIC1111/stable-diffusion-webui#10230"},
    {"cudnn8-libcuda-unversioned",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared "
     "object file: No such file or directory",
     K("could not load library libcudnn_cnn_infer.so.8", "libcuda.so: cannot open shared object file"),
     "L3 CUDA driver", "Only libcuda.so.1 exists (WSL, containers)",
     "ln -s libcuda.so.1 libcuda.so in the driver library directory (WSL: /usr/lib/wsl/lib), "
     "then ldconfig",
     "l3.libcuda", "open-mmlab/mmdetection3d#2132"},
    {"trt-cuda-35", "[TRT] CUDA initialization failure with error: 35. Please check your CUDA installation",
     K("cuda initialization failure with error: 35", "please check your cuda installation"), "L4 libraries",
     "The driver is older than TensorRT's CUDA", "upgrade the driver", "l4.cudart",
     "wang-xinyu/tensorrtx#685; NVIDIA/TensorRT#2879"},
    {"trt-plan-version",
     "The engine plan file is not compatible with this version of TensorRT, expecting library "
     "version 8.0.0 got 8.0.1, please rebuild. / Serialization assertion stdVersionRead == "
     "serializationVersion failed",
     K("the engine plan file is not compatible with this version of tensorrt", "stdversionread == serializationversion",
       "please rebuild"),
     "L5 engine", "The TensorRT engine was built with another TensorRT version",
     "rebuild the engine with the TensorRT installed here", "-",
     "wang-xinyu/tensorrtx#664; mingj2021/segment-anything-tensorrt#2"},
    {"trt-plan-device",
     "The engine plan file is generated on an incompatible device, expecting compute 8.6 got "
     "compute 7.5",
     K("the engine plan file is generated on an incompatible device", "expecting compute"), "L5 engine",
     "The TensorRT engine was built on a GPU of another architecture", "rebuild the engine on this GPU", "l2.gpu0",
     "NVIDIA/TensorRT#2176"},
    {"tf-cudart-missing",
     "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot "
     "open shared object file: No such file or directory",
     K("could not load dynamic library 'libcudart.so", "dlerror: libcudart.so"), "L4 libraries",
     "The TensorFlow wheel wants a CUDA runtime major that is not installed or "
     "not on the path",
     "install that CUDA's runtime (pip install nvidia-cuda-runtime-cuXX) or "
     "the TF build for the installed CUDA",
     "l4.cudart", "tensorflow/tensorflow#45930"},
    {"nvml-version-mismatch", "Failed to initialize NVML: Driver/library version mismatch",
     K("failed to initialize nvml", "driver/library version mismatch"), "L2 NVML",
     "The user-space driver was upgraded but the old kernel module is still loaded "
     "(e.g. NVML 580.159 vs NVRM 580.126.09)",
     "reboot (or unload and reload the nvidia modules)", "l2.nvml", "cpnr/computing#109"},
    {"nvidia-smi-no-driver",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
     "that the latest NVIDIA driver is installed and running.",
     K("nvidia-smi has failed", "couldn't communicate with the nvidia driver"), "L1 kernel driver",
     "The kernel module is not loaded (kernel update without DKMS rebuild, "
     "nouveau bound, Secure Boot)",
     "sudo modprobe nvidia; dkms status; check mokutil --sb-state", "l1.driver", "mattshma/bigdata#133"},
    /* From the PaddleOCR complaint list (knowledge/ppocr-pipeline.md). The
       exact wording of these three is the common form of the message; the
       issue numbers are where the situation was reported. */
    {"paddle-segfault-threads",
     "FatalError: `Segmentation fault` is detected by the operating system. [TimeInfo: *** "
     "Aborted at … ] [SignalInfo: *** SIGSEGV (@0x0) received by PID …]",
     K("`segmentation fault` is detected by the operating system", "sigsegv", "segmentation fault"),
     "application (threads)",
     "A Paddle predictor is not thread-safe: one predictor shared by "
     "several threads crashes",
     "one predictor per thread (predictor.clone()) or serialise "
     "calls; Lector engines are safe to share across threads",
     "-", "PaddlePaddle/PaddleOCR#5254, #6512, #14836"},
    {"windows-winerror-126",
     "OSError: [WinError 126] The specified module could not be found. Error loading "
     "\"…\\torch\\lib\\c10.dll\" or one of its dependencies.",
     K("winerror 126", "the specified module could not be found", "or one of its dependencies"),
     "L4 libraries (Windows)",
     "A DLL or one of its dependencies (CUDA/cuDNN DLLs, the MSVC "
     "runtime) is not on PATH",
     "install the latest MSVC redistributable and put the CUDA/cuDNN "
     "bin directories on PATH (the doctor's ld.so checks are Linux-only)",
     "-", "PaddleOCR complaint list #8 (C++ build/link failures); pytorch/pytorch Windows reports"},
    {"windows-dll-load-failed",
     "ImportError: DLL load failed while importing onnxruntime_pybind11_state: The specified "
     "module could not be found.",
     K("dll load failed", "the specified module could not be found"), "L4 libraries (Windows)",
     "A native extension's DLL dependencies are missing (CUDA, cuDNN or "
     "MSVC runtime)",
     "install the MSVC redistributable and the CUDA/cuDNN versions the package "
     "requires; check PATH",
     "-", "microsoft/onnxruntime Windows reports; PaddleOCR complaint list #8"},
    /* Lector's own messages */
    {"lector-cuda-module-missing",
     "device cuda: the CUDA module is missing: no /opt/lector/bin/liblector-cuda.so (or ../lib/)",
     K("the cuda module is missing", "liblector-cuda.so"), "L5 engine",
     "lector was built without the CUDA toolkit, or the binary was copied without the "
     "liblector-cuda.so that sits next to it",
     "use the offline bundle (lib/liblector-cuda.so), "
     "build with cmake -DLECTOR_CUDA=ON, or set LECTOR_CUDA_MODULE to the module's path",
     "l5.module", "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-cuda-libs-missing",
     "device cuda: libcublasLt for CUDA 13 not found (the CUDA backend needs cuBLAS 13 and cuDNN 9; "
     "`lector doctor` shows where it looked)",
     K("for cuda", "not found (the cuda backend needs cublas", "cudnn 9"), "L4 libraries",
     "cuBLAS or cuDNN of the CUDA major the module was built for is not installed "
     "where ld.so, pip wheels, conda or /usr/local/cuda would provide it",
     "install cuBLAS of that CUDA major and cuDNN 9 (toolkit packages, or the pip wheels "
     "nvidia-cublas-cu13 / nvidia-cudnn-cu13), then `lector doctor`",
     "l5.module", "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-cuda-api-version",
     "device cuda: /opt/lector/lib/liblector-cuda.so was built for another version of Lector "
     "(backend API 2, this one 1)",
     K("was built for another version of lector", "backend api"), "L5 engine",
     "the CUDA module and the lector binary come from different builds",
     "install lector and liblector-cuda.so from the same build or bundle", "l5.selftest",
     "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-gpu-mem-cap",
     "/opt/lector/models/ch_PP-OCRv4_det_infer.onnx: cannot allocate 30277632 bytes of activation memory",
     K("cannot allocate", "bytes of activation memory"), "L5 engine",
     "on a GPU: the process reached the memory cap it was given (--gpu-mem-limit, "
     "gpu_mem_limit) or the card is full; on the CPU: host memory is exhausted",
     "raise --gpu-mem-limit (bytes or a share such as 50%), lower det_limit_side_len or the batch "
     "sizes; lector serve answers such reads on its CPU engine",
     "-", "Lector's runtime (src/rt/plan.c) and CUDA backend (src/backend/cuda/cuda_backend.c)"},
};

const size_t doctor_explain_table_len = sizeof doctor_explain_table / sizeof doctor_explain_table[0];
