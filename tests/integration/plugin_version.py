#!/usr/bin/env python3
"""plugin_version.py PLUGIN.so: print the Slurm major.minor a plugin declares ("22.05").

Slurm's loader (since 21.08) compares the exported uint32 `plugin_version` (SLURM_VERSION_NUMBER,
0xMMmmuu) with its own major.minor and refuses the plugin otherwise. Read from the ELF file itself, not
by dlopen: a plugin linked with -z now (Debian's hardening) does not load outside slurmd. Exit 1 with a
message when the file is not a 64-bit little-endian ELF or has no such symbol.
"""
import struct
import sys


def declared(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]  # sh_link: its string table
        for off in range(sh[4], sh[4] + sh[5], 24):
            name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
            end = data.index(b"\0", strtab[4] + name)
            if data[strtab[4] + name:end] != b"plugin_version" or shndx == 0 or size < 4:
                continue
            for i in range(phnum):  # the PT_LOAD segment holding the symbol's address
                p_type, _flags, p_off, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                    "<IIQQQQ", data, phoff + i * phentsize)
                if p_type == 1 and p_vaddr <= value < p_vaddr + p_filesz:
                    v, = struct.unpack_from("<I", data, p_off + value - p_vaddr)
                    return "%d.%02d" % (v >> 16, (v >> 8) & 0xFF)
    raise ValueError("no plugin_version symbol")


if __name__ == "__main__":
    try:
        print(declared(sys.argv[1]))
    except (OSError, ValueError, struct.error, IndexError) as e:
        print("plugin_version.py: %s: %s" % (sys.argv[1] if len(sys.argv) > 1 else "?", e), file=sys.stderr)
        sys.exit(1)
