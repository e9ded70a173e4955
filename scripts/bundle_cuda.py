#!/usr/bin/env python3
"""scripts/bundle_cuda.py - the CUDA archive of the offline bundle,
lector-<version>-cuda<major>-linux-x86_64.tar.xz (scripts/bundle --with-cuda;
docs/DEPLOY.md). It unpacks over the base bundle: the same top directory, only
files the base does not have.

  lib/<SONAME>                 cuBLAS, cuBLASLt, cuDNN (the shim and the sub-libraries
                               Lector's plans load), NVRTC and its builtins, copied
                               unmodified from the toolkit / cuDNN directories given,
                               each named by its SONAME
  lib/lector-cuda<major>.libs  the set, in load order: the CUDA module loader
                               (src/rt/module.c) preloads each file by absolute path
                               from there when the set is complete (--cuda-libs auto)
  LICENSES/nvidia-*            each library's licence as it came with it (a pip
                               wheel's dist-info licence, the Debian package's
                               copyright file, or the toolkit's EULA.txt)
  MANIFEST.cuda<major>         file, component, version, sha256, where it came from

Which libraries: the CUDA libraries liblector-cuda.so names in DT_NEEDED
(libcublas, libcudnn) and theirs (libcublasLt); NVRTC, which the module
dlopens (src/backend/cuda/cuda_nvrtc.c), with the builtins NVRTC dlopens; and
cuDNN 9's sub-libraries, which libcudnn.so.9 and libcudnn_graph.so.9 dlopen by
SONAME when a call needs them, less those Lector never loads (--cudnn-leave-out,
measured with tests/bundle/device_cuda_bundle.sh's `maps` step). The CUDA
runtime is not shipped: liblector-cuda.so links it statically (cudart_static)
and none of these libraries needs libcudart.so. A library these need that is
neither glibc nor in the base bundle's lib/ is copied from the system with its
Debian copyright file, as the base bundle does.

NVIDIA's files are not modified (their licences allow redistribution of the
libraries as they are): their DT_RUNPATH stays; the loader's preload by
absolute path in the list's order is what makes their DT_NEEDED and cuDNN's
dlopen by SONAME bind to the bundled copies.
"""
import argparse
import base64
import glob
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

GLIBC = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2",
         "libresolv.so.2", "libutil.so.1", "libanl.so.1", "libmvec.so.1"}
# cuDNN 9 sub-libraries never loaded by Lector's plans: libcudnn_adv holds the
# RNN, CTC and multi-head-attention legacy API (cudnn_adv.h), none of which a
# PP-OCR plan calls. The rest are kept until the device measurement
# (docs/DEPLOY.md, "What the CUDA archive carries") shows one unused on every
# configuration.
DEFAULT_LEAVE_OUT = "adv"


def die(msg):
    sys.stderr.write("bundle: %s\n" % msg)
    sys.exit(1)


def say(msg):
    sys.stderr.write("bundle: %s\n" % msg)


# ---------------------------------------------------------------- ELF

def elf_dynamic(path):
    """(soname, needed list, runpath, rpath) of a 64-bit little-endian ELF
    shared object; None when it is not one."""
    with open(path, "rb") as f:
        h = f.read(64)
        if len(h) < 64 or h[:4] != b"\x7fELF" or h[4] != 2 or h[5] != 1:
            return None
        e_type, e_machine = struct.unpack_from("<HH", h, 16)
        e_phoff, = struct.unpack_from("<Q", h, 32)
        e_phentsize, e_phnum = struct.unpack_from("<HH", h, 54)
        if e_machine != 62 or e_type != 3:
            return None
        f.seek(e_phoff)
        ph = f.read(e_phentsize * e_phnum)
        loads, dyn = [], None
        for i in range(e_phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", ph, i * e_phentsize)
            if p_type == 1:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == 2:
                dyn = (p_offset, p_filesz)
        if not dyn:
            return ("", [], None, None)
        f.seek(dyn[0])
        d = f.read(dyn[1])
        ents = [struct.unpack_from("<qQ", d, i) for i in range(0, len(d) - 15, 16)]
        strtab = next((v for t, v in ents if t == 5), None)
        strsz = next((v for t, v in ents if t == 10), 0)
        off = next((o + strtab - va for va, o, sz in loads if va <= strtab < va + sz), None)
        if off is None:
            return ("", [], None, None)
        f.seek(off)
        s = f.read(strsz)

        def string(v):
            return s[v:s.index(b"\0", v)].decode()
        soname = next((string(v) for t, v in ents if t == 14), "")
        needed = [string(v) for t, v in ents if t == 1]
        runpath = next((string(v) for t, v in ents if t == 29), None)
        rpath = next((string(v) for t, v in ents if t == 15), None)
        return (soname, needed, runpath, rpath)


# ------------------------------------------------------------ where from

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def dist_infos(path, roots):
    """dist-info directories that may have installed `path`: the toolkit /
    cuDNN roots' dist-info/ (a toolkit assembled from pip wheels) and the
    site-packages above the file (nvidia/<pkg>/lib/<file>)."""
    cands = []
    for r in roots:
        cands += glob.glob(os.path.join(r, "dist-info", "*.dist-info"))
        cands += glob.glob(os.path.join(r, "*.dist-info"))
    d = os.path.dirname(path)
    for _ in range(4):
        d = os.path.dirname(d)
        cands += glob.glob(os.path.join(d, "*.dist-info"))
    seen, out = set(), []
    for c in cands:
        c = os.path.realpath(c)
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def from_wheel(real, roots, digest):
    """(component, version, licence file, 'pip wheel X') when a dist-info's
    RECORD lists this very file (same name, same sha256)."""
    b64 = base64.urlsafe_b64encode(bytes.fromhex(digest)).rstrip(b"=").decode()
    name = os.path.basename(real)
    for di in dist_infos(real, roots):
        try:
            record = open(os.path.join(di, "RECORD"), encoding="utf-8").read().splitlines()
        except OSError:
            continue
        for row in record:
            p, _, rest = row.partition(",")
            if os.path.basename(p) == name and rest.startswith("sha256=" + b64 + ","):
                m = re.match(r"(.+?)-([0-9][^-]*)\.dist-info$", os.path.basename(di))
                lic = sorted(glob.glob(os.path.join(di, "licenses", "*")) + glob.glob(os.path.join(di, "LICEN[CS]E*")))
                lic = [x for x in lic if os.path.isfile(x)]
                if m and lic:
                    return (m.group(1), m.group(2), lic[0], "pip wheel %s %s (%s)" % (m.group(1), m.group(2), p))
    return None


def from_dpkg(real, path):
    """(package, version, copyright file, 'Debian package X') via dpkg -S."""
    if not shutil.which("dpkg"):
        return None
    for p in (real, path, real[4:] if real.startswith("/usr/") else "/usr" + real):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout:
            pkg = r.stdout.splitlines()[0].split(":")[0].strip()
            ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout
            doc = "/usr/share/doc/" + pkg
            lic = [os.path.join(doc, "copyright")] + sorted(glob.glob(doc + "/LICEN[CS]E*") + glob.glob(doc + "/EULA*"))
            lic = [x for x in lic if os.path.isfile(x)]
            if lic:
                return (pkg, ver, lic[0], "Debian package %s %s" % (pkg, ver))
    return None


def from_eula(real, path):
    """The NVIDIA EULA of a runfile / tarball install: EULA.txt or LICENSE in
    a directory above the file (/usr/local/cuda-13.0/EULA.txt,
    cudnn-linux-x86_64-9.x/LICENSE)."""
    for start in (os.path.dirname(path), os.path.dirname(real)):
        d = start
        for _ in range(5):
            for n in ("EULA.txt", "LICENSE", "LICENSE.txt", "License.txt"):
                f = os.path.join(d, n)
                if os.path.isfile(f):
                    return ("nvidia-" + os.path.basename(os.path.realpath(d)), "", f, "NVIDIA install in %s" % d)
            if d == "/":
                break
            d = os.path.dirname(d)
    return None


def name_version(path, real):
    """The longest version in the names of the link chain
    (libcudnn.so.9 -> libcudnn.so.9.14.0 gives 9.14.0)."""
    best = ""
    for n in (path, real):
        m = re.search(r"\.so\.([0-9][0-9.]*)$", os.path.basename(n))
        if m and len(m.group(1)) > len(best):
            best = m.group(1)
    return best


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", required=True, help="the base bundle's unpacked top directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cuda-root", default="/usr/local/cuda")
    ap.add_argument("--cudnn-root", default="")
    ap.add_argument("--cudnn-leave-out", default=DEFAULT_LEAVE_OUT,
                    help="cuDNN sub-libraries not to ship, comma-separated (adv,heuristic,...)")
    ap.add_argument("--xz-level", default="6")
    ap.add_argument("--nvidia-licence", default="",
                    help="licence for an NVIDIA library whose own is not found (recorded as given)")
    ap.add_argument("--keep-stage", default="")
    a = ap.parse_args()

    stage = os.path.realpath(a.stage)
    name = os.path.basename(stage)
    m = re.match(r"lector-(.+)-linux-x86_64$", name)
    if not m:
        die("%s is not a base bundle directory (lector-<version>-linux-x86_64)" % stage)
    version = m.group(1)
    module = os.path.join(stage, "lib", "liblector-cuda.so")
    if not os.path.isfile(module):
        die("%s missing: the base bundle has no CUDA module (build with the CUDA toolkit)" % module)
    mod = elf_dynamic(module)
    if not mod:
        die("%s is not an x86-64 ELF shared object" % module)
    mneeds = mod[1]
    cublas = [n for n in mneeds if re.match(r"libcublas\.so\.\d+$", n)]
    cudnn = [n for n in mneeds if re.match(r"libcudnn\.so\.\d+$", n)]
    if not cublas or not cudnn:
        die("%s needs no libcublas/libcudnn (DT_NEEDED: %s)" % (module, ", ".join(mneeds)))
    major = int(cublas[0].rsplit(".", 1)[1])
    dnn_major = int(cudnn[0].rsplit(".", 1)[1])

    def libdirs(root, extra=()):
        ds = [os.path.join(root, s) for s in ("targets/x86_64-linux/lib", "lib64", "lib/x86_64-linux-gnu", "lib", "")]
        return [d for d in list(ds) + list(extra) if os.path.isdir(d)]
    cuda_dirs = libdirs(a.cuda_root)
    if not cuda_dirs:
        die("--cuda-root %s: no such directory" % a.cuda_root)
    cudnn_dirs = libdirs(a.cudnn_root) if a.cudnn_root else cuda_dirs + ["/usr/lib/x86_64-linux-gnu"]
    roots = [a.cuda_root] + ([a.cudnn_root] if a.cudnn_root else [])

    def find(so, dirs, what):
        for d in dirs:
            p = os.path.join(d, so)
            if os.path.exists(p):
                return p
        die("%s not found in %s (%s)" % (so, ", ".join(dirs), what))

    # the set, by SONAME -> path as found
    want = []
    builtins = sorted(p for d in cuda_dirs for p in glob.glob(os.path.join(d, "libnvrtc-builtins.so.%d.*" % major))
                      if re.search(r"libnvrtc-builtins\.so\.\d+\.\d+$", p))
    if not builtins:
        die("libnvrtc-builtins.so.%d.* not found in %s (--cuda-root)" % (major, ", ".join(cuda_dirs)))
    cuda_version = re.search(r"\.so\.(\d+\.\d+)$", builtins[0]).group(1)
    want.append((os.path.basename(builtins[0]), builtins[0]))
    for so in ("libnvrtc.so.%d" % major, "libcublasLt.so.%d" % major, "libcublas.so.%d" % major):
        want.append((so, find(so, cuda_dirs, "--cuda-root")))
    shim = find("libcudnn.so.%d" % dnn_major, cudnn_dirs, "--cudnn-root")
    leave = {x.strip() for x in a.cudnn_leave_out.split(",") if x.strip()}
    shim_dir = os.path.dirname(shim)
    subs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(shim_dir, "libcudnn_*.so.%d" % dnn_major)))
    if "libcudnn_graph.so.%d" % dnn_major not in subs:
        die("%s has no libcudnn_graph.so.%d: not a cuDNN %d install" % (shim_dir, dnn_major, dnn_major))
    left_out = []
    for so in subs:
        stem = so[len("libcudnn_"):-len(".so.%d" % dnn_major)]
        if stem in leave:
            left_out.append((so, os.path.getsize(os.path.join(shim_dir, so))))
        else:
            want.append((so, os.path.join(shim_dir, so)))
    want.append(("libcudnn.so.%d" % dnn_major, shim))

    base_lib = set(os.listdir(os.path.join(stage, "lib")))
    info = {}
    for so, path in want:
        d = elf_dynamic(path)
        if not d:
            die("%s is not an x86-64 ELF shared object" % path)
        if d[0] != so:
            die("%s has SONAME %s, expected %s" % (path, d[0] or "(none)", so))
        info[so] = (path, d)
    # what they need beyond glibc, the set and the base bundle: from the system
    names = [so for so, _ in want]
    extra = []
    queue = list(names)
    while queue:
        so = queue.pop(0)
        for n in info[so][1][1]:
            if n in GLIBC or n in info or n in base_lib:
                continue
            p = next((os.path.join(d, n) for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                                   "/usr/lib64") if os.path.exists(os.path.join(d, n))), None)
            if not p:
                die("%s needs %s, found neither in the base bundle nor on this system" % (so, n))
            dd = elf_dynamic(p)
            info[n] = (p, dd)
            extra.append(n)
            queue.append(n)
    # load order: each after what it needs (stable otherwise)
    order, done = [], set()

    def visit(so, stack=()):
        if so in done or so not in info:
            return
        if so in stack:
            die("dependency cycle through %s" % so)
        for n in info[so][1][1]:
            visit(n, stack + (so,))
        done.add(so)
        order.append(so)
    for so in extra + names:
        visit(so)

    work = tempfile.mkdtemp()
    try:
        top = os.path.join(work, name)
        os.makedirs(os.path.join(top, "lib"))
        os.makedirs(os.path.join(top, "LICENSES"))
        rows, licences = [], {}
        for so in order:
            path, d = info[so]
            real = os.path.realpath(path)
            dst = os.path.join(top, "lib", so)
            shutil.copyfile(real, dst)
            os.chmod(dst, 0o755)
            digest = sha256(dst)
            prov = from_wheel(real, roots, digest) or from_dpkg(real, path) or from_eula(real, path)
            if not prov and a.nvidia_licence and so not in extra:
                prov = ("nvidia", name_version(path, real), a.nvidia_licence,
                        "given with --nvidia-licence %s" % a.nvidia_licence)
            if not prov:
                die("no licence found for %s (%s): no pip dist-info RECORD lists it, no Debian package owns it, "
                    "no EULA.txt/LICENSE above it" % (so, real))
            comp, ver, lic, where = prov
            ver = ver if len(ver) >= len(name_version(path, real)) else name_version(path, real)
            lic_name = "LICENSES/%s.%s" % (comp, os.path.basename(lic).replace(" ", "_"))
            if where.startswith("Debian"):
                lic_name = "LICENSES/%s.copyright" % comp
            # the base bundle may carry it already (a Debian library's copyright)
            if lic_name not in licences and not os.path.exists(os.path.join(stage, lic_name)):
                licences[lic_name] = lic
                shutil.copyfile(lic, os.path.join(top, lic_name))
            rows.append(("lib/" + so, comp, ver or "-", digest, lic_name, "%s <- %s" % (where, real)))
            say("lib/%s <- %s (%s %s)" % (so, real, comp, ver))
        # the list the loader reads
        listname = "lector-cuda%d.libs" % major
        with open(os.path.join(top, "lib", listname), "w") as f:
            f.write("# The CUDA libraries of this bundle (scripts/bundle --with-cuda), preloaded by absolute\n"
                    "# path in this order by Lector's CUDA module loader (src/rt/module.c): `cuda` is the\n"
                    "# CUDA release of the set, each `lib` line a file in this directory and its version.\n")
            f.write("cuda %s\n" % cuda_version)
            for r in rows:
                f.write("lib %s %s\n" % (r[0][4:], r[2]))
        mf = "MANIFEST.cuda%d" % major
        try:  # the machine building it may have no git, or no repository (the device tool's copy)
            commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                                     "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
        except OSError:
            commit = ""
        commit = commit or "unknown"
        min_driver = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}.get(major, "?")
        with open(os.path.join(top, mf), "w") as f:
            f.write("# %s-cuda%d: CUDA %s libraries for lector %s (unpack over %s.tar.xz)\n" %
                    (name.replace("-linux-x86_64", ""), major, cuda_version, version, name))
            f.write("# built from git %s on %s %s\n" % (commit, os.uname().nodename,
                                                        time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())))
            f.write("# needs: NVIDIA driver >= %s (CUDA %d.x minor-version compatibility)\n" % (min_driver, major))
            for so, size in left_out:
                f.write("# not shipped: %s (%d bytes; never loaded by Lector)\n" % (so, size))
            f.write("# file\tcomponent\tversion\tsha256\tlicence\tsource\n")
            entries = list(rows)
            entries.append(("lib/" + listname, "lector", version, sha256(os.path.join(top, "lib", listname)),
                            "LICENSES/lector.MIT", "scripts/bundle --with-cuda"))
            for ln, src in sorted(licences.items()):
                entries.append((ln, "licence", "-", sha256(os.path.join(top, ln)), "-", src))
            for e in sorted(entries):
                f.write("\t".join(e) + "\n")
        os.makedirs(a.out, exist_ok=True)
        tarball = os.path.join(a.out, "%s-cuda%d-linux-x86_64.tar.xz" % (name[:-len("-linux-x86_64")], major))
        t0 = time.time()
        say("compressing (xz -%s)" % a.xz_level)
        tar = subprocess.Popen(["tar", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-C", work,
                                "-cf", "-", name], stdout=subprocess.PIPE)
        with open(tarball + ".tmp", "wb") as out:
            xz = subprocess.run(["xz", "-%s" % a.xz_level, "-T0"], stdin=tar.stdout, stdout=out)
        tar.stdout.close()
        if tar.wait() or xz.returncode:
            die("tar | xz failed")
        os.replace(tarball + ".tmp", tarball)
        unpacked = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(top) for f in fs)
        say("%s: %.1f MiB (%.1f MiB unpacked, %d libraries, compressed in %.0f s)" %
            (tarball, os.path.getsize(tarball) / 2**20, unpacked / 2**20, len(rows), time.time() - t0))
        if a.keep_stage:
            shutil.rmtree(a.keep_stage, ignore_errors=True)
            shutil.copytree(work, a.keep_stage, symlinks=True)
        print(tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
