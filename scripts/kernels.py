#!/usr/bin/env python3
"""scripts/kernels.py - the kernels shipped with the CUDA module.

The CUDA module compiles its elementwise chains and depthwise kernels with
NVRTC at run time and keeps them in a kernel cache on disk
(src/backend/cuda/cuda_kcache.c, format in kcache_format.h). A new machine's
cache is empty, so its first process pays NVRTC (1-3 s before the first
page). The offline bundle therefore ships those kernels already compiled, in
lib/lector-kernels/, which the module reads before its own cache. Their
keys name the NVRTC that built them, and so does the file NVRTC there
("NVRTC 13.0"): the module finds them under that version without loading
NVRTC, whichever NVRTC the machine has (or none).

  extract DIR... -o MANIFEST
      The kernels a GPU run compiled, from its kernel cache directories, as a
      manifest: NVRTC's program text, without the version and the GPU
      architecture, so that one manifest serves every GPU
      (`bench/gpu/device.sh kernels` records src/backend/cuda/kernels.manifest).
  build MANIFEST --arch 75,80,... -o DIR [--nvrtc LIB] [--jobs N]
      Compiles each kernel of the manifest with NVRTC for each architecture
      into DIR, as the module's kernel cache would have (the same key and
      file name), and writes DIR/NVRTC. Files already there are kept, any
      other file in DIR is removed. No GPU is needed. Exit 3: no NVRTC to
      load.

A manifest is text: "@@ prelude N" or "@@ kernel N" lines, each followed by
N bytes and a newline. A program is the prelude followed by one kernel, as
cuda_nvrtc.c's batch_program writes it. A manifest made by an older
generator gives files no run asks for: the module then compiles as before
(the GPU test cuda.shipped_kernels fails, saying so).
"""
import argparse
import ctypes
import os
import struct
import sys
from concurrent.futures import ProcessPoolExecutor

MAGIC = b"LECTORK1"
OPTS_REST = (b"--fmad=false", b"-w")  # cuda_nvrtc.c's nv_opt_rest, in its order


def die(msg, code=1):
    print("kernels: " + msg, file=sys.stderr)
    sys.exit(code)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def parse_kc(data):
    """The key and the image of a kernel cache file, or None."""
    if len(data) < 16 or data[:8] != MAGIC:
        return None
    (klen,) = struct.unpack_from("<Q", data, 8)
    if 16 + klen + 8 > len(data):
        return None
    key = data[16:16 + klen]
    (ilen,) = struct.unpack_from("<Q", data, 16 + klen)
    if 24 + klen + ilen != len(data):
        return None
    return key, data[24 + klen:]


def program_of(key):
    """A key is 'NVRTC a.b\\n<arch> <options>\\n<program>'."""
    parts = key.split(b"\n", 2)
    if len(parts) != 3 or not parts[0].startswith(b"NVRTC ") or b"--gpu-architecture=" not in parts[1]:
        return None
    return parts[2]


def write_manifest(path, prelude, kernels):
    with open(path + ".tmp", "wb") as f:
        f.write(b"# the kernels shipped with the CUDA module: scripts/kernels.py (how it is made and used)\n")
        for kind, text in [("prelude", prelude)] + [("kernel", k) for k in kernels]:
            f.write(b"@@ %s %d\n" % (kind.encode(), len(text)))
            f.write(text + b"\n")
    os.replace(path + ".tmp", path)


def read_manifest(path):
    data = open(path, "rb").read()
    pos, prelude, kernels = data.index(b"\n") + 1, None, []
    while pos < len(data):
        end = data.index(b"\n", pos)
        head = data[pos:end].split()
        if len(head) != 3 or head[0] != b"@@" or head[1] not in (b"prelude", b"kernel"):
            die("%s: not a manifest at byte %d" % (path, pos))
        n = int(head[2])
        text = data[end + 1:end + 1 + n]
        if len(text) != n or data[end + 1 + n:end + 2 + n] != b"\n":
            die("%s: cut short at byte %d" % (path, pos))
        if head[1] == b"prelude":
            prelude = text
        else:
            kernels.append(text)
        pos = end + 2 + n
    if prelude is None:
        die("%s: no prelude" % path)
    return prelude, kernels


def extract(dirs, out):
    programs = set()
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith(".kc"):
                continue
            kc = parse_kc(open(os.path.join(d, name), "rb").read())
            prog = kc and program_of(kc[0])
            if prog:
                programs.add(prog)
    if len(programs) < 2:
        die("fewer than two kernels in %s" % " ".join(dirs))
    # the prelude: what every program shares, up to the line where they part
    progs = sorted(programs)
    common = os.path.commonprefix(progs)
    prelude = common[:common.rfind(b"\n") + 1]
    kernels = sorted(p[len(prelude):] for p in progs)
    write_manifest(out, prelude, kernels)
    print("kernels: %d kernels, prelude %d bytes -> %s" % (len(kernels), len(prelude), out))


class Nvrtc:
    def __init__(self, lib):
        try:
            self.lib = ctypes.CDLL(lib)
        except OSError as e:
            die("cannot load NVRTC (%s): %s" % (lib, e), 3)
        ma, mi = ctypes.c_int(), ctypes.c_int()
        if self.lib.nvrtcVersion(ctypes.byref(ma), ctypes.byref(mi)):
            die("nvrtcVersion failed")
        self.version = b"NVRTC %d.%d" % (ma.value, mi.value)
        n = ctypes.c_int()
        self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
        archs = (ctypes.c_int * n.value)()
        self.lib.nvrtcGetSupportedArchs(archs)
        self.archs = set(archs)

    def cubin(self, src, arch):
        prog = ctypes.c_void_p()
        if self.lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"lector_chains.cu", 0, None, None):
            return None
        opts = (ctypes.c_char_p * 3)(b"--gpu-architecture=sm_%d" % arch, *OPTS_REST)
        r = self.lib.nvrtcCompileProgram(prog, 3, opts)
        image = None
        if r == 0:
            size = ctypes.c_size_t()
            self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            if size.value and self.lib.nvrtcGetCUBIN(prog, buf) == 0:
                image = buf.raw
        self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return image


_nv = None


def key_of(version, arch, program):
    """The module's disk-cache key (cuda_nvrtc.c's kernel_cache_key)."""
    return b"%s\n--gpu-architecture=sm_%d %s %s\n%s" % (version, arch, OPTS_REST[0], OPTS_REST[1], program)


def _compile(job):
    """One kernel for one architecture into its file (a worker process)."""
    global _nv
    lib, path, key, program, arch = job
    if os.path.exists(path):
        return 0
    if _nv is None:
        _nv = Nvrtc(lib)
    image = _nv.cubin(program, arch)
    if image is None:
        return -1
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(key)) + key + struct.pack("<Q", len(image)) + image)
    os.replace(tmp, path)
    return 1


def default_nvrtc():
    for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"):
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.startswith("libnvrtc.so.") and name.count(".") == 2:
                return os.path.join(d, name)
    return "libnvrtc.so.13"


def build(manifest, archs, out, lib, jobs):
    prelude, kernels = read_manifest(manifest)
    nv = Nvrtc(lib)
    missing = [a for a in archs if a not in nv.archs]
    if missing:
        die("%s cannot compile for sm_%s" % (nv.version.decode(), ", sm_".join(map(str, missing))))
    os.makedirs(out, exist_ok=True)
    jobs_list = []
    for a in archs:
        for k in kernels:
            key = key_of(nv.version, a, prelude + k)
            jobs_list.append((lib, os.path.join(out, "%016x.kc" % fnv1a64(key)), key, prelude + k, a))
    # DIR holds this manifest's kernels alone: files of an older one (or NVRTC) go
    keep = {os.path.basename(j[1]) for j in jobs_list} | {"NVRTC"}
    pruned = [n for n in os.listdir(out) if n not in keep]
    for n in pruned:
        os.remove(os.path.join(out, n))
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        results = list(ex.map(_compile, jobs_list, chunksize=8))
    failed = results.count(-1)
    tmp = os.path.join(out, "NVRTC.%d.tmp" % os.getpid())
    with open(tmp, "wb") as f:
        f.write(nv.version + b"\n")
    os.replace(tmp, os.path.join(out, "NVRTC"))
    print("kernels: %d kernels x sm_%s with %s: %d compiled, %d there already, %d removed, %d failed -> %s"
          % (len(kernels), ",".join(map(str, archs)), nv.version.decode(), results.count(1), results.count(0),
             len(pruned), failed, out))
    if failed:
        die("NVRTC failed on %d kernels" % failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("dirs", nargs="+")
    e.add_argument("-o", "--out", required=True)
    b = sub.add_parser("build")
    b.add_argument("manifest")
    b.add_argument("--arch", required=True, help="e.g. 75,80,86,89,90")
    b.add_argument("-o", "--out", required=True)
    b.add_argument("--nvrtc", default=None, help="libnvrtc.so.N (default: the CUDA toolkit's)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if a.cmd == "extract":
        extract(a.dirs, a.out)
    else:
        archs = [int(x) for x in a.arch.replace("sm_", "").split(",") if x]
        build(a.manifest, archs, a.out, a.nvrtc or default_nvrtc(), a.jobs)


if __name__ == "__main__":
    main()
