/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-input: reading a fuzzer's input as a stream of integers and byte
 * strings, for the targets in tests/fuzz/.
 *
 * Usage
 * =====
 *
 *     struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
 *     uint8_t op = fuzz_input_u8(&in);
 *     fuzz_input_bytes(&in, buf, sizeof buf);
 *
 * Past the end of the input every read yields zeros, so a target never has
 * to check lengths and a short input is still a valid one (libFuzzer finds
 * the interesting lengths by itself).
 *
 * Thread-safety: none needed; one input, one thread.
 *
 * Trust model: the input is the fuzzer's, i.e. anything at all.
 */

#ifndef OVS_VHOST_FUZZ_INPUT_H
#define OVS_VHOST_FUZZ_INPUT_H 1

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fuzz_input {
    const uint8_t *p;           /* Next unread byte. */
    size_t n;                   /* Bytes left at 'p'. */
};

#define FUZZ_INPUT_INIT(DATA, SIZE) { (const uint8_t *) (DATA), (SIZE) }

/* Copies up to 'len' bytes of input into 'dst', zero-filling what the
 * input lacks.  Returns the number of input bytes copied. */
static inline size_t
fuzz_input_bytes(struct fuzz_input *in, void *dst, size_t len)
{
    size_t n = len < in->n ? len : in->n;

    memcpy(dst, in->p, n);
    memset((uint8_t *) dst + n, 0, len - n);
    in->p += n;
    in->n -= n;
    return n;
}

static inline uint8_t
fuzz_input_u8(struct fuzz_input *in)
{
    uint8_t v;

    fuzz_input_bytes(in, &v, sizeof v);
    return v;
}

static inline uint16_t
fuzz_input_u16(struct fuzz_input *in)
{
    uint16_t v;

    fuzz_input_bytes(in, &v, sizeof v);
    return v;
}

static inline uint32_t
fuzz_input_u32(struct fuzz_input *in)
{
    uint32_t v;

    fuzz_input_bytes(in, &v, sizeof v);
    return v;
}

static inline uint64_t
fuzz_input_u64(struct fuzz_input *in)
{
    uint64_t v;

    fuzz_input_bytes(in, &v, sizeof v);
    return v;
}

/* Building inputs, for seeds: 'buf' grows by fuzz_input_put(). */
struct fuzz_input_buf {
    uint8_t data[1 << 16];
    size_t n;
};

static inline void
fuzz_input_put(struct fuzz_input_buf *b, const void *p, size_t len)
{
    if (len > sizeof b->data - b->n) {
        abort();
    }
    memcpy(b->data + b->n, p, len);
    b->n += len;
}

static inline void
fuzz_input_put_u8(struct fuzz_input_buf *b, uint8_t v)
{
    fuzz_input_put(b, &v, sizeof v);
}

static inline void
fuzz_input_put_u16(struct fuzz_input_buf *b, uint16_t v)
{
    fuzz_input_put(b, &v, sizeof v);
}

static inline void
fuzz_input_put_zeros(struct fuzz_input_buf *b, size_t len)
{
    if (len > sizeof b->data - b->n) {
        abort();
    }
    memset(b->data + b->n, 0, len);
    b->n += len;
}

/* A fuzzer's finding: prints 'msg' and aborts, which libFuzzer reports as
 * a crash and saves the input for. */
#define FUZZ_CHECK(COND)                                                \
    do {                                                                \
        if (!(COND)) {                                                  \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n",       \
                    __FILE__, __LINE__, #COND);                         \
            abort();                                                    \
        }                                                               \
    } while (0)

/* Every target defines these: the libFuzzer entry point, and its seeds
 * (fuzz-main.c writes them out with --seeds to make the committed
 * corpus).  'emit' is called once per seed. */
typedef void fuzz_emit_fn(const void *data, size_t size, const char *name);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_target_seeds(fuzz_emit_fn *emit);

#endif /* fuzz-input.h */
