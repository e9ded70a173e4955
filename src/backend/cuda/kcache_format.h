/* kcache_format.h - the file format of the kernel cache (cuda_kcache.c):
 * NVRTC's compiled code for one kernel, kept on disk between processes.
 * Plain C over bytes, no CUDA, so that its fuzz target builds anywhere.
 *
 *   "LECTORK1"            8 bytes, the format
 *   key length            8 bytes, little-endian
 *   key                   what the kernel's code depends on: NVRTC's
 *                         version, the options, the program of that
 *                         kernel alone (cuda_nvrtc.c)
 *   image length          8 bytes, little-endian
 *   image                 the cubin or PTX NVRTC gave for the program the
 *                         kernel was compiled in (with the other kernels
 *                         new to that plan: the same code for this one)
 *
 * A file is used only when its key equals the key of the compile that asks,
 * byte for byte, so a file name (a hash of the key) that collides, a file
 * cut short or one of another version is never loaded: it is compiled
 * again and written over. */
#ifndef LECTOR_CUDA_KCACHE_FORMAT_H
#define LECTOR_CUDA_KCACHE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define KCACHE_MAGIC     "LECTORK1"
#define KCACHE_MAGIC_LEN 8

/* The directory of the kernels shipped compiled, beside the module's file
 * (the offline bundle's lib/lector-kernels): the module reads it
 * (cuda_kcache.c), the doctor reports it (src/doctor/check_shipped.c). */
#define KCACHE_SHIPPED_DIR "lector-kernels"

/* 64-bit FNV-1a of the key: names its file (not trusted: see above). */
uint64_t kcache_hash(const char *key, size_t key_len);

/* The image inside a file's bytes when the file holds `key`: 0 with
 * *image / *image_len pointing into `file`, or -1 (another key, or not a
 * whole file of this format). */
int kcache_parse(const uint8_t *file, size_t file_len, const char *key, size_t key_len, const uint8_t **image,
                 size_t *image_len);

/* The start of the key a file holds, for a reader that does not know the
 * key (the doctor, tests): 0 with *key pointing into `file` and *avail the
 * bytes of it present in file[0..file_len) (a prefix when the file was read
 * in part), *key_len the key's whole length; -1 when the bytes do not start
 * as this format does. Not a check of the file: kcache_parse is. */
int kcache_key_prefix(const uint8_t *file, size_t file_len, const char **key, size_t *avail, uint64_t *key_len);

/* The shipped directory's file NVRTC (cuda_kcache.c): its first line names
 * the NVRTC that built the kernels there, "NVRTC <major>.<minor>", as their
 * keys' first lines do. 0 with that line in out (NUL-ended), or -1 when the
 * text does not start with such a line or it does not fit. */
int kcache_nvrtc_line(const char *text, size_t text_len, char *out, size_t out_len);
/* DIR/NVRTC's line (kcache_nvrtc_line) into out; -1 when the file is not
 * there or names no version. */
int kcache_read_nvrtc_file(const char *dir, char *out, size_t out_len);

/* The header written before the key: the magic and the key's length
 * (KCACHE_MAGIC_LEN + 8 bytes into out). */
void kcache_header(uint8_t *out, size_t key_len);
/* The 8 bytes of a length, as the format stores it. */
void kcache_length(uint8_t *out, uint64_t n);

#endif
