/* libFuzzer harness: the document chunker (elm_chunk_text) on any bytes, counted in words or by
 * the stories260K tokenizer, under limits the first two bytes pick. Every chunk must lie inside
 * the text, in order, with lines that match its bytes and a heading path that is a string; a
 * chunk counted in words stays within the limit. */
#include "edgelm/rag.h"
#include "fuzz.h"

/* 1-based line of byte pos of text. */
static int32_t line_at(const char *text, int64_t pos) {
    int32_t line = 1;
    for (int64_t i = 0; i < pos; i++) line += text[i] == '\n';
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const bool words = data[0] & 1;
    const int32_t max = 8 + (data[0] >> 1);
    const elm_chunk_params p = {max, data[1] % (max / 2 + 1), words ? elm_count_words : elm_count_vocab_tokens,
                                words ? NULL : &fuzz_model()->vocab};
    const char *text = (const char *)data + 2;
    elm_chunk *c;
    int32_t n;
    elm_error err;
    if (elm_chunk_text(text, size - 2, &p, &c, &n, &err) != ELM_OK) abort();
    int64_t last = 0;
    for (int32_t i = 0; i < n; i++) {
        if (c[i].start < 0 || c[i].end <= c[i].start || c[i].end > (int64_t)size - 2 || !c[i].heading) abort();
        if (c[i].end < last || c[i].line_start != line_at(text, c[i].start) ||
            c[i].line_end != line_at(text, c[i].end - 1))
            abort();
        if (words && c[i].n_tokens > max) abort();
        last = c[i].end;
    }
    elm_chunks_free(c, n);
    return 0;
}
