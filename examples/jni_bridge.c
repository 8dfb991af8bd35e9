/* How a JNI (Android) wrapper maps onto the app API, without a Java build: what would be
 * Java_..._nativeLoad / nativeChat / ... are plain functions over jlong handles here, and the
 * Java side (a ViewModel collecting tokens into a chat view) is played by main().
 *
 * The points a real bridge must keep:
 *  - load once, in the background; keep the handles as jlong in the Java object;
 *  - one context per conversation, used by one thread at a time (several may run at once);
 *  - the token callback runs on the generating thread: a real bridge calls
 *    env->CallVoidMethod(listener, onToken, env->NewStringUTF(piece), id) there (pieces are
 *    always whole UTF-8 characters, so NewStringUTF is safe) and checks a volatile "cancel"
 *    flag the UI sets, returning non-zero to stop;
 *  - errors come back as status codes with edgelm_last_error(ctx) for the message.
 *
 * Compiled with -DEDGELM_JNI against <jni.h>, the same file is the real bridge: the Java_ entry
 * points at the end (class org.edgelm.EdgeLm, docs/android.md) wrap the native_ functions, and
 * the simulated Java side is left out. CMake builds it so as libedgelm_jni.so when jni.h is found.
 *
 *   build:  make   (build/example_jni_bridge MODEL; build/libedgelm_jni.so) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "edgelm/edgelm.h"

#ifdef EDGELM_JNI
#include <jni.h>
#else
typedef int64_t jlong; /* what JNI hands back and forth */
#endif

/* The listener interface the Java side implements (onToken, onDone). */
typedef struct java_listener {
    void (*on_token)(void *self, const char *piece, int32_t id);
    void (*on_done)(void *self, const edgelm_stats *stats, const char *error);
    void *self;
    atomic_int cancel; /* set by the UI thread ("stop" button) */
} java_listener;

static jlong native_load(const char *path, char *err, size_t cap) {
    edgelm_model *m = NULL;
    return edgelm_model_load(path, &m, err, cap) ? 0 : (jlong)(intptr_t)m;
}

static jlong native_new_chat(jlong model, const char *system, char *err, size_t cap) {
    edgelm_params p = edgelm_default_params();
    p.system_prompt = system;
    p.n_ctx = 512;
    edgelm_ctx *c = NULL;
    return edgelm_ctx_new((edgelm_model *)(intptr_t)model, &p, &c, err, cap) ? 0
                                                                             : (jlong)(intptr_t)c;
}

static int forward_token(const char *piece, int32_t id, void *user) {
    java_listener *l = user;
    if (id >= 0 && piece[0]) l->on_token(l->self, piece, id);
    return atomic_load(&l->cancel);
}

/* Runs on a worker thread (Kotlin: Dispatchers.Default). */
static int native_chat(jlong ctx, const char *message, java_listener *l) {
    edgelm_ctx *c = (edgelm_ctx *)(intptr_t)ctx;
    const int st = edgelm_chat(c, message, 128, forward_token, l);
    const edgelm_stats s = edgelm_get_stats(c);
    l->on_done(l->self, &s, st ? edgelm_last_error(c) : NULL);
    return st;
}

static void native_free(jlong ctx, jlong model) {
    edgelm_ctx_free((edgelm_ctx *)(intptr_t)ctx);
    edgelm_model_free((edgelm_model *)(intptr_t)model);
}

#ifndef EDGELM_JNI
/* ---- the "Java side" ---- */

typedef struct chat_view {
    char text[8192];
    size_t len;
} chat_view;

static void view_token(void *self, const char *piece, int32_t id) {
    (void)id;
    chat_view *v = self;
    const size_t n = strlen(piece);
    if (v->len + n < sizeof v->text) {
        memcpy(v->text + v->len, piece, n + 1);
        v->len += n;
    }
}

static void view_done(void *self, const edgelm_stats *s, const char *error) {
    chat_view *v = self;
    if (error) printf("error: %s\n", error);
    else printf("assistant:%s\n[%.0f ms to first token | %.1f tokens/s | %d tokens]\n", v->text,
                s->ttft_ms, s->tokens_per_sec, s->tokens);
    v->len = 0;
    v->text[0] = '\0';
}

typedef struct job {
    jlong ctx;
    const char *message;
    java_listener *listener;
} job;

static void *worker(void *arg) {
    job *j = arg;
    native_chat(j->ctx, j->message, j->listener);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL\n", argv[0]);
        return 1;
    }
    char err[512];
    const jlong model = native_load(argv[1], err, sizeof err);
    const jlong ctx = model ? native_new_chat(model, "You are a friendly storyteller.", err, sizeof err) : 0;
    if (!ctx) {
        fprintf(stderr, "%s\n", err);
        native_free(0, model);
        return 1;
    }
    chat_view view = {0};
    java_listener l = {.on_token = view_token, .on_done = view_done, .self = &view};
    const char *messages[] = {"Tell me a story about a little fox.", "What did the fox find?"};
    for (int i = 0; i < 2; i++) {
        printf("user: %s\n", messages[i]);
        job j = {ctx, messages[i], &l};
        pthread_t t;
        if (pthread_create(&t, NULL, worker, &j) != 0) break;
        pthread_join(t, NULL); /* the UI would keep drawing meanwhile */
    }
    native_free(ctx, model);
    return 0;
}
#else
/* ---- the JNI entry points of org.edgelm.EdgeLm ----
 *   static native long nativeLoad(String path);                  0 + IllegalStateException
 *   static native long nativeNewChat(long model, String system); 0 + IllegalStateException
 *   static native int nativeChat(long ctx, String message, Listener l);   0 or an edgelm status
 *   static native void nativeFree(long ctx, long model);
 * with interface Listener { boolean onToken(String piece, int id);   false stops the reply
 *                           void onDone(String errorOrNull, float tokensPerSec); } */

static void throw_error(JNIEnv *env, const char *msg) {
    jclass c = (*env)->FindClass(env, "java/lang/IllegalStateException");
    if (c) (*env)->ThrowNew(env, c, msg);
}

JNIEXPORT jlong JNICALL Java_org_edgelm_EdgeLm_nativeLoad(JNIEnv *env, jclass cls, jstring path) {
    (void)cls;
    const char *p = (*env)->GetStringUTFChars(env, path, NULL);
    if (!p) return 0; /* OutOfMemoryError pending */
    char err[512];
    const jlong m = native_load(p, err, sizeof err);
    (*env)->ReleaseStringUTFChars(env, path, p);
    if (!m) throw_error(env, err);
    return m;
}

JNIEXPORT jlong JNICALL Java_org_edgelm_EdgeLm_nativeNewChat(JNIEnv *env, jclass cls, jlong model,
                                                             jstring system) {
    (void)cls;
    const char *s = system ? (*env)->GetStringUTFChars(env, system, NULL) : NULL;
    if (system && !s) return 0;
    char err[512];
    const jlong c = native_new_chat(model, s, err, sizeof err);
    if (s) (*env)->ReleaseStringUTFChars(env, system, s);
    if (!c) throw_error(env, err);
    return c;
}

/* The Java listener behind a java_listener, called on the thread that called nativeChat. */
typedef struct jni_listener {
    JNIEnv *env;
    jobject obj;
    jmethodID on_token, on_done;
    java_listener *l;
} jni_listener;

static void jni_token(void *self, const char *piece, int32_t id) {
    jni_listener *j = self;
    JNIEnv *env = j->env;
    jstring s = (*env)->NewStringUTF(env, piece);
    const jboolean go = s && (*env)->CallBooleanMethod(env, j->obj, j->on_token, s, (jint)id);
    if (s) (*env)->DeleteLocalRef(env, s);
    if (!go || (*env)->ExceptionCheck(env)) atomic_store(&j->l->cancel, 1);
}

static void jni_done(void *self, const edgelm_stats *stats, const char *error) {
    jni_listener *j = self;
    JNIEnv *env = j->env;
    if ((*env)->ExceptionCheck(env)) return; /* Java sees the listener's exception instead */
    jstring e = error ? (*env)->NewStringUTF(env, error) : NULL;
    (*env)->CallVoidMethod(env, j->obj, j->on_done, e, (jfloat)stats->tokens_per_sec);
    if (e) (*env)->DeleteLocalRef(env, e);
}

JNIEXPORT jint JNICALL Java_org_edgelm_EdgeLm_nativeChat(JNIEnv *env, jclass cls, jlong ctx,
                                                         jstring message, jobject listener) {
    (void)cls;
    jclass lc = (*env)->GetObjectClass(env, listener);
    jni_listener j = {env, listener,
                      (*env)->GetMethodID(env, lc, "onToken", "(Ljava/lang/String;I)Z"),
                      (*env)->GetMethodID(env, lc, "onDone", "(Ljava/lang/String;F)V"), NULL};
    if (!j.on_token || !j.on_done) return -1; /* NoSuchMethodError pending */
    const char *m = (*env)->GetStringUTFChars(env, message, NULL);
    if (!m) return -1;
    java_listener l = {.on_token = jni_token, .on_done = jni_done, .self = &j};
    j.l = &l;
    const int st = native_chat(ctx, m, &l);
    (*env)->ReleaseStringUTFChars(env, message, m);
    return st;
}

JNIEXPORT void JNICALL Java_org_edgelm_EdgeLm_nativeFree(JNIEnv *env, jclass cls, jlong ctx,
                                                         jlong model) {
    (void)env;
    (void)cls;
    native_free(ctx, model);
}
#endif
