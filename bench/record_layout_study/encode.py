#!/usr/bin/env python3
"""A study, not a build step: how big and how fast would a binary change record be?

Reads a v2 timeline decompressed to JSON lines (zstdcat FILE > lines.jsonl) and writes, for each layout,
the records and the file offset where each ends (one zstd flush per record, as the helper flushes):

  text      the records as they are (the plain record {"type":"sample","a":[...],"g":[...]})
  b64       "a" as base64 of zigzag varints inside the JSON line, "g" as JSON
  bin-f64   a binary record: 0x1e, u16 length, "a" as zigzag varints, "g" as 8-byte doubles
  bin-dec   the same, "g" as decimals: a byte of fraction digits, then the zigzag varint mantissa
  bin-127   what stallscope.timeline/3 writes (libstallscope/timeline/binary_record.h): 0x1e, flags, counts,
            varints whose last byte is the remainder by 127 (never '\n'), decimal gauges, then '\n'

Only plain records change; every other line is kept. Then time each with zstd_records (same directory):

  cc -O2 zstd_records.c -o /tmp/zstd_records -lzstd
  python3 encode.py lines.jsonl /tmp/layouts
  for l in text b64 bin-f64 bin-dec bin-127; do /tmp/zstd_records /tmp/layouts/$l.records /tmp/layouts/$l.ends 3; done
  /tmp/zstd_records /tmp/layouts/bin-127.records /tmp/layouts/bin-127.ends 6 17 16   # level, hash log, chain log
"""
import base64
import json
import os
import struct
import sys


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def varint(u):
    out = bytearray()
    while True:
        low, u = u & 0x7F, u >> 7
        out.append(low | (0x80 if u else 0))
        if not u:
            return bytes(out)


def varint127(u):
    q, r = divmod(u, 127)
    out = bytearray()
    while q:
        out.append(0x80 | (q & 0x7F))
        q >>= 7
    out.append(r if r < 10 else r + 1)
    return bytes(out)


def gauge127(x):
    text = repr(float(x))
    if "e" in text or "inf" in text or "nan" in text or text == "-0.0":
        return varint127(23) + varint127(struct.unpack("<Q", struct.pack("<d", x))[0])  # as it is
    whole, fraction = text.split(".")
    fraction = fraction.rstrip("0")
    negative = whole.startswith("-")
    mantissa = int(whole.lstrip("-") + fraction)
    return varint127(len(fraction)) + varint127(zigzag(-mantissa if negative else mantissa))


def decimal(x):
    text = repr(float(x))
    if "e" in text or "inf" in text or "nan" in text:
        return b"\xff" + struct.pack("<d", x)  # as it is
    whole, fraction = text.split(".")
    fraction = "" if fraction == "0" else fraction
    negative = whole.startswith("-")
    mantissa = int(whole.lstrip("-") + fraction)
    return bytes([len(fraction)]) + varint(zigzag(-mantissa if negative else mantissa))


def layouts(record):
    a = b"".join(varint(zigzag(v)) for v in record["a"])
    g = record.get("g", [])
    g_json = json.dumps(g, separators=(",", ":"))
    frame = lambda payload: b"\x1e" + len(payload).to_bytes(2, "little") + payload
    return {
        "b64": ('{"type":"sample","b":"%s","g":%s}\n' % (base64.b64encode(a).decode(), g_json)).encode(),
        "bin-f64": frame(a + b"".join(struct.pack("<d", x) for x in g)),
        "bin-dec": frame(a + b"".join(decimal(x) for x in g)),
        "bin-127": b"\x1e" + varint127((1 if "a" in record else 0) | (2 if "g" in record else 0))
        + (varint127(len(record["a"])) + b"".join(varint127(zigzag(v)) for v in record["a"]) if "a" in record else b"")
        + (varint127(len(g)) + b"".join(gauge127(x) for x in g) if "g" in record else b"")
        + b"\n",
    }


def main():
    source, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    names = ["text", "b64", "bin-f64", "bin-dec", "bin-127"]
    records = {n: open(os.path.join(out_dir, n + ".records"), "wb") for n in names}
    ends = {n: [] for n in names}
    sizes = {n: 0 for n in names}
    for line in open(source, "rb"):
        record = json.loads(line)
        plain = record.get("type") == "sample" and "a" in record and set(record) <= {"type", "a", "g"}
        variants = layouts(record) if plain else {}
        variants["text"] = line
        for n in names:
            data = variants.get(n, line)
            records[n].write(data)
            sizes[n] += len(data)
            ends[n].append(sizes[n])
    for n in names:
        with open(os.path.join(out_dir, n + ".ends"), "w") as f:
            f.write("\n".join(map(str, ends[n])) + "\n")
        print("%-8s %8.1f B a record before compression" % (n, sizes[n] / len(ends[n])))


if __name__ == "__main__":
    main()
