/* set_nodeflib.c FILE - set DF_1_NODEFLIB in a 64-bit object linked with
 * -z now (which gives it a DT_FLAGS_1 entry). ld ignores -z nodeflib for
 * shared objects, but the loader honours the flag on any object. */
#include <elf.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    FILE *f = argc == 2 ? fopen(argv[1], "r+b") : NULL;
    Elf64_Ehdr e;
    if (!f || fread(&e, sizeof e, 1, f) != 1) return 1;
    for (int i = 0; i < e.e_phnum; i++) {
        Elf64_Phdr p;
        if (fseek(f, (long)(e.e_phoff + (Elf64_Off)i * e.e_phentsize), SEEK_SET) || fread(&p, sizeof p, 1, f) != 1)
            return 1;
        if (p.p_type != PT_DYNAMIC) continue;
        for (Elf64_Off o = 0; o + sizeof(Elf64_Dyn) <= p.p_filesz; o += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            if (fseek(f, (long)(p.p_offset + o), SEEK_SET) || fread(&d, sizeof d, 1, f) != 1) return 1;
            if (d.d_tag != DT_FLAGS_1) continue;
            d.d_un.d_val |= DF_1_NODEFLIB;
            if (fseek(f, (long)(p.p_offset + o), SEEK_SET) || fwrite(&d, sizeof d, 1, f) != 1) return 1;
            return fclose(f) ? 1 : 0;
        }
    }
    return 1;
}
