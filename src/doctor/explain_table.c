/* explain_table.c - real error messages users paste, with what they mean.
 * Every entry names the public thread(s) where the message was seen (the
 * last four are Lector's own: src/rt/cuda_loader.c, src/backend/cuda/).
 * Keys are lower-case fragments distinctive of each message; matching counts
 * the characters of the keys found, so an entry whose keys all appear scores
 * 100. Messages nobody listed here fall to the family rules in explain.c. */
#include <stddef.h>

#include "doctor/doctor.h"

#define K(...) ((const char *const[]){__VA_ARGS__, NULL})

const doctor_explain_entry doctor_explain_table[] = {
    {"paddle-cudnn-dso",
     "(PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method "
     "cudnnGetVersion. [Hint: cudnn_dso_handle should not be null.]",
     K("cannot load cudnn shared library", "cudnn_dso_handle should not be null",
       "cannot invoke method cudnngetversion"),
     "L4 CUDA libraries",
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
     "L4 CUDA libraries",
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
     "L4 CUDA libraries", "The unversioned libcublas.so symlink is absent",
     "ln -s libcublas.so.N libcublas.so next to it (or install the -dev package), then ldconfig", "l4.cublas",
     "PaddlePaddle/PaddleNLP#2980"},
    {"paddle-libcuda-unversioned",
     "The third-party dynamic library (libcuda.so) that Paddle depends on is not configured "
     "correctly. (error code is libcuda.so: cannot open shared object file: No such file or "
     "directory)",
     K("(libcuda.so)", "libcuda.so: cannot open shared object file",
       "that paddle depends on is not configured correctly"),
     "L3 CUDA driver API", "Only libcuda.so.1 is present (driver without the dev symlink)",
     "ln -s libcuda.so.1 libcuda.so in the driver's lib directory, then ldconfig", "l3.libcuda",
     "PaddlePaddle/PaddleDetection#7089"},
    {"paddle-cuda-35",
     "OSError: (External) CUDA error(35), CUDA driver version is insufficient for CUDA runtime "
     "version. [Hint: 'cudaErrorInsufficientDriver'. This indicates that the installed NVIDIA "
     "CUDA driver is older than the CUDA runtime library.]",
     K("cuda error(35)", "cuda driver version is insufficient for cuda runtime version", "cudaerrorinsufficientdriver"),
     "L4 CUDA libraries",
     "The wheel's CUDA runtime is newer than the driver supports (or libcuda "
     "is absent)",
     "upgrade the driver to the minimum for that CUDA (doctor prints it) or install "
     "a wheel built for an older CUDA",
     "l4.cudart", "PaddlePaddle/Paddle#50747; PaddleDetection#8493"},
    {"paddle-cuda-999",
     "OSError: (External) CUDA error(999), unknown error. [Hint: 'cudaErrorUnknown'. This "
     "indicates that an unknown internal error has occurred.]",
     K("cuda error(999)", "cudaerrorunknown", "unknown error"), "L3 CUDA driver API",
     "Driver/UVM state: a stale or missing nvidia_uvm (e.g. after suspend)",
     "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm (or reboot)", "l3.cuinit", "baidu/DDParser#67"},
    {"paddle-device-not-set",
     "You are using GPU version Paddle, but your CUDA device is not set properly. CPU device "
     "will be used by default.",
     K("your cuda device is not set properly", "cpu device will be used by default",
       "you are using gpu version paddle"),
     "L3 CUDA driver API",
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
     K("cudnn_status_not_initialized", "cudnn error(1)"), "L4 CUDA libraries",
     "cuDNN / CUDA / driver mismatch makes cudnnCreate fail",
     "make cuDNN's CUDA major match the runtime and the driver (doctor L4 shows each)", "l4.cudnn",
     "PaddlePaddle/Paddle#52250, #52181"},
    {"ort-cublaslt11-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: "
     "cannot open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcublaslt.so.11: cannot open shared object file"), "L4 CUDA libraries",
     "A CUDA 11 onnxruntime-gpu on a CUDA 12/13 system",
     "install the onnxruntime-gpu build for the installed CUDA major (or the CUDA 11 libraries)", "inspect.N.deps",
     "microsoft/onnxruntime#21684; PaddleNLP#8195"},
    {"ort-cudnn9-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot "
     "open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcudnn.so.9: cannot open shared object file"), "L4 CUDA libraries",
     "ONNX Runtime >= 1.18.1 needs cuDNN 9, which is not on the search path",
     "pip install nvidia-cudnn-cu12 (or cu13) or apt install libcudnn9-cuda-12, then retry", "l4.cudnn",
     "Gourieff/sd-webui-reactor#503"},
    {"ort-cublaslt12-missing",
     "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: "
     "cannot open shared object file: No such file or directory",
     K("libonnxruntime_providers_cuda.so", "libcublaslt.so.12: cannot open shared object file"), "L4 CUDA libraries",
     "CUDA major mismatch: the ORT build wants CUDA 12, only CUDA 13 is installed",
     "install the CUDA 12 cuBLAS (pip install nvidia-cublas-cu12) or an ORT build for CUDA 13", "inspect.N.deps",
     "pykeio/ort#548; microsoft/onnxruntime#22968"},
    {"ort-create-cuda-ep",
     "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest "
     "MSVC runtime.",
     K("failed to create cudaexecutionprovider", "require cudnn 9.* and cuda 12.*"), "L4 CUDA libraries",
     "One of the CUDA EP's libraries failed to load (then ORT silently falls "
     "back to the CPU)",
     "run `lector doctor --inspect .../libonnxruntime_providers_cuda.so` to "
     "see which",
     "inspect.N.deps", "microsoft/onnxruntime#21825, #22930"},
    {"ort-cuda-100",
     "CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; hostname=… ; "
     "expr=cudaSetDevice(info_.device_id);",
     K("cuda failure 100", "no cuda-capable device is detected", "cudasetdevice"), "L3 CUDA driver API",
     "No visible GPU (container without GPUs, CUDA_VISIBLE_DEVICES empty)",
     "docker run --gpus all …; unset CUDA_VISIBLE_DEVICES", "l3.devices",
     "microsoft/onnxruntime#11561; deepinsight/insightface#2524"},
    {"ort-cuda-35", "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0",
     K("cuda failure 35", "cuda driver version is insufficient for cuda runtime version"), "L4 CUDA libraries",
     "The driver is older than the CUDA runtime ORT was built with",
     "upgrade the NVIDIA driver (doctor L4 prints the minimum)", "l4.cudart", "C0untFloyd/roop-unleashed#465"},
    {"ort-cuda-804", "CUDA failure 804: forward compatibility was attempted on non supported HW ; GPU=0",
     K("cuda failure 804", "forward compatibility was attempted on non supported hw"), "L3 CUDA driver API",
     "A cuda-compat libcuda on a GPU without forward compatibility, or an old "
     "host driver under a newer container",
     "remove /usr/local/cuda/compat from the library path "
     "or upgrade the host driver",
     "l3.cuinit", "microsoft/onnxruntime#21435; NVIDIA/nvidia-docker#1294"},
    {"cublas-symbol-version",
     "libcublas.so.11: symbol free_gemm_select version libcublasLt.so.11 not defined in file "
     "libcublasLt.so.11 with link time reference",
     K("symbol free_gemm_select", "not defined in file libcublaslt", "with link time reference"), "L4 CUDA libraries",
     "Two cuBLAS copies mixed: libcublas from one release, libcublasLt from "
     "another",
     "load both from one install (remove the other from LD_LIBRARY_PATH)", "l4.cublas_pair",
     "microsoft/onnxruntime#8594"},
    {"cublas-undefined-symbol",
     ".../nvidia/cublas/lib/libcublas.so.11: undefined symbol: cublasLtGetStatusString, version "
     "libcublasLt.so.11",
     K("undefined symbol: cublasltgetstatusstring", "version libcublaslt.so"), "L4 CUDA libraries",
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
     "L3 CUDA driver API", "cuInit returned 999: nvidia_uvm stale or missing",
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
     "L4 CUDA libraries", "A cuDNN in LD_LIBRARY_PATH shadows the one bundled with the framework",
     "remove that directory from LD_LIBRARY_PATH", "l4.cudnn", "bmaltais/kohya_ss#1096; pytorch/pytorch#81881"},
    {"cudnn8-nvrtc-unversioned",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared "
     "object file: No such file or directory",
     K("could not load library libcudnn_cnn_infer.so.8", "libnvrtc.so: cannot open shared object file"),
     "L4 CUDA libraries", "cuDNN 8's sub-library dlopens the unversioned libnvrtc.so",
     "ln -s libnvrtc.so.N libnvrtc.so next to it (or install cuda-nvrtc-dev), then ldconfig", "l4.nvrtc",
     "AUTOMATIC1111/stable-diffusion-webui#10230"},
    {"cudnn8-libcuda-unversioned",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared "
     "object file: No such file or directory",
     K("could not load library libcudnn_cnn_infer.so.8", "libcuda.so: cannot open shared object file"),
     "L3 CUDA driver API", "Only libcuda.so.1 exists (WSL, containers)",
     "ln -s libcuda.so.1 libcuda.so in the driver library directory (WSL: /usr/lib/wsl/lib), "
     "then ldconfig",
     "l3.libcuda", "open-mmlab/mmdetection3d#2132"},
    {"trt-cuda-35", "[TRT] CUDA initialization failure with error: 35. Please check your CUDA installation",
     K("cuda initialization failure with error: 35", "please check your cuda installation"), "L4 CUDA libraries",
     "The driver is older than TensorRT's CUDA", "upgrade the driver", "l4.cudart",
     "wang-xinyu/tensorrtx#685; NVIDIA/TensorRT#2879"},
    {"trt-plan-version",
     "The engine plan file is not compatible with this version of TensorRT, expecting library "
     "version 8.0.0 got 8.0.1, please rebuild. / Serialization assertion stdVersionRead == "
     "serializationVersion failed",
     K("the engine plan file is not compatible with this version of tensorrt", "stdversionread == serializationversion",
       "please rebuild"),
     "L5 Lector engine", "The TensorRT engine was built with another TensorRT version",
     "rebuild the engine with the TensorRT installed here", "-",
     "wang-xinyu/tensorrtx#664; mingj2021/segment-anything-tensorrt#2"},
    {"trt-plan-device",
     "The engine plan file is generated on an incompatible device, expecting compute 8.6 got "
     "compute 7.5",
     K("the engine plan file is generated on an incompatible device", "expecting compute"), "L5 Lector engine",
     "The TensorRT engine was built on a GPU of another architecture", "rebuild the engine on this GPU", "l2.gpu0",
     "NVIDIA/TensorRT#2176"},
    {"tf-cudart-missing",
     "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot "
     "open shared object file: No such file or directory",
     K("could not load dynamic library 'libcudart.so", "dlerror: libcudart.so"), "L4 CUDA libraries",
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
     "L4 CUDA libraries (Windows)",
     "A DLL or one of its dependencies (CUDA/cuDNN DLLs, the MSVC "
     "runtime) is not on PATH",
     "install the latest MSVC redistributable and put the CUDA/cuDNN "
     "bin directories on PATH (the doctor's ld.so checks are Linux-only)",
     "-", "PaddleOCR complaint list #8 (C++ build/link failures); pytorch/pytorch Windows reports"},
    {"windows-dll-load-failed",
     "ImportError: DLL load failed while importing onnxruntime_pybind11_state: The specified "
     "module could not be found.",
     K("dll load failed", "the specified module could not be found"), "L4 CUDA libraries (Windows)",
     "A native extension's DLL dependencies are missing (CUDA, cuDNN or "
     "MSVC runtime)",
     "install the MSVC redistributable and the CUDA/cuDNN versions the package "
     "requires; check PATH",
     "-", "microsoft/onnxruntime Windows reports; PaddleOCR complaint list #8"},
    /* Lector's own messages */
    {"cuda-stub-library", "CUDA API Error at line 28: CUDA driver is a stub library",
     K("cuda driver is a stub library"), "L3 CUDA driver API",
     "The toolkit's link-time stub libcuda.so (lib64/stubs) is loaded instead of the driver's libcuda.so.1: it answers "
     "every call with CUDA_ERROR_STUB_LIBRARY (34)",
     "take the stubs/ directory out of LD_LIBRARY_PATH, LD_PRELOAD and /etc/ld.so.conf.d (lector doctor names the one "
     "that hands it out)",
     "l3.libcuda", "xmake-io/xmake#4686; NVIDIA/warp#219"},
    {"cuda-stub-undefined-symbol",
     "AttributeError: /scratch/opt/cuda-12.1/lib64/stubs/libcuda.so: undefined symbol: _undef",
     K("/stubs/libcuda.so: undefined symbol"), "L3 CUDA driver API",
     "A program resolved libcuda.so to the toolkit's stub (a stubs/ directory on LD_LIBRARY_PATH): it is not the "
     "driver",
     "remove the .../lib64/stubs entry from LD_LIBRARY_PATH", "l3.libcuda", "numba/numba#8985"},
    {"libcuda-wrong-class-cudnn8",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: wrong ELF class: ELFCLASS32",
     K("libcuda.so: wrong elf class: elfclass32"), "L3 CUDA driver API",
     "cuDNN 8 dlopens the unversioned libcuda.so and the loader finds only a 32-bit copy (lib32/i386 driver library) "
     "on its path",
     "create the 64-bit link: sudo ln -s libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so && sudo ldconfig",
     "l3.libcuda_unversioned", "MotrixLab/SMPLer-X#37"},
    {"cudart-wrong-class", "ImportError: libcudart.so.7.0: wrong ELF class: ELFCLASS32",
     K("libcudart.so", "wrong elf class: elfclass32"), "L4 CUDA libraries",
     "Only a 32-bit CUDA runtime is on the loader's path (LD_LIBRARY_PATH points at .../cuda/lib instead of lib64)",
     "export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", "l4.cudart",
     "andersbll/deeppy#28"},
    {"nvml-wrong-class",
     "Unable to load CUDA management library /usr/lib/libnvidia-ml.so.545.29.06: wrong ELF class: ELFCLASS32",
     K("libnvidia-ml.so", "wrong elf class: elfclass32", "unable to load cuda management library"), "L2 NVML",
     "A program tried the 32-bit NVML (/usr/lib on a lib64 distribution) before the 64-bit one; harmless if it goes on "
     "to the 64-bit copy",
     "nothing if the 64-bit libnvidia-ml.so.1 loads next (lector doctor checks l2.nvml)", "l2.nvml",
     "ollama/ollama#2226"},
    {"wsl-libcuda-not-symlink", "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
     K("/usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link"), "L3 CUDA driver API",
     "WSL2 mounts the Windows driver's libcuda copies (not links) into /usr/lib/wsl/lib; ldconfig warns, the loader "
     "still works",
     "nothing to do for CUDA (a warning); lector doctor checks that libcuda.so.1 resolves to /usr/lib/wsl/lib",
     "l3.libcuda", "microsoft/WSL#5548; microsoft/WSL#11229"},
    {"wsl-libcuda-unversioned",
     "libcuda.so is not in found but libcuda.so.1 is (WSL2: ldconfig -p lists libcuda.so.1 => "
     "/usr/lib/wsl/lib/libcuda.so.1 only)",
     K("libcuda.so is not in found but libcuda.so.1 is"), "L3 CUDA driver API",
     "Under WSL2 the cache lists only libcuda.so.1; programs that dlopen the unversioned libcuda.so need "
     "/usr/lib/wsl/lib on LD_LIBRARY_PATH",
     "export LD_LIBRARY_PATH=/usr/lib/wsl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", "l3.libcuda_unversioned",
     "microsoft/WSL#8587"},
    {"cudnn-sublibrary-mismatch", "cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
     K("cudnn_status_sublibrary_version_mismatch"), "L4 CUDA libraries",
     "cuDNN's split libraries come from different releases: a partial copy (pip wheel, LD_LIBRARY_PATH, bundled "
     "runtime) is mixed with a system cuDNN, e.g. libcudnn_engines_tensor_ir.so.9 from /lib while the rest is the "
     "wheel's",
     "put one complete cuDNN first on the search path (lector doctor, check l4.cudnn_split, names the stray directory)",
     "l4.cudnn_split", "mav-rik/facerestore_cf#27; pytorch/pytorch#185512; koharu-rs/koharu#694"},
    {"tf-cudnn-runtime-older",
     "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching "
     "major version and equal or higher minor version.",
     K("loaded runtime cudnn library", "but source was compiled with"), "L4 CUDA libraries",
     "The cuDNN the loader found is older (minor) than the one the framework was built against: an older copy comes "
     "first on the search path",
     "install cuDNN of the same major and at least that minor, first on the search path (lector doctor lists every "
     "copy)",
     "l4.cudnn", "googlecolab/colabtools#2329; jax-ml/jax#15230"},
    {"cuda-803",
     "CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / cuda driver "
     "combination",
     K("system has unsupported display driver / cuda driver combination"), "L3 CUDA driver API",
     "The libcuda the program loads does not belong to the running kernel driver: a cuda-compat copy older than the "
     "driver, or leftover driver libraries of another version",
     "take the other libcuda off the search path (lector doctor names it; often /usr/local/cuda/compat on "
     "LD_LIBRARY_PATH)",
     "l3.libcuda", "NVIDIA/nvidia-docker#1256; easydiffusion/easydiffusion#379"},
    {"cuda-46-busy", "Check failed: error == cudaSuccess (46 vs. 0)  all CUDA-capable devices are busy or unavailable",
     K("all cuda-capable devices are busy or unavailable"), "L3 CUDA driver API",
     "The GPU is in exclusive-process (or prohibited) compute mode and another process holds it",
     "nvidia-smi -q -d COMPUTE (see who holds it); sudo nvidia-smi -c DEFAULT to share the GPU", "l3.device0",
     "NVIDIA/DIGITS#2005; pytorch/pytorch#3871"},
    {"nvml-gpu-lost",
     "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU",
     K("gpu is lost", "reboot the system to recover this gpu"), "L2 NVML",
     "The GPU fell off the bus (Xid 79: power, thermal, PCIe or hardware fault)",
     "sudo reboot; then dmesg | grep -i xid; check power and cooling", "l2.gpu0", "JosephKJ/OWOD#81"},
    {"nvrm-nouveau",
     "NVRM: The NVIDIA probe routine was not called for 3 device(s). This can occur when a driver such as: nouveau, "
     "rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s).",
     K("the nvidia probe routine was not called", "obtained ownership of the nvidia device"), "L1 kernel driver",
     "nouveau (or a framebuffer driver) owns the GPU, so the NVIDIA module cannot bind to it",
     "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf && "
     "sudo update-initramfs -u && sudo reboot",
     "l1.driver", "mattshma/bigdata#133; negativo17/nvidia-driver#73"},
    {"lfs-pointer-invalid-elf",
     "error while loading shared libraries: /opt/app/lib/libtorch_cpu.so: invalid ELF header",
     K("invalid elf header", "error while loading shared libraries"), "L4 CUDA libraries",
     "The file is not a library: a Git LFS pointer (\"version https://git-lfs.github.com/spec/v1\"), an HTML error "
     "page or a text file under the library's name; the loader stops at it",
     "fetch the real file (git lfs pull) or move the text file away; lector doctor names the file the loader stops at",
     "l4.cudnn", "Nesvilab/FragPipe#2639"},
    {"symlink-loop", "ImportError: libGL.so.1: cannot open shared object file: Too many levels of symbolic links",
     K("too many levels of symbolic links"), "L4 CUDA libraries",
     "The library's links form a loop (a -> b -> a): the loader gives up on that directory",
     "recreate the links (lector doctor prints the ln -sf for CUDA libraries; sudo ldconfig recreates SONAME links)",
     "l4.cudnn", "SiavashMT/OCT-MPS#2; nanoporetech/dorado#723"},
    {"tf-cuinit-no-device-no-proc",
     "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected ... kernel driver does not "
     "appear to be running on this host: /proc/driver/nvidia/version does not exist",
     K("kernel driver does not appear to be running on this host"), "L1 kernel driver",
     "No NVIDIA kernel driver here (a container without GPUs, or LD_LIBRARY_PATH pointing at cuda/compat on a machine "
     "without the driver)",
     "docker run --gpus all ... (or install the driver: sudo apt install nvidia-driver-580)", "l1.driver",
     "tensorflow/tensorflow#44869"},
    {"torch-error-38-cvd",
     "THCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=109 error=38 : no CUDA-capable device is detected",
     K("thcudacheck fail", "error=38 : no cuda-capable device is detected"), "L3 CUDA driver API",
     "CUDA sees no device: CUDA_VISIBLE_DEVICES names an index this machine does not have (indices start at 0), or no "
     "driver",
     "export CUDA_VISIBLE_DEVICES=0 (an index nvidia-smi -L lists)", "l3.devices",
     "pytorch/pytorch#1040; endernewton/tf-faster-rcnn#38"},
    {"cuda-runtime-error-100",
     "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at "
     "/pytorch/aten/src/THC/THCGeneral.cpp:50",
     K("cuda runtime error (100)"), "L3 CUDA driver API",
     "No CUDA device is visible to the CUDA runtime (CUDA_VISIBLE_DEVICES, a container without GPUs, or a missing "
     "driver)",
     "nvidia-smi -L; export CUDA_VISIBLE_DEVICES=0 if it names a missing index", "l3.devices",
     "NVIDIAGameWorks/kaolin#8; slczgwh/REDN#5"},
    {"paddle-old-libcudnn",
     "Check failed: nullptr != *dso_handle Failed to find dynamic library: libcudnn.so (libcudnn.so: cannot open "
     "shared object file: No such file or directory)",
     K("failed to find dynamic library: libcudnn.so", "dso_handle"), "L4 CUDA libraries",
     "Paddle dlopens the unversioned libcudnn.so, which cuDNN runtime packages and pip wheels do not ship",
     "sudo ln -s libcudnn.so.8 /usr/lib/x86_64-linux-gnu/libcudnn.so && sudo ldconfig (lector doctor prints it for the "
     "copy it finds)",
     "l4.cudnn_unversioned", "PaddlePaddle/Paddle#11068"},
    {"tf-libcudnn7-missing", "ImportError: libcudnn.so.7: cannot open shared object file: No such file or directory",
     K("importerror: libcudnn.so.7: cannot open shared object file"), "L4 CUDA libraries",
     "cuDNN 7 is not on the loader's path: not installed, or copied into /usr/local/cuda/lib64 without ldconfig / "
     "LD_LIBRARY_PATH",
     "sudo ldconfig (if copied into a configured directory), else export LD_LIBRARY_PATH with the directory lector "
     "doctor names",
     "l4.cudnn", "tensorflow/tensorflow#20271"},
    {"tf-couldnt-open-cudnn5",
     "Couldn't open CUDA library libcudnn.so.5. LD_LIBRARY_PATH: /home/u/Downloads:/usr/local/cuda-8.0/lib64",
     K("couldn't open cuda library libcudnn.so"), "L4 CUDA libraries",
     "TensorFlow's loader did not find the cuDNN major it was built for on LD_LIBRARY_PATH or the cache",
     "install that cuDNN major and put its directory on the search path (lector doctor lists the copies it finds)",
     "l4.cudnn", "tensorflow/tensorflow#8898"},
    {"caffe-libcudnn5-missing",
     "./build/tools/caffe: error while loading shared libraries: libcudnn.so.5: cannot open shared object file: No "
     "such file or directory",
     K("error while loading shared libraries: libcudnn.so.5"), "L4 CUDA libraries",
     "A program linked against cuDNN 5 cannot find libcudnn.so.5 at start (it moved, or LD_LIBRARY_PATH changed)",
     "lector doctor --inspect ./build/tools/caffe (shows where libcudnn.so.5 would resolve), then add its directory to "
     "LD_LIBRARY_PATH",
     "l4.cudnn", "BVLC/caffe#5092"},
    {"torch-803-getdevicecount",
     "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display "
     "driver / cuda driver combination",
     K("unexpected error from cudagetdevicecount()", "system has unsupported display driver / cuda driver combination"),
     "L3 CUDA driver API",
     "libcuda and the kernel driver do not match (cuda-compat or leftover driver libraries); torch then runs on the "
     "CPU",
     "lector doctor (l3.libcuda names the libcuda that is loaded and why); take the other copy off the path or reboot "
     "after a driver update",
     "l3.libcuda", "easydiffusion/easydiffusion#379; CompVis/stable-diffusion#438"},
    {"ctranslate2-cudnn-ops9",
     "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so} Invalid "
     "handle. Cannot load symbol cudnnCreateTensorDescriptor",
     K("unable to load any of {libcudnn_ops.so", "cannot load symbol cudnncreatetensordescriptor"), "L4 CUDA libraries",
     "CTranslate2 (faster-whisper) needs cuDNN 9's libcudnn_ops.so.9 by name and finds none on the search path (the "
     "pip wheel's nvidia/cudnn/lib is not on it)",
     "sudo apt install libcudnn9-cuda-12, or export LD_LIBRARY_PATH with the nvidia/cudnn/lib directory lector doctor "
     "finds",
     "l4.cudnn_split", "MahmoudAshraf97/whisper-diarization#259; jhj0517/Whisper-WebUI#346"},
    {"ctranslate2-cudnn-graph9",
     "Unable to load any of {libcudnn_graph.so.9.1.0, libcudnn_graph.so.9.1, libcudnn_graph.so.9, libcudnn_graph.so} "
     "Invalid handle. Cannot load symbol cudnnCreate",
     K("unable to load any of {libcudnn_graph.so", "cannot load symbol cudnncreate"), "L4 CUDA libraries",
     "cuDNN 9's libcudnn_graph.so.9 is not on the search path (cuDNN 9 missing, or installed for another CUDA major)",
     "install cuDNN 9 for the program's CUDA major (pip install nvidia-cudnn-cu12) and put its lib directory on "
     "LD_LIBRARY_PATH",
     "l4.cudnn_split", "modelscope/ms-swift#3390"},
    {"cudnn8-ops-infer-missing",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: "
     "No such file or directory",
     K("could not load library libcudnn_ops_infer.so.8", "libcudnn_ops_infer.so.8: cannot open shared object file"),
     "L4 CUDA libraries",
     "cuDNN 8's split library libcudnn_ops_infer.so.8 is not on the search path next to libcudnn.so.8",
     "install the full cuDNN 8 (pip install nvidia-cudnn-cu11==8.*) or add its lib directory to LD_LIBRARY_PATH",
     "l4.cudnn_split", "daswer123/xtts-finetune-webui#18"},
    {"container-cli-nvml",
     "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object "
     "file: no such file or directory",
     K("nvidia-container-cli: initialization error", "load library failed: libnvidia-ml.so.1"), "L2 NVML",
     "The NVIDIA Container Toolkit on the host cannot find the driver's NVML: no driver (or only the kernel part) is "
     "installed on the host",
     "install the NVIDIA driver on the host (sudo apt install nvidia-driver-580), then restart docker", "l2.nvml",
     "NVIDIA/libnvidia-container#231; NVIDIA/nvidia-docker#1711"},
    {"container-cli-requirement",
     "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer "
     "version, or use an earlier cuda container",
     K("requirement error: unsatisfied condition: cuda>="), "L2 NVML",
     "The image's CUDA needs a newer driver than the host has (the toolkit checks NVIDIA_REQUIRE_CUDA before starting "
     "the container)",
     "upgrade the host driver to one that supports that CUDA (release notes table; lector doctor shows the driver's "
     "CUDA), or use an image of an older CUDA",
     "l2.nvml", "SyneRBI/PETRIC2#27; theroyallab/tabbyAPI#324; NVIDIA/nvidia-docker#688"},
    {"docker-no-gpu-driver",
     "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].",
     K("could not select device driver", "with capabilities: [[gpu]]"), "L0 system",
     "Docker has no GPU device driver: the NVIDIA Container Toolkit is not installed or not configured for this Docker "
     "daemon",
     "sudo apt install nvidia-container-toolkit && sudo nvidia-ctk runtime configure --runtime=docker && sudo "
     "systemctl restart docker",
     "l1.devnodes", "NVIDIA/nvidia-docker#1034; hiyouga/LlamaFactory#5268"},
    {"nvml-unknown-error-cgroup", "Failed to initialize NVML: Unknown Error",
     K("failed to initialize nvml: unknown error"), "L2 NVML",
     "The container lost access to /dev/nvidia* (systemd reloaded the device cgroup: systemctl daemon-reload) while "
     "the host's GPU is fine",
     "restart the container; for good: set --device rules or use the toolkit's nvidia-ctk system "
     "create-dev-char-symlinks",
     "l1.devnodes", "NVIDIA/nvidia-docker#1730; NVIDIA/nvidia-container-toolkit#251"},
    {"libcudnn8-missing-readme", "libcudnn.so.8: cannot open shared object file: No such file or directory",
     K("libcudnn.so.8: cannot open shared object file"), "L4 CUDA libraries",
     "cuDNN 8 is not on the loader's path: not installed, installed for another CUDA major, or in a directory neither "
     "the cache nor LD_LIBRARY_PATH names",
     "lector doctor (l4.cudnn lists every copy and the command that puts the right one on the path)", "l4.cudnn",
     "PaddlePaddle/PaddleOCR#1304; tensorflow/tensorflow#45930"},
    {"cuda-insufficient-driver", "CUDA driver version is insufficient for CUDA runtime version",
     K("cuda driver version is insufficient for cuda runtime version"), "L4 CUDA libraries",
     "The CUDA runtime is newer than the driver supports (a wheel or image built for a newer CUDA than the installed "
     "driver); also returned when libcuda is missing",
     "upgrade the driver to the minimum of that CUDA (lector doctor prints it) or install the build for the driver's "
     "CUDA",
     "l4.cudart", "PaddlePaddle/Paddle#50747; C0untFloyd/roop-unleashed#465"},
    {"no-kernel-image", "no kernel image is available for execution on the device",
     K("no kernel image is available for execution on the device"), "L4 CUDA libraries",
     "The libraries carry no machine code and no PTX for this GPU's architecture (a GPU too old or too new for the "
     "build)",
     "lector doctor --inspect THE_LIBRARY (lists its SASS/PTX against the GPU); install a build that includes this "
     "GPU's sm_XY",
     "inspect.0.archs", "PaddlePaddle/Paddle#56683; pytorch/pytorch#150733"},
    {"ptx-unsupported-toolchain", "CUDA error: the provided PTX was compiled with an unsupported toolchain.",
     K("the provided ptx was compiled with an unsupported toolchain"), "L3 CUDA driver API",
     "PTX built by a newer CUDA than the driver's JIT understands (error 222): the driver is older than the toolkit "
     "that built it",
     "upgrade the driver to the CUDA release of the build (lector doctor shows the driver's CUDA)", "l2.nvml",
     "NVIDIA/TensorRT#1052"},
    {"torch-no-driver",
     "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver from http://www.nvidia.com/Download/index.aspx",
     K("found no nvidia driver on your system"), "L3 CUDA driver API",
     "libcuda.so.1 cannot be loaded (no driver, or a container started without GPUs): cudaDriverGetVersion answers 0",
     "docker run --gpus all ... in a container; else install the driver (sudo apt install nvidia-driver-580)",
     "l3.libcuda", "facebookresearch/detectron2#3104; googlecolab/colabtools#5136"},
    {"jax-cudnn-version",
     "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8800, which is "
     "newer. The copy of cuDNN that is installed must be at least as new as the version against which JAX was built.",
     K("but jax was built against version"), "L4 CUDA libraries",
     "An older cuDNN (often a system or LD_LIBRARY_PATH copy) is loaded instead of the newer one the framework needs",
     "take the older cuDNN off LD_LIBRARY_PATH or upgrade it (lector doctor, l4.cudnn, shows which one wins)",
     "l4.cudnn", "MIT-REALM/gcbfplus#1; jax-ml/jax#15268"},
    {"cublas-not-initialized",
     "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
     K("cublas_status_not_initialized"), "L4 CUDA libraries",
     "cuBLAS could not start: usually the GPU is out of memory, or cuBLAS/cuBLASLt of different releases are mixed",
     "nvidia-smi (memory in use); lector doctor (l4.cublas_pair checks the cuBLAS pair)", "l4.cublas_pair",
     "QwenLM/Qwen#120; OpenBMB/VisCPM#3"},
    {"tf-cudart-11-dlerror",
     "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: "
     "No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib:/usr/local/nvidia/lib64",
     K("could not load dynamic library 'libcudart.so.11.0'", "ld_library_path: /usr/local/nvidia/lib"),
     "L4 CUDA libraries",
     "The CUDA 11 runtime is not in the container (only the driver's directories are on LD_LIBRARY_PATH): a CUDA 12 "
     "image or a base image without the runtime",
     "pip install nvidia-cuda-runtime-cu11 (or use a cuda:11.x-runtime image)", "l4.cudart",
     "tensorflow/tensorflow#45930"},
    {"permission-denied-cudnn",
     "Could not load library libcudnn.so.8. Error: libcudnn.so.8: cannot open shared object file: Permission denied",
     K("libcudnn.so.8: cannot open shared object file: permission denied"), "L4 CUDA libraries",
     "The cuDNN files are not readable by this user (NVIDIA's tarball is not world-readable; copied with cp as root)",
     "sudo chmod a+r /usr/local/cuda/lib64/libcudnn*", "l4.cudnn", "tensorflow/tensorflow#789"},
    {"docker-gpus-nvidia-driver-nvidia",
     "Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]",
     K("could not select device driver \"nvidia\"", "with capabilities: [[gpu]]"), "L0 system",
     "docker compose asks for the nvidia driver, but the NVIDIA Container Toolkit is not installed or Docker was not "
     "restarted after it",
     "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker", "l1.devnodes",
     "infiniflow/ragflow#9573; jianchang512/ChatTTS-ui#212"},
    {"paddle-cuda-error-35-short", "CUDA error(35), CUDA driver version is insufficient for CUDA runtime version.",
     K("cuda error(35), cuda driver version is insufficient", "for cuda runtime version."), "L4 CUDA libraries",
     "Paddle's CUDA runtime is newer than the driver supports",
     "upgrade the driver (lector doctor prints the minimum) or install a Paddle built for the driver's CUDA",
     "l4.cudart", "PaddlePaddle/PaddleDetection#8493"},
    {"nvidia-smi-no-nvml-lib",
     "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver "
     "is properly installed and present in your system.",
     K("nvidia-smi couldn't find libnvidia-ml.so library"), "L2 NVML",
     "The driver's libraries are in the container but the loader does not find them: /etc/ld.so.cache was not rebuilt "
     "after they were mounted, or their libnvidia-ml.so.1 / libcuda.so.1 links are broken",
     "ldconfig (inside the container); if that does not help, recreate the links: ln -sf libnvidia-ml.so.<driver> "
     "libnvidia-ml.so.1 in the driver directory",
     "l2.nvml", "NVIDIA/nvidia-docker#1163; NVIDIA/libnvidia-container#67; warmshao/FasterLivePortrait#8"},
    {"cuda-compat-804-docker",
     "forward compatibility was attempted on non supported HW (cuda-compat in the image on a GeForce host)",
     K("forward compatibility was attempted on non supported hw (cuda-compat"), "L3 CUDA driver API",
     "The image's cuda-compat libcuda (forward compatibility) is used on a GPU that does not support it (GeForce)",
     "take /usr/local/cuda/compat off LD_LIBRARY_PATH in the image, or upgrade the host driver to the image's CUDA",
     "l3.libcuda", "NVIDIA/nvidia-docker#1294; microsoft/onnxruntime#21435"},
    {"jax-outdated-cudnn",
     "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components: "
     "Outdated cuDNN installation found. Version JAX was built against: 8907 Minimum supported: 9100 Installed "
     "version: 8907",
     K("outdated cudnn installation found", "version jax was built against"), "L4 CUDA libraries",
     "The cuDNN the loader finds is older than the framework's minimum (an environment's cuDNN 8 first on the path "
     "while the framework needs 9)",
     "install cuDNN 9 for the CUDA in use (pip install nvidia-cudnn-cu12) and keep the older copy off the path",
     "l4.cudnn", "conda-forge/jax-feedstock#149"},
    {"windows-cudnn-ops64-9",
     "Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path! Invalid handle. Cannot load "
     "symbol cudnnCreateTensorDescriptor",
     K("could not locate cudnn_ops64_9.dll"), "L4 CUDA libraries (Windows)",
     "cuDNN 9's ops DLL is not on PATH (Windows): cuDNN 9 is not installed, or only the CUDA toolkit is",
     "install cuDNN 9 for the CUDA major in use and add its bin directory to PATH", "l4.cudnn_split",
     "byjlw/video-analyzer#54; ddean2009/MoneyPrinterPlus#91"},
    {"tf-cublas-handle",
     "E tensorflow/stream_executor/cuda/cuda_blas.cc:366] failed to create cublas handle: "
     "CUBLAS_STATUS_NOT_INITIALIZED",
     K("failed to create cublas handle"), "L4 CUDA libraries",
     "cuBLAS could not start: the GPU memory is already taken (another process, or TensorFlow grabbing it all), or "
     "mixed cuBLAS releases",
     "nvidia-smi (memory in use); set TF_FORCE_GPU_ALLOW_GROWTH=true; lector doctor checks the cuBLAS pair "
     "(l4.cublas_pair)",
     "l4.cublas_pair", "tensorflow/tensorflow#9489"},
    {"lector-cuda-module-missing",
     "device cuda: the CUDA module is missing: no /opt/lector/bin/liblector-cuda.so (or ../lib/)",
     K("the cuda module is missing", "liblector-cuda.so"), "L5 Lector engine",
     "lector was built without the CUDA toolkit, or the binary was copied without the "
     "liblector-cuda.so that sits next to it",
     "use the offline bundle (lib/liblector-cuda.so), "
     "build with cmake -DLECTOR_CUDA=ON, or set LECTOR_CUDA_MODULE to the module's path",
     "l5.module", "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-cuda-libs-missing",
     "device cuda: libcublasLt for CUDA 13 not found (the CUDA backend needs cuBLAS 13 and cuDNN 9; "
     "`lector doctor` shows where it looked)",
     K("for cuda", "not found (the cuda backend needs cublas", "cudnn 9"), "L4 CUDA libraries",
     "cuBLAS or cuDNN of the CUDA major the module was built for is not installed "
     "where ld.so, pip wheels, conda or /usr/local/cuda would provide it",
     "install cuBLAS of that CUDA major and cuDNN 9 (toolkit packages, or the pip wheels "
     "nvidia-cublas-cu13 / nvidia-cudnn-cu13), then `lector doctor`",
     "l5.module", "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-cuda-api-version",
     "device cuda: /opt/lector/lib/liblector-cuda.so was built for another version of Lector "
     "(backend API 2, this one 1)",
     K("was built for another version of lector", "backend api"), "L5 Lector engine",
     "the CUDA module and the lector binary come from different builds",
     "install lector and liblector-cuda.so from the same build or bundle", "l5.selftest",
     "Lector's CUDA loader (src/rt/cuda_loader.c)"},
    {"lector-gpu-mem-cap",
     "/opt/lector/models/ch_PP-OCRv4_det_infer.onnx: cannot allocate 30277632 bytes of activation memory",
     K("cannot allocate", "bytes of activation memory"), "L5 Lector engine",
     "on a GPU: the process reached the memory cap it was given (--gpu-mem-limit, "
     "gpu_mem_limit) or the card is full; on the CPU: host memory is exhausted",
     "raise --gpu-mem-limit (bytes or a share such as 50%), lower det_limit_side_len or the batch "
     "sizes; lector serve answers such reads on its CPU engine",
     "-", "Lector's runtime (src/rt/plan.c) and CUDA backend (src/backend/cuda/cuda_backend.c)"},
};

const size_t doctor_explain_table_len = sizeof doctor_explain_table / sizeof doctor_explain_table[0];
