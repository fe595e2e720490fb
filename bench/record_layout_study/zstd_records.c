/* A study, not a build step (see encode.py): compresses a file of records with one zstd flush per record,
 * as the helper writes a timeline (checksum on, window log 19), then decodes the stream the way the reader
 * does (ZSTD_decompressStream into a 64 KiB buffer) and prints, per record: the compressed bytes, the CPU
 * time to compress, and the best of five decodes.
 *
 *   zstd_records RECORDS ENDS LEVEL [HASH_LOG CHAIN_LOG]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: zstd_records RECORDS ENDS LEVEL [HASH_LOG CHAIN_LOG]\n");
        return 2;
    }
    FILE* in = fopen(argv[1], "rb");
    FILE* ends = fopen(argv[2], "r");
    if (!in || !ends) {
        perror("open");
        return 1;
    }
    fseek(in, 0, SEEK_END);
    const long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char* data = malloc((size_t)size);
    if (fread(data, 1, (size_t)size, in) != (size_t)size) return 1;
    const size_t room = (size_t)size + (1u << 20);
    char* packed = malloc(room);
    size_t packed_size = 0;
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, atoi(argv[3]));
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 19);
    if (argc == 6) {
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, atoi(argv[4]));
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_chainLog, atoi(argv[5]));
    }
    long records = 0, from = 0, end = 0;
    const double start = cpu_seconds();
    while (from < size && fscanf(ends, "%ld", &end) == 1) {
        ZSTD_inBuffer src = {data + from, (size_t)(end - from), 0};
        const ZSTD_EndDirective how = end >= size ? ZSTD_e_end : ZSTD_e_flush;
        size_t left;
        do {
            ZSTD_outBuffer dst = {packed + packed_size, room - packed_size, 0};
            left = ZSTD_compressStream2(cctx, &dst, &src, how);
            if (ZSTD_isError(left)) return 1;
            packed_size += dst.pos;
        } while (left != 0);
        ++records;
        from = end;
    }
    const double compress = cpu_seconds() - start;
    static char buffer[1 << 16];
    double best = 1e9;
    for (int round = 0; round < 5; ++round) {
        ZSTD_DCtx* dctx = ZSTD_createDCtx();
        ZSTD_inBuffer src = {packed, packed_size, 0};
        const double t0 = cpu_seconds();
        while (src.pos < src.size) {
            ZSTD_outBuffer dst = {buffer, sizeof buffer, 0};
            if (ZSTD_isError(ZSTD_decompressStream(dctx, &dst, &src))) return 1;
        }
        const double t = cpu_seconds() - t0;
        best = t < best ? t : best;
        ZSTD_freeDCtx(dctx);
    }
    printf("%s level %s: %ld records, %.1f B each compressed, compress %.2f us, decode %.3f us\n", argv[1],
           argv[3], records, (double)packed_size / (double)records, compress * 1e6 / (double)records,
           best * 1e6 / (double)records);
    return 0;
}
