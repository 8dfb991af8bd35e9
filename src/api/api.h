/* Private: what the app API's handles hold. */
#ifndef EDGELM_API_API_H
#define EDGELM_API_API_H

#include "edgelm/chat.h"
#include "edgelm/context.h"
#include "edgelm/edgelm.h"
#include "edgelm/generate.h"
#include "edgelm/model.h"
#include "edgelm/session.h"
#include "edgelm/speculative.h"
#include "edgelm/vocab.h"

struct edgelm_model {
    elm_model *m;
};

/* Copies msg into errbuf [errcap] (NUL-terminated, truncated); no-op without a buffer. */
void edgelm_error_out(char *errbuf, size_t errcap, const char *msg);

#endif
