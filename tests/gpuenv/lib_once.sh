# lib_once.sh - sourced by make_fixtures.sh and tests/doctor/make_loader_trees.sh.
# Their trees want the same fixture library in many places and the compiler is
# what makes them slow, so each distinct library is compiled once, then copied.

# lib_once CACHE SOURCE DEST SONAME [cc flags...]: DEST, a shared library of
# SOURCE named SONAME, compiled into CACHE once per SONAME and flags (a CACHE
# serves one SOURCE). Needs $CC.
lib_once() {
    lib_once_cache=$1; lib_once_source=$2; lib_once_dest=$3; lib_once_soname=$4; shift 4
    lib_once_key=$(printf '%s\n' "$lib_once_soname" "$@" | md5sum | cut -c1-16)
    if [ ! -f "$lib_once_cache/$lib_once_key" ]; then
        mkdir -p "$lib_once_cache"
        "$CC" -shared -fPIC -o "$lib_once_cache/$lib_once_key" "$lib_once_source" -Wl,-soname,"$lib_once_soname" \
            -Wl,--no-as-needed "$@"
    fi
    cp "$lib_once_cache/$lib_once_key" "$lib_once_dest"
}
