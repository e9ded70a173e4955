#!/bin/sh
# make_loader_trees.sh CC SRCDIR OUTDIR ORACLE_HELPER
# Builds one small filesystem tree per loader case and writes OUTDIR/cases.tsv
# for doctor_oracle (tests/doctor/oracle.c): fixture libraries made with
# gcc -shared (chosen SONAME, NEEDED, RPATH, RUNPATH, symbol versions),
# ld.so.cache files made by `ldconfig -X -r` from each tree's ld.so.conf,
# symbolic links and loops, mode-000 files and directories, ELF headers
# patched to 32-bit, aarch64 or a bad OS ABI, text files named lib*.so.N,
# a truncated copy, glibc-hwcaps and legacy subdirectories. Every tree gets
# the oracle helper, the host's ld.so and libc, so that glibc's own loader
# can run in it (chrooted) and be compared with the emulation.
set -eu
CC=$1; SRC=$2; OUT=$3; HELPER=$4
PATH=$PATH:/usr/sbin:/sbin; export PATH
rm -rf "$OUT"; mkdir -p "$OUT/src" "$OUT/t"
CASES=$OUT/cases.tsv; : > "$CASES"
D=usr/lib/x86_64-linux-gnu

cat > "$OUT/src/fixture.c" <<'EOF'
int fixture_fn(void);
int fixture_fn(void) { return 1; }
EOF
cat > "$OUT/src/ver2.c" <<'EOF'
int ver_one(void);
int ver_two(void);
int ver_one(void) { return 1; }
int ver_two(void) { return 2; }
EOF
printf 'VER_1 { global: ver_one; local: *; };\nVER_2 { global: ver_two; } VER_1;\n' > "$OUT/src/ver2.map"
cat > "$OUT/src/ver1.c" <<'EOF'
int ver_one(void);
int ver_one(void) { return 1; }
EOF
printf 'VER_1 { global: ver_one; local: *; };\n' > "$OUT/src/ver1.map"
cat > "$OUT/src/useve2.c" <<'EOF'
int ver_two(void);
int app_fn(void);
int app_fn(void) { return ver_two(); }
EOF

"$CC" -o "$OUT/src/set_nodeflib" "$SRC/set_nodeflib.c"

# the host's loader and libc, found the way the helper itself finds them
LDSO=$(readlink -f /lib64/ld-linux-x86-64.so.2)
LIBC=$(ldd "$HELPER" | awk '$1 == "libc.so.6" { print $3 }')
LIBC=$(readlink -f "$LIBC")

# base ID: an empty system with the oracle helper, ld.so and libc
base() {
    t=$OUT/t/$1
    mkdir -p "$t/oracle" "$t/lib64" "$t/lib/x86_64-linux-gnu" "$t/$D" "$t/etc"
    cp "$HELPER" "$t/oracle/oracle_dlopen"
    cp "$LDSO" "$t/lib64/ld-linux-x86-64.so.2"
    cp "$LIBC" "$t/lib/x86_64-linux-gnu/libc.so.6"
    : > "$t/etc/ld.so.conf"
}
# so TREE DIR FILE SONAME [cc args...]: a fixture library at TREE/DIR/FILE
. "$SRC/../gpuenv/lib_once.sh"
so() {
    t=$OUT/t/$1; d=$2; f=$3; sn=$4; shift 4
    mkdir -p "$t/$d"
    lib_once "$OUT/built" "$OUT/src/fixture.c" "$t/$d/$f" "$sn" "$@"
}
# cache TREE: ld.so.cache from the tree's ld.so.conf (ldconfig chroots: root or a user namespace)
cache() {
    ldconfig -X -r "$OUT/t/$1" 2>/dev/null || unshare -r ldconfig -X -r "$OUT/t/$1" 2>/dev/null ||
        { echo "make_loader_trees: ldconfig -r failed for $1" >&2; exit 1; }
}
conf() { t=$OUT/t/$1; shift; printf '%s\n' "$@" > "$t/etc/ld.so.conf"; }
# patch TREE FILE OFFSET OCTAL-BYTE: overwrite one byte of an ELF header
patch() { printf "\\$4" | dd of="$OUT/t/$1/$2" bs=1 seek="$3" conv=notrunc 2>/dev/null; }
# kase ID LLP PRELOAD NAME FLAGS WHAT
kase() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$OUT/t/$1" "$2" "$3" "$4" "$5" "$6" >> "$CASES"; }
LFS='version https://git-lfs.github.com/spec/v1
oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393
size 1047126728'

# ------------------------------------------------------------ search order
base def; so def $D libfoo.so.1 libfoo.so.1
kase def - - libfoo.so.1 - "a system directory"

base cache; so cache opt/a libfoo.so.1 libfoo.so.1; conf cache /opt/a; cache cache
kase cache - - libfoo.so.1 - "ld.so.cache hands out a configured directory"

base cachedef; so cachedef opt/a libfoo.so.1 libfoo.so.1; so cachedef $D libfoo.so.1 libfoo.so.1
conf cachedef /opt/a; cache cachedef
kase cachedef - - libfoo.so.1 - "two cached copies: the cache's own order"

base llpcache; so llpcache opt/a libfoo.so.1 libfoo.so.1; so llpcache opt/b libfoo.so.1 libfoo.so.1
conf llpcache /opt/a; cache llpcache
kase llpcache /opt/b - libfoo.so.1 - "LD_LIBRARY_PATH before the cache"

base llporder; so llporder opt/b libfoo.so.1 libfoo.so.1; so llporder opt/c libfoo.so.1 libfoo.so.1
kase llporder /opt/b:/opt/c - libfoo.so.1 - "LD_LIBRARY_PATH in order"

base llpempty; so llpempty . libfoo.so.1 libfoo.so.1; so llpempty opt/b libfoo.so.1 libfoo.so.1
kase llpempty :/opt/b - libfoo.so.1 - "an empty LD_LIBRARY_PATH item is the working directory"

base llpsemi; so llpsemi opt/b libfoo.so.1 libfoo.so.1
kase llpsemi "/opt/x;/opt/b" - libfoo.so.1 - "';' separates LD_LIBRARY_PATH items too"

base llpslash; so llpslash opt/b libfoo.so.1 libfoo.so.1
kase llpslash "/opt/b//:/opt/b" - libfoo.so.1 - "trailing slashes and a duplicate item"

base llpfile; so llpfile opt/b libfoo.so.1 libfoo.so.1; so llpfile $D libfoo.so.1 libfoo.so.1
kase llpfile /opt/b/libfoo.so.1 - libfoo.so.1 - "a file path put in LD_LIBRARY_PATH (ENOTDIR: passed over)"

base rpath; so rpath opt/app/lib libdep.so.1 libdep.so.1; so rpath opt/b libdep.so.1 libdep.so.1
so rpath opt/app libapp.so libapp.so -L"$OUT/t/rpath/opt/app/lib" -l:libdep.so.1 \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
kase rpath /opt/b - /opt/app/libapp.so - "DT_RPATH before LD_LIBRARY_PATH"

base runpath; so runpath opt/app/lib libdep.so.1 libdep.so.1; so runpath opt/b libdep.so.1 libdep.so.1
so runpath opt/app libapp.so libapp.so -L"$OUT/t/runpath/opt/app/lib" -l:libdep.so.1 \
    -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
kase runpath /opt/b - /opt/app/libapp.so - "LD_LIBRARY_PATH before DT_RUNPATH"

base runpathonly; so runpathonly opt/app/lib libdep.so.1 libdep.so.1
so runpathonly opt/app libapp.so libapp.so -L"$OUT/t/runpathonly/opt/app/lib" -l:libdep.so.1 \
    -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
kase runpathonly - - /opt/app/libapp.so - "DT_RUNPATH with \$ORIGIN"

for k in rpathinh runpathinh; do
    base $k; so $k opt/app/lib libleaf.so libleaf.so
    so $k opt/app/lib libmid.so libmid.so -L"$OUT/t/$k/opt/app/lib" -lleaf
    tag=--disable-new-dtags; [ $k = runpathinh ] && tag=--enable-new-dtags
    so $k opt/app libapp.so libapp.so -L"$OUT/t/$k/opt/app/lib" -lmid -Wl,$tag -Wl,-rpath,'$ORIGIN/lib'
done
kase rpathinh - - /opt/app/libapp.so - "DT_RPATH is inherited by dependencies"
kase runpathinh - - /opt/app/libapp.so - "DT_RUNPATH is not inherited (libleaf.so not found)"

base originbr; so originbr opt/app/lib libdep.so.1 libdep.so.1
so originbr opt/app libapp.so libapp.so -L"$OUT/t/originbr/opt/app/lib" -l:libdep.so.1 \
    -Wl,--disable-new-dtags -Wl,-rpath,'${ORIGIN}/lib'
kase originbr - - /opt/app/libapp.so - "\${ORIGIN} with braces"

base dstlib; so dstlib opt/lib/x86_64-linux-gnu libdep.so.1 libdep.so.1
so dstlib opt/app libapp.so libapp.so -L"$OUT/t/dstlib/opt/lib/x86_64-linux-gnu" -l:libdep.so.1 \
    -Wl,--disable-new-dtags -Wl,-rpath,'/opt/$LIB'
kase dstlib - - /opt/app/libapp.so - "\$LIB in DT_RPATH"

base dstplat; so dstplat opt/app/x86_64 libdep.so.1 libdep.so.1
so dstplat opt/app libapp.so libapp.so -L"$OUT/t/dstplat/opt/app/x86_64" -l:libdep.so.1 \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/$PLATFORM'
kase dstplat - - /opt/app/libapp.so - "\$PLATFORM in DT_RPATH"

base nodeflib; so nodeflib $D libdep.so.1 libdep.so.1
so nodeflib opt/app libapp.so libapp.so -L"$OUT/t/nodeflib/$D" -l:libdep.so.1 -Wl,-z,now
"$OUT/src/set_nodeflib" "$OUT/t/nodeflib/opt/app/libapp.so"
kase nodeflib - - /opt/app/libapp.so - "DF_1_NODEFLIB: no system directories"

base nodeflibc; so nodeflibc opt/a libdep.so.1 libdep.so.1; conf nodeflibc /opt/a
so nodeflibc opt/app libapp.so libapp.so -L"$OUT/t/nodeflibc/opt/a" -l:libdep.so.1 -Wl,-z,now
"$OUT/src/set_nodeflib" "$OUT/t/nodeflibc/opt/app/libapp.so"
cache nodeflibc
kase nodeflibc - - /opt/app/libapp.so - "DF_1_NODEFLIB keeps cache entries outside the system directories"

base hwdir; so hwdir $D libfoo.so.1 libfoo.so.1; so hwdir $D/glibc-hwcaps/x86-64-v2 libfoo.so.1 libfoo.so.1
kase hwdir - - libfoo.so.1 - "glibc-hwcaps subdirectory of a system directory"

base hwllp; so hwllp opt/b libfoo.so.1 libfoo.so.1; so hwllp opt/b/glibc-hwcaps/x86-64-v3 libfoo.so.1 libfoo.so.1
so hwllp opt/b/glibc-hwcaps/x86-64-v2 libfoo.so.1 libfoo.so.1
kase hwllp /opt/b - libfoo.so.1 - "glibc-hwcaps subdirectories of LD_LIBRARY_PATH, best level first"

base hwcache; so hwcache opt/a libfoo.so.1 libfoo.so.1; so hwcache opt/a/glibc-hwcaps/x86-64-v2 libfoo.so.1 libfoo.so.1
conf hwcache /opt/a; cache hwcache
kase hwcache - - libfoo.so.1 - "the cache's glibc-hwcaps entry"

base legacy; so legacy opt/b libfoo.so.1 libfoo.so.1; so legacy opt/b/tls libfoo.so.1 libfoo.so.1
kase legacy /opt/b - libfoo.so.1 - "legacy tls/ subdirectory (glibc before 2.37)"

base prepath; so prepath $D libcuda.so.580.95.05 libcuda.so.1; ln -s libcuda.so.580.95.05 "$OUT/t/prepath/$D/libcuda.so.1"
so prepath usr/local/cuda/lib64/stubs libcuda.so libcuda.so.1
kase prepath - /usr/local/cuda/lib64/stubs/libcuda.so libcuda.so.1 - "LD_PRELOAD of the stub answers dlopen(libcuda.so.1)"

base prename; so prename $D libpre.so libpre.so; so prename $D libfoo.so.1 libfoo.so.1
kase prename - libpre.so libfoo.so.1 - "LD_PRELOAD by name is searched"

base premiss; so premiss $D libfoo.so.1 libfoo.so.1
kase premiss - /opt/none/libgone.so libfoo.so.1 - "a missing LD_PRELOAD object is reported and ignored"

base etcpre; so etcpre $D libcuda.so.580.95.05 libcuda.so.1; ln -s libcuda.so.580.95.05 "$OUT/t/etcpre/$D/libcuda.so.1"
so etcpre usr/local/cuda/lib64/stubs libcuda.so libcuda.so.1
printf '# preloaded everywhere\n/usr/local/cuda/lib64/stubs/libcuda.so\n' > "$OUT/t/etcpre/etc/ld.so.preload"
kase etcpre - - libcuda.so.1 - "/etc/ld.so.preload"

base abspath; so abspath opt/a libfoo.so.1 libfoo.so.1
kase abspath - - /opt/a/libfoo.so.1 - "a path is opened as is"

base sameso; so sameso opt/a libfoo.so.1.2 libfoo.so.1
kase sameso - /opt/a/libfoo.so.1.2 libfoo.so.1 - "an object already loaded answers to its SONAME"

base twonames; so twonames opt/app/lib libdep.so.1 libdep.so.1; ln -s libdep.so.1 "$OUT/t/twonames/opt/app/lib/libdep.so"
so twonames opt/app/lib libmid.so libmid.so -L"$OUT/t/twonames/opt/app/lib" -ldep
so twonames opt/app libapp.so libapp.so -L"$OUT/t/twonames/opt/app/lib" -l:libdep.so.1 -lmid \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
kase twonames - - /opt/app/libapp.so - "one file reached by two names is one object"

# ----------------------------------------------------------- failure modes
base notfound
kase notfound - - libcudnn.so.9 - "nothing anywhere"

base lfs; mkdir -p "$OUT/t/lfs/opt/b"; printf '%s\n' "$LFS" > "$OUT/t/lfs/opt/b/libcudnn.so.9"
so lfs $D libcudnn.so.9 libcudnn.so.9
kase lfs /opt/b - libcudnn.so.9 - "a Git LFS pointer first on the path stops the search"

base lfscache; so lfscache opt/a libfoo.so.1 libfoo.so.1; conf lfscache /opt/a; cache lfscache
printf '%s\n' "$LFS" > "$OUT/t/lfscache/opt/a/libfoo.so.1"; so lfscache $D libfoo.so.1 libfoo.so.1
kase lfscache - - libfoo.so.1 - "the cache's file replaced by text"

base empty; mkdir -p "$OUT/t/empty/opt/b"; : > "$OUT/t/empty/opt/b/libfoo.so.1"; so empty $D libfoo.so.1 libfoo.so.1
kase empty /opt/b - libfoo.so.1 - "an empty file (interrupted copy)"

base elf32; so elf32 opt/b libfoo.so.1 libfoo.so.1; patch elf32 opt/b/libfoo.so.1 4 001
so elf32 $D libfoo.so.1 libfoo.so.1
kase elf32 /opt/b - libfoo.so.1 - "a 32-bit copy is passed over"

base elf32only; so elf32only opt/b libfoo.so.1 libfoo.so.1; patch elf32only opt/b/libfoo.so.1 4 001
kase elf32only /opt/b - libfoo.so.1 - "only a 32-bit copy: wrong ELF class"

base arm; so arm opt/b libfoo.so.1 libfoo.so.1; patch arm opt/b/libfoo.so.1 18 267; patch arm opt/b/libfoo.so.1 19 000
so arm $D libfoo.so.1 libfoo.so.1
kase arm /opt/b - libfoo.so.1 - "an aarch64 copy is passed over"

base armonly; so armonly opt/b libfoo.so.1 libfoo.so.1; patch armonly opt/b/libfoo.so.1 18 267
patch armonly opt/b/libfoo.so.1 19 000
kase armonly /opt/b - libfoo.so.1 - "only an aarch64 copy: not found"

base loop; mkdir -p "$OUT/t/loop/opt/b"; ln -s libfoo.so.1.0 "$OUT/t/loop/opt/b/libfoo.so.1"
ln -s libfoo.so.1 "$OUT/t/loop/opt/b/libfoo.so.1.0"; so loop $D libfoo.so.1 libfoo.so.1
kase loop /opt/b - libfoo.so.1 - "a symlink loop on LD_LIBRARY_PATH, a good copy in a system directory"

base loopends; mkdir -p "$OUT/t/loopends/opt/b"; ln -s libfoo.so.1.0 "$OUT/t/loopends/opt/b/libfoo.so.1"
ln -s libfoo.so.1 "$OUT/t/loopends/opt/b/libfoo.so.1.0"; so loopends opt/c libfoo.so.1 libfoo.so.1
kase loopends /opt/b:/opt/c - libfoo.so.1 - "ELOOP ends the LD_LIBRARY_PATH search"

base looplast; ln -s libfoo.so.1.0 "$OUT/t/looplast/usr/lib/libfoo.so.1" 2>/dev/null || {
    mkdir -p "$OUT/t/looplast/usr/lib"; ln -s libfoo.so.1.0 "$OUT/t/looplast/usr/lib/libfoo.so.1"; }
ln -s libfoo.so.1 "$OUT/t/looplast/usr/lib/libfoo.so.1.0"
kase looplast - - libfoo.so.1 - "a loop in the last directory searched: its errno is the message"

base dangling; mkdir -p "$OUT/t/dangling/opt/b"; ln -s libfoo.so.1.2.3 "$OUT/t/dangling/opt/b/libfoo.so.1"
so dangling $D libfoo.so.1 libfoo.so.1
kase dangling /opt/b - libfoo.so.1 - "a dangling symlink is passed over"

base permfile; so permfile opt/b libfoo.so.1 libfoo.so.1; chmod 000 "$OUT/t/permfile/opt/b/libfoo.so.1"
so permfile $D libfoo.so.1 libfoo.so.1
kase permfile /opt/b - libfoo.so.1 unpriv "a mode-000 file is passed over (EACCES)"

base permlast; mkdir -p "$OUT/t/permlast/usr/lib"; so permlast usr/lib libfoo.so.1 libfoo.so.1
chmod 000 "$OUT/t/permlast/usr/lib/libfoo.so.1"
kase permlast - - libfoo.so.1 unpriv "only a mode-000 copy: Permission denied"

base permdir; so permdir opt/b libfoo.so.1 libfoo.so.1; chmod 000 "$OUT/t/permdir/opt/b"
so permdir $D libfoo.so.1 libfoo.so.1
kase permdir /opt/b - libfoo.so.1 unpriv "a mode-000 directory on LD_LIBRARY_PATH"

base stale; so stale opt/a libfoo.so.1 libfoo.so.1; conf stale /opt/a; cache stale; rm "$OUT/t/stale/opt/a/libfoo.so.1"
kase stale - - libfoo.so.1 - "a stale cache entry (the file was removed)"

base stale2; so stale2 opt/a libfoo.so.1 libfoo.so.1; conf stale2 /opt/a; cache stale2
rm "$OUT/t/stale2/opt/a/libfoo.so.1"; so stale2 $D libfoo.so.1 libfoo.so.1
kase stale2 - - libfoo.so.1 - "a stale cache entry, a copy in a system directory"

base notcached; conf notcached /opt/a; cache notcached; so notcached opt/a libfoo.so.1 libfoo.so.1
kase notcached - - libfoo.so.1 - "ldconfig not re-run after a library was added to a configured directory"

base isdir; mkdir -p "$OUT/t/isdir/opt/b/libfoo.so.1"; so isdir $D libfoo.so.1 libfoo.so.1
kase isdir /opt/b - libfoo.so.1 - "a directory named like the library"

base trunc; so trunc opt/b libfoo.so.1.full libfoo.so.1
head -c 3000 "$OUT/t/trunc/opt/b/libfoo.so.1.full" > "$OUT/t/trunc/opt/b/libfoo.so.1"
rm "$OUT/t/trunc/opt/b/libfoo.so.1.full"
kase trunc /opt/b - libfoo.so.1 - "a truncated copy: the loader faults on it"

base missdep; so missdep opt/app/lib libgone.so.1 libgone.so.1
so missdep opt/app libapp.so libapp.so -L"$OUT/t/missdep/opt/app/lib" -l:libgone.so.1
rm "$OUT/t/missdep/opt/app/lib/libgone.so.1"
kase missdep - - /opt/app/libapp.so - "a missing dependency names itself"

# The cases of versions and symbols: /opt/app/libapp.so is linked against one
# build of its dependency /opt/app/lib/SONAME (found through RPATH $ORIGIN/lib),
# then another build is installed in its place.
# app_dep TREE SONAME SOURCE [cc flags...]: the dependency, built from src/SOURCE
app_dep() {
    app_dep_dir=$OUT/t/$1/opt/app/lib; app_dep_soname=$2; app_dep_source=$3; shift 3
    mkdir -p "$app_dep_dir"
    "$CC" -shared -fPIC -o "$app_dep_dir/$app_dep_soname" "$OUT/src/$app_dep_source" -Wl,-soname,"$app_dep_soname" "$@"
}
# app_on TREE SOURCE SONAME: /opt/app/libapp.so, built from src/SOURCE, needing SONAME
app_on() {
    "$CC" -shared -fPIC -o "$OUT/t/$1/opt/app/libapp.so" "$OUT/src/$2" -Wl,-soname,libapp.so \
        -L"$OUT/t/$1/opt/app/lib" -l:"$3" -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
}

base vermiss
app_dep vermiss libver.so.1 ver2.c -Wl,--version-script,"$OUT/src/ver2.map"
app_on vermiss useve2.c libver.so.1
app_dep vermiss libver.so.1 ver1.c -Wl,--version-script,"$OUT/src/ver1.map"
kase vermiss - - /opt/app/libapp.so - "a symbol version the dependency does not define"

# symbol binding (RTLD_NOW): what the relocations ask for must be defined
cat > "$OUT/src/callee.c" <<'EOF2'
int dep_fn(void);
int dep_fn(void) { return 1; }
EOF2
cat > "$OUT/src/caller.c" <<'EOF2'
int dep_fn(void);
int app_fn(void);
int app_fn(void) { return dep_fn(); }
EOF2
cat > "$OUT/src/weakcaller.c" <<'EOF2'
int dep_fn(void) __attribute__((weak));
int app_fn(void);
int app_fn(void) { return dep_fn ? dep_fn() : 0; }
EOF2
# built against a libdep.so.1 that defines dep_fn; the one installed does not
base undefsym
app_dep undefsym libdep.so.1 callee.c
app_on undefsym caller.c libdep.so.1
app_dep undefsym libdep.so.1 fixture.c
kase undefsym - - /opt/app/libapp.so - "a symbol the installed dependency does not define"

# the same, the symbol taken from an object loaded before (LD_PRELOAD: the global scope)
base symglobal; mkdir -p "$OUT/t/symglobal/opt/pre"
app_dep symglobal libdep.so.1 callee.c
app_on symglobal caller.c libdep.so.1
app_dep symglobal libdep.so.1 fixture.c
"$CC" -shared -fPIC -o "$OUT/t/symglobal/opt/pre/libpre.so" "$OUT/src/callee.c" -Wl,-soname,libpre.so
kase symglobal - /opt/pre/libpre.so /opt/app/libapp.so - "a symbol an earlier object defines (global scope)"

# a weak reference may stay undefined
base weakundef
app_dep weakundef libdep.so.1 callee.c
app_on weakundef weakcaller.c libdep.so.1
app_dep weakundef libdep.so.1 fixture.c
kase weakundef - - /opt/app/libapp.so - "an undefined weak reference is allowed"

# the version exists in the dependency, the symbol not in it (a cuBLAS of one
# release with a cuBLASLt of another: "not defined in file ... with link time reference")
base symver
printf 'int ver_one(void);\nint ver_three(void);\nint ver_one(void) { return 1; }\nint ver_three(void) { return 3; }\n' \
    > "$OUT/src/ver13.c"
printf 'VER_1 { global: ver_one; local: *; };\nVER_2 { global: ver_three; } VER_1;\n' > "$OUT/src/ver13.map"
app_dep symver libver.so.1 ver2.c -Wl,--version-script,"$OUT/src/ver2.map"
app_on symver useve2.c libver.so.1
app_dep symver libver.so.1 ver13.c -Wl,--version-script,"$OUT/src/ver13.map"
kase symver - - /opt/app/libapp.so - "a versioned symbol missing from the file its version names"

base etrel; mkdir -p "$OUT/t/etrel/opt/b"; "$CC" -c -fPIC -o "$OUT/t/etrel/opt/b/libfoo.so.1" "$OUT/src/fixture.c"
kase etrel /opt/b - libfoo.so.1 - "an object file (ET_REL) named like a library"

base osabi; so osabi opt/b libfoo.so.1 libfoo.so.1; patch osabi opt/b/libfoo.so.1 7 011
kase osabi /opt/b - libfoo.so.1 - "an ELF with another OS ABI"

base pad; so pad opt/b libfoo.so.1 libfoo.so.1; patch pad opt/b/libfoo.so.1 10 001
kase pad /opt/b - libfoo.so.1 - "nonzero padding in e_ident"

base identver; so identver opt/b libfoo.so.1 libfoo.so.1; patch identver opt/b/libfoo.so.1 6 002
kase identver /opt/b - libfoo.so.1 - "a bad ELF version byte"

echo "loader trees ready: $(wc -l < "$CASES") cases in $OUT"
