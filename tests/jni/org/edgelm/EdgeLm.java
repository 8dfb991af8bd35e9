// The Java side of examples/jni_bridge.c (built with -DEDGELM_JNI as libedgelm_jni.so): what an
// Android app copies into its sources (docs/android.md); tests/jni_bridge.sh runs it on a desktop JVM.
package org.edgelm;

public final class EdgeLm {
    static { System.loadLibrary("edgelm_jni"); }

    private EdgeLm() {}

    /** Called on the thread that called nativeChat. */
    public interface Listener {
        /** One piece of the reply (whole UTF-8 characters); return false to stop the reply. */
        boolean onToken(String piece, int id);

        /** The reply ended; errorOrNull says why it failed. */
        void onDone(String errorOrNull, float tokensPerSec);
    }

    /** Loads a model once (GGUF, Hugging Face folder, llama2.c); throws IllegalStateException. */
    public static native long nativeLoad(String path);

    /** A conversation on the model; throws IllegalStateException. */
    public static native long nativeNewChat(long model, String systemPrompt);

    /** One turn; blocks until the reply ends; 0 or an edgelm status code. */
    public static native int nativeChat(long ctx, String message, Listener listener);

    /** Frees a conversation and the model (either may be 0). */
    public static native void nativeFree(long ctx, long model);
}
