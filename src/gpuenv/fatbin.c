/* fatbin.c - list the GPU code embedded in an ELF's .nv_fatbin section.
 *
 * Layout (little endian; see knowledge/gpu-stack-facts.md section 3):
 *   container: u32 magic 0xBA55ED50, u16 version, u16 header_size (16),
 *              u64 fat_size (bytes after the header)
 *   entry:     u16 kind (1 PTX, 2 ELF cubin), u16, u32 header_size,
 *              u64 payload size, ..., u32 arch at +28, u64 flags at +40
 *              next entry = entry + header_size + payload size
 * Listing architectures needs no decompression. Containers are
 * concatenated, possibly padded; we resynchronise on 8-byte alignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

#define FATBIN_MAGIC         0xBA55ED50u
#define FLAG_COMPRESSED_LZ   0x2000u
#define FLAG_COMPRESSED_ZSTD 0x8000u

static uint32_t r32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t r64(const uint8_t *p) { return r32(p) | (uint64_t)r32(p + 4) << 32; }
static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int gpuenv_fatbin_scan(const uint8_t *data, size_t size, gpuenv_fatbin *out)
{
    memset(out, 0, sizeof *out);
    size_t pos = 0;
    while (pos + 16 <= size) {
        if (r32(data + pos) != FATBIN_MAGIC) {
            pos += 8; /* padding between containers */
            continue;
        }
        uint16_t hsz = r16(data + pos + 6);
        uint64_t fat = r64(data + pos + 8);
        if (hsz < 16 || hsz > size - pos) {
            out->truncated = 1;
            pos += 8;
            continue;
        }
        size_t start = pos + hsz;
        size_t end;
        if (fat > size - start) {
            out->truncated = 1;
            end = size;
        } else {
            end = start + (size_t)fat;
        }
        out->containers++;
        size_t e = start;
        while (e + 64 <= end) {
            const uint8_t *h = data + e;
            uint16_t kind = r16(h);
            uint32_t ehs = r32(h + 4);
            uint64_t psz = r64(h + 8);
            uint32_t arch = r32(h + 28);
            uint64_t flags = r64(h + 40);
            if (ehs < 64 || ehs > end - e) {
                out->truncated = 1;
                break;
            }
            out->entries++;
            if (flags & (FLAG_COMPRESSED_LZ | FLAG_COMPRESSED_ZSTD)) out->compressed++;
            if (arch < 256) {
                if (kind == 1)
                    out->ptx[arch] = 1;
                else if (kind == 2 || kind == 0x10)
                    out->sass[arch] = 1;
            }
            if (psz > end - e - ehs) {
                out->truncated = 1;
                break;
            }
            e += ehs + (size_t)psz;
        }
        pos = end > pos ? end : pos + 8;
        pos = (pos + 7) & ~(size_t)7;
    }
    return out->containers ? 0 : -1;
}

int gpuenv_fatbin_runs_on(const gpuenv_fatbin *f, int cc_major, int cc_minor)
{
    int cc = cc_major * 10 + cc_minor;
    for (int a = 0; a < 256; a++) {
        if (f->sass[a] && a / 10 == cc_major && a % 10 <= cc_minor) return 1;
        if (f->ptx[a] && a <= cc) return 1;
    }
    return 0;
}

char *gpuenv_fatbin_describe(const gpuenv_fatbin *f)
{
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "SASS:");
    int any = 0;
    for (int a = 0; a < 256; a++)
        if (f->sass[a]) {
            gpuenv_buf_printf(&b, " sm_%d", a);
            any = 1;
        }
    if (!any) gpuenv_buf_puts(&b, " none");
    gpuenv_buf_puts(&b, "; PTX:");
    any = 0;
    for (int a = 0; a < 256; a++)
        if (f->ptx[a]) {
            gpuenv_buf_printf(&b, " compute_%d", a);
            any = 1;
        }
    if (!any) gpuenv_buf_puts(&b, " none");
    return gpuenv_buf_take(&b);
}
