/* The chunker (edgelm/rag.h, elm_chunk_text), counted in words so that every limit is exact:
 *  - headings start chunks and make the heading path (levels nested and popped; a '#' without a
 *    space, or inside a ``` fence, is text); a chunk that holds only headings takes the next
 *    paragraph in; blank lines inside a fence do not split it;
 *  - paragraphs are packed while they fit; a paragraph over the limit is cut at line ends, a line
 *    at spaces; chunks of a section overlap by whole pieces up to the overlap, never across a
 *    heading; no chunk is over the limit; every chunk's lines and bytes are the source's;
 *  - a word longer than the limit (a tokenizer's count) is cut at UTF-8 character boundaries;
 *  - empty and blank texts give no chunks; parameters out of range are refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/rag.h"

static elm_chunk *chunks_of(const char *text, int32_t max, int32_t overlap, int32_t *n) {
    const elm_chunk_params p = {max, overlap, elm_count_words, NULL};
    elm_chunk *c = NULL;
    elm_error err;
    CHECK(elm_chunk_text(text, strlen(text), &p, &c, n, &err) == ELM_OK, "chunk: %s", err.msg);
    return c;
}

static bool text_is(const char *text, const elm_chunk *c, const char *want) {
    return (size_t)(c->end - c->start) == strlen(want) && !memcmp(text + c->start, want, strlen(want));
}

/* Each byte of one (ASCII) character: the count of a tokenizer with no merges. */
static int64_t count_bytes(void *user, const char *text, size_t len) {
    (void)user, (void)text;
    return (int64_t)len;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    int32_t n;
    const char *doc = "Intro line one.\n\n# Guide\n## Install\n\nRun make.\n\n#hashtag is text\n\n"
                      "```\n# not a heading\n\nstill code\n```\n## Use\nCall it.\n# Next\nEnd.\n";
    elm_chunk *c = chunks_of(doc, 64, 0, &n);
    CHECK(n == 4, "%d chunks", n);
    if (n == 4) {
        CHECK(text_is(doc, &c[0], "Intro line one.") && !strcmp(c[0].heading, "") &&
              c[0].line_start == 1 && c[0].line_end == 1, "before any heading: '%s' %d-%d", c[0].heading,
              c[0].line_start, c[0].line_end);
        CHECK(!strcmp(c[1].heading, "Guide > Install") && c[1].line_start == 3 && c[1].line_end == 14,
              "headings, '#hashtag' and the fence in one chunk: '%s' %d-%d", c[1].heading,
              c[1].line_start, c[1].line_end);
        CHECK(strstr(doc + c[1].start, "still code\n```") == doc + c[1].end - 14, "fence kept whole");
        CHECK(!strcmp(c[2].heading, "Guide > Use") && text_is(doc, &c[2], "## Use\nCall it."),
              "level 2 replaced: '%s'", c[2].heading);
        CHECK(!strcmp(c[3].heading, "Next") && text_is(doc, &c[3], "# Next\nEnd."), "level 1 pops: '%s'",
              c[3].heading);
    }
    elm_chunks_free(c, n);

    /* 5 paragraphs of 4 words, limit 10: two per chunk; overlap 4 repeats one paragraph */
    const char *paras = "a b c d\n\ne f g h\n\ni j k l\n\nm n o p\n\nq r s t\n";
    c = chunks_of(paras, 10, 0, &n);
    CHECK(n == 3 && text_is(paras, &c[0], "a b c d\n\ne f g h") && c[2].line_start == 9, "packing: %d", n);
    elm_chunks_free(c, n);
    c = chunks_of(paras, 10, 4, &n);
    CHECK(n == 4 && text_is(paras, &c[1], "e f g h\n\ni j k l") && text_is(paras, &c[3], "m n o p\n\nq r s t"),
          "overlap: %d chunks", n);
    elm_chunks_free(c, n);

    /* a 12-word paragraph of 3 lines, limit 5: cut at lines, then the 6-word line at spaces */
    const char *lines = "# T\none two three\nfour five six seven eight nine\nten eleven twelve\n";
    c = chunks_of(lines, 8, 0, &n);
    int over = 0;
    for (int32_t i = 0; i < n; i++) over += c[i].n_tokens > 8;
    CHECK(n >= 3 && !over && c[0].line_start == 1 && c[n - 1].line_end == 4, "long paragraph: %d chunks", n);
    elm_chunks_free(c, n);
    c = chunks_of(lines, 8, 4, &n);
    over = 0;
    for (int32_t i = 0; i < n; i++) over += c[i].n_tokens > 8 || strcmp(c[i].heading, "T");
    CHECK(n >= 3 && !over, "long paragraph with overlap: %d chunks", n);
    elm_chunks_free(c, n);

    /* a 40-byte word of 2-byte characters, 8 bytes a count: cut into whole characters */
    char word[81] = "";
    for (int i = 0; i < 40; i++) strcat(word, "\xc3\xa9");
    const elm_chunk_params bytes = {8, 0, count_bytes, NULL};
    elm_error err;
    CHECK(elm_chunk_text(word, strlen(word), &bytes, &c, &n, &err) == ELM_OK && n > 1, "long word");
    bool whole = true;
    for (int32_t i = 0; i < n; i++)
        whole &= (c[i].end - c[i].start) % 2 == 0 && ((unsigned char)word[c[i].start] & 0xC0) != 0x80;
    CHECK(whole && c[n - 1].end == 80, "characters kept whole");
    elm_chunks_free(c, n);

    c = chunks_of("", 16, 0, &n);
    CHECK(n == 0 && !c, "empty");
    c = chunks_of("\n  \n\t\n", 16, 0, &n);
    CHECK(n == 0, "blank: %d", n);
    elm_chunks_free(c, n);
    const elm_chunk_params bad[] = {{4, 0, elm_count_words, NULL}, {16, 9, elm_count_words, NULL},
                                    {16, -1, elm_count_words, NULL}};
    for (int i = 0; i < 3; i++)
        CHECK(elm_chunk_text("x", 1, &bad[i], &c, &n, &err) == ELM_ERR_ARG && strstr(err.msg, "tokens"),
              "bad params %d: %s", i, err.msg);
    return check_done();
}
